package sim

import (
	"runtime"
	"sync"
)

// Registered memory that is mapped, not allocated (regionmem_unix.go):
// the cluster keeps every mapping of its regions and releases them all
// when it is closed. A deregistered region's mapping stays until then:
// work requests and the checker's records may still hold slices of it, as
// they held slices of heap memory before (which the collector kept). A
// cluster that is never closed releases them when the collector finds it
// unreachable (every region, queue pair and thread of a run refers to its
// cluster, so none of them is in use then). Close and that clean-up may
// run at once (the cluster can become unreachable while Close is still
// unmapping), so the set takes a lock and each mapping is released once.
type regionSet struct {
	mu   sync.Mutex
	maps [][]byte
}

// add keeps b, a mapping.
func (s *regionSet) add(b []byte) {
	s.mu.Lock()
	s.maps = append(s.maps, b)
	s.mu.Unlock()
}

// releaseAll unmaps every mapping (once, whoever calls it first).
func (s *regionSet) releaseAll() {
	s.mu.Lock()
	maps := s.maps
	s.maps = nil
	s.mu.Unlock()
	for _, b := range maps {
		releaseRegion(b)
	}
}

// regions returns the cluster's set of mappings, made (with the release
// of whatever is left when the cluster becomes unreachable) on first use.
func (c *Cluster) regions() *regionSet {
	if c.maps == nil {
		c.maps = &regionSet{}
		runtime.AddCleanup(c, (*regionSet).releaseAll, c.maps)
	}
	return c.maps
}

// newRegionBytes gives m n zero bytes of its own, mapped when large.
func (m *mr) newRegionBytes(n int) []byte {
	b, mapped := regionBytes(n)
	if mapped {
		m.c.regions().add(b)
	}
	return b
}

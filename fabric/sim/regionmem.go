package sim

import "runtime"

// Registered memory that is mapped, not allocated (regionmem_unix.go):
// the cluster keeps every mapping of its regions and releases them all
// when it is closed. A deregistered region's mapping stays until then:
// work requests and the checker's records may still hold slices of it, as
// they held slices of heap memory before (which the collector kept). A
// cluster that is never closed releases them when the collector finds it
// unreachable (every region, queue pair and thread of a run refers to its
// cluster, so none of them is in use then).
type regionSet struct {
	maps [][]byte
}

// add keeps b, a mapping.
func (s *regionSet) add(b []byte) { s.maps = append(s.maps, b) }

// releaseAll unmaps every mapping (once).
func (s *regionSet) releaseAll() {
	for _, b := range s.maps {
		releaseRegion(b)
	}
	s.maps = nil
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

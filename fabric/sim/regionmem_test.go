//go:build unix

package sim

import (
	"testing"
	"unsafe"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// TestRegionMemory: a region of lazyRegionMin bytes or more is a mapping
// the cluster keeps (zero, aligned, writable) and releases when it closes;
// a smaller one, and a size-only region until its program asks for its
// bytes, are not; a size-only region that materializes is mapped too.
func TestRegionMemory(t *testing.T) {
	for _, tc := range []struct {
		name     string
		sizeOnly bool
		bytes    int
		mapped   int // mappings the cluster keeps after Bytes()
	}{
		{"large", false, lazyRegionMin, 1},
		{"small", false, lazyRegionMin - 1, 0},
		{"large, size-only, materialized", true, 4 * lazyRegionMin, 1},
		{"small, size-only, materialized", true, 4096, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(Config{Nodes: 1, Seed: 1, SizeOnly: tc.sizeOnly})
			if err != nil {
				t.Fatal(err)
			}
			err = c.Run(func(th fabric.Thread) error {
				pd, err := th.Node().Device().AllocPD()
				if err != nil {
					return err
				}
				m, err := pd.RegMR(tc.bytes, fabric.AccessLocalWrite)
				if err != nil {
					return err
				}
				b := m.Bytes()
				if len(b) != tc.bytes || uintptrOf(b)%fabric.MRAlign != 0 {
					t.Errorf("%d bytes at %#x, want %d aligned to %d", len(b), uintptrOf(b), tc.bytes, fabric.MRAlign)
				}
				for i := 0; i < len(b); i += 4096 {
					if b[i] != 0 {
						t.Fatalf("byte %d is %d, want zero", i, b[i])
					}
					b[i] = 1
				}
				if err := m.Dereg(); err != nil {
					return err
				}
				return pd.Dealloc()
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := mappings(c); got != tc.mapped {
				t.Errorf("%d mappings kept, want %d", got, tc.mapped)
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			if got := mappings(c); got != 0 {
				t.Errorf("%d mappings after Close, want 0", got)
			}
		})
	}
}

func mappings(c *Cluster) int {
	if c.maps == nil {
		return 0
	}
	return len(c.maps.maps)
}

func uintptrOf(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// TestRegionsReleasedOnceAtOnce: a cluster's Close and the clean-up that
// runs when it becomes unreachable can release its mappings at the same
// time (a cluster may become unreachable while Close is unmapping); every
// mapping is unmapped once (a second unmap of one fails, which panicked).
func TestRegionsReleasedOnceAtOnce(t *testing.T) {
	for round := 0; round < 20; round++ {
		s := &regionSet{}
		for i := 0; i < 64; i++ {
			b, mapped := regionBytes(lazyRegionMin)
			if !mapped {
				t.Skip("anonymous mappings not available")
			}
			s.add(b)
		}
		done := make(chan struct{})
		go func() {
			s.releaseAll()
			close(done)
		}()
		s.releaseAll()
		<-done
		if len(s.maps) != 0 {
			t.Fatalf("%d mappings kept after release", len(s.maps))
		}
	}
}

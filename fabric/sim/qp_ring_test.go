package sim

import "testing"

// TestGrownKeepsOutstanding: a ring that doubles keeps every outstanding
// entry at the slot its index names in the larger ring.
func TestGrownKeepsOutstanding(t *testing.T) {
	for _, tc := range []struct{ size, from, to uint64 }{{4, 0, 4}, {4, 6, 10}, {8, 13, 21}, {2, 1, 2}} {
		ring := make([]uint64, tc.size)
		for i := tc.from; i < tc.to; i++ {
			ring[i&(tc.size-1)] = i
		}
		next := grown(ring, tc.from, tc.to)
		if len(next) != 2*int(tc.size) {
			t.Fatalf("%+v: %d entries, want %d", tc, len(next), 2*tc.size)
		}
		for i := tc.from; i < tc.to; i++ {
			if got := next[i&uint64(len(next)-1)]; got != i {
				t.Errorf("%+v: index %d holds %d", tc, i, got)
			}
		}
	}
}

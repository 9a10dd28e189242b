package sim

import "testing"

// TestReservedKeepsOutstanding: a ring that grows keeps every outstanding
// entry at the slot its index names in the larger ring, grows to the next
// power of two that holds the outstanding entries and the reservation (a
// batch grows it once, an empty ring starts at the size asked for), and is
// kept as it is when it has the room.
func TestReservedKeepsOutstanding(t *testing.T) {
	for _, tc := range []struct {
		size, from, to uint64
		n, want        int
	}{
		{0, 0, 0, 1, 1}, {0, 5, 5, 16, 16}, {0, 0, 0, 3, 4},
		{4, 0, 4, 1, 8}, {4, 6, 10, 1, 8}, {8, 13, 21, 1, 16}, {2, 1, 2, 1, 2},
		{4, 6, 10, 12, 16}, {4, 6, 8, 2, 4}, {16, 3, 3, 16, 16},
	} {
		ring := make([]uint64, tc.size)
		for i := tc.from; i < tc.to; i++ {
			ring[i&(tc.size-1)] = i
		}
		next := reserved(ring, tc.from, tc.to, tc.n)
		if len(next) != tc.want {
			t.Fatalf("%+v: %d entries, want %d", tc, len(next), tc.want)
		}
		if tc.want == int(tc.size) && tc.size > 0 && &next[0] != &ring[0] {
			t.Errorf("%+v: a ring with room was replaced", tc)
		}
		for i := tc.from; i < tc.to; i++ {
			if got := next[i&uint64(len(next)-1)]; got != i {
				t.Errorf("%+v: index %d holds %d", tc, i, got)
			}
		}
	}
}

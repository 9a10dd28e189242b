package sim

import (
	"testing"
	"unsafe"
)

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

// TestQPSizes: what a queue pair and its ring entries take on a 64-bit
// machine (docs/performance.md "Scale"). A ring of 16 sends is 4 KiB, an
// allocation size class of its own (at 264 bytes an entry it took 4,864
// bytes); the queue pair fits the 576-byte class.
func TestQPSizes(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("sizes are for 64-bit machines")
	}
	for _, tc := range []struct {
		what      string
		got, want uintptr
	}{
		{"send-queue entry", unsafe.Sizeof(sqe{}), 256},
		{"receive-queue entry", unsafe.Sizeof(rqe{}), 40},
		{"queue pair", unsafe.Sizeof(qp{}), 448},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %d bytes, want %d (update docs/performance.md and the estimate in experiments/benchmem.go if this is meant)", tc.what, tc.got, tc.want)
		}
	}
}

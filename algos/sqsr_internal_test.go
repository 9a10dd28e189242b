package algos

import (
	"fmt"
	"slices"
	"testing"
)

// TestAckedOutOfOrder: a cumulative acknowledgement releases every
// message it covers, also when the unacknowledged queue is not in number
// order (a shared endpoint posts message 6 before 5 when 5's thread waits
// for credit); before, acked stopped at the first message above the
// acknowledgement and kept the rest held, to be retransmitted needlessly.
func TestAckedOutOfOrder(t *testing.T) {
	for _, tc := range []struct {
		queue    []uint64 // sequence numbers in posting order, buffer i for entry i
		ack      uint64
		left     []uint64
		freedIDs []int
	}{
		{[]uint64{1, 2, 3}, 2, []uint64{3}, []int{0, 1}},
		{[]uint64{6, 5}, 5, []uint64{6}, []int{1}},
		{[]uint64{3, 1, 4, 2}, 2, []uint64{3, 4}, []int{1, 3}},
		{[]uint64{7, 5, 6}, 7, nil, []int{0, 1, 2}},
		{[]uint64{7, 5, 6}, 4, []uint64{7, 5, 6}, nil},
	} {
		t.Run(fmt.Sprint(tc.queue, tc.ack), func(t *testing.T) {
			e := &sqsr{}
			e.unacked = make([][]retained, 1)
			for i, seq := range tc.queue {
				e.unacked[0] = append(e.unacked[0], retained{seq: seq, id: i})
				e.holds = append(e.holds, 1)
				e.outstanding = append(e.outstanding, 0)
			}
			if err := e.acked(0, tc.ack); err != nil {
				t.Fatal(err)
			}
			var left []uint64
			for _, r := range e.unacked[0] {
				left = append(left, r.seq)
			}
			slices.Sort(e.free)
			if !slices.Equal(left, tc.left) || !slices.Equal(e.free, tc.freedIDs) {
				t.Fatalf("left %v freed %v, want %v and %v", left, e.free, tc.left, tc.freedIDs)
			}
		})
	}
}

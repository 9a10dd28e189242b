package algos

import (
	"fmt"
	"slices"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/flowctl"
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
			e := &sqsr{ct: DefaultCreditTimers}
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

// TestRepeatEligibility: a source's credit is repeated only when the
// source may be waiting for it (repeats.go): it has not ended, it has
// sent at least its initial credit (Buffers) and the receiver has posted
// receives beyond the messages received from it; with loss recovery also
// when an acknowledgement is owed. A source that may stall brings the next
// look forward to its due repeat, no earlier than RepeatScan after the
// last look.
func TestRepeatEligibility(t *testing.T) {
	const b = 2
	for _, tc := range []struct {
		name     string
		received int  // messages received (and released: each posts a receive)
		held     int  // of them, not yet released
		done     bool // the source ended its stream
		recover  bool
		ackSent  uint64
		want     bool
	}{
		{"nothing received", 0, 0, false, false, 0, false},
		{"below the initial credit", 1, 0, false, false, 0, false},
		{"initial credit used, receives reposted", 2, 0, false, false, 0, true},
		{"initial credit used, none reposted", 2, 2, false, false, 0, false},
		{"one reposted", 2, 1, false, false, 0, true},
		{"ended", 5, 0, true, false, 0, false},
		{"recovery, acknowledgement owed", 1, 0, false, true, 0, true},
		{"recovery, acknowledgement sent", 1, 0, false, true, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &sqsr{ct: DefaultCreditTimers}
			e.n, e.cfg.Buffers, e.cfg.CreditEvery = 1, b, 2
			cr, err := flowctl.NewCreditReceiver(e.cfg.CreditEvery)
			if err != nil {
				t.Fatal(err)
			}
			cr.Posted(b)
			e.cr, e.counts, e.doneSrc = []*flowctl.CreditReceiver{cr}, []*flowctl.Count{flowctl.NewCount(true)}, []bool{tc.done}
			e.heard, e.backoff, e.nextRepeat = make([]fabric.Time, 1), make([]uint8, 1), fabric.Forever
			if tc.recover {
				e.ackSent = []uint64{tc.ackSent}
			}
			for i := 1; i <= tc.received; i++ {
				if err := e.counts[0].Add(uint64(i), false); err != nil {
					t.Fatal(err)
				}
				if i <= tc.received-tc.held {
					cr.Posted(1)
				}
			}
			now := fabric.Time(0).Add(fabric.Millisecond)
			e.lastScan = now.Add(-DefaultCreditTimers.RepeatScan / 2)
			e.heardFrom(0, now)
			if got := e.mayStall(0); got != tc.want {
				t.Fatalf("mayStall %v, want %v", got, tc.want)
			}
			want := fabric.Forever
			if tc.want {
				want = now.Add(DefaultCreditTimers.RepeatQuiet) // after lastScan + RepeatScan
			}
			if e.nextRepeat != want || e.backoff[0] != 0 {
				t.Fatalf("next look at %v, backoff %d; want %v and 0", e.nextRepeat, e.backoff[0], want)
			}
		})
	}
}

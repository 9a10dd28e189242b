package sim_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/fabrictest"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

const ucSlot = 16 << 10

// ucStream sends n messages of size bytes with op (OpSendImm or
// OpWriteImm, immediate = index) from node 0 to node 1 over UC, then, once
// node 1 has taken what arrived, one more message (index n). Node 1 checks
// that the messages that arrived consumed consecutive receives, in order,
// with the right bytes, and that the extra message lands in the receive
// right after them: a lost message never consumes a receive. got receives
// the indexes delivered in the first phase; between, if not nil, runs on
// node 1 between the phases.
func ucStream(n, size int, op fabric.Opcode, got *[]int, between func()) func(th fabric.Thread) error {
	// Layout on both nodes: receive k at k*ucSlot, write target (or send
	// source) of message i at (n+1+i)*ucSlot.
	area := func(i int) int { return (n + 1 + i) * ucSlot }
	return func(th fabric.Thread) error {
		me := th.Node().ID()
		oob := th.Node().OOB()
		c, err := fabrictest.Connect(th, 1-me, fabrictest.Options{Type: fabric.UC, MRBytes: 2 * (n + 1) * ucSlot,
			CQDepth: 4 * n, SendWR: n + 1, RecvWR: n + 1})
		if err != nil {
			return err
		}
		send := func(from, to int) error {
			var wrs []fabric.SendWR
			for i := from; i < to; i++ {
				fillKey(c.MR.Bytes()[area(i):area(i)+size], key('c', i))
				wrs = append(wrs, fabric.SendWR{ID: uint64(i), Op: op, Imm: uint32(i), Local: c.MR.SGE(area(i), size),
					Flags: fabric.Signaled, RemoteAddr: c.Peer.Addr + uint64(area(i)), RKey: c.Peer.RKey})
			}
			if _, err := c.QP.PostSend(wrs); err != nil {
				return err
			}
			wcs, err := fabrictest.Await(th, c.SCQ, to-from, 10*fabric.Millisecond)
			if err != nil {
				return err
			}
			for k, wc := range wcs { // UC sends complete once on the wire, lost or not
				if err := fabrictest.Expect(wc, uint64(from+k), fabric.StatusSuccess, op); err != nil {
					return err
				}
			}
			return nil
		}
		// check takes what arrived and verifies it; first is the index of
		// the first receive it may have consumed.
		check := func(first int) ([]int, error) {
			end := th.Now().Add(fabric.Millisecond)
			for th.Now() < end {
				th.Wait(end)
			}
			wcs, err := drain(c.RCQ)
			if err != nil {
				return nil, err
			}
			var out []int
			for k, wc := range wcs {
				i := int(wc.Imm)
				wantOp, at := fabric.OpRecv, (first+k)*ucSlot
				if op == fabric.OpWriteImm {
					wantOp, at = fabric.OpRecvWriteImm, area(i)
				}
				if wc.Status != fabric.StatusSuccess || wc.ID != uint64(first+k) || wc.Op != wantOp || !wc.HasImm || wc.Bytes != size {
					return nil, fmt.Errorf("completion %+v, want receive %d consumed by a whole message of %d bytes", wc, first+k, size)
				}
				if len(out) > 0 && i <= out[len(out)-1] {
					return nil, fmt.Errorf("message %d arrived after message %d", i, out[len(out)-1])
				}
				if err := checkBytes(fmt.Sprintf("message %d", i), c.MR.Bytes()[at:at+size], key('c', i)); err != nil {
					return nil, err
				}
				out = append(out, i)
			}
			return out, nil
		}

		if me == 0 {
			if err := oob.Barrier("ready"); err != nil {
				return err
			}
			if err := send(0, n); err != nil {
				return err
			}
			if err := oob.Barrier("checked"); err != nil {
				return err
			}
			if err := send(n, n+1); err != nil {
				return err
			}
			return oob.Barrier("done")
		}
		wrs := make([]fabric.RecvWR, n+1)
		for k := range wrs {
			wrs[k] = fabric.RecvWR{ID: uint64(k), Local: c.MR.SGE(k*ucSlot, ucSlot)}
		}
		if _, err := c.QP.PostRecv(wrs); err != nil {
			return err
		}
		if err := oob.Barrier("ready"); err != nil {
			return err
		}
		if *got, err = check(0); err != nil {
			return err
		}
		if between != nil {
			between()
		}
		if err := oob.Barrier("checked"); err != nil {
			return err
		}
		if err := oob.Barrier("done"); err != nil {
			return err
		}
		extra, err := check(len(*got))
		if err != nil {
			return fmt.Errorf("message sent after the losses: %w", err)
		}
		if !slices.Equal(extra, []int{n}) {
			return fmt.Errorf("after the losses, received %v, want [%d]", extra, n)
		}
		return nil
	}
}

// TestUCLostPacket drops chosen packets of a UC stream: only the messages
// they belong to are lost, their receives are not consumed, and every
// later message arrives.
func TestUCLostPacket(t *testing.T) {
	const n = 5
	cases := []struct {
		name string
		size int
		drop []int // 1-based ordinals of the data packets to drop
		lost []int // messages that must be missing
	}{
		{"first-packet", 10000, []int{4}, []int{1}},
		{"middle-packet", 10000, []int{5}, []int{1}},
		{"last-packet", 10000, []int{6}, []int{1}},
		{"last-and-next-first", 10000, []int{6, 7}, []int{1, 2}},
		{"middle-of-first", 10000, []int{2}, []int{0}},
		{"two-messages-apart", 10000, []int{2, 11}, []int{0, 3}},
		{"last-packet-of-stream", 10000, []int{15}, []int{4}},
		{"whole-message", 10000, []int{7, 8, 9}, []int{2}},
		{"single-packet-message", 100, []int{2}, []int{1}},
		{"single-packet-last", 100, []int{5}, []int{4}},
	}
	for _, op := range []fabric.Opcode{fabric.OpSendImm, fabric.OpWriteImm} {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%v/%s", op, tc.name), func(t *testing.T) {
				c := newCluster(t, sim.Config{Nodes: 2, Seed: 1})
				seen := 0
				c.SetFilter(func(p sim.PacketInfo) sim.Verdict {
					if p.Type != fabric.UC || p.Src != 0 {
						return sim.Pass
					}
					seen++
					if slices.Contains(tc.drop, seen) {
						return sim.Drop
					}
					return sim.Pass
				})
				var got []int
				if err := c.Run(ucStream(n, tc.size, op, &got, nil)); err != nil {
					t.Fatal(err)
				}
				var want []int
				for i := 0; i < n; i++ {
					if !slices.Contains(tc.lost, i) {
						want = append(want, i)
					}
				}
				if !slices.Equal(got, want) {
					t.Errorf("received %v, want %v", got, want)
				}
				if st := c.Stats(); st.PacketsLost != int64(len(tc.drop)) || st.RCRetransmits != 0 {
					t.Errorf("stats %+v, want %d packets lost", st, len(tc.drop))
				}
			})
		}
	}
}

// TestUCSeededLoss: random loss on the receiver's link; what arrives is in
// order and intact, in consecutive receives, and a message is missing only
// if one of its packets was lost.
func TestUCSeededLoss(t *testing.T) {
	const n = 100
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			c := newCluster(t, sim.Config{Nodes: 2, Seed: seed})
			if err := c.SetFaults(1, sim.Faults{Loss: 0.03}); err != nil {
				t.Fatal(err)
			}
			var got []int
			if err := c.Run(ucStream(n, 10000, fabric.OpSendImm, &got, func() { c.SetFaults(1, sim.Faults{}) })); err != nil {
				t.Fatal(err)
			}
			st := c.Stats()
			missing := n - len(got)
			if missing == 0 || int64(missing) > st.PacketsLost {
				t.Errorf("%d messages missing, %d packets lost", missing, st.PacketsLost)
			}
		})
	}
}

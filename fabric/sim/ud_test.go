package sim_test

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

const udQKey = 0x5151

func udSize(seq int) int { return 8 + int(key('u', seq)%1000) }

// udStream sends n datagrams from node 0 to node 1 (immediate = sequence
// number) and records, on node 1, the sequence numbers in arrival order.
func udStream(n int, got *[]int) func(th fabric.Thread) error {
	const slot = 1024 + fabric.GRHBytes
	return func(th fabric.Thread) error {
		u, err := setupUDMesh(th, n, n)
		if err != nil {
			return err
		}
		me := th.Node().ID()
		oob := th.Node().OOB()
		if me == 1 {
			wrs := make([]fabric.RecvWR, n)
			for i := range wrs {
				wrs[i] = fabric.RecvWR{ID: uint64(i), Local: u.mr.SGE(i*slot, slot)}
			}
			if _, err := u.qp.PostRecv(wrs); err != nil {
				return err
			}
		}
		if err := oob.Barrier("ready"); err != nil {
			return err
		}
		if me == 0 {
			base := n * slot
			wrs := make([]fabric.SendWR, n)
			for i := range wrs {
				off := base + i*1024
				fillKey(u.mr.Bytes()[off:off+udSize(i)], key('U', i))
				wrs[i] = fabric.SendWR{ID: uint64(i), Op: fabric.OpSendImm, Imm: uint32(i), Local: u.mr.SGE(off, udSize(i)),
					AH: u.ahs[1], RemoteQPN: u.peers[1].QPN, QKey: u.peers[1].QKey}
			}
			wrs[n-1].Flags = fabric.Signaled
			if _, err := u.qp.PostSend(wrs); err != nil {
				return err
			}
			if _, err := awaitOne(th, u.scq, fabric.StatusSuccess); err != nil {
				return err
			}
			return oob.Barrier("sent")
		}
		if err := oob.Barrier("sent"); err != nil {
			return err
		}
		// Every datagram has left node 0; give stragglers (held back by
		// reordering) time to land, then take what arrived.
		end := th.Now().Add(5 * fabric.Millisecond)
		for th.Now() < end {
			th.Wait(end)
		}
		wcs, err := drain(u.rcq)
		if err != nil {
			return err
		}
		seen := map[int]bool{}
		for i, wc := range wcs {
			seq := int(wc.Imm)
			if wc.Status != fabric.StatusSuccess || wc.ID != uint64(i) || seq >= n || seen[seq] {
				return fmt.Errorf("completion %d: %+v (want receive %d, a new sequence number below %d)", i, wc, i, n)
			}
			seen[seq] = true
			if wc.Bytes != fabric.GRHBytes+udSize(seq) {
				return fmt.Errorf("datagram %d: %d bytes, want %d", seq, wc.Bytes, fabric.GRHBytes+udSize(seq))
			}
			off := i*slot + fabric.GRHBytes
			if err := checkBytes(fmt.Sprintf("datagram %d", seq), u.mr.Bytes()[off:off+udSize(seq)], key('U', seq)); err != nil {
				return err
			}
			*got = append(*got, seq)
		}
		return nil
	}
}

// awaitOne polls cq for one completion, which must have status st.
func awaitOne(th fabric.Thread, cq fabric.CQ, st fabric.Status) (fabric.WC, error) {
	deadline := th.Now().Add(100 * fabric.Millisecond)
	var wc [1]fabric.WC
	for {
		n, err := cq.Poll(wc[:])
		if err != nil {
			return wc[0], err
		}
		if n == 1 {
			if wc[0].Status != st {
				return wc[0], fmt.Errorf("completion %v, want status %v", wc[0], st)
			}
			return wc[0], nil
		}
		if th.Now() >= deadline {
			return wc[0], fmt.Errorf("no completion within 100ms")
		}
		th.Wait(deadline, cq)
	}
}

// increasing reports whether s is strictly increasing.
func increasing(s []int) bool {
	for i := 1; i < len(s); i++ {
		if s[i] <= s[i-1] {
			return false
		}
	}
	return true
}

// TestUDFaultsBySeed puts seeded loss and reordering on the receiver's
// link. The arrival order is a function of the seed, and what arrives is
// exactly what the fault counters say: a held-back datagram (ReorderDelay
// far longer than the whole stream) lands after every other one, a lost
// one never.
func TestUDFaultsBySeed(t *testing.T) {
	const n = 200
	cases := []struct {
		name   string
		faults sim.Faults
	}{
		{"loss", sim.Faults{Loss: 0.1}},
		{"reorder", sim.Faults{Reorder: 0.1, ReorderDelay: fabric.Millisecond}},
		{"reorder+loss", sim.Faults{Loss: 0.1, Reorder: 0.1, ReorderDelay: fabric.Millisecond}},
		{"reorder-short", sim.Faults{Reorder: 0.3}},
	}
	for _, tc := range cases {
		orders := map[uint64][]int{}
		for _, seed := range []uint64{1, 2, 3} {
			t.Run(fmt.Sprintf("%s/seed=%d", tc.name, seed), func(t *testing.T) {
				run := func() ([]int, sim.Stats) {
					c := newCluster(t, sim.Config{Nodes: 2, Seed: seed})
					if err := c.SetFaults(1, tc.faults); err != nil {
						t.Fatal(err)
					}
					var got []int
					if err := c.Run(udStream(n, &got)); err != nil {
						t.Fatal(err)
					}
					return got, c.Stats()
				}
				got, st := run()
				again, st2 := run()
				if !slices.Equal(got, again) || st != st2 {
					t.Fatalf("two runs with seed %d differ:\n%v\n%v", seed, got, again)
				}
				orders[seed] = got
				if lost := n - len(got); int64(lost) != st.PacketsLost {
					t.Errorf("%d datagrams missing, but %d packets lost", lost, st.PacketsLost)
				}
				if (tc.faults.Loss > 0) != (st.PacketsLost > 0) {
					t.Errorf("loss %v but %d packets lost", tc.faults.Loss, st.PacketsLost)
				}
				if st.UDDropsNoRecv != 0 || st.UDDropsQKey != 0 {
					t.Errorf("datagrams dropped at the receiver: %+v", st)
				}
				switch {
				case tc.faults.Reorder == 0:
					if !increasing(got) {
						t.Errorf("without reordering the datagrams arrived out of order: %v", got)
					}
				case tc.faults.ReorderDelay >= fabric.Millisecond:
					// got must be two increasing runs, the second made of
					// exactly the held-back datagrams.
					k := len(got) - int(st.PacketsReordered)
					if st.PacketsReordered == 0 || k < 0 || !increasing(got[:k]) || !increasing(got[k:]) {
						t.Errorf("%d datagrams held back, but the arrival order is not the others followed by them: %v",
							st.PacketsReordered, got)
					}
				default:
					if increasing(got) {
						t.Errorf("%d datagrams reordered, but all arrived in order", st.PacketsReordered)
					}
				}
			})
		}
		if slices.Equal(orders[1], orders[2]) && slices.Equal(orders[2], orders[3]) {
			t.Errorf("%s: seeds 1, 2 and 3 gave the same arrival order", tc.name)
		}
	}
}

// udPair builds two UD queue pairs from the test goroutine, without
// threads, and an address handle from node 0 to node 1.
func udPair(t *testing.T, c *sim.Cluster) (a, b *endpoint, ah fabric.AH) {
	t.Helper()
	a = newEndpoint(t, c.Node(0), fabric.UD, 64<<10)
	b = newEndpoint(t, c.Node(1), fabric.UD, 64<<10)
	for _, e := range []*endpoint{a, b} {
		for _, st := range []fabric.QPState{fabric.StateInit, fabric.StateRTR, fabric.StateRTS} {
			if err := e.qp.Modify(st, fabric.QPAttr{QKey: udQKey}); err != nil {
				t.Fatal(err)
			}
		}
	}
	ah, err := a.pd.CreateAH(b.qp.Info().Address())
	if err != nil {
		t.Fatal(err)
	}
	return a, b, ah
}

// udPost posts k datagrams (immediate = index) from a to b, and k
// receives on b.
func udPost(t *testing.T, a, b *endpoint, ah fabric.AH, k int) {
	t.Helper()
	const slot = 1024 + fabric.GRHBytes
	recvs := make([]fabric.RecvWR, k)
	for i := range recvs {
		recvs[i] = fabric.RecvWR{ID: uint64(i), Local: b.mr.SGE(i*slot, slot)}
	}
	if _, err := b.qp.PostRecv(recvs); err != nil {
		t.Fatal(err)
	}
	sends := make([]fabric.SendWR, k)
	for i := range sends {
		off := i * 1024
		fillKey(a.mr.Bytes()[off:off+udSize(i)], key('M', i))
		sends[i] = fabric.SendWR{ID: uint64(i), Op: fabric.OpSendImm, Imm: uint32(i), Local: a.mr.SGE(off, udSize(i)),
			Flags: fabric.Signaled, AH: ah, RemoteQPN: b.qp.QPN(), QKey: udQKey}
	}
	if _, err := a.qp.PostSend(sends); err != nil {
		t.Fatal(err)
	}
}

// udReceived checks the completions on b and returns the immediates in
// arrival order.
func udReceived(t *testing.T, b *endpoint) []int {
	t.Helper()
	const slot = 1024 + fabric.GRHBytes
	wcs, err := drain(b.rcq)
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for i, wc := range wcs {
		seq := int(wc.Imm)
		if wc.Status != fabric.StatusSuccess || wc.ID != uint64(i) || wc.Bytes != fabric.GRHBytes+udSize(seq) {
			t.Fatalf("receive completion %d: %+v, want receive %d with %d bytes", i, wc, i, fabric.GRHBytes+udSize(seq))
		}
		off := i*slot + fabric.GRHBytes
		if err := checkBytes(fmt.Sprintf("datagram %d", seq), b.mr.Bytes()[off:off+udSize(seq)], key('M', seq)); err != nil {
			t.Fatal(err)
		}
		got = append(got, seq)
	}
	return got
}

// TestUDManualDelivery holds every datagram at the switch and delivers
// them by hand: the receiver sees exactly the order and losses chosen.
// Verbs are called from the test goroutine and time is stepped with
// Advance.
func TestUDManualDelivery(t *testing.T) {
	const k = 8
	type step struct {
		idx  int // datagram index
		drop bool
	}
	rel := func(idx ...int) []step {
		var s []step
		for _, i := range idx {
			s = append(s, step{idx: i})
		}
		return s
	}
	cases := []struct {
		name    string
		steps   []step
		advance bool // step time between deliveries; else all at one instant
	}{
		{"in-order", rel(0, 1, 2, 3, 4, 5, 6, 7), true},
		{"reverse", rel(7, 6, 5, 4, 3, 2, 1, 0), true},
		{"reverse-same-instant", rel(7, 6, 5, 4, 3, 2, 1, 0), false},
		{"drop-evens-odds-reversed", []step{{0, true}, {7, false}, {2, true}, {5, false}, {4, true}, {3, false}, {6, true}, {1, false}}, true},
		{"shuffle-and-drop", []step{{3, false}, {0, true}, {6, false}, {1, false}, {7, true}, {2, false}, {5, false}, {4, true}}, false},
		{"drop-all", []step{{0, true}, {1, true}, {2, true}, {3, true}, {4, true}, {5, true}, {6, true}, {7, true}}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, sim.Config{Nodes: 2, Seed: 1})
			a, b, ah := udPair(t, c)
			c.SetFilter(func(p sim.PacketInfo) sim.Verdict {
				if p.Type == fabric.UD && p.Op == "SEND" && p.Dst == 1 {
					return sim.Hold
				}
				return sim.Pass
			})
			udPost(t, a, b, ah, k)
			c.Advance(100 * fabric.Microsecond)

			// UD sends complete once on the wire, held or not.
			wcs, err := drain(a.scq)
			if err != nil || len(wcs) != k {
				t.Fatalf("sender: %d completions (%v), want %d", len(wcs), err, k)
			}
			if got := udReceived(t, b); len(got) != 0 {
				t.Fatalf("datagrams %v arrived although every packet is held", got)
			}
			held := c.Held()
			if len(held) != k {
				t.Fatalf("%d packets held, want %d", len(held), k)
			}
			for i, p := range held {
				if p.Src != 0 || p.Dst != 1 || p.Type != fabric.UD || p.Bytes != udSize(i) || p.DstQPN != b.qp.QPN() {
					t.Fatalf("held packet %d: %+v, want datagram %d of %d bytes from node 0", i, p, i, udSize(i))
				}
			}

			var want []int
			drops := 0
			for _, s := range tc.steps {
				id := held[s.idx].ID
				if s.drop {
					drops++
					if err := c.DropHeld(id); err != nil {
						t.Fatal(err)
					}
				} else {
					want = append(want, s.idx)
					if err := c.Release(id); err != nil {
						t.Fatal(err)
					}
				}
				if tc.advance {
					c.Advance(fabric.Microsecond)
				}
			}
			c.Advance(10 * fabric.Microsecond)
			if got := udReceived(t, b); !slices.Equal(got, want) {
				t.Errorf("received %v, want %v", got, want)
			}
			if h := c.Held(); len(h) != 0 {
				t.Errorf("%d packets still held", len(h))
			}
			if st := c.Stats(); st.PacketsLost != int64(drops) || st.UDDropsNoRecv != 0 {
				t.Errorf("stats %+v, want %d packets lost", st, drops)
			}
			// A packet can be released or dropped only once.
			if err := c.Release(held[0].ID); err == nil {
				t.Errorf("Release of an already delivered packet succeeded")
			}
			if err := c.DropHeld(held[0].ID); err == nil {
				t.Errorf("DropHeld of an already delivered packet succeeded")
			}
		})
	}
}

// TestUDReleaseLatency: a released packet reaches the receiver's CQ after
// exactly the NIC's receive latency.
func TestUDReleaseLatency(t *testing.T) {
	c := newCluster(t, sim.Config{Nodes: 2, Seed: 1})
	a, b, ah := udPair(t, c)
	c.SetFilter(func(p sim.PacketInfo) sim.Verdict { return sim.Hold })
	udPost(t, a, b, ah, 1)
	c.Advance(50 * fabric.Microsecond)
	held := c.Held()
	if len(held) != 1 {
		t.Fatalf("%d packets held, want 1", len(held))
	}
	rx := fabric.Duration(c.Profile().NIC.RxLatencyNS * 1000)
	if err := c.Release(held[0].ID); err != nil {
		t.Fatal(err)
	}
	c.Advance(rx - 1)
	if got := udReceived(t, b); len(got) != 0 {
		t.Fatalf("delivered %v before the receive latency of %v passed", got, rx)
	}
	c.Advance(1)
	if got := udReceived(t, b); !slices.Equal(got, []int{0}) {
		t.Fatalf("after the receive latency: received %v, want [0]", got)
	}
}

// TestUDFilterDuplicate: a Filter that duplicates one datagram makes it
// consume two receives; the others arrive once, in order.
func TestUDFilterDuplicate(t *testing.T) {
	c := newCluster(t, sim.Config{Nodes: 2, Seed: 1})
	a, b, ah := udPair(t, c)
	n := 0
	c.SetFilter(func(p sim.PacketInfo) sim.Verdict {
		n++
		if n == 3 {
			return sim.Duplicate
		}
		return sim.Pass
	})
	udPost(t, a, b, ah, 5)
	c.Advance(100 * fabric.Microsecond)
	if got, want := udReceived(t, b), []int{0, 1, 2, 2, 3}; !reflect.DeepEqual(got, want) {
		t.Errorf("received %v, want %v (the fifth datagram finds no receive left)", got, want)
	}
	if st := c.Stats(); st.PacketsDuplicated != 1 || st.UDDropsNoRecv != 1 {
		t.Errorf("stats %+v, want 1 duplicated and 1 dropped for lack of a receive", st)
	}
}

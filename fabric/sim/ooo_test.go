package sim_test

import (
	"fmt"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/fabrictest"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// oooProfile is hdr-cx6 with the out-of-order window set to window.
func oooProfile(t *testing.T, window int) *sim.Profile {
	t.Helper()
	p, err := sim.LoadProfile("hdr-cx6")
	if err != nil {
		t.Fatal(err)
	}
	p.NIC.OOOWindow = window
	return p
}

// TestOOOPlacement: a stream of sends, writes with and without
// immediate and reads whose packets (requests, read responses, ACKs)
// overtake one another on both links, checked byte by byte and
// completion by completion (rcStream). With out-of-order placement the
// overtaking packets are held and placed when the gap fills: no sequence
// NAK and no retransmission. Without it every overtaking packet is a gap:
// sequence NAKs and go-back-N. Losses under out-of-order placement are
// still recovered (the ACK timer; retransmitted packets the responder
// holds are dropped), and beyond the window a gap is NAKed as before.
func TestOOOPlacement(t *testing.T) {
	reorder := sim.Faults{Reorder: 0.1}
	for _, tc := range []struct {
		name    string
		window  int
		faults  sim.Faults
		retrans bool // retransmissions expected
	}{
		{"reordered, in order only", 0, reorder, true},
		{"reordered, out-of-order placement", 256, reorder, false},
		{"reordered, window of 1", 1, reorder, true},
		{"reordered and lost, out-of-order placement", 256, sim.Faults{Reorder: 0.1, Loss: 0.01}, true},
		{"reordered and duplicated, out-of-order placement", 256, sim.Faults{Reorder: 0.1, Duplicate: 0.05}, false},
	} {
		for _, seed := range []uint64{1, 2} {
			t.Run(fmt.Sprintf("%s/seed=%d", tc.name, seed), func(t *testing.T) {
				c := newCluster(t, sim.Config{Nodes: 2, Seed: seed, Profile: oooProfile(t, tc.window)})
				for i := range 2 {
					if err := c.SetFaults(i, tc.faults); err != nil {
						t.Fatal(err)
					}
				}
				if err := c.Run(rcMain(rcMix(200, seed))); err != nil {
					t.Fatal(err)
				}
				if err := c.CheckError(); err != nil {
					t.Fatal(err)
				}
				st := c.Stats()
				t.Logf("held ahead %d, sequence NAKs %d, retransmissions %d, reordered %d, lost %d", st.RCHeldAhead, st.RCSeqNaks, st.RCRetransmits, st.PacketsReordered, st.PacketsLost)
				if st.PacketsReordered == 0 {
					t.Fatal("nothing was reordered")
				}
				if (st.RCRetransmits > 0) != tc.retrans {
					t.Errorf("%d retransmissions, want some: %v", st.RCRetransmits, tc.retrans)
				}
				if tc.window == 0 && (st.RCHeldAhead != 0 || st.RCSeqNaks == 0) {
					t.Errorf("in order only: %d held, %d sequence NAKs", st.RCHeldAhead, st.RCSeqNaks)
				}
				if tc.window >= 256 && (st.RCHeldAhead == 0 || st.RCSeqNaks != 0) {
					t.Errorf("out-of-order placement: %d held, %d sequence NAKs, want some and none", st.RCHeldAhead, st.RCSeqNaks)
				}
			})
		}
	}
}

// TestOOOReadResponses: read responses that overtake one another are
// placed when the gap before them fills, with no read asked for again.
func TestOOOReadResponses(t *testing.T) {
	ops := make([]rcOp, 60)
	for i := range ops {
		ops[i] = rcOp{op: fabric.OpRead, size: 4096*2 + 50*i}
	}
	for _, window := range []int{0, 256} {
		t.Run(fmt.Sprintf("window=%d", window), func(t *testing.T) {
			c := newCluster(t, sim.Config{Nodes: 2, Seed: 4, Profile: oooProfile(t, window)})
			if err := c.SetFaults(1, sim.Faults{Reorder: 0.2}); err != nil { // node 1's responses
				t.Fatal(err)
			}
			if err := c.Run(rcMain(ops)); err != nil {
				t.Fatal(err)
			}
			st := c.Stats()
			t.Logf("held ahead %d, retransmissions %d, reordered %d", st.RCHeldAhead, st.RCRetransmits, st.PacketsReordered)
			if got := st.RCRetransmits == 0; got != (window > 0) || st.PacketsReordered == 0 {
				t.Errorf("window %d: %d retransmissions, %d reordered", window, st.RCRetransmits, st.PacketsReordered)
			}
		})
	}
}

// TestOOOPlacesWritesOnArrival: with out-of-order placement an RDMA
// Write packet that overtakes an earlier one is written to memory when it
// arrives, as the hardware places it; only its completion waits for the
// gap. Node 0 writes 64 KiB (16 packets) and then an 8-byte flag behind
// it on the same queue pair; the 5th packet of the data is held back 20
// us on its way. Node 1 polls the flag: on a NIC with out-of-order
// placement it sees the flag while the data ahead of it is still
// missing, the hazard of polling memory for a message's last byte under
// adaptive routing; in order only, the flag waits for go-back-N to bring
// the data, and the data is whole when the flag shows.
func TestOOOPlacesWritesOnArrival(t *testing.T) {
	const data = 64 << 10
	for _, tc := range []struct {
		window  int
		partial bool // the flag shows before the data is whole
	}{{256, true}, {0, false}} {
		c := newCluster(t, sim.Config{Nodes: 2, Seed: 1, Profile: oooProfile(t, tc.window)})
		plan := sim.NewPlan()
		plan.Rules = []sim.Rule{{Action: sim.Delay, Src: 0, Dst: 1, Transport: fabric.RC, Op: "WRITE", Nth: 5, Delay: 20 * fabric.Microsecond}}
		if err := c.SetPlan(plan); err != nil {
			t.Fatal(err)
		}
		missing := -1 // bytes of the data not yet there when the flag showed
		err := c.Run(func(th fabric.Thread) error {
			me := th.Node().ID()
			conn, err := fabrictest.Connect(th, 1-me, fabrictest.Options{MRBytes: data + 64, Timeout: 8, MaxInline: 64})
			if err != nil {
				return err
			}
			buf := conn.MR.Bytes()
			if me == 0 {
				for i := range data {
					buf[i] = 0xab
				}
				buf[data] = 1
				wrs := []fabric.SendWR{
					{ID: 1, Op: fabric.OpWrite, Local: conn.MR.SGE(0, data), RemoteAddr: conn.Peer.Addr, RKey: conn.Peer.RKey},
					{ID: 2, Op: fabric.OpWrite, Local: conn.MR.SGE(data, 8), RemoteAddr: conn.Peer.Addr + data, RKey: conn.Peer.RKey, Flags: fabric.Inline | fabric.Signaled},
				}
				if _, err := conn.QP.PostSend(wrs); err != nil {
					return err
				}
				if _, err := fabrictest.Await(th, conn.SCQ, 1, 100*fabric.Millisecond); err != nil {
					return err
				}
				return th.Node().OOB().Barrier("done")
			}
			for buf[data] == 0 {
				th.Wait(th.Now().Add(fabric.Millisecond), conn.MR)
				th.Sync()
			}
			missing = 0
			for _, b := range buf[:data] {
				if b != 0xab {
					missing++
				}
			}
			return th.Node().OOB().Barrier("done")
		})
		if err != nil {
			t.Fatal(err)
		}
		st := c.Stats()
		t.Logf("window %d: %d bytes missing when the flag showed; %d packets held, %d placed on arrival, %d retransmitted", tc.window, missing, st.RCHeldAhead, st.RCPlacedAhead, st.RCRetransmits)
		if (missing > 0) != tc.partial {
			t.Errorf("window %d: %d bytes of the data missing when the flag showed; want some: %v", tc.window, missing, tc.partial)
		}
		if tc.partial && (missing != 4096 || st.RCPlacedAhead == 0) {
			t.Errorf("want exactly the delayed packet's 4096 bytes missing and packets placed on arrival: %d, %d", missing, st.RCPlacedAhead)
		}
	}
}

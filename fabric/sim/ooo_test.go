package sim_test

import (
	"fmt"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
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

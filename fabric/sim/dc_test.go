package sim_test

import (
	"fmt"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/fabrictest"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// dcRun has node 0's DCI send msgs 64-byte messages, posted at once, to
// the DCTs of the nodes dest(m) names, and returns how long they took
// to complete and how many connect handshakes the DCI made.
func dcRun(t *testing.T, nodes, msgs int, dest func(m int) int) (fabric.Duration, int) {
	t.Helper()
	c, err := sim.New(sim.Config{Nodes: nodes, Seed: 1, TimeLimit: fabric.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var took fabric.Duration
	var connects int
	err = c.Run(func(th fabric.Thread) error {
		dc, err := fabrictest.DCConnect(th, fabrictest.Options{})
		if err != nil {
			return err
		}
		slots := make([]int, msgs)
		for i := range slots {
			slots[i] = i + 1
		}
		if err := fabrictest.DCPost(dc, slots...); err != nil {
			return err
		}
		if err := dc.Node.OOB().Barrier("posted"); err != nil {
			return err
		}
		if dc.Node.ID() != 0 {
			return dc.Node.OOB().Barrier("done")
		}
		wrs := make([]fabric.SendWR, msgs)
		for m := range wrs {
			wrs[m] = fabrictest.DCWR(dc, uint64(m%8+1), dest(m), fabrictest.DCKey(dest(m)))
			wrs[m].ID = uint64(m)
		}
		start := th.Now()
		if k, err := dc.DCI.PostSend(wrs); err != nil || k != msgs {
			return fmt.Errorf("PostSend: %d of %d, %v", k, msgs, err)
		}
		wcs, err := fabrictest.Await(th, dc.SCQ, msgs, fabric.Second)
		if err != nil {
			return err
		}
		for m, wc := range wcs {
			if err := fabrictest.Expect(wc, uint64(m), fabric.StatusSuccess, fabric.OpSend); err != nil {
				return err
			}
		}
		took, connects = th.Now().Sub(start), sim.DCConnects(dc.DCI)
		return dc.Node.OOB().Barrier("done")
	})
	if err != nil {
		t.Fatal(err)
	}
	return took, connects
}

// TestDCConnectCost: a DCI that sends every message to one DCT connects
// once; one that alternates between two DCTs connects before every
// message, each change waiting for the earlier messages' ACKs and a
// connect round trip, so the same messages take several times longer.
func TestDCConnectCost(t *testing.T) {
	const msgs = 16
	same, n1 := dcRun(t, 3, msgs, func(int) int { return 1 })
	alt, n2 := dcRun(t, 3, msgs, func(m int) int { return 1 + m%2 })
	if n1 != 1 || n2 != msgs {
		t.Fatalf("connects: %d to one target, %d alternating; want 1 and %d", n1, n2, msgs)
	}
	if alt < 3*same {
		t.Fatalf("%d messages alternating between two targets took %v, to one target %v: want at least 3 times as long", msgs, alt, same)
	}
	t.Logf("%d messages of 64 bytes: to one DCT %v (%v each), alternating between two %v (%v each)", msgs, same, same/msgs, alt, alt/msgs)
}

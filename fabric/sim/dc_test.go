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
		dc, sender, err := dcReady(th, fabrictest.Options{}, msgs)
		if !sender || err != nil {
			return err
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

// TestDCConnectLost: a lost connect request or response runs out the
// DCI's ACK timer, and the DCI sends the connect request again (the
// messages all arrive, the retries counted); when every connect request
// is lost, the DCI gives up after retry_cnt retries: the request that
// needed the connection completes with a retry exceeded error and the
// rest are flushed. Duplicated connect packets, and an answer that
// arrives after the retry's, change nothing.
func TestDCConnectLost(t *testing.T) {
	lose := func(op string, nth, count int) sim.Rule {
		return sim.Rule{Action: sim.Lose, Src: -1, Dst: -1, Op: op, Nth: nth, Count: count}
	}
	for _, tc := range []struct {
		name    string
		rules   []sim.Rule
		retry   int
		want    fabric.Status // the first completion's
		retries int64
	}{
		{"none lost", nil, -1, fabric.StatusSuccess, 0},
		{"first request", []sim.Rule{lose("DC_CONNECT", 1, 1)}, -1, fabric.StatusSuccess, 1},
		{"first response", []sim.Rule{lose("DC_CONNECT_ACK", 1, 1)}, -1, fabric.StatusSuccess, 1},
		{"a later request twice", []sim.Rule{lose("DC_CONNECT", 3, 2)}, -1, fabric.StatusSuccess, 2},
		{"every request", []sim.Rule{lose("DC_CONNECT", 1, 1000)}, 2, fabric.StatusRetryExceeded, 2},
		{"every request and response duplicated", []sim.Rule{
			{Action: sim.Dup, Src: -1, Dst: -1, Op: "DC_CONNECT", Rate: 1}, {Action: sim.Dup, Src: -1, Dst: -1, Op: "DC_CONNECT_ACK", Rate: 1}},
			-1, fabric.StatusSuccess, 0},
		{"first response late (after the retry's)", []sim.Rule{
			{Action: sim.Delay, Src: -1, Dst: -1, Op: "DC_CONNECT_ACK", Nth: 1, Delay: 2 * fabric.Millisecond}},
			-1, fabric.StatusSuccess, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := sim.NewPlan()
			plan.Rules, plan.RetryCnt, plan.AckTimeout = tc.rules, tc.retry, 8 // about 1 ms
			took, got, st := dcLossRun(t, plan)
			if got[0] != tc.want || st.DCConnectRetries != tc.retries {
				t.Fatalf("first completion %v, %d connect retries; want %v, %d", got[0], st.DCConnectRetries, tc.want, tc.retries)
			}
			if len(tc.rules) > 0 && st.PacketsLost+st.PacketsDuplicated+st.PacketsReordered == 0 {
				t.Fatalf("the plan hit no packet")
			}
			for m, s := range got[1:] {
				if want := map[bool]fabric.Status{true: fabric.StatusSuccess, false: fabric.StatusFlushed}[tc.want == fabric.StatusSuccess]; s != want {
					t.Fatalf("completion %d: %v, want %v", m+1, s, want)
				}
			}
			t.Logf("%s: %v, %d lost, %d duplicated, %d reordered", tc.name, took, st.PacketsLost, st.PacketsDuplicated, st.PacketsReordered)
		})
	}
}

// dcLossRun has node 0's DCI send 6 messages alternating between the
// DCTs of nodes 1 and 2 under plan, and returns how long they took, the
// status of each completion in order, and the cluster's counts.
func dcLossRun(t *testing.T, plan *sim.Plan) (fabric.Duration, []fabric.Status, sim.Stats) {
	t.Helper()
	const msgs = 6
	c, err := sim.New(sim.Config{Nodes: 3, Seed: 1, TimeLimit: fabric.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetPlan(plan); err != nil {
		t.Fatal(err)
	}
	var took fabric.Duration
	got := make([]fabric.Status, msgs)
	err = c.Run(func(th fabric.Thread) error {
		dc, sender, err := dcReady(th, fabrictest.Options{RetryCnt: 7}, msgs)
		if !sender || err != nil {
			return err
		}
		wrs := make([]fabric.SendWR, msgs)
		for m := range wrs {
			to := 1 + m%2
			wrs[m] = fabrictest.DCWR(dc, uint64(m+1), to, fabrictest.DCKey(to))
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
			if wc.ID != uint64(m+1) {
				return fmt.Errorf("completion %d names request %d", m, wc.ID)
			}
			got[m] = wc.Status
		}
		took = th.Now().Sub(start)
		return dc.Node.OOB().Barrier("done")
	})
	if err != nil {
		t.Fatal(err)
	}
	return took, got, c.Stats()
}

// dcReady connects the calling node's DC queue pairs, posts n receives
// (slots 1 to n) and meets the others once all have posted. Node 0 is the
// sender and goes on; every other node waits for it to finish (sender
// false: its part is done, or err).
func dcReady(th fabric.Thread, o fabrictest.Options, n int) (*fabrictest.DCConn, bool, error) {
	dc, err := fabrictest.DCConnect(th, o)
	if err != nil {
		return nil, false, err
	}
	slots := make([]int, n)
	for i := range slots {
		slots[i] = i + 1
	}
	if err := fabrictest.DCPost(dc, slots...); err != nil {
		return nil, false, err
	}
	if err := dc.Node.OOB().Barrier("posted"); err != nil {
		return nil, false, err
	}
	if dc.Node.ID() != 0 {
		return nil, false, dc.Node.OOB().Barrier("done")
	}
	return dc, true, nil
}

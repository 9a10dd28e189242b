package sim_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// TestPeerFailed: a node tells which other node the fault plan has crashed
// by a time, and nothing without a crash or before it.
func TestPeerFailed(t *testing.T) {
	ms := fabric.Time(fabric.Millisecond)
	for _, tc := range []struct {
		name   string
		crash  []int // nodes crashed at 1 ms and at 2 ms (-1: none)
		node   int
		at     fabric.Time
		failed int
	}{
		{"no plan", nil, 0, 5 * ms, -1},
		{"before the crash", []int{2}, 0, ms - 1, -1},
		{"at the crash", []int{2}, 0, ms, 2},
		{"the crashed node itself", []int{2}, 2, 5 * ms, -1},
		{"the earlier of two", []int{3, 1}, 0, 5 * ms, 1},
		{"only the first by then", []int{3, 1}, 0, ms, 3},
		{"the other, seen from the first", []int{3, 1}, 3, 5 * ms, 1},
	} {
		c := newCluster(t, sim.Config{Nodes: 4})
		if tc.crash != nil {
			p := sim.NewPlan()
			for i, n := range tc.crash {
				p.Rules = append(p.Rules, sim.Rule{Action: sim.Crash, Node: n, From: fabric.Time(i+1) * ms})
			}
			if err := c.SetPlan(p); err != nil {
				t.Fatal(err)
			}
		}
		f, ok := c.Local()[tc.node].(fabric.PeerFailures)
		if !ok {
			t.Fatal("a simulated node does not implement fabric.PeerFailures")
		}
		if got := f.PeerFailed(tc.at); got != tc.failed {
			t.Errorf("%s: node %d at %v: %d, want %d", tc.name, tc.node, tc.at, got, tc.failed)
		}
	}
}

// TestCrashEndsRun: a run whose every thread left is frozen by a crash
// (every thread of the other nodes has returned) ends with an error
// naming them, not a deadlock; a thread of a live node that waits for
// what cannot come is still a deadlock. A TPC-H query whose node crashed
// after its last barrier, while it freed its objects, was reported as a
// deadlock.
func TestCrashEndsRun(t *testing.T) {
	for _, tc := range []struct {
		name     string
		survivor func(th fabric.Thread) // node 0's thread
		deadlock bool
	}{
		{"the survivor returns", func(fabric.Thread) {}, false},
		{"the survivor waits for nothing that can come", func(th fabric.Thread) { th.Wait(fabric.Forever, th.Node().NewSignal()) }, true},
	} {
		c := newCluster(t, sim.Config{Nodes: 2})
		p := sim.NewPlan()
		p.Rules = []sim.Rule{{Action: sim.Crash, Node: 1, From: fabric.Time(fabric.Microsecond)}}
		if err := c.SetPlan(p); err != nil {
			t.Fatal(err)
		}
		err := c.Run(func(th fabric.Thread) error {
			if th.Node().ID() == 0 {
				tc.survivor(th)
				return nil
			}
			th.Busy(10 * fabric.Microsecond)
			th.Sync() // the crash takes effect at this call
			return nil
		})
		switch {
		case err == nil:
			t.Errorf("%s: no error", tc.name)
		case errors.Is(err, fabric.ErrDeadlock) != tc.deadlock:
			t.Errorf("%s: %v (deadlock: %v, want %v)", tc.name, err, errors.Is(err, fabric.ErrDeadlock), tc.deadlock)
		case !tc.deadlock && !strings.Contains(err.Error(), "n1/main") || !strings.Contains(err.Error(), "crash"):
			t.Errorf("%s: %v, want the crashed node's thread named", tc.name, err)
		}
	}
}

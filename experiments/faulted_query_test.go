package experiments

import (
	"errors"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
	"github.com/rdmashuffle/rdmashuffle/tpch"
)

// crashPlan crashes node at t.
func crashPlan(node int, t fabric.Duration) *sim.Plan {
	p := sim.NewPlan()
	p.Rules = []sim.Rule{{Action: sim.Crash, Node: node, From: fabric.Time(t)}}
	return p
}

// TestFaultedQueryNamesItsCause: TPC-H queries and star joins take the
// simulator's options as a shuffle does, and a failed one's error names
// what caused it as a shuffle's does: the failure of the queue pair
// first when a flushed request surfaced before it, and the faults
// injected. A node that crashed after the others had finished (while it
// freed its objects) ends the query with the crash, not a deadlock.
// Before, a query and a star join could not be given a fault, and their
// errors named neither.
func TestFaultedQueryNamesItsCause(t *testing.T) {
	us := fabric.Microsecond
	q3 := QueryConfig{Query: tpch.Q3, SF: 0.02, Design: "MEMQ/SR", Nodes: 4, Profile: "edr-cx4", Seed: 5, Payload: true}
	q10 := q3
	q10.Query, q10.Design = tpch.Q10, "SEMQ/SR"
	star := StarJoinConfig{Tables: 3, SF: 0.004, Design: "MEMQ/SR", Nodes: 4, Threads: 2, Profile: "edr-cx4", Seed: 2, Payload: true}
	remote := star
	remote.Design = IStoreDesign
	point := goldenBase()
	point.Design, point.BytesPerNode, point.Payload = "MEMQ/SR", 0, true
	point.Workload = results.Workload{Kind: results.TPCH, Query: string(tpch.Q3), SFPerNode: 0.005}
	for _, tc := range []struct {
		name   string
		run    func(SimOptions) error
		crash  *sim.Plan
		prefix string   // the error starts with it
		want   []string // and holds these
	}{
		{"query, flush after its cause", func(o SimOptions) error { _, err := RunQuerySim(q3, o); return err }, crashPlan(2, 8786*us),
			"node 3's queue pair 270 failed (its SEND to node 2 ended in transport retry exceeded); after it: ", []string{"RECV flushed", "[faults injected: node 2 crashed at 8.786ms"}},
		{"query, node crashed after the others finished", func(o SimOptions) error { _, err := RunQuerySim(q10, o); return err }, crashPlan(2, 5118*us),
			"sim: the run cannot end: the threads left (n2/main) are on nodes that crashed", []string{"[faults injected: node 2 crashed at 5.118ms"}},
		{"star join, shuffle plan", func(o SimOptions) error { _, err := RunStarJoinSim(star, o); return err }, crashPlan(2, 5839*us),
			"node 0's queue pair 258 failed (its SEND to node 2 ended in transport retry exceeded); after it: ", []string{"RECV flushed", "[faults injected: node 2 crashed at 5.839ms"}},
		{"star join, remote reads", func(o SimOptions) error { _, err := RunStarJoinSim(remote, o); return err }, crashPlan(2, 6337*us),
			"n0/istore-worker2: ", []string{"RDMA_READ transport retry exceeded", "[faults injected: node 2 crashed at 6.337ms"}},
		{"TPC-H point", func(o SimOptions) error { _, err := RunSim(point, o); return err }, crashPlan(1, 1000*us),
			"", []string{"node 1 crashed", "[faults injected: node 1 crashed at 1.000ms"}},
	} {
		err := tc.run(SimOptions{Plan: tc.crash})
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		msg := err.Error()
		if !strings.HasPrefix(msg, tc.prefix) || errors.Is(err, fabric.ErrDeadlock) || errors.Is(err, sim.ErrVerbsUsage) {
			t.Errorf("%s: %v\nwant it to start with %q", tc.name, err, tc.prefix)
		}
		for _, w := range tc.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: %v\nlacks %q", tc.name, err, w)
			}
		}
	}
}

// TestQueryChecker: a query runs with the verbs-usage checker as a shuffle
// does (or without it, and its record says so).
func TestQueryChecker(t *testing.T) {
	cfg := QueryConfig{Query: tpch.Q4, SF: 0.01, Design: "MEMQ/SR", Nodes: 3, Profile: "edr-cx4", Seed: 5}
	for _, tc := range []struct {
		noCheck bool
		want    string
	}{{false, ""}, {true, "off"}} {
		var findings int
		rec, err := RunQuerySim(cfg, SimOptions{NoCheck: tc.noCheck, Inspect: func(c *sim.Cluster) { findings = len(c.Findings()) }})
		if err != nil {
			t.Fatalf("checker off %v: %v", tc.noCheck, err)
		}
		if rec.VerbsCheck != tc.want {
			t.Errorf("checker off %v: verbs_check %q, want %q", tc.noCheck, rec.VerbsCheck, tc.want)
		}
		// MQ/SR sizes its send completion queue for the signaled
		// requests only: the checker's warning, and only the checker's.
		if on := !tc.noCheck; on != (findings > 0) {
			t.Errorf("checker on %v: %d findings", on, findings)
		}
	}
}

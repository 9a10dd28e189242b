package netbuild_test

import (
	"maps"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/netbuild"
	"github.com/rdmashuffle/rdmashuffle/fabric/netspec"
	"github.com/rdmashuffle/rdmashuffle/fabric/perftest"
	"github.com/rdmashuffle/rdmashuffle/fabric/route"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
	"github.com/rdmashuffle/rdmashuffle/fabric/topo"
)

// oooOut is what oooRun returns: the benchmark's result, the counters,
// the trace hash and the kinds of the verbs-usage checker's findings.
type oooOut struct {
	res   *perftest.Result
	st    sim.Stats
	trace uint64
	kinds map[sim.FindingKind]bool
}

// oooRun runs cfg on a two-level tree of 8-port switches under spec, on
// hdr-cx6 with its out-of-order window set to window, with plan's
// faults if any.
func oooRun(t *testing.T, s netspec.Spec, nodes, window int, cfg perftest.Config, plan *sim.Plan) oooOut {
	t.Helper()
	p, err := sim.LoadProfile("hdr-cx6")
	if err != nil {
		t.Fatal(err)
	}
	p.NIC.OOOWindow = window
	s.Kind, s.Radix, s.Levels = netspec.FatTree, 8, 2
	b, err := netbuild.Build(s, nodes, p, 1)
	if err != nil {
		t.Fatal(err)
	}
	c, err := sim.New(sim.Config{Nodes: nodes, Profile: p, Seed: 1, SizeOnly: true, Fabric: b.Fabric, TimeLimit: 10 * fabric.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if plan != nil {
		if err := c.SetPlan(plan); err != nil {
			t.Fatal(err)
		}
	}
	if err := cfg.Normalize(nodes); err != nil {
		t.Fatal(err)
	}
	res, err := perftest.Run(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[sim.FindingKind]bool{}
	for _, f := range c.Findings() {
		kinds[f.Kind] = true
	}
	return oooOut{res, c.Stats(), c.TraceHash(), kinds}
}

// TestOOOAdaptiveRC: RC all-to-all on a two-level tree routed
// adaptively for every transport. A NIC with out-of-order placement
// (hdr-cx6) takes the packets that overtake others on another spine: no
// sequence NAK, no retransmission, and about static ftree routing's
// bandwidth. Without it each overtaking packet starts go-back-N and the
// bandwidth collapses. The same seed gives the same trace; a packet lost
// under out-of-order placement is recovered by the ACK timer.
func TestOOOAdaptiveRC(t *testing.T) {
	const nodes = 16
	cfg := perftest.Config{Test: "alltoall_bw", Size: 65536, Iters: 20}
	adaptive := netspec.Spec{Engine: route.MinHop, Adaptive: true, AdaptiveRC: true}
	static := netspec.Spec{Engine: route.FTree}
	ooo := oooRun(t, adaptive, nodes, 256, cfg, nil)
	again := oooRun(t, adaptive, nodes, 256, cfg, nil)
	none := oooRun(t, adaptive, nodes, 0, cfg, nil)
	ftree := oooRun(t, static, nodes, 256, cfg, nil)
	st, stNone := ooo.st, none.st
	t.Logf("adaptive-rc, out-of-order placement: %.1f Gb/s (held %d, sequence NAKs %d, retransmissions %d); in order only: %.1f Gb/s (sequence NAKs %d, retransmissions %d); static ftree %.1f Gb/s",
		ooo.res.BWAvgGbps, st.RCHeldAhead, st.RCSeqNaks, st.RCRetransmits, none.res.BWAvgGbps, stNone.RCSeqNaks, stNone.RCRetransmits, ftree.res.BWAvgGbps)
	if st.RCHeldAhead == 0 || st.RCSeqNaks != 0 || st.RCRetransmits != 0 {
		t.Errorf("out-of-order placement: %d held, %d sequence NAKs, %d retransmissions; want some held and no NAK or retransmission", st.RCHeldAhead, st.RCSeqNaks, st.RCRetransmits)
	}
	if stNone.RCRetransmits == 0 || stNone.RCHeldAhead != 0 {
		t.Errorf("in order only: %d retransmissions, %d held; want go-back-N", stNone.RCRetransmits, stNone.RCHeldAhead)
	}
	if !(ooo.res.BWAvgGbps > 2*none.res.BWAvgGbps && ooo.res.BWAvgGbps > 0.95*ftree.res.BWAvgGbps) {
		t.Errorf("all-to-all: %.1f Gb/s with out-of-order placement, %.1f without, %.1f static", ooo.res.BWAvgGbps, none.res.BWAvgGbps, ftree.res.BWAvgGbps)
	}
	if ooo.trace != again.trace {
		t.Errorf("same seed, trace hashes %x and %x", ooo.trace, again.trace)
	}
	// perftest reuses its buffers (the checker says so); out-of-order
	// placement adds no other finding.
	if !maps.Equal(ooo.kinds, ftree.kinds) {
		t.Errorf("checker findings %v with out-of-order placement, %v statically routed", ooo.kinds, ftree.kinds)
	}

	// The 20th packet from node 0 to node 5 is lost on its way.
	plan := sim.NewPlan()
	plan.AckTimeout = 8 // 1 ms
	plan.Rules = []sim.Rule{{Action: sim.Lose, Src: 0, Dst: 5, Nth: 20}}
	lost := oooRun(t, adaptive, nodes, 256, cfg, plan)
	t.Logf("one packet lost: %.1f Gb/s, %d lost, %d retransmissions, %d held", lost.res.BWAvgGbps, lost.st.PacketsLost, lost.st.RCRetransmits, lost.st.RCHeldAhead)
	if lost.st.PacketsLost != 1 || lost.st.RCRetransmits == 0 || lost.res.BWAvgGbps >= ooo.res.BWAvgGbps {
		t.Errorf("one loss: %d lost, %d retransmissions, %.1f Gb/s", lost.st.PacketsLost, lost.st.RCRetransmits, lost.res.BWAvgGbps)
	}
}

// TestOOOHotPermutation: four flows from one leaf to hosts that static
// ftree routing sends up the same spine share one uplink; routed
// adaptively, with out-of-order placement, each gets about the link.
func TestOOOHotPermutation(t *testing.T) {
	cfg := perftest.Config{Test: "write_bw", Size: 65536, Iters: 100}
	place := topo.Placement{Kind: topo.HostList, Hosts: []string{"host-0", "host-4", "host-1", "host-8", "host-2", "host-12", "host-3", "host-16"}}
	var bw [2]float64
	for i, tc := range []struct {
		name string
		s    netspec.Spec
	}{
		{"static ftree", netspec.Spec{Engine: route.FTree, Hosts: 32, Placement: place}},
		{"adaptive-rc", netspec.Spec{Engine: route.MinHop, Adaptive: true, AdaptiveRC: true, Hosts: 32, Placement: place}},
	} {
		out := oooRun(t, tc.s, 8, 256, cfg, nil)
		bw[i] = out.res.BWAvgGbps
		t.Logf("%s: %.1f Gb/s per pair, %d retransmissions", tc.name, bw[i], out.st.RCRetransmits)
		if out.st.RCRetransmits != 0 {
			t.Errorf("%s: %d retransmissions", tc.name, out.st.RCRetransmits)
		}
	}
	if bw[1] < 2*bw[0] {
		t.Errorf("hot permutation: adaptive-rc %.1f Gb/s, static ftree %.1f", bw[1], bw[0])
	}
}

package netbuild_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric/netbuild"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/fabrictest"
	"github.com/rdmashuffle/rdmashuffle/fabric/netspec"
	"github.com/rdmashuffle/rdmashuffle/fabric/perftest"
	"github.com/rdmashuffle/rdmashuffle/fabric/route"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
	"github.com/rdmashuffle/rdmashuffle/fabric/topo"
)

func profile(t *testing.T) *sim.Profile {
	t.Helper()
	p, err := sim.LoadProfile("edr-cx4")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func cluster(t *testing.T, nodes int, b *netbuild.Built, seed uint64) *sim.Cluster {
	t.Helper()
	c, err := sim.New(sim.Config{Nodes: nodes, Profile: profile(t), Seed: seed, SizeOnly: true, Fabric: b.Fabric, TimeLimit: 10 * fabric.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func build(t *testing.T, s netspec.Spec, nodes int) *netbuild.Built {
	t.Helper()
	b, err := netbuild.Build(s, nodes, profile(t), 1)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sendBW runs perftest's send_bw (client 2i to server 2i+1) and returns
// the mean bandwidth per pair, Gb/s.
func sendBW(t *testing.T, c *sim.Cluster, nodes int) float64 {
	t.Helper()
	cfg := perftest.Config{Test: "write_bw", Size: 65536, Iters: 200}
	if err := cfg.Normalize(nodes); err != nil {
		t.Fatal(err)
	}
	res, err := perftest.Run(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res.BWAvgGbps
}

// With every pair's two nodes on different leaves, the pairs' traffic all
// crosses the leaves' uplinks: at 2:1 oversubscription each pair gets
// half of what it gets at 1:1.
func TestOversubscriptionHalvesCrossLeafCeiling(t *testing.T) {
	const nodes = 8 // radix 8: 4 hosts on each of 2 leaves
	rr := topo.Placement{Kind: topo.RoundRobin}
	full := build(t, netspec.Spec{Kind: netspec.FatTree, Radix: 8, Levels: 2, Engine: route.FTree, Placement: rr}, nodes)
	over := build(t, netspec.Spec{Kind: netspec.FatTree, Radix: 8, Levels: 2, Oversub: 2, Engine: route.FTree, Placement: rr}, nodes)
	for r, h := range full.Fabric.Hosts {
		if r%2 == 1 && full.Fabric.Topology.Hosts[h].Switch == full.Fabric.Topology.Hosts[full.Fabric.Hosts[r-1]].Switch {
			t.Fatalf("pair %d-%d is on one leaf: the placement does not cross leaves", r-1, r)
		}
	}
	a := sendBW(t, cluster(t, nodes, full, 1), nodes)
	b := sendBW(t, cluster(t, nodes, over, 1), nodes)
	single := sendBW(t, cluster(t, nodes, &netbuild.Built{}, 1), nodes)
	t.Logf("write_bw per pair: single switch %.2f, fat tree 1:1 %.2f, 2:1 %.2f Gb/s (ratio %.3f)", single, a, b, b/a)
	if a < 0.97*single {
		t.Errorf("a non-blocking tree gives %.2f Gb/s per pair, the single switch %.2f", a, single)
	}
	if r := b / a; r < 0.45 || r > 0.55 {
		t.Errorf("2:1 oversubscription gives %.3f of the 1:1 bandwidth, want about 0.5", r)
	}
}

// flows runs UD streams: node i sends msgs datagrams of 4 KiB to to[i]
// (itself: none); receivers repost. It returns when each flow's receiver
// got its last datagram, minus the start (0 for nodes that send nothing
// or whose receiver does not count).
func flows(t *testing.T, c *sim.Cluster, to []int, msgs int, counted map[int]bool, sl ...uint8) []fabric.Duration {
	t.Helper()
	took := make([]fabric.Duration, len(to))
	err := c.Run(func(th fabric.Thread) error {
		me := th.Node().ID()
		conn, err := fabrictest.Connect(th, to[me], fabrictest.Options{Type: fabric.UD, MRBytes: 8192 + 64*4200, SendWR: 128, RecvWR: 64, CQDepth: 512})
		if err != nil {
			return err
		}
		if me < len(sl) && sl[me] != 0 { // this sender's packets on another service level
			a := conn.Peer.Address()
			a.SL = sl[me]
			if conn.AH, err = conn.PD.CreateAH(a); err != nil {
				return err
			}
		}
		from := -1 // the sender this node counts
		for i, d := range to {
			if d == me && i != me && counted[i] {
				from = i
			}
		}
		if from >= 0 {
			var wrs []fabric.RecvWR
			for k := 0; k < 64; k++ {
				wrs = append(wrs, fabric.RecvWR{ID: uint64(k), Local: conn.MR.SGE(8192+k*4200, 4200)})
			}
			if _, err := conn.QP.PostRecv(wrs); err != nil {
				return err
			}
		}
		if err := th.Node().OOB().Barrier("go"); err != nil {
			return err
		}
		start := th.Now()
		sent, acked, got := 0, 0, 0
		wcs := make([]fabric.WC, 64)
		for (to[me] != me && acked < msgs) || (from >= 0 && got < msgs) {
			for to[me] != me && sent < msgs && sent-acked < 64 {
				wr := fabric.SendWR{ID: uint64(sent), Op: fabric.OpSend, Local: conn.MR.SGE(0, 4096), AH: conn.AH, RemoteQPN: conn.Peer.QPN, QKey: 0x11111111}
				if sent%16 == 15 || sent == msgs-1 {
					wr.Flags = fabric.Signaled
				}
				if _, err := conn.QP.PostSend([]fabric.SendWR{wr}); err != nil {
					return err
				}
				sent++
			}
			n, err := conn.SCQ.Poll(wcs)
			if err != nil {
				return err
			}
			for _, wc := range wcs[:n] {
				acked = int(wc.ID) + 1
			}
			m, err := conn.RCQ.Poll(wcs)
			if err != nil {
				return err
			}
			for _, wc := range wcs[:m] {
				got++
				if _, err := conn.QP.PostRecv([]fabric.RecvWR{{ID: wc.ID, Local: conn.MR.SGE(8192+int(wc.ID)*4200, 4200)}}); err != nil {
					return err
				}
				if got == msgs {
					took[from] = th.Now().Sub(start)
				}
			}
			if n == 0 && m == 0 {
				th.Wait(th.Now().Add(fabric.Millisecond), conn.SCQ, conn.RCQ)
			}
		}
		return th.Node().OOB().Barrier("done")
	})
	if err != nil {
		t.Fatal(err)
	}
	return took
}

// A hot spot fills the buffers on its way: a victim flow that shares a
// link with traffic to the hot spot (but not the hot spot's own link) is
// slowed, as tree saturation in a real fabric does.
func TestHotSpotSlowsVictim(t *testing.T) {
	const nodes = 8
	// Radix 8 at 2:1: 4 hosts and 2 uplinks per leaf, 2 leaves, 2 spines,
	// so two destinations of a leaf share a spine.
	b := build(t, netspec.Spec{Kind: netspec.FatTree, Radix: 8, Levels: 2, Oversub: 2, Engine: route.FTree}, nodes)
	tp, tb := b.Fabric.Topology, b.Fabric.Tables
	leafA, leafB := tp.Hosts[0].Switch, tp.Hosts[4].Switch
	// Hot spot h = 4 (leaf B); s1 = 0 (leaf A) and s2 = 5 (leaf B) send to
	// it; the victim 1 (leaf A) sends to the other host of leaf B whose
	// packets leave leaf A by the same uplink as the hot spot's.
	h, s1, s2, v := 4, 0, 5, 1
	w := -1
	for d := 6; d < 8; d++ {
		if tb.Port(leafA, d) == tb.Port(leafA, h) {
			w = d
		}
	}
	if w < 0 {
		t.Fatalf("no host of leaf %d shares leaf %d's uplink to host %d: %v", leafB, leafA, h, tb.Out[leafA])
	}
	idle := func() []int {
		to := make([]int, nodes)
		for i := range to {
			to[i] = i
		}
		return to
	}
	alone := idle()
	alone[v] = w
	with := idle()
	with[v], with[s1], with[s2] = w, h, h
	const msgs = 2000
	count := map[int]bool{v: true}
	a := flows(t, cluster(t, nodes, b, 1), alone, msgs, count)[v]
	c := flows(t, cluster(t, nodes, b, 1), with, msgs, count)[v]
	t.Logf("victim %d->%d: alone %v, beside the hot spot %v (%.2fx)", v, w, a, c, c.Seconds()/a.Seconds())
	if c.Seconds() < 1.3*a.Seconds() {
		t.Errorf("the victim took %v beside the hot spot and %v alone: no tree saturation", c, a)
	}
	// Control: a victim on a path the hot-spot traffic does not use is
	// not slowed.
	other := idle()
	other[s1], other[s2] = h, h
	other[2] = 3 // within leaf A, away from the hot spot's links
	count2 := map[int]bool{2: true}
	base := flows(t, cluster(t, nodes, b, 1), func() []int { to := idle(); to[2] = 3; return to }(), msgs, count2)[2]
	d := flows(t, cluster(t, nodes, b, 1), other, msgs, count2)[2]
	if d.Seconds() > 1.05*base.Seconds() {
		t.Errorf("a flow within leaf A took %v beside the hot spot, %v alone", d, base)
	}
}

// Same network, configuration and seed: the same trace, bit for bit.
func TestMultiSwitchDeterministic(t *testing.T) {
	for _, s := range []netspec.Spec{
		{Kind: netspec.FatTree, Radix: 8, Engine: route.MinHop},
		{Kind: netspec.FatTree, Radix: 8, Engine: route.Random, Placement: topo.Placement{Kind: topo.Random}},
		{Kind: netspec.FatTree, Radix: 8, Adaptive: true, AdaptiveRC: true},
		{Kind: netspec.FatTree, Radix: 8, VLs: 4},
	} {
		var hashes []uint64
		for range 2 {
			c := cluster(t, 24, build(t, s, 24), 3)
			cfg := perftest.Config{Test: "alltoall_bw", Size: 8192, Iters: 20}
			if err := cfg.Normalize(24); err != nil {
				t.Fatal(err)
			}
			if _, err := perftest.Run(c, cfg); err != nil {
				t.Fatalf("%s: %v", s.String(), err)
			}
			hashes = append(hashes, c.TraceHash())
		}
		if hashes[0] != hashes[1] {
			t.Errorf("%s: trace hashes %x and %x", s.String(), hashes[0], hashes[1])
		}
	}
}

func TestBuildRefusals(t *testing.T) {
	p := profile(t)
	for _, tc := range []struct {
		name string
		s    netspec.Spec
		n    int
		want error
	}{
		{"hosts below nodes", netspec.Spec{Kind: netspec.FatTree, Radix: 8, Hosts: 4}, 8, netspec.ErrSpec},
		{"too many for the tree", netspec.Spec{Kind: netspec.FatTree, Radix: 4, Levels: 2}, 9, topo.ErrTooLarge},
		{"list of wrong length", netspec.Spec{Kind: netspec.FatTree, Radix: 8, Placement: topo.Placement{Kind: topo.HostList, Hosts: []string{"0"}}}, 2, topo.ErrPlacement},
		{"missing file", netspec.Spec{Kind: netspec.File, Path: "testdata/none.txt"}, 2, nil},
	} {
		_, err := netbuild.Build(tc.s, tc.n, p, 1)
		if err == nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	iw, err := sim.LoadProfile("iwarp-1g")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := netbuild.Build(netspec.Spec{Kind: netspec.FatTree}, 4, iw, 1); !errors.Is(err, netspec.ErrSpec) {
		t.Errorf("a fat tree of a profile with no switch generation: %v", err)
	}
}

// The packet-level simulation of explore bench ebb agrees with the
// flow-level estimate from the tables alone (route.EstimateEBB): two
// models of static routing, one with every buffer and credit, one with
// nothing but cable sharing, on a three-level tree where routing matters.
func TestEBBMatchesFlowEstimate(t *testing.T) {
	if testing.Short() {
		t.Skip("64-node ebb runs")
	}
	for _, e := range []route.Engine{route.MinHop, route.FTree} {
		b := build(t, netspec.Spec{Kind: netspec.FatTree, Radix: 8, Engine: e}, 64)
		cfg := perftest.Config{Test: "ebb", Iters: 10}
		if err := cfg.Normalize(64); err != nil {
			t.Fatal(err)
		}
		res, err := perftest.Run(cluster(t, 64, b, 1), cfg)
		if err != nil {
			t.Fatal(err)
		}
		est, err := route.EstimateEBB(b.Fabric.Topology, b.Fabric.Tables, b.Fabric.Hosts, 40, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: simulated ebb %.3f, estimated from cable sharing %.3f", e, res.EBB, est)
		if d := res.EBB - est; d < -0.06 || d > 0.06 {
			t.Errorf("%s: simulated ebb %.3f, flow-level estimate %.3f", e, res.EBB, est)
		}
	}
}

// The packet-level shift benchmark (explore bench shift_bw) sees, stage
// by stage, what the tables predict (route.Analyze): on a three-level
// tree routed by minhop, whose shift stages put up to 4 flows on one
// cable, a stage's slowest node gets one pair's bandwidth over the most
// flows a cable of the stage carries, and a stage free of conflicts gets
// what one pair gets alone.
func TestShiftStagesMatchTables(t *testing.T) {
	if testing.Short() {
		t.Skip("a 64-node shift over every stage")
	}
	b := build(t, netspec.Spec{Kind: netspec.FatTree, Radix: 8, Engine: route.MinHop}, 64)
	a, err := route.Analyze(b.Fabric.Topology, b.Fabric.Tables, b.Fabric.Hosts, 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg := perftest.Config{Test: "shift_bw", Size: 256 << 10}
	if err := cfg.Normalize(64); err != nil {
		t.Fatal(err)
	}
	res, err := perftest.Run(cluster(t, 64, b, 1), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.ShiftStages) != 63 || len(a.PerStage) != 63 || a.ShiftWorst < 3 {
		t.Fatalf("%d stages run, %d analysed, worst cable %d flows: want 63, 63 and a tree where routing matters", len(res.ShiftStages), len(a.PerStage), a.ShiftWorst)
	}
	for i, st := range res.ShiftStages {
		want := a.PerStage[i]
		if st.Distance != want.Distance {
			t.Fatalf("stage %d: distance %d run, %d analysed", i, st.Distance, want.Distance)
		}
		if got, exp := st.MinGbps/res.PairGbps, 1/float64(want.Worst); got < 0.9*exp || got > 1.1*exp {
			t.Errorf("distance %d: slowest node at %.3f of one pair, the tables put %d flows on a cable (%.3f)", st.Distance, got, want.Worst, exp)
		}
	}
}

// vlCase: a two-level tree of 4-port switches at 2:1 (two hosts and one
// uplink per leaf), nodes 0 and 2 on leaf 0 and nodes 1 and 3 on leaf 1,
// so that the flows 0->1 and 2->3 share leaf 0's one uplink.
func vlCase(t *testing.T, vls int, arb sim.VLArbitration) *sim.Cluster {
	t.Helper()
	b := build(t, netspec.Spec{Kind: netspec.FatTree, Radix: 4, Levels: 2, Oversub: 2, Engine: route.FTree, VLs: vls,
		Placement: topo.Placement{Kind: topo.HostList, Hosts: []string{"host-0", "host-2", "host-1", "host-3"}}}, 4)
	b.Fabric.Arbitration = arb
	return cluster(t, 4, b, 1)
}

// VL arbitration shares a link by the tables' weights: 3:1 in 64-byte
// units gives the VL 0 flow three packets for every one of the VL 1 flow,
// so it finishes at about two thirds of the other's time; the default
// tables (VL 0 high priority, one packet then a low one) alternate.
func TestVLArbitrationWeights(t *testing.T) {
	to := []int{1, 1, 3, 3}
	count := map[int]bool{0: true, 2: true}
	const msgs = 1500
	weighted := sim.VLArbitration{Low: []sim.VLWeight{{VL: 0, Weight: 192}, {VL: 1, Weight: 64}}}
	w := flows(t, vlCase(t, 2, weighted), to, msgs, count, 0, 0, 1)
	d := flows(t, vlCase(t, 2, sim.VLArbitration{}), to, msgs, count, 0, 0, 1)
	rw, rd := w[0].Seconds()/w[2].Seconds(), d[0].Seconds()/d[2].Seconds()
	t.Logf("VL 0 flow over VL 1 flow, time to finish: weights 3:1 %v / %v = %.3f; OpenSM's defaults %v / %v = %.3f", w[0], w[2], rw, d[0], d[2], rd)
	if rw < 0.6 || rw > 0.74 {
		t.Errorf("3:1 weights: the VL 0 flow took %.3f of the VL 1 flow's time, want about 2/3", rw)
	}
	if rd < 0.95 || rd > 1.05 {
		t.Errorf("default arbitration: the flows' times differ by %.3f, want alternating packets", rd)
	}
}

// Separate lanes keep a congested flow from stalling another on the same
// links. Eight nodes on a two-level tree of 4-port switches at 2:1 (four
// leaves of two hosts, one spine): nodes 0, 3, 4 and 6 flood node 2, so
// node 2's link drains a quarter of each, and their packets fill the
// buffers on their way (tree saturation); the victim, node 1 (node 0's
// leaf-mate) to node 3 (node 2's leaf-mate), shares leaf 0's uplink and
// the spine's link to leaf 1 with that traffic but not node 2's link. On
// one VL it waits behind the hot spot's packets for credits; on a VL of
// its own it does not.
func TestVLsIsolateVictim(t *testing.T) {
	const msgs = 1500
	tree := func(vls int) *sim.Cluster {
		return cluster(t, 8, build(t, netspec.Spec{Kind: netspec.FatTree, Radix: 4, Levels: 2, Oversub: 2, Engine: route.FTree, VLs: vls}, 8), 1)
	}
	hot := []int{2, 3, 2, 2, 2, 5, 2, 7}
	idle := []int{0, 3, 2, 3, 4, 5, 6, 7}
	count := map[int]bool{1: true}
	alone := flows(t, tree(2), idle, msgs, count, 0, 1)[1]
	same := flows(t, tree(1), hot, msgs, count)[1]
	own := flows(t, tree(2), hot, msgs, count, 0, 1)[1]
	t.Logf("victim 1->3: alone %v; beside the hot spot on one VL %v (%.2fx), on a VL of its own %v (%.2fx)", alone, same, same.Seconds()/alone.Seconds(), own, own.Seconds()/alone.Seconds())
	if same.Seconds() < 2*alone.Seconds() {
		t.Errorf("on one VL the victim was hardly slowed: %v against %v alone", same, alone)
	}
	if own.Seconds() > 0.7*same.Seconds() {
		t.Errorf("its own VL did not shield the victim: %v, against %v on one VL", own, same)
	}
}

func TestVLRefusals(t *testing.T) {
	p := profile(t)
	for _, tc := range []struct {
		name string
		vls  int
		arb  sim.VLArbitration
		want string
	}{
		{"too many", 16, sim.VLArbitration{}, "at most 15"},
		{"unserved VL", 2, sim.VLArbitration{High: []sim.VLWeight{{VL: 0, Weight: 4}}}, "VL 1 has no weight"},
		{"table names a missing VL", 2, sim.VLArbitration{Low: []sim.VLWeight{{VL: 0, Weight: 4}, {VL: 1, Weight: 4}, {VL: 5, Weight: 1}}}, "names VL 5"},
	} {
		b := build(t, netspec.Spec{Kind: netspec.FatTree, Radix: 4, Levels: 2, VLs: tc.vls}, 4)
		b.Fabric.Arbitration = tc.arb
		_, err := sim.New(sim.Config{Nodes: 4, Profile: p, Fabric: b.Fabric})
		if !errors.Is(err, sim.ErrFabric) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want sim.ErrFabric saying %q", tc.name, err, tc.want)
		}
	}
}

// Adaptive routing's tie rule (switch.ar_ties): taking equally loaded
// minimal ports in turn spreads even an idle fabric's packets, so random
// bisections on a two-level tree get more of the bisection than with the
// static table's port on ties; both are deterministic.
func TestAdaptiveTiesInTurn(t *testing.T) {
	b := build(t, netspec.Spec{Kind: netspec.FatTree, Radix: 8, Levels: 2, Engine: route.MinHop, Adaptive: true}, 32)
	ebb := func(ties int) (float64, uint64) {
		p := profile(t)
		p.Switch.ARTies = ties
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
		c, err := sim.New(sim.Config{Nodes: 32, Profile: p, Seed: 1, SizeOnly: true, Fabric: b.Fabric})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		cfg := perftest.Config{Test: "ebb", Iters: 6}
		if err := cfg.Normalize(32); err != nil {
			t.Fatal(err)
		}
		res, err := perftest.Run(c, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return res.EBB, c.TraceHash()
	}
	table, h0 := ebb(0)
	turn, h1 := ebb(1)
	again, h2 := ebb(1)
	t.Logf("ebb: ties to the table's port %.3f, in turn %.3f", table, turn)
	if turn <= table+0.05 {
		t.Errorf("ties in turn %.3f, table's port %.3f: want clearly more", turn, table)
	}
	if again != turn || h2 != h1 || h1 == h0 {
		t.Errorf("not deterministic, or the rule changed nothing: %.3f/%.3f, hashes %x %x %x", turn, again, h0, h1, h2)
	}
}

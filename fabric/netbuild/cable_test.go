package netbuild_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric/netbuild"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/netspec"
	"github.com/rdmashuffle/rdmashuffle/fabric/perftest"
	"github.com/rdmashuffle/rdmashuffle/fabric/route"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
	"github.com/rdmashuffle/rdmashuffle/fabric/topo"
)

// cableCase is a two-level tree of 8-port switches with node 0 on leaf 0
// and node 1 on leaf 1, and the uplink of leaf 0 that node 1's packets
// take.
func cableCase(t *testing.T, adaptive bool) (*netbuild.Built, string, int) {
	t.Helper()
	s := netspec.Spec{Kind: netspec.FatTree, Radix: 8, Levels: 2, Hosts: 8, Engine: route.FTree, Adaptive: adaptive,
		Placement: topo.Placement{Kind: topo.HostList, Hosts: []string{"host-0", "host-4"}}}
	b := build(t, s, 2)
	leaf := b.Fabric.Topology.Hosts[0].Switch
	return b, b.Fabric.Topology.Switches[leaf].Name, b.Fabric.Tables.Port(leaf, 4)
}

func runBW(t *testing.T, c *sim.Cluster, test string, conn fabric.QPType) (*perftest.Result, error) {
	t.Helper()
	cfg := perftest.Config{Test: test, Size: 65536, Iters: 400, Conn: conn}
	if conn == fabric.UD {
		cfg.Size = 4096
		cfg.Iters = 4000
	}
	if err := cfg.Normalize(2); err != nil {
		t.Fatal(err)
	}
	return perftest.Run(c, cfg)
}

// A cable on the flow's path fails mid-run (1 ms in: after the set-up,
// whose control-path costs take about 0.5 ms, within the 2 ms of data):
// its packets are lost until the subnet manager reroutes, and RC's
// retransmission then delivers everything over another spine.
func TestCableDownRerouted(t *testing.T) {
	b, leaf, port := cableCase(t, false)
	base, err := runBW(t, cluster(t, 2, b, 1), "write_bw", fabric.RC)
	if err != nil {
		t.Fatal(err)
	}
	c := cluster(t, 2, b, 1)
	plan := sim.NewPlan()
	plan.Rules = []sim.Rule{{Action: sim.CableDown, Switch: leaf, Port: port, From: fabric.Time(1000 * fabric.Microsecond)}}
	plan.Reroute = 500 * fabric.Microsecond
	if err := c.SetPlan(plan); err != nil {
		t.Fatal(err)
	}
	res, err := runBW(t, c, "write_bw", fabric.RC)
	if err != nil {
		t.Fatalf("%v [%s]", err, c.FaultSummary())
	}
	sum := c.FaultSummary()
	t.Logf("write_bw %.2f Gb/s with the cable down at 1ms and rerouted 500us later, %.2f without; %s", res.BWAvgGbps, base.BWAvgGbps, sum)
	if c.Stats().PacketsLost == 0 || c.Stats().RCRetransmits == 0 {
		t.Errorf("nothing was lost or retransmitted: %+v", c.Stats())
	}
	if !strings.Contains(sum, "rerouted at 1.500ms (without "+leaf) {
		t.Errorf("the summary does not say when it rerouted: %s", sum)
	}
	if res.BWAvgGbps >= base.BWAvgGbps {
		t.Errorf("the fault cost nothing: %.2f against %.2f Gb/s", res.BWAvgGbps, base.BWAvgGbps)
	}
}

// Without a reroute, RC exhausts its retries on the dead path.
func TestCableDownNeverRerouted(t *testing.T) {
	b, leaf, port := cableCase(t, false)
	c := cluster(t, 2, b, 1)
	plan := sim.NewPlan()
	plan.Rules = []sim.Rule{{Action: sim.CableDown, Switch: leaf, Port: port, From: fabric.Time(200 * fabric.Microsecond)}}
	plan.Reroute = -1
	plan.RetryCnt, plan.AckTimeout = 1, 8
	if err := c.SetPlan(plan); err != nil {
		t.Fatal(err)
	}
	_, err := runBW(t, c, "write_bw", fabric.RC)
	var ce *fabric.CompletionError
	if !errors.As(err, &ce) || ce.WC.Status != fabric.StatusRetryExceeded {
		t.Fatalf("want transport retry exceeded, got %v", err)
	}
}

// Adaptive routing goes around a dead cable at once: UD datagrams take
// the other spines and none is lost.
func TestCableDownAdaptive(t *testing.T) {
	for _, adaptive := range []bool{false, true} {
		b, leaf, port := cableCase(t, adaptive)
		c := cluster(t, 2, b, 1)
		plan := sim.NewPlan()
		plan.Rules = []sim.Rule{{Action: sim.CableDown, Switch: leaf, Port: port, From: 0}}
		plan.Reroute = -1
		if err := c.SetPlan(plan); err != nil {
			t.Fatal(err)
		}
		res, err := runBW(t, c, "send_bw", fabric.UD)
		lost := c.Stats().PacketsLost
		t.Logf("adaptive %v: %v lost, err %v", adaptive, lost, err)
		if adaptive && (err != nil || lost != 0 || res.Dropped != 0) {
			t.Errorf("adaptive routing lost %d packets (err %v)", lost, err)
		}
		if !adaptive && lost == 0 {
			t.Errorf("static routing over a dead cable lost nothing")
		}
	}
}

func TestCableFaultRefusals(t *testing.T) {
	b, leaf, _ := cableCase(t, false)
	// The rules the fabric refuses wrap sim.ErrCable; a rule that is
	// malformed whatever the fabric (port 0) is refused by the plan's own
	// check, which has no sentinel: its words are all there is.
	for _, tc := range []struct {
		rule  sim.Rule
		cable bool
		want  string
	}{
		{sim.Rule{Action: sim.CableDown, Switch: "nowhere", Port: 5}, true, "no switch"},
		{sim.Rule{Action: sim.CableDown, Switch: leaf, Port: 1}, true, "not cabled to another switch"},
		{sim.Rule{Action: sim.CableDown, Switch: "#99", Port: 1}, true, "switches #0"},
		{sim.Rule{Action: sim.CableDown, Switch: leaf, Port: 0}, false, "a cable is a switch and a port"},
	} {
		c := cluster(t, 2, b, 1)
		p := sim.NewPlan()
		p.Rules = []sim.Rule{tc.rule}
		if err := c.SetPlan(p); err == nil || tc.cable && !errors.Is(err, sim.ErrCable) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error saying %q (sim.ErrCable: %v)", tc.rule, err, tc.want, tc.cable)
		}
	}
	c := cluster(t, 2, &netbuild.Built{}, 1)
	p := sim.NewPlan()
	p.Rules = []sim.Rule{{Action: sim.CableDown, Switch: "leaf-0", Port: 5}}
	if err := c.SetPlan(p); !errors.Is(err, sim.ErrCable) {
		t.Errorf("a cable fault on the single switch: %v", err)
	}
}

package netbuild_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/netbuild"
	"github.com/rdmashuffle/rdmashuffle/fabric/netspec"
	"github.com/rdmashuffle/rdmashuffle/fabric/route"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
	"github.com/rdmashuffle/rdmashuffle/fabric/topo"
)

// spineOf is the switch at the other end of port of switch s.
func spineOf(t *testing.T, tp *topo.Topology, s, port int) string {
	t.Helper()
	pe := tp.Switches[s].Ports[port-1]
	if pe.Kind != topo.ToSwitch {
		t.Fatalf("port %d of %s is not cabled to a switch", port, tp.Switches[s].Name)
	}
	return tp.Switches[pe.Index].Name
}

// The spine the flow crosses fails mid-run: its packets are lost until
// the subnet manager routes around the whole switch, and RC's
// retransmission then delivers everything over another spine. With the
// spine back before the end, the tables return too.
func TestSwitchDownRerouted(t *testing.T) {
	b, _, port := cableCase(t, false)
	spine := spineOf(t, b.Fabric.Topology, b.Fabric.Topology.Hosts[0].Switch, port)
	for _, to := range []fabric.Time{0, fabric.Time(1700 * fabric.Microsecond)} {
		c := cluster(t, 2, b, 1)
		plan := sim.NewPlan()
		plan.Rules = []sim.Rule{{Action: sim.SwitchDown, Switch: spine, From: fabric.Time(1000 * fabric.Microsecond), To: to}}
		plan.Reroute = 500 * fabric.Microsecond
		if err := c.SetPlan(plan); err != nil {
			t.Fatal(err)
		}
		res, err := runBW(t, c, "write_bw", fabric.RC)
		if err != nil {
			t.Fatalf("%v [%s]", err, c.FaultSummary())
		}
		sum := c.FaultSummary()
		t.Logf("%s down from 1 ms to %v: write_bw %.2f Gb/s; %s", spine, to, res.BWAvgGbps, sum)
		if c.Stats().PacketsLost == 0 || c.Stats().RCRetransmits == 0 {
			t.Errorf("nothing was lost or retransmitted: %+v", c.Stats())
		}
		if !strings.Contains(sum, "switch-down "+spine) || !strings.Contains(sum, "rerouted at 1.500ms (without switch "+spine+")") {
			t.Errorf("the summary does not say the switch went down and when it was routed around: %s", sum)
		}
		if to > 0 && c.Now() > fabric.Time(2200*fabric.Microsecond) && !strings.Contains(sum, "rerouted at 2.200ms (all cables and switches up)") {
			t.Errorf("the spine came back at 1.7 ms, and the tables did not: %s", sum)
		}
	}
}

// A leaf that fails cuts its hosts off: the subnet manager still routes
// the rest of the fabric (here a UD stream between two other leaves,
// whose traffic crossed no switch that failed, keeps going), and RC to a
// host of the dead leaf exhausts its retries.
func TestLeafDown(t *testing.T) {
	s := netspec.Spec{Kind: netspec.FatTree, Radix: 4, Levels: 2, Hosts: 8, Engine: route.FTree,
		Placement: topo.Placement{Kind: topo.HostList, Hosts: []string{"host-0", "host-2"}}}
	b := build(t, s, 2)
	tp := b.Fabric.Topology
	dead := tp.Switches[tp.Hosts[b.Fabric.Hosts[1]].Switch].Name
	c := cluster(t, 2, b, 1)
	plan := sim.NewPlan()
	plan.Rules = []sim.Rule{{Action: sim.SwitchDown, Switch: dead, From: fabric.Time(200 * fabric.Microsecond)}}
	plan.Reroute = 100 * fabric.Microsecond
	plan.RetryCnt, plan.AckTimeout = 1, 8
	if err := c.SetPlan(plan); err != nil {
		t.Fatal(err)
	}
	_, err := runBW(t, c, "write_bw", fabric.RC)
	var ce *fabric.CompletionError
	if !errors.As(err, &ce) || ce.WC.Status != fabric.StatusRetryExceeded {
		t.Fatalf("RC to a host of a dead leaf: want transport retry exceeded, got %v [%s]", err, c.FaultSummary())
	}
	if sum := c.FaultSummary(); !strings.Contains(sum, "rerouted at 300.000us (without switch "+dead+")") {
		t.Errorf("the subnet manager did not route the rest of the fabric: %s", sum)
	}

	// Two nodes on leaves that stay up: the dead leaf costs them nothing
	// but the reroute.
	s.Placement.Hosts = []string{"host-0", "host-4"}
	b = build(t, s, 2)
	c = cluster(t, 2, b, 1)
	if err := c.SetPlan(plan); err != nil {
		t.Fatal(err)
	}
	if _, err := runBW(t, c, "send_bw", fabric.UD); err != nil || c.Stats().PacketsLost != 0 {
		t.Errorf("a stream between leaves that stayed up: %v, %d packets lost [%s]", err, c.Stats().PacketsLost, c.FaultSummary())
	}
}

func TestSwitchFaultRefusals(t *testing.T) {
	b, _, _ := cableCase(t, false)
	for _, tc := range []struct {
		sw, want string
	}{
		{"nowhere", "no switch"},
		{"#99", "switches #0"},
		{"", "no switch named"},
	} {
		c := cluster(t, 2, b, 1)
		p := sim.NewPlan()
		p.Rules = []sim.Rule{{Action: sim.SwitchDown, Switch: tc.sw}}
		if err := c.SetPlan(p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("switch %q: %v, want an error saying %q", tc.sw, err, tc.want)
		}
	}
	c := cluster(t, 2, &netbuild.Built{}, 1)
	p := sim.NewPlan()
	p.Rules = []sim.Rule{{Action: sim.SwitchDown, Switch: "#0"}}
	if err := c.SetPlan(p); !errors.Is(err, sim.ErrCable) {
		t.Errorf("a switch fault on the single switch: %v", err)
	}
}

// Every engine routes around a spine that is down (the subnet manager
// leaves switches it cannot reach out of its sweep: updn would find no
// path from the lone spine otherwise), and a fault the remaining fabric
// cannot route around (every spine down) keeps the old tables and says
// so.
func TestSwitchDownEveryEngine(t *testing.T) {
	for _, e := range route.Engines() {
		s := netspec.Spec{Kind: netspec.FatTree, Radix: 4, Levels: 2, Hosts: 8, Engine: e,
			Placement: topo.Placement{Kind: topo.HostList, Hosts: []string{"host-0", "host-4"}}}
		b := build(t, s, 2)
		c := cluster(t, 2, b, 1)
		plan := sim.NewPlan()
		plan.Rules = []sim.Rule{{Action: sim.SwitchDown, Switch: "spine-0", From: fabric.Time(500 * fabric.Microsecond)}}
		plan.Reroute = 100 * fabric.Microsecond
		if err := c.SetPlan(plan); err != nil {
			t.Fatal(err)
		}
		if _, err := runBW(t, c, "write_bw", fabric.RC); err != nil {
			t.Errorf("%s: %v [%s]", e, err, c.FaultSummary())
			continue
		}
		if sum := c.FaultSummary(); !strings.Contains(sum, "rerouted at 600.000us (without switch spine-0)") {
			t.Errorf("%s: %s", e, sum)
		}
	}
	b, _, _ := cableCase(t, false) // 8-port switches: 4 spines
	c := cluster(t, 2, b, 1)
	plan := sim.NewPlan()
	for _, sp := range []string{"spine-0", "spine-1", "spine-2", "spine-3"} {
		plan.Rules = append(plan.Rules, sim.Rule{Action: sim.SwitchDown, Switch: sp, From: fabric.Time(200 * fabric.Microsecond)})
	}
	plan.Reroute = 100 * fabric.Microsecond
	plan.RetryCnt, plan.AckTimeout = 1, 8
	if err := c.SetPlan(plan); err != nil {
		t.Fatal(err)
	}
	_, err := runBW(t, c, "write_bw", fabric.RC)
	if sum := c.FaultSummary(); err == nil || !strings.Contains(sum, "not rerouted at 300.000us, old tables kept (without switch spine-0, switch spine-1, switch spine-2, switch spine-3:") {
		t.Errorf("every spine down: %v [%s]", err, sum)
	}
}

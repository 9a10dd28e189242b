package netbuild_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/netbuild"
	"github.com/rdmashuffle/rdmashuffle/fabric/netspec"
	"github.com/rdmashuffle/rdmashuffle/fabric/perftest"
	"github.com/rdmashuffle/rdmashuffle/fabric/route"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
	"github.com/rdmashuffle/rdmashuffle/fabric/topo"
)

func link(t *testing.T, s string) topo.Link {
	t.Helper()
	l, err := topo.ParseLink(s)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// A cable's width and speed set its rate: hosts cabled at 1x (a quarter
// of the profile's 4x EDR) get a quarter of the bandwidth, and so do
// cross-leaf pairs when every cable between switches runs at 1x; hosts
// at 4x EDR, the profile's own, get what they get without a speed given.
func TestLinkWidthSetsRate(t *testing.T) {
	const nodes = 8 // radix 8: 4 hosts on each of 2 leaves, pairs across them
	rr := topo.Placement{Kind: topo.RoundRobin}
	spec := func(host, sw string) netspec.Spec {
		s := netspec.Spec{Kind: netspec.FatTree, Radix: 8, Levels: 2, Engine: route.FTree, Placement: rr}
		if host != "" {
			s.HostLink = link(t, host)
		}
		if sw != "" {
			s.SwitchLink = link(t, sw)
		}
		return s
	}
	base := sendBW(t, cluster(t, nodes, build(t, spec("", ""), nodes), 1), nodes)
	for _, tc := range []struct {
		host, sw string
		want     float64 // of base
	}{
		{"4xEDR", "4xEDR", 1},
		{"1xEDR", "", 0.25},
		{"2xEDR", "", 0.5},
		{"", "1xEDR", 0.25},
		{"", "4xFDR", 14.0625 / 25.78125},
	} {
		bw := sendBW(t, cluster(t, nodes, build(t, spec(tc.host, tc.sw), nodes), 1), nodes)
		t.Logf("hosts %q, switch cables %q: %.2f Gb/s per pair (%.3f of %.2f)", tc.host, tc.sw, bw, bw/base, base)
		if r := bw / base; r < 0.97*tc.want || r > 1.03*tc.want {
			t.Errorf("hosts %q, switch cables %q: %.3f of the profile's rate, want %.3f", tc.host, tc.sw, r, tc.want)
		}
	}
}

// A cable of the profile's own width and speed changes nothing: the run
// is the same, event for event, as with no speed given.
func TestProfileSpeedIsIdentical(t *testing.T) {
	const nodes = 8
	run := func(host string) (fabric.Time, sim.Stats) {
		s := netspec.Spec{Kind: netspec.FatTree, Radix: 4, Engine: route.MinHop}
		if host != "" {
			s.HostLink, s.SwitchLink = link(t, host), link(t, host)
		}
		c := cluster(t, nodes, build(t, s, nodes), 3)
		cfg := perftest.Config{Test: "alltoall_bw", Size: 16384, Iters: 4}
		if err := cfg.Normalize(nodes); err != nil {
			t.Fatal(err)
		}
		if _, err := perftest.Run(c, cfg); err != nil {
			t.Fatal(err)
		}
		return c.Now(), c.Stats()
	}
	t0, s0 := run("")
	t1, s1 := run("4xEDR")
	if t0 != t1 || s0.PacketsSent != s1.PacketsSent || s0.SwitchHops != s1.SwitchHops {
		t.Errorf("4xEDR cables on edr-cx4 ran to %v (%d packets, %d hops), no speeds to %v (%d, %d)", t1, s1.PacketsSent, s1.SwitchHops, t0, s0.PacketsSent, s0.SwitchHops)
	}
}

// A packet that comes in on a slow cable and leaves on a fast one leaves
// no sooner than its last byte can follow: one 4 KiB write from a host
// cabled at 1x to one at 4x takes the whole 1x serialization longer than
// between two 4x hosts (cut-through would otherwise hide most of it).
func TestSlowToFastWaitsForTail(t *testing.T) {
	lat := func(slow bool) float64 {
		b := build(t, netspec.Spec{Kind: netspec.FatTree, Radix: 4, Levels: 2, Hosts: 4, Engine: route.FTree, Placement: topo.Placement{Kind: topo.RoundRobin}}, 2)
		tp := b.Fabric.Topology
		if slow {
			h := tp.Hosts[b.Fabric.Hosts[0]]
			tp.Switches[h.Switch].Ports[h.Port-1].Link = link(t, "1xEDR")
		}
		if tp.Hosts[b.Fabric.Hosts[0]].Switch == tp.Hosts[b.Fabric.Hosts[1]].Switch {
			t.Fatal("both nodes on one leaf")
		}
		cfg := perftest.Config{Test: "write_lat", Size: 4096, Iters: 50}
		if err := cfg.Normalize(2); err != nil {
			t.Fatal(err)
		}
		res, err := perftest.Run(cluster(t, 2, b, 1), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return res.TTypicalUS
	}
	fast, slow := lat(false), lat(true)
	// A 4 KiB packet's serialization at 1x and 4x EDR (25 and 100 Gb/s),
	// headers left out: 1.31 and 0.33 us. write_lat is half a round trip,
	// and the 1x cable is crossed both ways. The first switch's latency
	// overlaps the wait for the last byte, so the difference comes out
	// about half a switch latency short of this; without the wait it
	// would be about half of it.
	want := 4096 * 8 / 25e3 * (1 - 0.25)
	t.Logf("write_lat 4 KiB: 4x to 4x %.3f us, 1x to 4x %.3f us (+%.3f, 1x serialization minus 4x %.3f)", fast, slow, slow-fast, want)
	if d := slow - fast; d < 0.9*want || d > 1.2*want {
		t.Errorf("a 1x source cable adds %.3f us to write_lat, want about %.3f (its serialization, not hidden by cut-through)", d, want)
	}
}

// A host's cable faster than the profile's port is refused, naming the
// fix; speeds=profile runs it at the profile's rate.
func TestFasterHostRefused(t *testing.T) {
	s := netspec.Spec{Kind: netspec.FatTree, Radix: 4, HostLink: link(t, "4xHDR")}
	b := build(t, s, 4)
	_, err := sim.New(sim.Config{Nodes: 4, Profile: profile(t), Seed: 1, SizeOnly: true, Fabric: b.Fabric})
	if !errors.Is(err, sim.ErrLinkRate) || !strings.Contains(err.Error(), "4xHDR") || !strings.Contains(err.Error(), "speeds=profile") {
		t.Fatalf("a 4xHDR host on edr-cx4: %v", err)
	}
	// Cables between switches may be faster than the profile's ports.
	b = build(t, netspec.Spec{Kind: netspec.FatTree, Radix: 4, SwitchLink: link(t, "4xHDR")}, 4)
	c, err := sim.New(sim.Config{Nodes: 4, Profile: profile(t), Seed: 1, SizeOnly: true, Fabric: b.Fabric})
	if err != nil {
		t.Fatalf("4xHDR cables between switches on edr-cx4: %v", err)
	}
	c.Close()
	// speeds=profile clears every speed a fabric gives; host-link, given
	// after it, still sets the hosts'.
	s = netspec.Spec{Kind: netspec.FatTree, Radix: 4, ProfileSpeeds: true, SwitchLink: link(t, "1xSDR")}
	b, err = netbuild.Build(s, 4, profile(t), 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, sw := range b.Fabric.Topology.Switches {
		for _, pe := range sw.Ports {
			if pe.Kind == topo.ToSwitch && pe.Link != link(t, "1xSDR") || pe.Kind == topo.ToHost && !pe.Link.IsZero() {
				t.Fatalf("speeds=profile switch-link=1xSDR left a cable at %q", pe.Link)
			}
		}
	}
}

// cable= sets one cable, at both ends when it joins two switches: one
// leaf-spine cable of sixteen at 1x slows a whole all-to-all, which waits
// for the flows through it; a switch or port that is not there is
// refused.
func TestOneSlowCable(t *testing.T) {
	const nodes = 16
	spec := netspec.Spec{Kind: netspec.FatTree, Radix: 8, Levels: 2, Engine: route.FTree}
	healthy := build(t, spec, nodes)
	c, err := netspec.ParseCableLink("leaf-0/5:1xEDR")
	if err != nil {
		t.Fatal(err)
	}
	spec.Cables = []netspec.CableLink{c}
	slow := build(t, spec, nodes)
	tp := slow.Fabric.Topology
	leaf, err := tp.FindSwitch("leaf-0")
	if err != nil {
		t.Fatal(err)
	}
	pe := tp.Switches[leaf].Ports[4]
	if pe.Link != link(t, "1xEDR") || tp.Switches[pe.Index].Ports[pe.Port-1].Link != pe.Link {
		t.Fatalf("cable leaf-0/5 at %q, its other end at %q", pe.Link, tp.Switches[pe.Index].Ports[pe.Port-1].Link)
	}
	all := func(b *netbuild.Built) float64 {
		cfg := perftest.Config{Test: "alltoall_bw", Size: 65536, Iters: 20}
		if err := cfg.Normalize(nodes); err != nil {
			t.Fatal(err)
		}
		res, err := perftest.Run(cluster(t, nodes, b, 1), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return res.BWAvgGbps
	}
	h, s := all(healthy), all(slow)
	t.Logf("all-to-all per node: %.1f Gb/s with every cable at 4x EDR, %.1f with leaf-0/5 at 1x (%.2f)", h, s, s/h)
	if s > 0.6*h {
		t.Errorf("one cable at a quarter of its rate cost the all-to-all only %.0f%%", 100*(1-s/h))
	}
	for _, bad := range []string{"nowhere/5:1xEDR", "leaf-0/9:1xEDR"} {
		c, err := netspec.ParseCableLink(bad)
		if err != nil {
			t.Fatal(err)
		}
		spec.Cables = []netspec.CableLink{c}
		if _, err := netbuild.Build(spec, nodes, profile(t), 1); !errors.Is(err, netspec.ErrSpec) {
			t.Errorf("cable=%s: %v", bad, err)
		}
	}
}

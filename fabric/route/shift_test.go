package route

import (
	"fmt"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric/topo"
)

// shiftMaxFlows is Analyze's worst shift stage with every host a rank,
// in order (contiguous placement).
func shiftMaxFlows(tp *topo.Topology, tb *topo.Tables) (worst, stage int) {
	hosts := make([]int, len(tp.Hosts))
	for i := range hosts {
		hosts[i] = i
	}
	a, err := Analyze(tp, tb, hosts, 0)
	if err != nil {
		panic(err)
	}
	return a.ShiftWorst, a.ShiftWorstStage
}

// TestShiftFlows checks that fat-tree routing makes every stage of the
// shift permutation congestion-free on full trees with contiguous
// placement, on the tables themselves, and logs what the other engines
// achieve: static minimum-hop routing is known to do worse.
func TestShiftFlows(t *testing.T) {
	down, up := topo.Oversubscribed(36, 2)
	cases := []struct {
		spec        topo.FatTreeSpec
		ftreeMax    int  // 0: only logged
		minhopWorse bool // minhop's worst link must carry more flows than ftree's
	}{
		// On a full two-level tree OpenSM's destination order (leaf by
		// leaf, port by port) makes minhop's port balancing send the
		// i-th host of every leaf through the i-th spine: as good as ftree.
		{topo.FatTreeSpec{Hosts: 32, Radix: 8}, 1, false},
		{topo.FatTreeSpec{Hosts: 648, Radix: 36}, 1, false},
		// Three levels: each switch balances alone, and minhop collides.
		{topo.FatTreeSpec{Hosts: 128, Radix: 8}, 1, true},
		{topo.FatTreeSpec{Hosts: 864, Radix: 36, Down: down, Up: up}, 2, false}, // 24 hosts share 12 uplinks
		{topo.FatTreeSpec{Hosts: 100, Radix: 36}, 0, false},
		{topo.FatTreeSpec{Hosts: 1024, Radix: 36}, 0, true},
	}
	if testing.Short() {
		cases = cases[:3]
	}
	for _, c := range cases {
		tp := fatTreeTopo(t, c.spec)
		worst := map[Engine]int{}
		for _, e := range Engines() {
			tb, err := Compute(tp, e, 1)
			if err != nil {
				t.Fatalf("%s on %s: %v", e, tp.Name, err)
			}
			w, k := shiftMaxFlows(tp, tb)
			worst[e] = w
			t.Logf("%-48s %-6s shift over %4d hosts: at most %2d flows on a link (first at stage %d)", tp.Name, e, len(tp.Hosts), w, k)
		}
		if c.ftreeMax > 0 && worst[FTree] > c.ftreeMax {
			t.Errorf("%s: ftree puts %d flows on a link in some shift stage, want at most %d", tp.Name, worst[FTree], c.ftreeMax)
		}
		if c.minhopWorse && worst[MinHop] <= worst[FTree] {
			t.Errorf("%s: minhop's worst link (%d flows) is no worse than ftree's (%d)", tp.Name, worst[MinHop], worst[FTree])
		}
	}
}

// TestFTreeUplinkPerHost checks the rule fat-tree routing follows on a
// two-level tree: the i-th host of a leaf is reached through the leaf's
// i-th uplink (mod the uplinks), so every other leaf sends to it up to the
// i-th spine.
func TestFTreeUplinkPerHost(t *testing.T) {
	down, up := topo.Oversubscribed(36, 2)
	for _, spec := range []topo.FatTreeSpec{
		{Hosts: 32, Radix: 8},
		{Hosts: 648, Radix: 36},
		{Hosts: 864, Radix: 36, Down: down, Up: up},
		{Hosts: 100, Radix: 36},
	} {
		tp := fatTreeTopo(t, spec)
		tb, err := Compute(tp, FTree, 0)
		if err != nil {
			t.Fatal(err)
		}
		if spec.Up == 0 {
			spec.Up = spec.Radix / 2
		}
		leaves := tp.Leaves()
		for h, host := range tp.Hosts {
			i := (host.Port - 1) % spec.Up
			for _, l := range leaves {
				if l == host.Switch {
					continue
				}
				pe := tp.Switches[l].Ports[tb.Out[l][h]-1]
				if want := fmt.Sprintf("spine-%d", i); pe.Kind != topo.ToSwitch || tp.Switches[pe.Index].Name != want {
					t.Fatalf("%s: leaf %s sends host %s (port %d of its leaf) to %v, want %s",
						tp.Name, tp.Switches[l].Name, host.Name, host.Port, pe, want)
				}
			}
		}
	}
}

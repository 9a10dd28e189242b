package figures

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/experiments/chart"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/fabric/route"
	"github.com/rdmashuffle/rdmashuffle/fabric/topo"
)

// TestTreeScaleSweeps: the trees-scale figure's points at both scales are
// the questions its doc comment lists, and no point is run twice: every
// size on both profiles for minhop and ftree, adaptive routing at every
// size (RC packets too only on HDR, MESQ/SR alone on EDR), and the
// oversubscribed, randomly placed and scheduled points at the largest
// size only.
func TestTreeScaleSweeps(t *testing.T) {
	f, err := FigureByID("trees-scale")
	if err != nil {
		t.Fatal(err)
	}
	for _, full := range []bool{false, true} {
		sws, err := f.Sweeps(full)
		if err != nil {
			t.Fatal(err)
		}
		sizes, largest, radix := []int{4, 8, 16}, 16, 4
		if full {
			sizes, largest, radix = []int{64, 256, 1024}, 1024, 0
		}
		seen := map[string]string{}
		count := map[string]int{}
		atLargest := 0
		for _, sw := range sws {
			for _, p := range sw.Points() {
				c := p.Config
				k := fmt.Sprintf("%+v", c)
				if prev, ok := seen[k]; ok {
					t.Errorf("full=%v: %s %s is also %s", full, sw.Name, p.Key, prev)
				}
				seen[k] = sw.Name + " " + p.Key
				count[sw.Name]++
				n := c.Network
				if !slices.Contains(sizes, c.Nodes) || n.IsSingle() || n.Radix != radix || n.Levels != 0 {
					t.Errorf("full=%v: %s %s: %d nodes on %q", full, sw.Name, p.Key, c.Nodes, n.String())
				}
				if c.Nodes == largest {
					atLargest++
				}
				if n.AdaptiveRC && c.Profile != "hdr-cx6" || n.Adaptive && !n.AdaptiveRC && (c.Profile != "edr-cx4" || c.Design != "MESQ/SR") {
					t.Errorf("full=%v: %s: %s adapts on %s (%q)", full, p.Key, c.Design, c.Profile, n.String())
				}
				if n.Adaptive && n.Engine != route.MinHop || !n.Adaptive && n.Engine != route.MinHop && n.Engine != route.FTree {
					t.Errorf("full=%v: %s: routing %q", full, p.Key, n.String())
				}
				if (n.Oversub > 1 || n.Placement.Kind != topo.Contiguous || strings.HasPrefix(c.Design, "HyPer")) && c.Nodes != largest {
					t.Errorf("full=%v: %s below the largest size", full, p.Key)
				}
			}
		}
		want := map[string]int{"trees-scale": 24, "trees-scale-adaptive": 6, "trees-scale-adaptive-ud": 3, "trees-scale-variants": 8, "trees-scale-hyper": 12}
		if fmt.Sprint(count) != fmt.Sprint(want) || atLargest != 31 {
			t.Errorf("full=%v: points %v (%d at %d nodes), want %v (31)", full, count, atLargest, largest, want)
		}
	}
}

// treeScaleFake runs the quick scale's points as records without
// simulating: the network of each point's configuration, and, when timed,
// per-node finish times (two nodes a leaf) with the last node a tenth
// slower.
func treeScaleFake(t *testing.T, timed bool) []results.Result {
	t.Helper()
	f, err := FigureByID("trees-scale")
	if err != nil {
		t.Fatal(err)
	}
	sws, err := f.Sweeps(false)
	if err != nil {
		t.Fatal(err)
	}
	var rs []results.Result
	for _, sw := range sws {
		for _, p := range sw.Points() {
			r, _ := figureFakeRun(p.Config)
			r.Network = p.Config.Network
			r.ThroughputGiBs = float64(p.Config.Nodes) / 8
			if timed {
				for n := range r.Nodes {
					v := 10.0
					if n == r.Nodes-1 {
						v = 11
					}
					r.NodeFinishMS, r.NodeLeaf = append(r.NodeFinishMS, v), append(r.NodeLeaf, n/2)
				}
				r.FinishSkew, r.LeafFinishMS = results.FinishSkew(r.NodeFinishMS), results.LeafMeans(r.NodeFinishMS, r.NodeLeaf)
			}
			rs = append(rs, results.Result{Key: p.Key, Record: r})
		}
	}
	return rs
}

// TestTreeScalePlots: the figure draws, per profile, throughput and skew
// against the node count with a line per design and routing, and at the
// largest size the variants, their skew, HyPer's schedule and the finish
// time by leaf; records without per-node finish times draw no skew plots.
func TestTreeScalePlots(t *testing.T) {
	f, err := FigureByID("trees-scale")
	if err != nil {
		t.Fatal(err)
	}
	names := func(ps []NamedPlot) string {
		var n []string
		for _, p := range ps {
			n = append(n, p.Name)
		}
		return strings.Join(n, " ")
	}
	ps, err := f.Plots(treeScaleFake(t, false))
	if err != nil || names(ps) != "trees-scale-edr trees-scale-hdr trees-scale-variants trees-scale-hyper" {
		t.Fatalf("untimed records: plots %q, %v", names(ps), err)
	}
	ps, err = f.Plots(treeScaleFake(t, true))
	want := "trees-scale-edr trees-scale-skew-edr trees-scale-hdr trees-scale-skew-hdr trees-scale-variants trees-scale-variants-skew trees-scale-hyper trees-scale-leaves"
	if err != nil || names(ps) != want {
		t.Fatalf("timed records: plots %q, %v", names(ps), err)
	}
	byName := map[string]chart.Spec{}
	for _, p := range ps {
		byName[p.Name] = p.Spec
		if err := chart.Write(filepath.Join(t.TempDir(), p.Name), p.Spec); err != nil {
			t.Errorf("%s: %v", p.Name, err)
		}
	}
	series := func(s chart.Spec) string {
		var n []string
		for _, x := range s.Series {
			n = append(n, fmt.Sprintf("%s:%d", x.Name, len(x.Points)))
		}
		return strings.Join(n, "|")
	}
	// The fake throughput depends on the node count alone, so the lines of
	// a profile merge into one.
	if got := series(byName["trees-scale-edr"]); got != "MESQ/SR, minhop = MESQ/SR, ftree = MEMQ/WR, minhop = MEMQ/WR, ftree = MESQ/SR, adaptive (UD only):3" {
		t.Errorf("EDR lines: %s", got)
	}
	if got := series(byName["trees-scale-hdr"]); !strings.Contains(got, "MEMQ/WR, adaptive (RC too)") {
		t.Errorf("HDR lines: %s", got)
	}
	if got := series(byName["trees-scale-variants"]); got != "minhop:4|ftree:4|adaptive:3|ftree, 2:1:4|ftree, random placement:4" {
		t.Errorf("variants: %s", got)
	}
	if got := series(byName["trees-scale-hyper"]); got != "HyPer:6|HyPer/unsched:6" {
		t.Errorf("HyPer: %s", got)
	}
	for _, s := range byName["trees-scale-skew-edr"].Series {
		for _, p := range s.Points {
			// The last node is 10% slower than the median one.
			if p.Y < 9.999 || p.Y > 10.001 {
				t.Errorf("skew %s at %v: %v%%", s.Name, p.X, p.Y)
			}
		}
	}
	leaves := byName["trees-scale-leaves"].Series
	if len(leaves) != 9 || len(leaves[0].Points) != 8 || math.Abs(leaves[0].Points[7].Y-1.05) > 1e-9 {
		t.Errorf("leaves: %s", series(byName["trees-scale-leaves"]))
	}
}

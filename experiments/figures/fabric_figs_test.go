package figures

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/experiments/chart"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
)

// TestTreeSkewPlots: the trees figure's skew plots are drawn from the
// records' per-node finish times; records made before them are left out
// and counted in the title, and with none left the plots are not made
// (rather than drawn at zero), as when redrawing older tracked records.
func TestTreeSkewPlots(t *testing.T) {
	f, err := FigureByID("trees")
	if err != nil {
		t.Fatal(err)
	}
	rs, err := results.ReadFile(filepath.Join("..", "..", "docs", "figures", "trees.jsonl"), nil)
	if err != nil || len(rs) == 0 {
		t.Fatalf("the tracked records: %v", err)
	}
	names := func(ps []NamedPlot) string {
		var n []string
		for _, p := range ps {
			n = append(n, p.Name)
		}
		return strings.Join(n, " ")
	}
	old := make([]results.Result, len(rs))
	for i, r := range rs {
		old[i] = r
		if r.Record != nil {
			c := *r.Record
			c.NodeFinishMS, c.FinishSkew, c.NodeLeaf, c.LeafFinishMS = nil, 0, nil, nil
			old[i].Record = &c
		}
	}
	ps, err := f.Plots(old)
	if err != nil || names(ps) != "trees" {
		t.Fatalf("records without finish times: plots %q, %v", names(ps), err)
	}

	// The same records with finish times: node i of a fat tree on leaf
	// i/4, the last leaf's nodes a fifth slower.
	timed := make([]results.Result, len(old))
	for i, r := range old {
		timed[i] = r
		if r.Record == nil {
			continue
		}
		c := *r.Record
		for n := range c.Nodes {
			v := 10.0
			if !c.Network.IsSingle() && n >= c.Nodes-4 {
				v = 12
			}
			c.NodeFinishMS = append(c.NodeFinishMS, v)
			if !c.Network.IsSingle() {
				c.NodeLeaf = append(c.NodeLeaf, n/4)
			}
		}
		c.FinishSkew = results.FinishSkew(c.NodeFinishMS)
		c.LeafFinishMS = results.LeafMeans(c.NodeFinishMS, c.NodeLeaf)
		timed[i].Record = &c
	}
	ps, err = f.Plots(timed)
	if err != nil || names(ps) != "trees trees-skew trees-leaves" {
		t.Fatalf("records with finish times: plots %q, %v", names(ps), err)
	}
	skew, leaves := ps[1].Spec, ps[2].Spec
	for _, s := range skew.Series {
		for _, p := range s.Points {
			want := 20.0
			if s.Name == "single switch" {
				want = 0
			}
			if math.Abs(p.Y-want) > 1e-9 {
				t.Errorf("%s %s: %v%% more, want %v", s.Name, p.Label, p.Y, want)
			}
		}
	}
	if len(leaves.Series) != 5 || len(leaves.Series[0].Points) != old[0].Record.Nodes/4 || math.Abs(leaves.Series[0].Points[len(leaves.Series[0].Points)-1].Y-1.2) > 1e-9 {
		t.Errorf("leaves plot: %+v", leaves.Series)
	}
	for _, p := range ps[1:] {
		if err := chart.Write(filepath.Join(t.TempDir(), p.Name), p.Spec); err != nil {
			t.Errorf("%s: %v", p.Name, err)
		}
	}

	// Some of each: the old ones are left out, and the title says so.
	mixed := append(append([]results.Result(nil), timed[:3]...), old[3:]...)
	ps, err = f.Plots(mixed)
	if err != nil || len(ps) < 2 || !strings.Contains(ps[1].Spec.Title, "runs without per-node times left out") {
		t.Errorf("mixed records: %q, %v", names(ps), err)
	}
}

// TestCableFigureNetworks: the trees-cable figure's networks each slow
// the cable they say, at both scales: the first leaf's first uplink
// (half the radix plus one) at 2x and 1x, once routed adaptively, and
// the first host's cable at 1x, against a tree without a slow cable.
func TestCableFigureNetworks(t *testing.T) {
	f, err := FigureByID("trees-cable")
	if err != nil {
		t.Fatal(err)
	}
	for _, full := range []bool{false, true} {
		ss, err := f.Sweeps(full)
		if err != nil {
			t.Fatal(err)
		}
		var labels []string
		for _, p := range ss[0].Points() {
			r := &results.Record{Network: p.Config.Network}
			if l := cableLabel(r); !strings.Contains(strings.Join(labels, ";"), l) {
				labels = append(labels, l)
			}
			for _, c := range p.Config.Network.Cables {
				if want := map[bool]int{false: 5, true: 19}[full]; c.Port != 1 && c.Port != want {
					t.Errorf("full %v: cable at port %d, want the first uplink %d", full, c.Port, want)
				}
			}
		}
		want := "every cable at 4x;leaf-spine cable at 2x;leaf-spine cable at 1x;leaf-spine cable at 1x, adaptive (UD);a host's cable at 1x"
		if got := strings.Join(labels, ";"); got != want || ss[0].Len() != 15 {
			t.Errorf("full %v: %d points, networks %q, want 15 and %q", full, ss[0].Len(), got, want)
		}
	}
}

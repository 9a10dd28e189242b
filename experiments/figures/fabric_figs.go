package figures

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rdmashuffle/rdmashuffle/experiments/chart"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/experiments/sweep"
	"github.com/rdmashuffle/rdmashuffle/fabric/netspec"
	"github.com/rdmashuffle/rdmashuffle/fabric/route"
	"github.com/rdmashuffle/rdmashuffle/fabric/topo"
)

// The figures of networks of switches (docs/topology.md): the designs on a
// two-level fat tree, statically routed (ftree, random), adaptively
// routed, oversubscribed 2:1, and with the nodes placed at random, against
// the single switch. No claim of the papers is about a multi-switch
// network; these figures answer the question the papers leave open.

// treeNetworks are the networks of the "trees" figure: the single switch
// and five variations of a two-level fat tree of radix-port switches (0:
// the profile's switch).
func treeNetworks(radix int) []any {
	tree := func(engine route.Engine, adaptive bool, oversub int, pl topo.Placement) netspec.Spec {
		return netspec.Spec{Kind: netspec.FatTree, Levels: 2, Radix: radix, Engine: engine, Adaptive: adaptive, Oversub: oversub, Placement: pl}
	}
	contiguous, random := topo.Placement{Kind: topo.Contiguous}, topo.Placement{Kind: topo.Random, Seed: 1}
	specs := []netspec.Spec{
		{},
		tree(route.FTree, false, 0, contiguous),
		tree(route.Random, false, 0, contiguous),
		tree(route.FTree, true, 0, contiguous),
		tree(route.FTree, false, 2, contiguous),
		tree(route.FTree, false, 0, random),
	}
	return specTexts(specs)
}

// specTexts is the networks' text forms, as a sweep varies them.
func specTexts(specs []netspec.Spec) []any {
	out := make([]any, len(specs))
	for i, s := range specs {
		out[i] = s.String()
	}
	return out
}

// treeLabel names a record's network by how it differs from a two-level
// fat tree with ftree routing, contiguous placement and no
// oversubscription.
func treeLabel(r *results.Record) string {
	s := r.Network
	if s.IsSingle() {
		return "single switch"
	}
	var parts []string
	if s.Engine != route.FTree {
		parts = append(parts, s.Engine.String()+" routing")
	}
	if s.Adaptive {
		parts = append(parts, "adaptive (UD)")
	}
	if s.Oversub > 1 {
		parts = append(parts, fmt.Sprintf("%d:1 oversubscribed", s.Oversub))
	}
	if s.Placement.Kind != topo.Contiguous {
		parts = append(parts, s.Placement.Kind.String()+" placement")
	}
	if len(parts) == 0 {
		return "fat tree, ftree"
	}
	return strings.Join(parts, ", ")
}

// treeDesigns are the designs of the "trees" figure: Liu19's recommended
// UD design and the RC designs per thread, HyPer's multiplexer with and
// without its round-robin schedule, and MPI.
var treeDesigns = []any{"MESQ/SR", "MEMQ/SR", "MEMQ/RD", "MEMQ/WR", "HyPer", "HyPer/unsched", "MPI"}

func fabricFigures() []Figure {
	byNet := func(r *results.Record) string { return treeLabel(r) }
	byDesign := func(r *results.Record) string { return r.Design }
	return []Figure{
		Figure{
			ID: "trees", X: "design",
			Title: "The designs on a two-level fat tree: static, random and adaptive routing, 2:1 oversubscription, random placement (EDR)",
			Sweeps: func(full bool) ([]*sweep.Sweep, error) {
				// Quick: 32 nodes on 8-port switches (8 leaves of 4 hosts, 4
				// spines; 2 spines at 2:1); full: 256 nodes on the profile's
				// 36-port switches (15 leaves of 18 hosts, 18 spines).
				nodes, radix := scale(full, 32, 256), scale(full, 8, 0)
				base := figBase("edr-cx4", nodes, scale(full, 2, 4), scale[int64](full, 256<<10, 1<<20))
				return sweeps(func() (*sweep.Sweep, error) {
					return sweep.NewSweep("trees", base, sweep.Vary("design", treeDesigns...), sweep.Vary("network", treeNetworks(radix)...))
				})
			},
			Plots: func(rs []results.Result) ([]NamedPlot, error) {
				recs := all(rs)
				title := "Two-level fat tree, EDR"
				if len(recs) > 0 {
					title = fmt.Sprintf("%d nodes, two-level fat tree, EDR, %d threads", recs[0].Nodes, recs[0].Threads)
				}
				plots := []NamedPlot{{"trees", chart.Spec{Title: title, XLabel: "design",
					YLabel: "receive throughput per node [GiB/s]", Kind: "bars", Series: bars(recs, byNet, byDesign, tput)}}}
				return append(plots, treeSkewPlots(recs)...), nil
			},
		},
		treeScaleFigure(),
		cableFigure(),
	}
}

// treeLeafDesign is the design whose finish times the "trees-leaves" plot
// shows leaf by leaf: an RC design, whose packets keep to their routed
// paths whatever adaptive routing does for UD.
const treeLeafDesign = "MEMQ/RD"

// treeSkewPlots are the "trees" figure's plots of skew between nodes:
// the slowest node's finish time over the median node's, per design and
// network ("trees-skew"), and, for treeLeafDesign, each leaf's mean
// finish time over the run's median node ("trees-leaves"). Records made
// before per-node finish times (results.Record.NodeFinishMS) are left
// out, and the titles say how many; with none left there is nothing to
// draw and the plots are not made (the tracked records of an older run,
// redrawn).
func treeSkewPlots(recs []*results.Record) []NamedPlot {
	var timed []*results.Record
	for _, r := range recs {
		if len(r.NodeFinishMS) > 0 {
			timed = append(timed, r)
		}
	}
	if len(timed) == 0 {
		return nil
	}
	note := ""
	if left := len(recs) - len(timed); left > 0 {
		note = fmt.Sprintf(" (%d runs without per-node times left out)", left)
	}
	byNet := func(r *results.Record) string { return treeLabel(r) }
	byDesign := func(r *results.Record) string { return r.Design }
	extra := func(r *results.Record) float64 { return 100 * (r.FinishSkew - 1) }
	plots := []NamedPlot{{"trees-skew", chart.Spec{Title: "Skew: the slowest node against the median node" + note, XLabel: "design",
		YLabel: "slowest node's finish time over the median's [% more]", Kind: "bars", Series: bars(timed, byNet, byDesign, extra)}}}
	var leafSeries []chart.Series
	for _, r := range timed {
		if r.Design != treeLeafDesign || len(r.LeafFinishMS) == 0 {
			continue
		}
		med := median(r.NodeFinishMS)
		s := chart.Series{Name: treeLabel(r)}
		for l, v := range r.LeafFinishMS {
			s.Points = append(s.Points, chart.XY{X: float64(l), Y: v / med})
		}
		leafSeries = append(leafSeries, s)
	}
	if len(leafSeries) > 0 {
		plots = append(plots, NamedPlot{"trees-leaves", chart.Spec{Title: treeLeafDesign + ": finish time by leaf switch (rack), zoomed" + note,
			XLabel: "leaf switch", YLabel: "leaf's mean finish time / the median node's", Kind: "lines", ZoomY: true, Series: leafSeries}})
	}
	return plots
}

// median is the median of xs (the mean of the middle two for an even
// count); 1 for none, so that it divides safely.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 1
	}
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	if n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[n/2]
}

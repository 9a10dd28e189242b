package figures

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dustin/go-humanize"

	"github.com/rdmashuffle/rdmashuffle/experiments/chart"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/experiments/sweep"
	"github.com/rdmashuffle/rdmashuffle/fabric/netbuild"
	"github.com/rdmashuffle/rdmashuffle/fabric/netspec"
	"github.com/rdmashuffle/rdmashuffle/fabric/route"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
	"github.com/rdmashuffle/rdmashuffle/fabric/topo"
)

// The "trees-scale" figure (docs/topology.md): the designs on fat trees as
// the cluster grows, on EDR (ConnectX-4, whose RC packets must keep their
// order) and HDR (ConnectX-6, which places RC packets out of order, so
// that RC traffic may be routed adaptively too). The full scale is 64, 256
// and 1024 nodes on the profile's switches (36 ports EDR, 40 HDR: two
// levels at 64 and 256 nodes, three at 1024); the quick scale is 4, 8 and
// 16 nodes on 4-port switches (two hosts per leaf; two levels at 4 and 8
// nodes, three at 16), so that both scales end on a three-level tree, the
// only shape on which minhop's tables differ from ftree's
// (docs/routing.md), and the quick scale stays cheap: its cost grows with
// the square of the node count, and every point is grown to steady state.
//
// Not a cross product: each sweep asks one question, and only the largest
// size carries the questions that need just one size.
//
//   - "trees-scale", routing as the tree grows: MESQ/SR and MEMQ/WR, both
//     profiles, every size, minhop and ftree (1:1, contiguous placement).
//   - "trees-scale-adaptive", "trees-scale-adaptive-ud", adaptive routing
//     (on minhop's tables, as --routing adaptive) at every size: on HDR
//     both designs with RC packets adapting too; on EDR MESQ/SR only,
//     since adaptive routing moves only UD packets there (an RC design's
//     run would be its minhop run again: its packets keep their static
//     path, and letting them adapt costs ConnectX-4 go-back-N).
//   - "trees-scale-variants", at the largest size: ftree at 2:1
//     oversubscription and ftree with the nodes placed at random, both
//     profiles and designs, against the 1:1 contiguous ftree runs above.
//   - "trees-scale-hyper", at the largest size on HDR: HyPer's round-robin
//     schedule against the same multiplexer unscheduled, under minhop,
//     ftree and adaptive routing, contiguous and random placement (a
//     schedule of shift permutations is conflict-free only where the
//     routing and placement fit it).
//
// The designs: MESQ/SR is Liu19's recommended design and a UD one, whose
// packets adapt on every profile; MEMQ/WR is the fastest RC design of the
// "trees" figure (MEMQ/SR and MEMQ/RD are within 5.2% of it on every
// network there but 2:1, where MEMQ/RD is 12% below it); HyPer and
// HyPer/unsched carry the schedule's question. MPI, the other baseline, is
// left out: it is CPU-bound at a third of the RDMA designs' rate and the
// tree's variants moved it by at most 8% from the single switch in the
// "trees" figure (2.33-2.54 GiB/s), so it would add much simulated time
// for little answer. Every record carries its per-node finish times, from
// which the skew plots are drawn.

// treeScaleDesigns are the designs of the routing and variant sweeps;
// treeScaleSchedules those of the schedule sweep.
var (
	treeScaleDesigns   = []any{"MESQ/SR", "MEMQ/WR"}
	treeScaleSchedules = []any{"HyPer", "HyPer/unsched"}
	treeScaleProfiles  = []any{"edr-cx4", "hdr-cx6"}
)

// treeScaleLeafDesign is the design whose finish times by leaf the
// "trees-scale-leaves" plot shows: the RC design, whose paths the
// routing fixes (but for adaptive routing on HDR).
const treeScaleLeafDesign = "MEMQ/WR"

// treeScaleSweeps are the figure's sweeps (see above).
func treeScaleSweeps(full bool) ([]*sweep.Sweep, error) {
	nodes := scale(full, anys(4, 8, 16), anys(64, 256, 1024))
	largest := anys(scale(full, 16, 1024))
	radix := scale(full, 4, 0)
	base := figBase("edr-cx4", 8, scale(full, 2, 4), scale[int64](full, 64<<10, 256<<10))
	hdr := base
	hdr.Profile = "hdr-cx6"
	contiguous, random := topo.Placement{Kind: topo.Contiguous}, topo.Placement{Kind: topo.Random, Seed: 1}
	net := func(engine route.Engine, adaptive, rc bool, oversub int, pl topo.Placement) any {
		s := netspec.Spec{Kind: netspec.FatTree, Radix: radix, Engine: engine, Adaptive: adaptive, AdaptiveRC: rc, Oversub: oversub, Placement: pl}
		return s.String()
	}
	minhop, ftree := net(route.MinHop, false, false, 0, contiguous), net(route.FTree, false, false, 0, contiguous)
	adaptive := net(route.MinHop, true, true, 0, contiguous)
	return sweeps(
		func() (*sweep.Sweep, error) {
			return sweep.NewSweep("trees-scale", base, sweep.Vary("profile", treeScaleProfiles...), sweep.Vary("design", treeScaleDesigns...),
				sweep.Vary("nodes", nodes...), sweep.Vary("network", minhop, ftree))
		},
		func() (*sweep.Sweep, error) {
			return sweep.NewSweep("trees-scale-adaptive", hdr, sweep.Vary("design", treeScaleDesigns...), sweep.Vary("nodes", nodes...),
				sweep.Vary("network", adaptive))
		},
		func() (*sweep.Sweep, error) {
			return sweep.NewSweep("trees-scale-adaptive-ud", base, sweep.Vary("design", "MESQ/SR"), sweep.Vary("nodes", nodes...),
				sweep.Vary("network", net(route.MinHop, true, false, 0, contiguous)))
		},
		func() (*sweep.Sweep, error) {
			return sweep.NewSweep("trees-scale-variants", base, sweep.Vary("profile", treeScaleProfiles...), sweep.Vary("design", treeScaleDesigns...),
				sweep.Vary("nodes", largest...), sweep.Vary("network", net(route.FTree, false, false, 2, contiguous), net(route.FTree, false, false, 0, random)))
		},
		func() (*sweep.Sweep, error) {
			return sweep.NewSweep("trees-scale-hyper", hdr, sweep.Vary("design", treeScaleSchedules...), sweep.Vary("nodes", largest...),
				sweep.Vary("network", minhop, ftree, adaptive, net(route.MinHop, false, false, 0, random), net(route.FTree, false, false, 0, random),
					net(route.MinHop, true, true, 0, random)))
		},
	)
}

// treeScaleLabel names a record's network by its routing, and by its
// oversubscription and placement where they are not 1:1 and contiguous.
// With which packets adapts, adaptive routing is "adaptive (UD only)" or
// "adaptive (RC too)"; without, "adaptive" (where the plot says which).
func treeScaleLabel(r *results.Record, which bool) string {
	s := r.Network
	label := s.Engine.String()
	switch {
	case s.Adaptive && !which:
		label = "adaptive"
	case s.AdaptiveRC:
		label = "adaptive (RC too)"
	case s.Adaptive:
		label = "adaptive (UD only)"
	}
	if s.Oversub > 1 {
		label += fmt.Sprintf(", %d:1", s.Oversub)
	}
	if s.Placement.Kind != topo.Contiguous {
		label += ", " + s.Placement.Kind.String() + " placement"
	}
	return label
}

// profileTag is a profile's link generation in capitals ("EDR").
func profileTag(profile string) string {
	gen, _, _ := strings.Cut(profile, "-")
	return strings.ToUpper(gen)
}

// treeRadix is the radix of a record's fat tree: its own, or its
// profile's switch's (0 if that cannot be loaded).
func treeRadix(r *results.Record) int {
	if r.Network.Radix > 0 {
		return r.Network.Radix
	}
	p, err := sim.LoadProfile(strings.TrimPrefix(r.Profile, "file:"))
	if err != nil {
		return 0
	}
	n, err := netbuild.DefaultRadix(p)
	if err != nil {
		return 0
	}
	return n
}

// pick returns the records f selects.
func pick(recs []*results.Record, f func(*results.Record) bool) []*results.Record {
	var out []*results.Record
	for _, r := range recs {
		if f(r) {
			out = append(out, r)
		}
	}
	return out
}

// withTimes are the records with per-node finish times.
func withTimes(recs []*results.Record) []*results.Record {
	return pick(recs, func(r *results.Record) bool { return len(r.NodeFinishMS) > 0 })
}

func skewPercent(r *results.Record) float64 { return 100 * (r.FinishSkew - 1) }

func treeScaleFigure() Figure {
	return Figure{
		ID: "trees-scale", X: "nodes",
		Title:  "The designs on fat trees as the cluster grows: minhop, ftree and adaptive routing, 2:1 oversubscription, random placement, HyPer's schedule (EDR, HDR)",
		Sweeps: treeScaleSweeps,
		Plots: func(rs []results.Result) ([]NamedPlot, error) {
			recs := all(rs)
			return append(treeScaleGrowthPlots(recs), treeScaleLargestPlots(recs)...), nil
		},
	}
}

// treeScaleGrowthPlots are, per profile, the throughput per node and the
// skew against the node count, one line per design and routing (1:1,
// contiguous placement): "trees-scale-edr", "trees-scale-skew-edr" and
// the like. The skew plots are left out for records without per-node
// finish times.
func treeScaleGrowthPlots(recs []*results.Record) []NamedPlot {
	nodes := func(r *results.Record) float64 { return float64(r.Nodes) }
	series := func(r *results.Record) string { return r.Design + ", " + treeScaleLabel(r, true) }
	var plots []NamedPlot
	for _, p := range treeScaleProfiles {
		sel := pick(recs, func(r *results.Record) bool {
			return r.Profile == p && slices.Contains(treeScaleDesigns, any(r.Design)) && r.Network.Oversub <= 1 && r.Network.Placement.Kind == topo.Contiguous
		})
		if len(sel) == 0 {
			continue
		}
		tag := profileTag(p.(string))
		about := fmt.Sprintf("%s, radix %d, %d threads, %s per destination", tag, treeRadix(sel[0]), sel[0].Threads, humanize.IBytes(uint64(sel[0].BytesPerPair)))
		name := "trees-scale-" + strings.ToLower(tag)
		plots = append(plots, NamedPlot{name, chart.Spec{Title: about + ": throughput", XLabel: "nodes",
			YLabel: "receive throughput per node [GiB/s]", Kind: "lines", LogX: true, Series: mergeAlike(lines(sel, series, nodes, tput))}})
		if t := withTimes(sel); len(t) > 0 {
			plots = append(plots, NamedPlot{"trees-scale-skew-" + strings.ToLower(tag), chart.Spec{Title: about + ": skew",
				XLabel: "nodes", YLabel: "slowest node's finish time over the median's [% more]", Kind: "lines", LogX: true,
				Series: mergeAlike(lines(t, series, nodes, skewPercent))}})
		}
	}
	return plots
}

// treeScaleLargestPlots are the plots of the largest size: throughput and
// skew of every network ("trees-scale-variants", "-variants-skew"),
// HyPer's schedule ("trees-scale-hyper") and treeScaleLeafDesign's finish
// time by leaf ("trees-scale-leaves").
func treeScaleLargestPlots(recs []*results.Record) []NamedPlot {
	largest := 0
	for _, r := range recs {
		largest = max(largest, r.Nodes)
	}
	at := pick(recs, func(r *results.Record) bool { return r.Nodes == largest })
	designs := pick(at, func(r *results.Record) bool { return slices.Contains(treeScaleDesigns, any(r.Design)) })
	var plots []NamedPlot
	byNet := func(r *results.Record) string { return treeScaleLabel(r, false) }
	byRun := func(r *results.Record) string { return profileTag(r.Profile) + " " + r.Design }
	if len(designs) > 0 {
		about := fmt.Sprintf("%d nodes, %d threads", largest, designs[0].Threads)
		xl := "profile and design (adaptive: UD packets only on EDR, RC too on HDR)"
		plots = append(plots, NamedPlot{"trees-scale-variants", chart.Spec{Title: about + ": routing, 2:1, random placement",
			XLabel: xl, YLabel: "receive throughput per node [GiB/s]", Kind: "bars", Series: bars(designs, byNet, byRun, tput)}})
		if t := withTimes(designs); len(t) > 0 {
			plots = append(plots, NamedPlot{"trees-scale-variants-skew", chart.Spec{Title: about + ": skew",
				XLabel: xl, YLabel: "slowest node's finish time over the median's [% more]", Kind: "bars", Series: bars(t, byNet, byRun, skewPercent)}})
		}
	}
	sched := pick(at, func(r *results.Record) bool { return slices.Contains(treeScaleSchedules, any(r.Design)) })
	if len(sched) > 0 {
		byDesign := func(r *results.Record) string { return r.Design }
		plots = append(plots, NamedPlot{"trees-scale-hyper", chart.Spec{
			Title:  fmt.Sprintf("HyPer's schedule against none (%s, %d nodes, %d threads)", profileTag(sched[0].Profile), largest, sched[0].Threads),
			XLabel: "routing and placement (adaptive: RC packets too)", YLabel: "receive throughput per node [GiB/s]", Kind: "bars", Series: bars(sched, byDesign, byNet, tput)}})
	}
	var leafSeries []chart.Series
	for _, r := range withTimes(designs) {
		if r.Design != treeScaleLeafDesign || len(r.LeafFinishMS) == 0 {
			continue
		}
		med := median(r.NodeFinishMS)
		s := chart.Series{Name: profileTag(r.Profile) + ", " + treeScaleLabel(r, true)}
		for l, v := range r.LeafFinishMS {
			s.Points = append(s.Points, chart.XY{X: float64(l), Y: v / med})
		}
		leafSeries = append(leafSeries, s)
	}
	if len(leafSeries) > 0 {
		plots = append(plots, NamedPlot{"trees-scale-leaves", chart.Spec{Title: fmt.Sprintf("%s, %d nodes: finish time by leaf (rack), zoomed", treeScaleLeafDesign, largest),
			XLabel: "leaf switch", YLabel: "leaf's mean finish time / the median node's", Kind: "lines", ZoomY: true, Series: leafSeries}})
	}
	return plots
}

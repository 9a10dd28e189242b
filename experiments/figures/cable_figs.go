package figures

import (
	"fmt"
	"strings"

	"github.com/rdmashuffle/rdmashuffle/experiments/chart"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/experiments/sweep"
	"github.com/rdmashuffle/rdmashuffle/fabric/netspec"
	"github.com/rdmashuffle/rdmashuffle/fabric/route"
	"github.com/rdmashuffle/rdmashuffle/fabric/topo"
)

// The "trees-cable" figure (docs/topology.md, "Cables of different
// speeds"): what one cable that trained below its rating costs the
// designs on a two-level fat tree. The cable between the first leaf and
// its first spine at half and a quarter of its width, at a quarter with
// adaptive routing, and the first host's own cable at a quarter, against
// a tree whose cables all run at the profile's rate.

// cableDesigns are the designs of the figure: Liu19's recommended UD
// design, the fastest RC design of the "trees" figure, and HyPer's
// round-robin schedule, which walks every node through the slow cable's
// flows in step.
var cableDesigns = []any{"MESQ/SR", "MEMQ/WR", "HyPer"}

// cableNetworks are the figure's networks on a two-level tree of
// radix-port switches (0: the profile's), ftree routing, contiguous
// placement; the first leaf's first uplink is port radix/2+1.
func cableNetworks(radix, uplink int) []any {
	tree := func(adaptive bool, cables ...string) netspec.Spec {
		s := netspec.Spec{Kind: netspec.FatTree, Levels: 2, Radix: radix, Engine: route.FTree, Adaptive: adaptive,
			Placement: topo.Placement{Kind: topo.Contiguous}}
		for _, c := range cables {
			cl, err := netspec.ParseCableLink(c)
			if err != nil {
				panic(err) // the figure's own constants
			}
			s.Cables = append(s.Cables, cl)
		}
		return s
	}
	up := fmt.Sprintf("leaf-0/%d", uplink)
	specs := []netspec.Spec{
		tree(false),
		tree(false, up+":2xEDR"),
		tree(false, up+":1xEDR"),
		tree(true, up+":1xEDR"),
		tree(false, "leaf-0/1:1xEDR"),
	}
	return specTexts(specs)
}

// cableLabel names a record's network by its slow cable.
func cableLabel(r *results.Record) string {
	s := r.Network
	if len(s.Cables) == 0 {
		return "every cable at 4x"
	}
	var parts []string
	for _, c := range s.Cables {
		what := "leaf-spine cable"
		if c.Port == 1 {
			what = "a host's cable"
		}
		parts = append(parts, fmt.Sprintf("%s at %dx", what, c.Link.Width))
	}
	if s.Adaptive {
		parts = append(parts, "adaptive (UD)")
	}
	return strings.Join(parts, ", ")
}

func cableFigure() Figure {
	byNet := func(r *results.Record) string { return cableLabel(r) }
	byDesign := func(r *results.Record) string { return r.Design }
	return Figure{
		ID: "trees-cable", X: "design",
		Title: "One slow cable: a leaf-spine cable at half or a quarter of its width, with static and adaptive routing, or a host's cable at a quarter (EDR, two-level fat tree)",
		Sweeps: func(full bool) ([]*sweep.Sweep, error) {
			// Quick: 16 nodes on 8-port switches (4 leaves of 4 hosts, 4
			// spines); full: 64 nodes on the profile's 36-port switches
			// (leaves of 18 hosts, 18 spines).
			nodes, radix, uplink := scale(full, 16, 64), scale(full, 8, 0), scale(full, 5, 19)
			base := figBase("edr-cx4", nodes, scale(full, 2, 4), 256<<10)
			return sweeps(func() (*sweep.Sweep, error) {
				return sweep.NewSweep("trees-cable", base, sweep.Vary("design", cableDesigns...), sweep.Vary("network", cableNetworks(radix, uplink)...))
			})
		},
		Plots: func(rs []results.Result) ([]NamedPlot, error) {
			recs := all(rs)
			title := "One slow cable, two-level fat tree, EDR"
			if len(recs) > 0 {
				title = fmt.Sprintf("One slow cable: %d nodes, two-level fat tree, EDR, %d threads", recs[0].Nodes, recs[0].Threads)
			}
			plots := []NamedPlot{{"trees-cable", chart.Spec{Title: title, XLabel: "design",
				YLabel: "receive throughput per node [GiB/s]", Kind: "bars", Series: bars(recs, byNet, byDesign, tput)}}}
			if t := withTimes(recs); len(t) > 0 {
				plots = append(plots, NamedPlot{"trees-cable-skew", chart.Spec{Title: "One slow cable: the slowest node against the median node", XLabel: "design",
					YLabel: "slowest node's finish time over the median's [% more]", Kind: "bars", Series: bars(t, byNet, byDesign, skewPercent)}})
			}
			return plots, nil
		},
	}
}

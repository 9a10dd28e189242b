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
				return []NamedPlot{{"trees", chart.Spec{Title: title, XLabel: "design",
					YLabel: "receive throughput per node [GiB/s]", Kind: "bars", Series: bars(recs, byNet, byDesign, tput)}}}, nil
			},
		},
	}
}

package figures

import (
	"fmt"

	"github.com/dustin/go-humanize"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/experiments/chart"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/experiments/sweep"
)

// The at-scale figure: what each design costs as the cluster grows, the
// question a cluster of hundreds of nodes asks before any throughput:
// registered memory and queue pairs per node, set-up time, and the
// throughput at an equal input per destination. No claim of the papers
// is about more than 16 nodes; the figure answers what they leave open,
// with the designs that share receive queues (SRQ, XRC) or queue pairs
// (DC) beside Liu19's.

// scaleDesigns are the designs of the "scale" figure: Liu19's eight but
// SEMQ/RD and SEMQ/WR (their per-thread twins are shown), the credit-word,
// shared-receive-queue, XRC and DC variants, and the MPI baseline.
var scaleDesigns = []any{"SESQ/SR", "MESQ/SR", "SEMQ/SR", "MEMQ/SR", algos.NameMEMQSRSRQ, algos.NameMEMQSRXRC, algos.NameMEMQSRDC,
	"MEMQ/RD", "MEMQ/WR", algos.NameMEMQWRCW, algos.NameMEMQWRDC, "MPI"}

func scaleFigures() []Figure {
	byDesign := func(r *results.Record) string { return r.Design }
	nodes := func(r *results.Record) float64 { return float64(r.Nodes) }
	mib := func(r *results.Record) float64 { return float64(r.RegisteredPer) / (1 << 20) }
	qps := func(r *results.Record) float64 { return float64(r.QPsPerNode) }
	setup := func(r *results.Record) float64 { return r.SetupMS }
	return []Figure{{
		ID: "scale", X: "nodes", NoSteady: true,
		Title: "The designs as the cluster grows: registered memory, queue pairs and set-up per node, throughput (EDR)",
		Table: mib, TableUnit: "registered memory per node [MiB]",
		Sweeps: func(full bool) ([]*sweep.Sweep, error) {
			// Quick: 4 to 32 nodes, 2 threads; full: 16 to 1024, 4
			// threads (about 8 GB for the queue pairs of MEMQ/SR at
			// 1024 nodes). Each sending thread sends the same bytes to
			// each destination at every size.
			base := figBase("edr-cx4", 4, scale(full, 2, 4), scale[int64](full, 32<<10, 256<<10))
			return sweeps(func() (*sweep.Sweep, error) {
				return sweep.NewSweep("scale", base, sweep.Vary("design", scaleDesigns...),
					sweep.Vary("nodes", scale(full, anys(4, 8, 16, 32), anys(16, 64, 256, 1024))...))
			})
		},
		Plots: func(rs []results.Result) ([]NamedPlot, error) {
			recs := all(rs)
			title := "EDR"
			if len(recs) > 0 {
				title = fmt.Sprintf("EDR, %d threads, %s per destination", recs[0].Threads, humanize.IBytes(uint64(recs[0].BytesPerPair)))
			}
			plot := func(name, what, y string, f func(*results.Record) float64, logY bool) NamedPlot {
				return NamedPlot{name, chart.Spec{Title: what + " (" + title + ")", XLabel: "nodes", YLabel: y, Kind: "lines", LogX: true, LogY: logY,
					Series: mergeAlike(lines(recs, byDesign, nodes, f))}}
			}
			return []NamedPlot{
				plot("scale-memory", "Registered memory", "registered memory per node [MiB]", mib, true),
				plot("scale-qps", "Queue pairs", "queue pairs per node", qps, true),
				plot("scale-setup", "Set-up", "set-up [ms]", setup, true),
				plot("scale-throughput", "Throughput as run", "receive throughput per node [GiB/s], not grown", tput, false),
			}, nil
		},
	}}
}

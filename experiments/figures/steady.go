package figures

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
)

// Steady-state growth (the judged points of explore reproduce). A quick
// figure sends a few messages per pair, so start-up (connection warm-up,
// the first credits, empty pipelines) and drain weigh on its throughput.
// Growing runs a point again with twice its input until the throughput
// moves by less than SteadyTolerance from one doubling to the next, or the
// input reaches MaxGrowth times the figure's; the record kept is the last
// (largest) run, which says how far it was grown (input_scale) and how
// much its throughput moved at the last doubling (steady_change). A TPC-H
// point (figures 26 and 27) grows its scale factor per node, and what must
// settle is its rate: data per node over response time.
//
// MaxGrowth is 256 because MPI's TPC-H points need it: their response time
// carries a start-up that grows with the threads per node (about 1.8 ms
// for Q4 on 4 EDR nodes with 14 threads; docs/tpch.md), so Q3 on 4 nodes
// settles only at 128x (+1.8% from 64x) and Q10 on 4 nodes at 256x (+14%,
// +11% and +1.3% at 64x, 128x and 256x; SF 102.4, about a minute and
// 1 GB). Most points settle by 32x and stop there: the limit costs only the
// points that need it.
const (
	SteadyTolerance = 0.03
	MaxGrowth       = 256
)

// grow wraps run so that every successful point with a rate is grown to
// steady state. A larger run that fails keeps the last good record, marked
// by its steady_change as not steady and by its steady_stop with the
// failure. With a memory budget, a doubling whose estimated memory does not
// fit in it is not run: the last record stands, its steady_stop naming the
// estimate (where the budget is the machine's memory, a smaller machine
// grows less far, and says so).
func grow(run func(experiments.RunConfig) (*results.Record, error), mem *experiments.MemoryBudget) func(experiments.RunConfig) (*results.Record, error) {
	return func(cfg experiments.RunConfig) (*results.Record, error) {
		rec, err := run(cfg)
		if _, ok := scaledInput(cfg, 2); err != nil || !growable(rec) || !ok {
			return rec, err
		}
		for f := int64(2); f <= MaxGrowth; f *= 2 {
			c, _ := scaledInput(cfg, f)
			if est := experiments.MemoryEstimate(c); !mem.Fits(est) {
				rec.SteadyStop = fmt.Sprintf("the run at %dx would need about %s of memory, more than the %s available (--no-memory-check grows it anyway)", f, experiments.GiB(est), experiments.GiB(mem.Total()))
				return rec, nil
			}
			next, err := run(c)
			if err != nil || !growable(next) {
				var why string
				switch {
				case err != nil:
					why = err.Error()
				case next == nil || next.Integrity == "ok":
					why = "it measured no rate"
				default:
					why = "its integrity check failed: " + next.Integrity
				}
				rec.SteadyStop = fmt.Sprintf("the run at %dx failed: %s", f, why)
				return rec, nil // the last good one stands, not shown steady
			}
			next.InputScale = int(f)
			next.SteadyChange = (rate(next) - rate(rec)) / rate(rec)
			rec = next
			if math.Abs(rec.SteadyChange) < SteadyTolerance {
				break
			}
		}
		return rec, nil
	}
}

// scaledInput is cfg with f times its input: a shuffle's bytes per node or
// per pair, a TPC-H point's scale factor per node; false when cfg has no
// input to scale.
func scaledInput(cfg experiments.RunConfig, f int64) (experiments.RunConfig, bool) {
	return cfg.ScaledInput(f)
}

// rate is what growth watches settle: a shuffle's throughput, or a TPC-H
// query's scale factor per node over its response time (0 for a record
// with neither).
func rate(r *results.Record) float64 {
	if r.Experiment == "tpch" {
		if w, err := results.WorkloadOf(r); err == nil && w.Kind == results.TPCH && r.ResponseS > 0 {
			return w.SFPerNode / r.ResponseS
		}
		return 0
	}
	return r.ThroughputGiBs
}

func growable(r *results.Record) bool {
	return r != nil && r.Integrity == "ok" && rate(r) > 0
}

// steady reports whether a grown record reached steady state.
func steady(r *results.Record) bool {
	return r.InputScale > 0 && math.Abs(r.SteadyChange) < SteadyTolerance
}

// growthSummary is the figure's line in the report: how far its points
// were grown, and which did not reach steady state.
func growthSummary(rs []results.Result) string {
	scales := map[int]int{}
	var unsteady []string
	total := 0
	for _, r := range rs {
		if r.Failed() || rate(r.Record) <= 0 {
			continue
		}
		total++
		k := r.InputScale
		if k == 0 && r.SteadyStop != "" {
			k = 1 // not grown past the figure's input, for a reason it gives
		}
		scales[k]++
		if r.InputScale > 0 && !steady(r.Record) || r.SteadyStop != "" {
			u := fmt.Sprintf("%s at %d nodes (%+.1f%% at %dx", r.Design, r.Nodes, 100*r.SteadyChange, max(r.InputScale, 1))
			if r.SteadyStop != "" {
				u += "; not grown further: " + r.SteadyStop
			}
			unsteady = append(unsteady, u+")")
		}
	}
	if total == 0 {
		return "steady-state growth: no successful point with a throughput"
	}
	var ks []int
	for k := range scales {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	var parts []string
	for _, k := range ks {
		if k == 0 {
			parts = append(parts, fmt.Sprintf("%d not grown (no input size to scale)", scales[k]))
			continue
		}
		parts = append(parts, fmt.Sprintf("%d at %dx", scales[k], k))
	}
	s := fmt.Sprintf("grown to steady state (< %.0f%% change at twice the input) from the quick scale: %s", 100*SteadyTolerance, strings.Join(parts, ", "))
	if len(unsteady) > 0 {
		s += fmt.Sprintf("; NOT steady (at %dx, the most growth allowed, unless it says why not): %s", MaxGrowth, strings.Join(unsteady, "; "))
	}
	return s
}

// grownPoints counts the report's points that steady-state growth reran.
func grownPoints(rep *ReproduceReport) int {
	n := 0
	for _, fr := range rep.Figures {
		for _, r := range fr.Results {
			if !r.Failed() && r.InputScale > 0 {
				n++
			}
		}
	}
	return n
}

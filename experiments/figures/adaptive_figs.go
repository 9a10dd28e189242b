package figures

import (
	"fmt"
	"math"
	"strings"

	"github.com/rdmashuffle/rdmashuffle/adaptive"
	"github.com/rdmashuffle/rdmashuffle/experiments/chart"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/experiments/sweep"
	"github.com/rdmashuffle/rdmashuffle/fabric/perftest"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// BDPPerNode is the query-oblivious buffer count of Liu19 §6 for a
// profile: the bandwidth of a stream of msgBytes RC sends times the round
// trip of an 8-byte send, both measured with the perftest benchmarks on
// the simulated profile (the paper took both from qperf), in msgBytes
// buffers per node.
func BDPPerNode(profile string, msgBytes int) (int, error) {
	prof, err := sim.LoadProfile(profile)
	if err != nil {
		return 0, err
	}
	measure := func(cfg perftest.Config) (*perftest.Result, error) {
		c, err := sim.New(sim.Config{Nodes: 2, Profile: prof, Seed: 1, SizeOnly: true})
		if err != nil {
			return nil, err
		}
		defer c.Close()
		return perftest.Run(c, cfg)
	}
	bw, err := measure(perftest.Config{Test: "send_bw", Size: msgBytes, Iters: 2000})
	if err != nil {
		return 0, err
	}
	lat, err := measure(perftest.Config{Test: "send_lat", Size: 8, Iters: 200})
	if err != nil {
		return 0, err
	}
	return adaptive.BDPBuffers(bw.BWAvgGbps*1e9/8, 2*lat.TTypicalUS/1e6, msgBytes)
}

// adaptiveSweeps are figure 23's (uniform processing) or figure 24's
// (one node at 21, the other at 95 cycles per tuple) sweeps on two EDR
// nodes with MESQ/SR: fixed depths, adaptive, and (figure 23) the
// bandwidth-delay product.
func adaptiveSweeps(id string, full, skew bool) ([]*sweep.Sweep, error) {
	t := scale(full, 4, 14)
	base := figBase("edr-cx4", 2, t, scale[int64](full, 2<<20, 64<<20))
	base.Design, base.CreditEvery = "MESQ/SR", 1
	// Receive buffers per thread and source: single buffering (the
	// paper's 28 with 14 threads) up to about 10,000 per node.
	depths := []int{1, 2, 4, 8, 32, 128, 10000 / (2 * t)}
	load := sweep.Vary("cycles-per-tuple", 21, 40, 60, 95)
	if skew {
		base.NodeCycles = []int64{21, 95}
		load = sweep.Vary("node-cycles", "21,95")
	}
	adapt := base
	adapt.Adaptive, adapt.Buffers, adapt.MaxBuffers = true, 1, 10000/(2*t)
	out := []func() (*sweep.Sweep, error){
		func() (*sweep.Sweep, error) {
			return sweep.NewSweep(id, base, load, sweep.Vary("buffers", anys(depths...)...))
		},
		func() (*sweep.Sweep, error) { return sweep.NewSweep(id+"-adaptive", adapt, load) },
	}
	if !skew {
		bdp, err := BDPPerNode("edr-cx4", 4096)
		if err != nil {
			return nil, err
		}
		b := base
		b.Buffers, b.Label = max(1, int(math.Ceil(float64(bdp)/float64(2*t)))), "bdp"
		out = append(out, func() (*sweep.Sweep, error) { return sweep.NewSweep(id+"-bdp", b, load) })
	}
	return sweeps(out...)
}

// recvBuffersPerNode is a run's receive buffers per node: the time mean
// for adaptive runs, the fixed depth otherwise.
func recvBuffersPerNode(r *results.Record) float64 {
	if r.Adaptive {
		return r.RecvBuffersMean
	}
	return float64(r.Buffers * r.Threads * r.Nodes)
}

func adaptiveFigures() []Figure {
	return []Figure{
		Figure{
			ID: "fig23", X: "buffers", Title: "Fixed, adaptive and bandwidth-delay-product buffering (Liu19 fig. 23)", Claims: []string{"C19"},
			Sweeps: func(full bool) ([]*sweep.Sweep, error) { return adaptiveSweeps("fig23", full, false) },
			Plots: func(rs []results.Result) ([]NamedPlot, error) {
				var out []NamedPlot
				for _, cyc := range []int64{21, 40, 60, 95} {
					sel := filter(rs, func(r *results.Record) bool { return r.CyclesPerTuple == cyc && len(r.NodeCycles) == 0 })
					fixed := filter(rs, func(r *results.Record) bool { return r.CyclesPerTuple == cyc && !r.Adaptive && r.Label == "" })
					series := lines(fixed, func(*results.Record) string { return "fixed depth" }, recvBuffersPerNode, tput)
					for _, r := range sel {
						switch {
						case r.Adaptive:
							series = append(series, chart.Series{Name: "adaptive", Points: []chart.XY{{X: recvBuffersPerNode(r), Y: r.ThroughputGiBs}}})
						case r.Label == "bdp":
							series = append(series, chart.Series{Name: "bandwidth-delay product", Points: []chart.XY{{X: recvBuffersPerNode(r), Y: r.ThroughputGiBs}}})
						}
					}
					out = append(out, NamedPlot{fmt.Sprintf("fig23-%d", cyc), chart.Spec{
						Title:  fmt.Sprintf("%d cycles per tuple (2 nodes, EDR, MESQ/SR; y not from 0)", cyc),
						XLabel: "receive buffers per node", YLabel: "receive throughput per node [GiB/s]", Kind: "lines", LogX: true, ZoomY: true, Series: series}})
				}
				return out, nil
			},
		},
		Figure{
			ID: "fig24", X: "buffers", Title: "Skewed processing: one node at 21, one at 95 cycles per tuple (Liu19 fig. 24)", Claims: []string{"C20"},
			Sweeps: func(full bool) ([]*sweep.Sweep, error) { return adaptiveSweeps("fig24", full, true) },
			Plots: func(rs []results.Result) ([]NamedPlot, error) {
				fixed := filter(rs, func(r *results.Record) bool { return !r.Adaptive })
				series := lines(fixed, func(*results.Record) string { return "fixed depth" }, recvBuffersPerNode, tput)
				var ref []chart.RefLine
				for _, r := range all(rs) {
					if r.Adaptive {
						ref = append(ref, chart.RefLine{Name: "adaptive", Y: r.ThroughputGiBs})
					}
				}
				return []NamedPlot{{"fig24", chart.Spec{Title: "Skewed pair (21 and 95 cycles per tuple; y not from 0)", XLabel: "receive buffers per node",
					YLabel: "receive throughput per node [GiB/s]", Kind: "lines", LogX: true, ZoomY: true, Series: series, HLines: ref}}}, nil
			},
		},
	}
}

// judgeC19: at every load, adaptive within 3% of the best fixed depth (or
// above it); the BDP depth below 90% of the best fixed depth at some load;
// adaptive's mean buffers at 95 cycles below those at 21.
func judgeC19(rs []*results.Record, _ map[string][]results.Result) Verdict {
	var parts []string
	matches, bdpUnder := true, false
	var bufs21, bufs95 float64
	for _, cyc := range []int64{21, 40, 60, 95} {
		best, bestB, ad, bdp, adB := 0.0, 0, 0.0, 0.0, 0.0
		for _, r := range rs {
			if r.CyclesPerTuple != cyc {
				continue
			}
			switch {
			case r.Adaptive:
				ad, adB = r.ThroughputGiBs, r.RecvBuffersMean
			case r.Label == "bdp":
				bdp = r.ThroughputGiBs
			case r.ThroughputGiBs > best:
				best, bestB = r.ThroughputGiBs, r.Buffers*r.Threads*r.Nodes
			}
		}
		if best == 0 || ad == 0 {
			return missingData(fmt.Sprintf("%d cycles per tuple", cyc))
		}
		matches = matches && ad >= 0.97*best
		bdpUnder = bdpUnder || bdp > 0 && bdp < 0.9*best
		if cyc == 21 {
			bufs21 = adB
		}
		if cyc == 95 {
			bufs95 = adB
		}
		parts = append(parts, fmt.Sprintf("%d cyc: best fixed %.2f GiB/s (%d buffers), adaptive %.2f (%.0f buffers), BDP %.2f", cyc, best, bestB, ad, adB, bdp))
	}
	fewer := bufs95 < bufs21
	v := Verdict{Expected: "adaptive >= 97% of the best fixed depth at 21-95 cycles per tuple; BDP < 90% of the best somewhere; adaptive uses fewer buffers at 95 than at 21",
		Measured: strings.Join(parts, "; "), Verdict: grade(matches && bdpUnder && fewer, matches)}
	switch {
	case !matches:
		v.Reason = "the adaptive controller falls short of the best fixed depth at some load"
	case !bdpUnder:
		v.Reason = "the bandwidth-delay-product depth performs as well as the best fixed depth here: compute-bound receivers need few buffers"
	case !fewer:
		v.Reason = "the adaptive circulation does not shrink as the per-tuple cost rises"
	}
	return v
}

// judgeC20: the adaptive run's per-node buffer means differ by at least
// 1.2x, and its throughput beats every fixed depth.
func judgeC20(rs []*results.Record, _ map[string][]results.Result) Verdict {
	best, bestB, ad := 0.0, 0, 0.0
	var byNode []float64
	for _, r := range rs {
		if r.Adaptive {
			ad, byNode = r.ThroughputGiBs, r.RecvBuffersByNode
		} else if r.ThroughputGiBs > best {
			best, bestB = r.ThroughputGiBs, r.Buffers*r.Threads*r.Nodes
		}
	}
	if ad == 0 || best == 0 || len(byNode) < 2 {
		return missingData("the skewed runs")
	}
	lo, hi := math.Min(byNode[0], byNode[1]), math.Max(byNode[0], byNode[1])
	differ := lo > 0 && hi/lo >= 1.2
	beats := ad > best
	v := Verdict{Expected: "adaptive picks a different depth per node (>= 1.2x apart) and beats every fixed depth",
		Measured: fmt.Sprintf("adaptive %.2f GiB/s with %.0f and %.0f buffers on the two nodes; best fixed %.2f GiB/s (%d buffers)", ad, byNode[0], byNode[1], best, bestB),
		Verdict:  grade(differ && beats, differ || ad >= 0.97*best)}
	switch {
	case !differ:
		v.Reason = "the two nodes settle on similar depths"
	case !beats:
		v.Reason = "a fixed depth large enough for the faster node does as well: the slower node's extra buffers cost nothing here, as memory is not scarce in this run"
	}
	return v
}

package figures

import (
	"fmt"
	"math"
	"strings"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/experiments/chart"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/experiments/sweep"
)

// The figures and claims of the peer designs (Roediger15 and MW-DQE) and the
// comparison of every design on one cluster ("peers").

// peerComparison lists the designs of the "peers" figure: Liu19's eight,
// its baselines and the peer designs that run on InfiniBand.
func peerComparison() []string {
	out := experiments.PaperDesigns()
	out = append(out, "MPI", "IPoIB", "HyPer", "HyPer/unsched", "HyPer-TCP", "RDMA-MW", "Sockets-MW")
	return out
}

func peerFigures() []Figure {
	byDesign := func(r *results.Record) string { return r.Design }
	nodesCat := func(r *results.Record) string { return fmt.Sprint(r.Nodes) }
	inputMS := func(r *results.Record) float64 { return 1e3 * inputTime(r) }
	return []Figure{
		Figure{
			ID: "hyper-sched", X: "nodes", Title: "HyPer multiplexer: round-robin scheduling, RDMA and TCP/IPoIB (Roediger15 fig. 10b, §5)", Claims: []string{"C25"},
			Sweeps: func(full bool) ([]*sweep.Sweep, error) {
				base := figBase("qdr-cx3", 8, 4, scale[int64](full, 4<<20, 32<<20))
				base.MsgBytes = 512 << 10
				return sweeps(func() (*sweep.Sweep, error) {
					return sweep.NewSweep("hyper-sched", base, sweep.Vary("design", "HyPer", "HyPer/unsched", "HyPer-TCP", "HyPer-TCP/unsched"), sweep.Vary("nodes", 4, 8))
				})
			},
			Plots: func(rs []results.Result) ([]NamedPlot, error) {
				return []NamedPlot{{"hyper-sched", chart.Spec{Title: "HyPer multiplexer, 512 KB messages (QDR)", XLabel: "nodes",
					YLabel: "receive throughput per node [GiB/s]", Kind: "bars", Series: bars(all(rs), byDesign, nodesCat, tput)}}}, nil
			},
		},
		Figure{
			ID: "hyper-conns", X: "nodes", NoSteady: true, Title: "Connections: one multiplexer per server against a queue pair per thread (Roediger15 §3.1)", Claims: []string{"C24"},
			Table: func(r *results.Record) float64 { return float64(r.QPsPerNode * r.Nodes) }, TableUnit: "queue pairs in the cluster",
			Sweeps: func(full bool) ([]*sweep.Sweep, error) {
				base := figBase("edr-cx4", 2, 4, 64<<10)
				return sweeps(func() (*sweep.Sweep, error) {
					return sweep.NewSweep("hyper-conns", base, sweep.Vary("design", "HyPer", "MEMQ/SR"), sweep.Vary("nodes", 2, 4, 6, 8))
				})
			},
			Plots: func(rs []results.Result) ([]NamedPlot, error) {
				return []NamedPlot{{"hyper-conns", chart.Spec{Title: "Queue pairs in the cluster (4 threads per node)", XLabel: "nodes", YLabel: "queue pairs",
					Kind: "lines", Series: lines(all(rs), byDesign, func(r *results.Record) float64 { return float64(r.Nodes) },
						func(r *results.Record) float64 { return float64(r.QPsPerNode * r.Nodes) })}}}, nil
			},
		},
		Figure{
			ID: "mw", X: "nodes", Title: "RDMA Write middleware against sockets, and the write threshold (MW-DQE fig. 3, 4)", Claims: []string{"C26"},
			Table: inputMS, TableUnit: "communication (response) time at the figure's input [ms] (a point grown to steady state: its time over its growth factor)",
			Sweeps: func(full bool) ([]*sweep.Sweep, error) {
				// MW-DQE: 5 M integers per process; here 16-byte tuples.
				base := figBase("iwarp-1g", 4, 1, 0)
				base.BytesPerNode, base.MsgBytes = scale[int64](full, 8<<20, 80<<20), 64<<10
				thr := base
				thr.Threads = 2
				var designs []any
				for _, t := range algos.MWThresholds {
					designs = append(designs, algos.MWDesign(t))
				}
				return sweeps(
					func() (*sweep.Sweep, error) {
						return sweep.NewSweep("mw", base, sweep.Vary("design", "Sockets-MW", "RDMA-MW/siw"), sweep.Vary("threads", 1, 2), sweep.Vary("nodes", 4, 8))
					},
					func() (*sweep.Sweep, error) {
						return sweep.NewSweep("mw-threshold", thr, sweep.Vary("design", designs...), sweep.Vary("nodes", 4, 8))
					},
				)
			},
			Plots: func(rs []results.Result) ([]NamedPlot, error) {
				cmp := filter(rs, func(r *results.Record) bool {
					return r.Design == algos.NameSocketsMW || r.Design == algos.MWDesign(16<<10)
				})
				thr := filter(rs, func(r *results.Record) bool { return !math.IsNaN(mwThreshold(r)) && r.Threads == 2 })
				return []NamedPlot{
					{"mw", chart.Spec{Title: "Communication time, software iWARP on Gigabit Ethernet", XLabel: "nodes x threads", YLabel: "response time [ms]",
						Kind: "bars", Series: bars(cmp, byDesign, func(r *results.Record) string { return fmt.Sprintf("%dx%d", r.Nodes, r.Threads) }, inputMS)}},
					{"mw-threshold", chart.Spec{Title: "RDMA-MW write threshold (2 threads per node)", XLabel: "write threshold [KiB]", YLabel: "response time [ms]",
						Kind: "lines", Series: lines(thr, func(r *results.Record) string { return fmt.Sprintf("%d nodes", r.Nodes) }, mwThreshold, inputMS)}},
				}, nil
			},
		},
		Figure{
			ID: "peers", X: "pattern", Title: "Every design on one cluster: Liu19's eight, its baselines and the peer designs (8 nodes, EDR)",
			Sweeps: func(full bool) ([]*sweep.Sweep, error) {
				base := figBase("edr-cx4", 8, 4, scale[int64](full, 1<<20, 8<<20))
				pats := sweep.Vary("pattern", "repartition", "broadcast")
				h512 := base
				h512.Design = "HyPer"
				return sweeps(
					func() (*sweep.Sweep, error) {
						return sweep.NewSweep("peers", base, sweep.Vary("design", anys(peerComparison()...)...), pats)
					},
					func() (*sweep.Sweep, error) {
						return sweep.NewSweep("peers-qperf", base, sweep.Vary("design", "qperf"))
					},
					func() (*sweep.Sweep, error) {
						return sweep.NewSweep("peers-hyper512k", h512, sweep.Vary("msg-bytes", 512<<10), pats)
					},
				)
			},
			Plots: func(rs []results.Result) ([]NamedPlot, error) {
				var ref []chart.RefLine
				if q := filter(rs, func(r *results.Record) bool { return experiments.DesignOf(r.Design).Ceiling }); len(q) > 0 {
					// A design's receive throughput counts the tuples that
					// stay on their node (1 in n), which cross no link:
					// its ceiling is qperf's n/(n-1) times.
					n := float64(q[0].Nodes)
					ref = append(ref, chart.RefLine{Name: "qperf (network)", Y: q[0].ThroughputGiBs},
						chart.RefLine{Name: fmt.Sprintf("qperf + local 1/%d", q[0].Nodes), Y: q[0].ThroughputGiBs * n / (n - 1)})
				}
				name := func(r *results.Record) string {
					if r.Design == algos.NameHyPer && r.MsgBytes == 512<<10 {
						return "HyPer 512K"
					}
					return r.Design
				}
				var out []NamedPlot
				for _, pat := range []string{"repartition", "broadcast"} {
					sel := filter(rs, func(r *results.Record) bool { return r.Pattern == pat && !experiments.DesignOf(r.Design).Ceiling })
					p := chart.Spec{Title: fmt.Sprintf("%s, 8 nodes, EDR", pat), XLabel: "design", YLabel: "receive throughput per node [GiB/s]", Kind: "bars",
						Series: bars(sel, func(*results.Record) string { return pat }, name, tput)}
					if pat == "repartition" {
						p.HLines = ref
					}
					out = append(out, NamedPlot{"peers-" + pat, p})
				}
				return out, nil
			},
		},
	}
}

// mwThreshold is an RDMA-MW/siw record's write threshold in KiB.
func mwThreshold(r *results.Record) float64 {
	for _, t := range algos.MWThresholds {
		if algos.MWDesign(t) == r.Design {
			return float64(t >> 10)
		}
	}
	return math.NaN()
}

// ClassicConnections is the connection count of Roediger15's classic
// exchange operator: every one of the n x t parallel units connected to
// every other (directed pairs). The paper prints n^2 t^2 - t (57,560 for 6
// servers of 40 threads), apparently a slip for n^2 t^2 - n t (57,360).
func ClassicConnections(n, t int) int { return n * t * (n*t - 1) }

// judgeC24: the multiplexer's measured queue pairs in the cluster are
// n(n-1) at every size (30 at 6 nodes), and the classic exchange's count at
// the paper's 6 x 40 is in the tens of thousands.
func judgeC24(rs []*results.Record, _ map[string][]results.Result) Verdict {
	var parts []string
	exact := true
	got6 := 0
	for _, n := range []int{2, 4, 6, 8} {
		h, nh := mean(rs, at("HyPer", "", "", n), func(r *results.Record) float64 { return float64(r.QPsPerNode * r.Nodes) })
		m, _ := mean(rs, at("MEMQ/SR", "", "", n), func(r *results.Record) float64 { return float64(r.QPsPerNode * r.Nodes) })
		if nh == 0 {
			return missingData(fmt.Sprintf("HyPer at %d nodes", n))
		}
		exact = exact && int(h) == n*(n-1)
		if n == 6 {
			got6 = int(h)
		}
		parts = append(parts, fmt.Sprintf("%d nodes: HyPer %d, MEMQ/SR %d", n, int(h), int(m)))
	}
	classic := ClassicConnections(6, 40)
	v := Verdict{Expected: "HyPer: n(n-1) queue pairs in the cluster (30 at 6 nodes); classic exchange n t (n t - 1) at 6 x 40 in the tens of thousands",
		Measured: "queue pairs in the cluster, 4 threads per node: " + strings.Join(parts, "; ") + fmt.Sprintf("; classic exchange at 6 x 40: %d (the paper prints 57,560)", classic),
		Verdict:  grade(exact && got6 == 30 && classic >= 10000, exact)}
	if !exact {
		v.Reason = "the multiplexer's queue pairs do not follow n(n-1)"
	}
	return v
}

// judgeC25: over TCP the multiplexer gains at most 5% from scheduling at 8
// nodes, and runs well below the RDMA multiplexer (CPU-bound); the RDMA
// multiplexer's gain is reported beside it (claim C23's 40%).
func judgeC25(rs []*results.Record, _ map[string][]results.Result) Verdict {
	get := func(d string) float64 { v, _ := mean(rs, at(d, "", "", 8), tput); return v }
	rr, un, trr, tun := get("HyPer"), get("HyPer/unsched"), get("HyPer-TCP"), get("HyPer-TCP/unsched")
	if rr == 0 || un == 0 || trr == 0 || tun == 0 {
		return missingData("the 8-node runs")
	}
	tcpGain, rdmaGain := trr/tun-1, rr/un-1
	cpuBound := trr < 0.6*rr
	v := Verdict{Expected: "TCP/IPoIB: scheduled within 5% of unscheduled, and CPU-bound (below 60% of the RDMA multiplexer)",
		Measured: fmt.Sprintf("8 nodes QDR, 512 KB: TCP scheduled %.2f, unscheduled %.2f GiB/s (%+.1f%%); RDMA scheduled %.2f, unscheduled %.2f (%+.0f%%, the multiplexer's C23 gain)",
			trr, tun, 100*tcpGain, rr, un, 100*rdmaGain),
		Verdict: grade(math.Abs(tcpGain) <= 0.05 && cpuBound, math.Abs(tcpGain) <= 0.10)}
	switch {
	case math.Abs(tcpGain) > 0.05:
		v.Reason = "scheduling changes the TCP multiplexer's throughput: it is not purely CPU-bound here"
	case !cpuBound:
		v.Reason = "the TCP multiplexer is not far below RDMA: the kernel costs (estimates) do not make it CPU-bound"
	}
	return v
}

// inputTime is a run's response time at its figure's input: a point grown
// to steady state (input_scale f) moved f times the input, so its time is
// divided by f. Times of points grown by different factors are then
// comparable, at the steady rate.
func inputTime(r *results.Record) float64 {
	return r.ResponseS / float64(max(r.InputScale, 1))
}

// judgeC26: best time of each middleware per cluster size (over threads):
// RDMA-MW about 75% faster (reduction 52-98%); threshold sweep: time spread
// above 25% with 16 KB within 2% of the best. Times are at the figure's
// input (inputTime), whatever each point was grown to.
func judgeC26(rs []*results.Record, _ map[string][]results.Result) Verdict {
	best := func(d string, n int) float64 {
		b := math.Inf(1)
		for _, r := range rs {
			if r.Design == d && r.Nodes == n && r.Integrity == "ok" {
				b = math.Min(b, inputTime(r))
			}
		}
		return b
	}
	var parts []string
	reductionOK, someGain := true, false
	for _, n := range []int{4, 8} {
		s, m := best("Sockets-MW", n), best("RDMA-MW/siw", n)
		if math.IsInf(s, 0) || math.IsInf(m, 0) {
			return missingData(fmt.Sprintf("the %d-node comparison", n))
		}
		red := 1 - m/s
		reductionOK = reductionOK && red >= 0.52 && red <= 0.98
		someGain = someGain || red > 0.2
		parts = append(parts, fmt.Sprintf("%d nodes: sockets %.1f ms, RDMA %.1f ms (%.0f%% less)", n, 1e3*s, 1e3*m, 100*red))
	}
	spreadOK, bestOK := false, true
	for _, n := range []int{4, 8} {
		lo, hi, at16 := math.Inf(1), 0.0, 0.0
		for _, r := range rs {
			if t := mwThreshold(r); !math.IsNaN(t) && r.Nodes == n && r.Threads == 2 && r.BytesPerNode > 0 {
				rt := inputTime(r)
				lo, hi = math.Min(lo, rt), math.Max(hi, rt)
				if t == 16 {
					at16 = rt
				}
			}
		}
		if hi == 0 {
			return missingData(fmt.Sprintf("the %d-node threshold sweep", n))
		}
		spreadOK = spreadOK || (hi-lo)/lo > 0.25
		bestOK = bestOK && at16 <= 1.02*lo
		parts = append(parts, fmt.Sprintf("threshold sweep at %d nodes: %.1f-%.1f ms (spread %.0f%%), 16 KB %.1f ms", n, 1e3*lo, 1e3*hi, 100*(hi-lo)/lo, 1e3*at16))
	}
	v := Verdict{Expected: "RDMA-MW cuts communication time by about 75% (52-98%) against sockets; the threshold changes time by more than 25%, 16 KB best",
		Measured: strings.Join(parts, "; "), Verdict: grade(reductionOK && spreadOK && bestOK, someGain || spreadOK)}
	switch {
	case !reductionOK:
		v.Reason = "on a 1 Gb/s wire both middlewares are wire-bound in the model: the kernel costs of sockets (estimates) are far below a Gigabit link's time per byte, so the 75% must come from costs of MW-DQE's Java NIO middleware that the paper does not give"
	case !spreadOK:
		v.Reason = "the threshold hardly matters: writes of 2 KB and more already keep the Gigabit link busy"
	case !bestOK:
		v.Reason = "a threshold other than 16 KB is best here"
	}
	return v
}

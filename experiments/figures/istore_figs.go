package figures

import (
	"fmt"
	"math"
	"strings"

	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/experiments/chart"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/experiments/sweep"
	"github.com/rdmashuffle/rdmashuffle/istore"
)

// The figures and claims of Salama17 (I-Store, claims C27-C29): prefetch
// depth, one memory server feeding several readers, and star joins
// against shuffle plans. Their points' workloads say which.

// istoreStreams is the worker threads (streams) per reader of the
// microbenchmark figures' main series. Salama17 does not say how many
// streams its experiment 2 ran; its numbers do: a maximum of about 5 M
// blocks/s and 3x that at one outstanding read give about 1.7 M blocks/s,
// a block every 0.6 us, at depth 1, where one FDR read's round trip takes
// about 2.4 us in this model (0.41 M blocks/s per stream). So depth 1 had
// the parallelism of 2 to 4 streams; we take 3. The prefetch figure also
// shows a single stream. This is a calibration from the paper's absolute
// numbers, not independent evidence (docs/architecture.md, I-Store).
const istoreStreams = 3

// istoreFanoutDepth is the outstanding reads per stream of the fan-out
// figure (the paper's largest prefetch, where reads saturate).
const istoreFanoutDepth = 10

func mblocks(r *results.Record) float64 {
	return r.ThroughputGiBs * (1 << 30) / istore.BlockBytes / 1e6
}

func istoreTables(r *results.Record) int {
	if w, err := results.WorkloadOf(r); err == nil {
		return w.Tables
	}
	return 0
}

func istoreFigures() []Figure {
	microBase := func(full bool) experiments.RunConfig {
		c := experiments.DefaultConfig()
		c.Profile, c.Nodes, c.Threads, c.Design = "fdr-cx3", 2, istoreStreams, experiments.IStoreReadDesign
		c.Workload = results.Workload{Kind: results.IStoreMicro, Blocks: scale(full, 8000, 64000)}
		c.BytesPerNode, c.Pattern = 16, ""
		return c
	}
	joinSF := func(full bool) float64 { return scale(full, 0.5, 4.0) }
	return []Figure{
		Figure{
			ID: "istore-prefetch", X: "buffers", Title: "I-Store: scan throughput of one reader against outstanding RDMA Reads, 2 KB blocks (Salama17 fig. 7b)", Claims: []string{"C27"},
			NoSteady: true,
			Table:    mblocks, TableUnit: "scanned blocks per second per reader [M]",
			Sweeps: func(full bool) ([]*sweep.Sweep, error) {
				var depths []any
				for d := 1; d <= 16; d++ {
					depths = append(depths, d)
				}
				return sweeps(func() (*sweep.Sweep, error) {
					return sweep.NewSweep("istore-prefetch", microBase(full), sweep.Vary("threads", 1, istoreStreams), sweep.Vary("buffers", depths...))
				})
			},
			Plots: func(rs []results.Result) ([]NamedPlot, error) {
				return []NamedPlot{{"istore-prefetch", chart.Spec{Title: "One memory server, one reader (FDR), scan-sum of 2 KB blocks", XLabel: "outstanding reads per stream",
					YLabel: "scanned blocks/s [M]", Kind: "lines", Series: lines(all(rs), func(r *results.Record) string { return fmt.Sprintf("%d stream(s)", r.Threads) },
						func(r *results.Record) float64 { return float64(r.Buffers) }, mblocks)}}}, nil
			},
		},
		Figure{
			ID: "istore-fanout", X: "nodes", Title: "I-Store: one memory server feeding 1 to 8 readers, RDMA Reads vs relayed multicast (Salama17 fig. 7c)", Claims: []string{"C28"},
			NoSteady: true,
			Table:    mblocks, TableUnit: "scanned blocks per second per reader [M] (nodes = readers + 1)",
			Sweeps: func(full bool) ([]*sweep.Sweep, error) {
				base := microBase(full)
				base.Buffers = istoreFanoutDepth
				return sweeps(func() (*sweep.Sweep, error) {
					return sweep.NewSweep("istore-fanout", base, sweep.Vary("design", experiments.IStoreReadDesign, experiments.IStoreMulticastDesign), sweep.Vary("nodes", 2, 3, 5, 7, 9))
				})
			},
			Plots: func(rs []results.Result) ([]NamedPlot, error) {
				return []NamedPlot{{"istore-fanout", chart.Spec{Title: fmt.Sprintf("One memory server, %d streams per reader, %d outstanding (FDR)", istoreStreams, istoreFanoutDepth),
					XLabel: "readers", YLabel: "scanned blocks/s per reader [M]", Kind: "lines", Series: lines(all(rs), func(r *results.Record) string { return r.Design },
						func(r *results.Record) float64 { return float64(r.Nodes - 1) }, mblocks)}}}, nil
			},
		},
		Figure{
			ID: "istore-joins", X: "design", Title: "I-Store: SSB-like star joins, remote reads vs shuffle plans, 8 FDR nodes (Salama17 fig. 7a)", Claims: []string{"C29"},
			NoSteady: true,
			Table:    respMS, TableUnit: "query response time [ms]",
			Sweeps: func(full bool) ([]*sweep.Sweep, error) {
				var ss []func() (*sweep.Sweep, error)
				for i, tables := range []int{2, 3, 4} {
					name := "istore-joins"
					if i > 0 {
						name = fmt.Sprintf("istore-joins-%d", tables)
					}
					ss = append(ss, func() (*sweep.Sweep, error) {
						c := experiments.DefaultConfig()
						// 5 sending and 5 receiving threads per node for
						// the shuffle plans, 10 workers for remote reads:
						// the paper's 10 threads per node.
						c.Profile, c.Nodes, c.Threads, c.BytesPerNode, c.Pattern = "fdr-cx3", 8, 5, 16, ""
						c.Workload = results.Workload{Kind: results.IStoreJoin, Tables: tables, SF: joinSF(full)}
						return sweep.NewSweep(name, c, sweep.Vary("design", experiments.IStoreDesign, experiments.IStoreUnicastDesign, "MESQ/SR", "MEMQ/SR"))
					})
				}
				// The shuffle plan with twice the cores (10 sending and 10
				// receiving threads), for the sensitivity in C29's record.
				for _, tables := range []int{2, 3, 4} {
					ss = append(ss, func() (*sweep.Sweep, error) {
						c := experiments.DefaultConfig()
						c.Profile, c.Nodes, c.Threads, c.BytesPerNode, c.Pattern = "fdr-cx3", 8, 10, 16, ""
						c.Workload = results.Workload{Kind: results.IStoreJoin, Tables: tables, SF: joinSF(full)}
						return sweep.NewSweep(fmt.Sprintf("istore-joins-20cores-%d", tables), c, sweep.Vary("design", "MESQ/SR"), sweep.Vary("threads", 10))
					})
				}
				return sweeps(ss...)
			},
			Plots: func(rs []results.Result) ([]NamedPlot, error) {
				return []NamedPlot{{"istore-joins", chart.Spec{Title: "Star joins (size-only), 8 FDR nodes", XLabel: "tables joined", YLabel: "response time [ms]", Kind: "bars",
					Series: bars(all(rs), func(r *results.Record) string {
						if r.Threads != 5 {
							return fmt.Sprintf("%s, %d cores", r.Design, 2*r.Threads)
						}
						return r.Design
					}, func(r *results.Record) string { return fmt.Sprint(istoreTables(r)) }, respMS)}}}, nil
			},
		},
	}
}

// judgeC27: 10 outstanding reads about 3x (2.1-3.9x) one, and 5 within
// 10% of the best depth, with one stream per reader: the paper does not
// say how many streams a reader runs, and a count fitted to its absolute
// numbers would make the verdict rest on the claim. The figures with that
// fitted count are reported beside, not judged.
func judgeC27(rs []*results.Record, _ map[string][]results.Result) Verdict {
	at := func(threads, depth int) float64 {
		v, _ := mean(rs, func(r *results.Record) bool {
			return r.Threads == threads && r.Buffers == depth && r.Experiment == "istore-micro"
		}, mblocks)
		return v
	}
	peak := func(threads int) float64 {
		p := 0.0
		for _, r := range rs {
			if r.Threads == threads && r.Experiment == "istore-micro" {
				p = math.Max(p, mblocks(r))
			}
		}
		return p
	}
	type res struct{ one, five, ten, peak float64 }
	get := func(t int) res { return res{at(t, 1), at(t, 5), at(t, 10), peak(t)} }
	m, s := get(istoreStreams), get(1)
	if m.one == 0 || m.ten == 0 || m.five == 0 {
		return missingData(fmt.Sprintf("%d streams at depths 1, 5 and 10", istoreStreams))
	}
	if s.one == 0 || s.ten == 0 || s.five == 0 {
		return missingData("one stream at depths 1, 5 and 10")
	}
	r10, near5 := s.ten/s.one, s.five/s.peak
	v := Verdict{Expected: "10 outstanding reads about 3x (2.1-3.9x) one; 5 within 10% of the maximum",
		Measured: fmt.Sprintf("one stream per reader: depth 1 %.2f, 5 %.2f, 10 %.2f M blocks/s (10/1 = %.2fx; 5 at %.0f%% of the peak %.2f); not judged, %d streams (a count fitted to the paper's absolute numbers): 10/1 = %.2fx, 5 at %.0f%% of the peak",
			s.one, s.five, s.ten, r10, 100*near5, s.peak, istoreStreams, m.ten/m.one, 100*m.five/m.peak),
		Verdict: grade(about(r10, 3) && near5 >= 0.9, about(r10, 3) || near5 >= 0.9)}
	switch {
	case !about(r10, 3):
		v.Reason = fmt.Sprintf("with one stream the gain from prefetching is %.1fx: it follows one read's round trip over the time per block at the peak; about 3x needs several streams per reader, a setting the paper does not give", r10)
	case near5 < 0.9:
		v.Reason = "5 outstanding reads are well below the maximum"
	}
	return v
}

// judgeC28: per-reader read throughput at 8 readers below half that at 1
// ("sharply"); multicast within +-30% of its 1-reader value at every
// count ("flat"), and above reads from 2 readers on.
func judgeC28(rs []*results.Record, _ map[string][]results.Result) Verdict {
	at := func(d string, readers int) float64 {
		v, _ := mean(rs, func(r *results.Record) bool { return r.Design == d && r.Nodes == readers+1 }, mblocks)
		return v
	}
	r1, r8, m1 := at(experiments.IStoreReadDesign, 1), at(experiments.IStoreReadDesign, 8), at(experiments.IStoreMulticastDesign, 1)
	if r1 == 0 || r8 == 0 || m1 == 0 {
		return missingData("1 and 8 readers")
	}
	var parts []string
	flat, above := true, true
	for _, k := range []int{1, 2, 4, 6, 8} {
		rd, mc := at(experiments.IStoreReadDesign, k), at(experiments.IStoreMulticastDesign, k)
		if rd == 0 || mc == 0 {
			return missingData(fmt.Sprintf("%d readers", k))
		}
		flat = flat && about(mc, m1)
		above = above && (k == 1 || mc > rd)
		parts = append(parts, fmt.Sprintf("%d: read %.2f, multicast %.2f", k, rd, mc))
	}
	sharp := r8 < 0.5*r1
	v := Verdict{Expected: "reads: per-reader throughput at 8 readers below half of 1 reader; multicast flat (within +-30% of 1 reader) and above reads from 2 readers",
		Measured: "M blocks/s per reader by readers: " + strings.Join(parts, "; ") + fmt.Sprintf(" (reads at 8 = %.0f%% of 1)", 100*r8/r1),
		Verdict:  grade(sharp && flat && above, sharp || flat)}
	switch {
	case !sharp:
		v.Reason = "per-reader read throughput does not fall below half"
	case !flat || !above:
		v.Reason = "the relayed multicast does not stay flat: each hop adds its latency to the credit loop of the ring"
	}
	return v
}

// judgeC29: for the 3- and 4-table joins the remote-read design (relayed
// multicast) is faster than the best shuffle plan, by about 3x (2.1-3.9x)
// at best; the 2-table join is reported beside (the paper: alike).
func judgeC29(rs []*results.Record, _ map[string][]results.Result) Verdict {
	var threads int // the remote-read runs' (cores = 2 x threads in both plans)
	for _, r := range rs {
		if r.Design == experiments.IStoreDesign {
			threads = r.Threads
		}
	}
	shuffle := func(tables, threads int) (float64, string) {
		best, name := math.Inf(1), ""
		for _, r := range rs {
			if r.Design != experiments.IStoreDesign && r.Design != experiments.IStoreUnicastDesign && istoreTables(r) == tables && r.Threads == threads && r.ResponseS*1e3 < best {
				best, name = r.ResponseS*1e3, r.Design
			}
		}
		return best, name
	}
	speedup := func(tables int) (float64, string) {
		is, _ := mean(rs, func(r *results.Record) bool {
			return r.Design == experiments.IStoreDesign && istoreTables(r) == tables
		}, respMS)
		best, name := shuffle(tables, threads)
		if is == 0 || math.IsInf(best, 0) {
			return math.NaN(), ""
		}
		return best / is, name
	}
	var parts []string
	sp := map[int]float64{}
	for _, t := range []int{2, 3, 4} {
		s, name := speedup(t)
		if math.IsNaN(s) {
			return missingData(fmt.Sprintf("the %d-table join", t))
		}
		sp[t] = s
		parts = append(parts, fmt.Sprintf("%d tables: %.2fx over the best shuffle plan (%s)", t, s, name))
		if more, _ := shuffle(t, 2*threads); threads > 0 && !math.IsInf(more, 0) {
			is, _ := mean(rs, func(r *results.Record) bool { return r.Design == experiments.IStoreDesign && istoreTables(r) == t }, respMS)
			parts[len(parts)-1] += fmt.Sprintf(" (%.2fx over MESQ/SR on twice the cores)", more/is)
		}
	}
	faster := sp[3] > 1 && sp[4] > 1
	top := math.Max(sp[3], sp[4])
	v := Verdict{Expected: "3- and 4-table joins: remote reads faster than the best shuffle plan on as many cores, up to about 3x (2.1-3.9x)",
		Measured: strings.Join(parts, "; "), Verdict: grade(faster && top >= 2.1 && top <= 3.9, faster)}
	switch {
	case !faster:
		v.Reason = "the shuffle plan is as fast: remote reads do not pay off here"
	case top < 2.1:
		v.Reason = "remote reads win by less: their probes are CPU-bound (the TPC-H operator costs, 58-108 cycles per fact row on 10 workers), so removing shuffles saves less than their count suggests"
	case top > 3.9:
		v.Reason = "remote reads win by more than the paper's 3x"
	}
	return v
}

// Package perftest runs perftest-style microbenchmarks (ib_send_bw,
// ib_write_bw, ib_read_bw, ib_send_lat, ib_write_lat, and an all-to-all
// bandwidth test) over any fabric backend. Flags, defaults and reported
// columns follow perftest so that numbers from the simulator and from a
// real cluster can be compared directly.
//
// Bandwidth tests pair node 2i (client) with node 2i+1 (server) and report
// the mean over pairs; the all-to-all test has every node send to every
// other node. Latency tests report one-way latency as half the round trip.
package perftest

import (
	"errors"
	"fmt"
	"github.com/rdmashuffle/rdmashuffle/internal/setting"
	"math"
	"sort"
	"strings"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// Tests lists the supported test names.
var Tests = []string{"send_bw", "write_bw", "read_bw", "send_lat", "write_lat", "read_lat", "alltoall_bw", "incast_bw", "reg_mr", "ebb"}

// Config is one benchmark run. Zero values take perftest's defaults.
type Config struct {
	Test    string        // one of Tests
	Size    int           // message size in bytes (-s); default 65536 for bandwidth, 2 for latency
	Iters   int           // messages per queue pair (-n); default 5000 (bandwidth), 1000 (latency)
	QPs     int           // queue pairs per peer (-q); default 1
	Conn    fabric.QPType // transport (-c); default RC
	TxDepth int           // outstanding sends per queue pair (-t); default 128
	RxDepth int           // receives posted per queue pair (-r); default 512
	CQMod   int           // signal one send in CQMod (-Q); default 100
	Inline  int           // largest inline message (-I); default 220 (perftest's write default)
	// Interleave posts one request per queue pair in turn, as a shuffle
	// spreading tuples over destinations does (and as the rc-swarm
	// benchmark of Kalia et al. does). perftest instead fills each queue
	// pair's window before moving to the next, which keeps few queue pairs
	// active at once.
	Interleave bool
	// Spread (write_bw, read_bw) makes each server register a region of
	// Spread bytes and has every request target a random 64-byte-aligned
	// offset in it, to expose the NIC's address-translation cache; 0 keeps
	// perftest's one buffer per queue pair.
	Spread int
	// alltoall_bw only: Schedule (ScheduleSpread, ScheduleRandom or
	// ScheduleRR), messages in flight per node for the ordered schedules
	// (Window, default 2) and messages per round-robin phase (Burst,
	// default 8, as in Roediger15).
	Schedule string
	Window   int
	Burst    int
	// Duration, if positive, runs a bandwidth or latency test for this
	// long instead of Iters messages (perftest's -D) and measures what
	// completes between Margin after its start and Margin before its end
	// (perftest's -f; 0 takes perftest's default of a quarter of the
	// duration, NoMargin measures all of it). Iters must then be 0.
	Duration fabric.Duration
	Margin   fabric.Duration
	// SL is the service level of every path (perftest's -S): on a
	// simulated network with several virtual lanes it picks the lane.
	SL uint8
}

// maxEBBPatterns bounds ebb's -n: the patterns travel out of band as
// 4 bytes per node and pattern.
const maxEBBPatterns = 1 << 14

// ErrConfig reports an invalid benchmark configuration; the error is a
// *setting.Error naming the Config field.
var ErrConfig = errors.New("perftest: invalid configuration")

// bad is an invalid setting of a Config (or the node count, "Nodes").
func bad(name string, value any, problem string, args ...any) error {
	return setting.New(name, value, problem, args...).Sentinel(ErrConfig)
}

func (c *Config) bandwidth() bool { return strings.HasSuffix(c.Test, "_bw") }

// Normalize fills defaults and checks the configuration for a cluster of
// nodes nodes, naming the offending flag.
func (c *Config) Normalize(nodes int) error {
	known := false
	for _, t := range Tests {
		known = known || t == c.Test
	}
	if !known {
		return bad("Test", fmt.Sprintf("%q", c.Test), "unknown test; choose one of %s", strings.Join(Tests, ", "))
	}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	if err := c.checkDuration(); err != nil {
		return err
	}
	switch {
	case c.Duration > 0:
		def(&c.Size, map[bool]int{true: 65536, false: 2}[c.bandwidth()])
	case c.Test == "reg_mr":
		def(&c.Size, 1<<20)
		def(&c.Iters, 3)
	case c.Test == "ebb":
		// Hoefler et al.'s 1 MiB per direction; -n random bisections.
		def(&c.Size, 1<<20)
		def(&c.Iters, 20)
	case c.bandwidth():
		def(&c.Size, 65536)
		def(&c.Iters, 5000)
	default:
		def(&c.Size, 2)
		def(&c.Iters, 1000)
	}
	def(&c.QPs, 1)
	def(&c.TxDepth, 128)
	def(&c.RxDepth, 512)
	def(&c.CQMod, 100)
	def(&c.Window, 2)
	def(&c.Burst, 8)
	if c.Inline == 0 {
		c.Inline = 220
	}
	if c.Conn == 0 {
		c.Conn = fabric.RC
	}
	if c.Test == "ebb" {
		if c.Iters > maxEBBPatterns {
			return bad("Iters", c.Iters, "ebb runs at most %d random bisections (node 0 sends every pattern to every node)", maxEBBPatterns)
		}
		if c.Duration > 0 {
			return bad("Duration", c.Duration, "ebb runs a number of random bisections (Iters), not for a time")
		}
		if c.Conn != fabric.RC && c.Conn != fabric.UD {
			return bad("Conn", c.Conn, "ebb runs over UD datagrams (the default)")
		}
		c.Conn = fabric.UD
	}
	switch {
	case c.Size < 1:
		return bad("Size", c.Size, "message size must be at least 1 byte")
	case c.Size > 1<<30:
		return bad("Size", c.Size, "message size above 1 GiB")
	case c.Iters < 1 && c.Duration <= 0:
		return bad("Iters", c.Iters, "need at least one iteration")
	case c.QPs < 1 || c.QPs > 1<<16:
		return bad("QPs", c.QPs, "queue pairs per peer must be 1..65536")
	case c.TxDepth < 1:
		return bad("TxDepth", c.TxDepth, "must be positive")
	case c.RxDepth < 1:
		return bad("RxDepth", c.RxDepth, "must be positive")
	case c.CQMod < 1:
		return bad("CQMod", c.CQMod, "must be positive")
	case c.Inline < 0:
		return bad("Inline", c.Inline, "inline size must not be negative")
	case nodes < 2:
		return bad("Nodes", nodes, "every test needs at least 2 nodes")
	case c.Test != "alltoall_bw" && c.Test != "incast_bw" && c.Test != "reg_mr" && c.Test != "ebb" && nodes%2 != 0:
		return bad("Nodes", nodes, "%s pairs nodes (client 2i, server 2i+1); use an even count", c.Test)
	case c.Conn == fabric.UD && c.Test != "send_bw" && c.Test != "send_lat" && c.Test != "alltoall_bw" && c.Test != "incast_bw" && c.Test != "ebb":
		use := "use RC or UC"
		if strings.HasPrefix(c.Test, "read_") {
			use = "use RC (UC has no RDMA Read either)"
		}
		return bad("Conn", c.Conn, "%s needs RDMA operations, which UD does not have; %s", c.Test, use)
	case c.Conn == fabric.UC && (c.Test == "read_bw" || c.Test == "read_lat"):
		return bad("Conn", c.Conn, "RDMA Read needs RC")
	case c.Conn == fabric.UD && c.Size > 4096 && c.Test != "ebb":
		return bad("Size", c.Size, "a UD message is at most one MTU (4096 bytes)")
	case c.Schedule != ScheduleSpread && c.Schedule != ScheduleRandom && c.Schedule != ScheduleRR:
		return bad("Schedule", fmt.Sprintf("%q", c.Schedule), "choose random or rr (or leave it empty)")
	case c.Schedule != ScheduleSpread && c.Test != "alltoall_bw":
		return bad("Schedule", c.Schedule, "applies to alltoall_bw only")
	case c.Spread < 0 || c.Spread > 0 && c.Test != "write_bw" && c.Test != "read_bw":
		return bad("Spread", c.Spread, "applies to write_bw and read_bw only, and must not be negative")
	case c.Spread > 0 && c.Spread < c.Size:
		return bad("Spread", c.Spread, "smaller than the message size %d", c.Size)
	case c.Window < 1:
		return bad("Window", c.Window, "must be at least 1")
	case c.Burst < 1:
		return bad("Burst", c.Burst, "must be at least 1")
	case !c.bandwidth() && c.QPs != 1 && c.Test != "reg_mr":
		return bad("QPs", c.QPs, "latency tests use one queue pair")
	case c.SL > 15:
		return bad("SL", c.SL, "a service level is 0..15")
	case c.TxDepth > 32768:
		return bad("TxDepth", c.TxDepth, "above the usual device limit of 32768 work requests")
	case c.RxDepth > 32768:
		return bad("RxDepth", c.RxDepth, "above the usual device limit of 32768 work requests")
	}
	if c.CQMod > c.TxDepth {
		c.CQMod = c.TxDepth
	}
	return nil
}

// Result is one benchmark's outcome in the microbenchmark record of
// docs/results.md. Bandwidth is in Gb/s (10^9 bit/s), as perftest's
// --report_gbits; latencies are one-way, in microseconds.
type Result struct {
	Test        string  `json:"test"`
	Backend     string  `json:"backend"`
	Profile     string  `json:"profile,omitempty"`
	Nodes       int     `json:"nodes"`
	Conn        string  `json:"conn"`
	Bytes       int     `json:"bytes"`
	Iterations  int     `json:"iterations"`
	QPs         int     `json:"qps"`
	BWPeakGbps  float64 `json:"bw_peak_gbps"`
	BWAvgGbps   float64 `json:"bw_avg_gbps"`
	MsgRateMpps float64 `json:"msg_rate_mpps"`
	TMinUS      float64 `json:"t_min_us,omitempty"`
	TTypicalUS  float64 `json:"t_typical_us,omitempty"`
	TAvgUS      float64 `json:"t_avg_us,omitempty"`
	TP99US      float64 `json:"t_p99_us,omitempty"`
	TMaxUS      float64 `json:"t_max_us,omitempty"`
	// Messages a UD receiver never saw (no receive posted in time).
	Dropped int64 `json:"dropped,omitempty"`
	// RegWithAlloc (reg_mr): the times include allocating and zeroing
	// the region's memory, not the registration alone: the backend
	// cannot time it alone (fabric.RegTimer).
	RegWithAlloc bool `json:"reg_with_alloc,omitempty"`
	// Duration mode (perftest's -D): the run's length and the margin left
	// out of the measurement at each end, seconds; zero in iteration
	// mode, where Iterations is the messages per queue pair. In duration
	// mode Iterations is the messages (latency tests: round trips) each
	// measuring node completed in the measured interval, BW peak is not
	// measured (0, as perftest), and latency tests add TPS, round trips
	// per second (perftest's "tps average"), with t_avg computed as
	// perftest does: the interval over twice the round trips.
	RunS    float64 `json:"run_s,omitempty"`
	MarginS float64 `json:"margin_s,omitempty"`
	TPS     float64 `json:"tps,omitempty"`
	// DurationUS is the measured interval, slowest node, microseconds.
	DurationUS float64 `json:"duration_us"`
	// The build that made the record (set by the command line; see
	// package buildinfo).
	Version     string `json:"version"`
	Commit      string `json:"commit"`
	GoVersion   string `json:"go_version"`
	ProfileHash string `json:"profile_hash"` // sim.Profile.Hash; empty off the simulator
	// ebb only: the effective bisection bandwidth (the mean of
	// EBBRatesGbps's directions over the single pair's bandwidth
	// EBBPairGbps), the lowest direction's bandwidth, and the patterns
	// run (Iterations).
	EBB         float64 `json:"ebb,omitempty"`
	EBBPairGbps float64 `json:"ebb_pair_gbps,omitempty"`
	EBBMinGbps  float64 `json:"ebb_min_gbps,omitempty"`
	// Network describes the simulator's switches, routing and placement
	// when they are not the default single switch (netspec.Spec.String).
	Network string `json:"network,omitempty"`
	// QPNumbering is the simulator's queue-pair numbering of the run
	// (sim.Config.QPNumbering; 0, the default, is left out).
	QPNumbering uint64 `json:"qp_numbering,omitempty"`
}

// nodeResult is what one measuring node reports.
type nodeResult struct {
	ok      bool
	bytes   int64
	msgs    int64
	start   fabric.Time
	end     fabric.Time
	peak    float64 // bytes per second
	lat     []fabric.Duration
	dropped int64
	sent    []int64 // duration mode: messages sent per peer index of the sender's mesh
	// ebb: the bandwidth of each pattern's direction into this node, and
	// (nodes 0 and 1) of the reference exchange alone, Gb/s.
	ebbRates []float64
	ebbRef   float64
	// reg_mr: the times include allocating and zeroing the memory (the
	// backend cannot time the registration alone).
	regWithAlloc bool
}

// Run runs cfg on f. cfg must have been normalized for f.Size() nodes.
func Run(f fabric.Fabric, cfg Config) (*Result, error) {
	if err := cfg.Normalize(f.Size()); err != nil {
		return nil, err
	}
	res := make([]nodeResult, f.Size())
	err := f.Run(func(th fabric.Thread) error {
		r, err := runNode(th, f.Size(), &cfg)
		if r != nil {
			res[th.Node().ID()] = *r
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return summarize(f, &cfg, res), nil
}

func runNode(th fabric.Thread, nodes int, cfg *Config) (*nodeResult, error) {
	me := th.Node().ID()
	switch cfg.Test {
	case "alltoall_bw":
		return allToAll(th, nodes, cfg)
	case "incast_bw":
		return incast(th, nodes, cfg)
	case "reg_mr":
		return regMR(th, cfg)
	case "ebb":
		return ebb(th, nodes, cfg)
	case "send_lat", "write_lat", "read_lat":
		return latency(th, me^1, me%2 == 0, cfg)
	default:
		return bandwidth(th, nodes, me^1, me%2 == 0, cfg)
	}
}

func summarize(f fabric.Fabric, cfg *Config, res []nodeResult) *Result {
	out := &Result{Test: cfg.Test, Backend: f.Backend(), Nodes: f.Size(), Conn: cfg.Conn.String(), Bytes: cfg.Size,
		Iterations: cfg.Iters, QPs: cfg.QPs}
	var bw, peak, rate float64
	var lats []fabric.Duration
	n := 0
	for _, r := range res {
		if !r.ok {
			continue
		}
		n++
		d := r.end.Sub(r.start).Seconds()
		if d > 0 {
			bw += float64(r.bytes) * 8 / d / 1e9
			rate += float64(r.msgs) / d / 1e6
		}
		peak += r.peak * 8 / 1e9
		out.DurationUS = math.Max(out.DurationUS, r.end.Sub(r.start).Seconds()*1e6)
		lats = append(lats, r.lat...)
		out.Dropped += r.dropped
		out.RegWithAlloc = out.RegWithAlloc || r.regWithAlloc
	}
	if n > 0 {
		out.BWAvgGbps, out.BWPeakGbps, out.MsgRateMpps = bw/float64(n), math.Max(peak/float64(n), bw/float64(n)), rate/float64(n)
	}
	if len(lats) > 0 {
		sort.Slice(lats, func(i, j int) bool { return lats[i] < lats[j] })
		var sum fabric.Duration
		for _, l := range lats {
			sum += l
		}
		us := func(d fabric.Duration) float64 { return d.Microseconds() }
		out.TMinUS, out.TMaxUS = us(lats[0]), us(lats[len(lats)-1])
		out.TTypicalUS = us(lats[len(lats)/2])
		out.TAvgUS = us(sum) / float64(len(lats))
		// perftest's own rule, sorted samples at index ceil(0.99 n), so
		// that t_99 compares with the tool's output; a library quantile
		// (gonum's stat.Quantile) picks a neighbouring sample.
		out.TP99US = us(lats[min(len(lats)-1, (len(lats)*99+99)/100)])
	}
	if cfg.Test == "ebb" {
		summarizeEBB(out, res)
	}
	if cfg.Duration > 0 {
		out.RunS, out.MarginS = cfg.Duration.Seconds(), cfg.margin().Seconds()
		out.BWPeakGbps = 0 // not measured, as perftest in duration mode
		var msgs int64
		for _, r := range res {
			if r.ok {
				msgs += r.msgs
			}
		}
		if n > 0 {
			out.Iterations = int(msgs / int64(n))
		}
		if !cfg.bandwidth() && out.DurationUS > 0 {
			// perftest's duration-mode latency: the measured interval over
			// the round trips in it, halved (read_lat: a read's whole
			// round trip, not halved); and round trips per second.
			out.TPS = float64(out.Iterations) / (out.DurationUS / 1e6)
			if out.Iterations > 0 {
				half := 2.0
				if cfg.Test == "read_lat" {
					half = 1
				}
				out.TAvgUS = out.DurationUS / half / float64(out.Iterations)
			}
		}
	}
	return out
}

// segment is a batch of bytes known to have completed during (from, to]:
// one signaled completion covers the CQMod requests since the previous one
// of its queue pair.
type segment struct {
	from, to fabric.Time
	bytes    int64
}

// peakRate is perftest's "BW peak": the best rate over twenty equal slices
// of the run, each batch's bytes spread evenly over the interval in which
// they completed (completions arrive in bursts; counting a burst at one
// instant would report rates above the line rate).
func peakRate(segs []segment, start, end fabric.Time) float64 {
	const tiles = 20
	w := end.Sub(start) / tiles
	if w <= 0 || len(segs) == 0 {
		return 0
	}
	var sum [tiles]float64
	for _, s := range segs {
		d := s.to.Sub(s.from)
		if d <= 0 {
			d = 1
			s.from = s.to - 1
		}
		// Only the tiles the segment overlaps: those before k0 end by
		// s.from, and the loop stops at the first that starts at s.to.
		k0 := 0
		if s.from > start {
			k0 = int(min(s.from.Sub(start)/w, tiles))
		}
		for k := k0; k < tiles; k++ {
			a := start.Add(w * fabric.Duration(k))
			if a >= s.to {
				break
			}
			b := a.Add(w)
			lo, hi := max(a, s.from), min(b, s.to)
			if hi > lo {
				sum[k] += float64(s.bytes) * float64(hi-lo) / float64(d)
			}
		}
	}
	best := 0.0
	for _, v := range sum {
		best = math.Max(best, v/w.Seconds())
	}
	return best
}

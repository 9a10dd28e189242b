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
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/internal/setting"
)

// Tests lists the supported test names.
var Tests = []string{"send_bw", "write_bw", "read_bw", "send_lat", "write_lat", "read_lat", "alltoall_bw", "incast_bw", "reg_mr", "ebb", "shift_bw", "read_swarm", "write_swarm"}

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
	// Bidirectional (send_bw, write_bw, read_bw; perftest's -b) has both
	// nodes of a pair send at once; the bandwidth and message rate are
	// then the sum of the two directions, as perftest reports them.
	Bidirectional bool
	// NoPeak leaves the peak bandwidth unmeasured (0), as perftest's -N.
	NoPeak bool
	// MTU is the path MTU of the RC and UC queue pairs in bytes (256,
	// 512, 1024, 2048 or 4096; perftest's -m); 0 takes the port's active
	// MTU, and one above it runs at the port's, as perftest does. On UD
	// it bounds the message size.
	MTU int
	// Outs is the number of RDMA Reads each queue pair keeps in flight
	// and accepts (read_bw, read_lat; perftest's -o); 0 is 16.
	Outs int
	// QPTimeout is the local ACK timeout code of the RC queue pairs,
	// 4.096 us * 2^code (perftest's -u): 1..31, 0 for perftest's default
	// of 14, NoTimeout for none (the code 0).
	QPTimeout int
	// PostList, if positive, posts at most this many requests per post
	// call (perftest's -l); 0 posts every request a queue pair has room
	// for in one call.
	PostList int
	// Threads (read_swarm, write_swarm) is the issuing threads per node,
	// each with its own completion queue and an equal share of the QPs
	// queue pairs, keeping Window operations (default 16) in flight on
	// queue pairs chosen at random, Iters each (default enough for every
	// queue pair to be used many times); default 8, at most QPs.
	Threads int
}

// NoTimeout, as Config.QPTimeout, sets the ACK timeout code 0: the
// requester waits for an acknowledgement for ever (perftest's -u 0).
const NoTimeout = -1

// defaultOuts is the read depth of every queue pair when Config.Outs is 0
// (ConnectX's max_qp_rd_atom).
const defaultOuts = 16

// defaultQPTimeout is perftest's DEF_QP_TIME.
const defaultQPTimeout = 14

// ErrNoAtomics refuses perftest's atomic tests (atomic_bw, atomic_lat):
// they post RDMA atomic operations (compare-and-swap, fetch-and-add),
// which the fabric contract does not define.
var ErrNoAtomics = errors.New("perftest: no atomic operations in the fabric contract")

// AtomicTests are perftest's tests that ErrNoAtomics refuses.
var AtomicTests = []string{"atomic_bw", "atomic_lat"}

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

// patterned reports the tests that send Size bytes along every flow of a
// traffic pattern at once, in datagrams of the MTU, one pattern after
// another (ebb, shift_bw).
func (c *Config) patterned() bool { return c.Test == "ebb" || c.Test == "shift_bw" }

// swarm reports the two-node swarm tests (read_swarm, write_swarm).
func (c *Config) swarm() bool { return strings.HasSuffix(c.Test, "_swarm") }

// Normalize fills defaults and checks the configuration for a cluster of
// nodes nodes, naming the offending flag.
func (c *Config) Normalize(nodes int) error {
	known := false
	for _, t := range Tests {
		known = known || t == c.Test
	}
	if !known && slices.Contains(AtomicTests, c.Test) {
		return fmt.Errorf("%w: %s posts compare-and-swap and fetch-and-add requests, and fabric.Opcode has no atomic opcode "+
			"(send, send with immediate, RDMA Write, Write with immediate and RDMA Read only); no backend could run them", ErrNoAtomics, c.Test)
	}
	if !known {
		return bad("Test", fmt.Sprintf("%q", c.Test), "unknown test; choose one of %s", strings.Join(Tests, ", "))
	}
	if err := c.checkDuration(); err != nil {
		return err
	}
	c.defaults()
	if c.Test == "ebb" && c.Iters > maxEBBPatterns {
		return bad("Iters", c.Iters, "ebb runs at most %d random bisections (node 0 sends every pattern to every node)", maxEBBPatterns)
	}
	if c.Test == "shift_bw" {
		if c.Iters == 0 {
			c.Iters = max(1, nodes-1) // every stage
		}
		if nodes >= 2 && c.Iters > nodes-1 {
			return bad("Iters", c.Iters, "%d nodes have %d shift stages (distances 1..%d); run at most that many", nodes, nodes-1, nodes-1)
		}
	}
	if c.patterned() {
		if c.Duration > 0 {
			return bad("Duration", c.Duration, "%s runs a number of patterns (Iters), not for a time", c.Test)
		}
		if c.Conn != fabric.RC && c.Conn != fabric.UD {
			return bad("Conn", c.Conn, "%s runs over UD datagrams (the default)", c.Test)
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
	case c.Test != "alltoall_bw" && c.Test != "incast_bw" && c.Test != "reg_mr" && !c.patterned() && nodes%2 != 0:
		return bad("Nodes", nodes, "%s pairs nodes (client 2i, server 2i+1); use an even count", c.Test)
	case c.Conn == fabric.UD && c.Test != "send_bw" && c.Test != "send_lat" && c.Test != "alltoall_bw" && c.Test != "incast_bw" && !c.patterned():
		use := "use RC or UC"
		if strings.HasPrefix(c.Test, "read_") {
			use = "use RC (UC has no RDMA Read either)"
		}
		return bad("Conn", c.Conn, "%s needs RDMA operations, which UD does not have; %s", c.Test, use)
	case c.Conn == fabric.UC && (c.Test == "read_bw" || c.Test == "read_lat"):
		return bad("Conn", c.Conn, "RDMA Read needs RC")
	case c.Conn == fabric.UD && c.Size > 4096 && !c.patterned():
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
	case c.swarm() && nodes != 2:
		return bad("Nodes", nodes, "the swarm runs on 2 nodes, both issuing and serving")
	case c.swarm() && c.Conn != fabric.RC:
		return bad("Conn", c.Conn, "the swarm's queue pairs are RC")
	case c.Threads < 0 || (c.Threads > 0 && !c.swarm()):
		return bad("Threads", c.Threads, "issuing threads apply to read_swarm and write_swarm (at least 1)")
	case !c.bandwidth() && !c.swarm() && c.QPs != 1 && c.Test != "reg_mr":
		return bad("QPs", c.QPs, "latency tests use one queue pair")
	case c.SL > fabric.MaxSL:
		return bad("SL", c.SL, "a service level is 0..15")
	case c.TxDepth > 32768:
		return bad("TxDepth", c.TxDepth, "above the usual device limit of 32768 work requests")
	case c.RxDepth > 32768:
		return bad("RxDepth", c.RxDepth, "above the usual device limit of 32768 work requests")
	}
	if err := c.checkOptions(); err != nil {
		return err
	}
	if c.CQMod > c.TxDepth {
		c.CQMod = c.TxDepth
	}
	return nil
}

// checkOptions checks perftest's options that only some tests take.
func (c *Config) checkOptions() error {
	read := c.Test == "read_bw" || c.Test == "read_lat"
	switch {
	case c.Bidirectional && c.Test != "send_bw" && c.Test != "write_bw" && c.Test != "read_bw":
		return bad("Bidirectional", c.Bidirectional, "applies to send_bw, write_bw and read_bw (both nodes of a pair send), not %s", c.Test)
	case c.MTU != 0 && c.MTU != 256 && c.MTU != 512 && c.MTU != 1024 && c.MTU != 2048 && c.MTU != 4096:
		return bad("MTU", c.MTU, "a path MTU is 256, 512, 1024, 2048 or 4096 bytes")
	case c.MTU != 0 && c.Conn == fabric.UD && c.Size > c.MTU && !c.patterned():
		return bad("Size", c.Size, "a UD message is at most one MTU (%d bytes)", c.MTU)
	case c.Outs < 0 || c.Outs > 255:
		return bad("Outs", c.Outs, "RDMA Reads in flight per queue pair must be 1..255")
	case c.Outs > 0 && !read:
		return bad("Outs", c.Outs, "applies to read_bw and read_lat (RDMA Reads in flight), not %s", c.Test)
	case c.QPTimeout != NoTimeout && (c.QPTimeout < 0 || c.QPTimeout > 31):
		return bad("QPTimeout", c.QPTimeout, "an ACK timeout code is 0..31 (4.096 us * 2^code)")
	case c.PostList < 0:
		return bad("PostList", c.PostList, "must not be negative")
	case c.PostList > 0 && c.Interleave:
		return bad("PostList", c.PostList, "with Interleave, which posts one request per queue pair in turn")
	case c.PostList > c.TxDepth:
		return bad("PostList", c.PostList, "above the send queue's depth %d (TxDepth)", c.TxDepth)
	}
	return nil
}

// defaults fills the zero fields with perftest's defaults (and ours).
func (c *Config) defaults() {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
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
	case c.Test == "shift_bw":
		// 1 MiB per flow, as ebb and as Kerbyson et al.'s large
		// messages; Iters 0 runs every stage (Normalize).
		def(&c.Size, 1<<20)
	case c.swarm():
		// rc-swarm's 32-byte operations, 16 in flight per thread.
		def(&c.Size, 32)
		def(&c.QPs, 1)
		def(&c.Threads, 8)
		c.Threads = min(c.Threads, c.QPs)
		def(&c.Iters, max(2000, 16*c.QPs/c.Threads))
		def(&c.Window, 16)
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
	Threads     int     `json:"threads,omitempty"` // read_swarm, write_swarm: issuing threads per node
	Window      int     `json:"window,omitempty"`  // read_swarm, write_swarm: operations in flight per thread
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
	// shift_bw only: what one pair gets alone (PairGbps), every stage
	// run (distance, and the mean and lowest bandwidth into a node), and
	// the lowest and highest stage mean; BWAvgGbps is the mean over every
	// stage and node, and Iterations the stages run.
	PairGbps      float64      `json:"pair_gbps,omitempty"`
	ShiftStages   []ShiftStage `json:"shift_stages,omitempty"`
	ShiftLowGbps  float64      `json:"shift_low_gbps,omitempty"`
	ShiftHighGbps float64      `json:"shift_high_gbps,omitempty"`
	// Network describes the simulator's switches, routing and placement
	// when they are not the default single switch (netspec.Spec.String).
	Network string `json:"network,omitempty"`
	// QPNumbering is the simulator's queue-pair numbering of the run
	// (sim.Config.QPNumbering; 0, the default, is left out).
	QPNumbering uint64 `json:"qp_numbering,omitempty"`
	// Bidirectional: both nodes of each pair sent (Config.Bidirectional);
	// the bandwidths and the message rate are the sum of the directions.
	Bidirectional bool `json:"bidirectional,omitempty"`

	// What perftest prints besides its record (not in the record): the
	// set-up one node saw (the lowest-numbered node this process ran; nil
	// for tests that do not pair nodes), the latency samples of the
	// measuring nodes in the order they were taken (one-way, read_lat's
	// whole round trips), and a bidirectional run's two directions.
	Setup   *Setup            `json:"-"`
	Samples []fabric.Duration `json:"-"`
	Sides   []Side            `json:"-"`
}

// Setup is what one node of a pairwise test set up: its device, the path
// MTU, inline and read limits of its queue pairs, and the addresses of
// its queue pairs to its peer and of the peer's, as exchanged (QPN, LID,
// GID, first PSN, buffer address and rkey).
type Setup struct {
	Node      int
	Client    bool   // the node drove the test (perftest's client); else it served
	Device    string // fabric.DeviceAttr.Name
	LinkLayer string // "InfiniBand" or "Ethernet"
	MTU       int    // the queue pairs' path MTU, bytes
	MaxInline int    // the queue pairs' inline limit, bytes
	Outs      int    // RDMA Reads in flight per queue pair
	PollBatch int    // completions taken per poll of the send queue's CQ
	Local     []fabric.QPInfo
	Remote    []fabric.QPInfo
}

// Side is one direction of a bidirectional run: the nodes that started
// the pairs (Client) or the others, their mean bandwidths in Gb/s and
// message rate in millions per second.
type Side struct {
	Client                bool
	BWPeakGbps, BWAvgGbps float64
	MsgRateMpps           float64
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
	// shift_bw: the bandwidth into this node in each stage, Gb/s (and
	// ebbRef for the reference pair).
	shiftRates []float64
	// reg_mr: the times include allocating and zeroing the memory (the
	// backend cannot time the registration alone).
	regWithAlloc bool
	// Pairwise tests: what the node set up (a node that measures
	// nothing reports it too, with ok false).
	setup *Setup
}

// Run runs cfg on f. cfg must have been normalized for f.Size() nodes.
func Run(f fabric.Fabric, cfg Config) (*Result, error) {
	if err := cfg.Normalize(f.Size()); err != nil {
		return nil, err
	}
	if cfg.swarm() {
		return runSwarmTest(f, cfg)
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
	case "shift_bw":
		return shift(th, nodes, cfg)
	case "send_lat", "write_lat", "read_lat":
		return latency(th, me^1, me%2 == 0, cfg)
	default:
		return bandwidth(th, nodes, me^1, me%2 == 0, cfg)
	}
}

func summarize(f fabric.Fabric, cfg *Config, res []nodeResult) *Result {
	out := &Result{Test: cfg.Test, Backend: f.Backend(), Nodes: f.Size(), Conn: cfg.Conn.String(), Bytes: cfg.Size,
		Iterations: cfg.Iters, QPs: cfg.QPs, Bidirectional: cfg.Bidirectional}
	var lats []fabric.Duration
	n := 0
	for _, r := range res {
		if out.Setup == nil && r.setup != nil {
			out.Setup = r.setup
		}
		if !r.ok {
			continue
		}
		n++
		out.DurationUS = math.Max(out.DurationUS, r.end.Sub(r.start).Seconds()*1e6)
		lats = append(lats, r.lat...)
		out.Dropped += r.dropped
		out.RegWithAlloc = out.RegWithAlloc || r.regWithAlloc
	}
	all := rates(res, func(nodeResult) bool { return true })
	out.BWAvgGbps, out.BWPeakGbps, out.MsgRateMpps = all.BWAvgGbps, all.BWPeakGbps, all.MsgRateMpps
	if cfg.Bidirectional {
		// perftest adds the two directions of a pair.
		out.BWAvgGbps, out.BWPeakGbps, out.MsgRateMpps = 2*all.BWAvgGbps, 2*all.BWPeakGbps, 2*all.MsgRateMpps
		for _, client := range []bool{true, false} {
			s := rates(res, func(r nodeResult) bool { return r.setup != nil && r.setup.Client == client })
			s.Client = client
			out.Sides = append(out.Sides, s)
		}
	}
	if len(lats) > 0 {
		out.Samples = slices.Clone(lats)
		latencyFigures(out, lats)
	}
	switch cfg.Test {
	case "ebb":
		summarizeEBB(out, res)
	case "shift_bw":
		summarizeShift(out, cfg, res)
	}
	if cfg.NoPeak {
		out.BWPeakGbps = 0
		for i := range out.Sides {
			out.Sides[i].BWPeakGbps = 0
		}
	}
	if cfg.Duration > 0 {
		summarizeDuration(out, cfg, res, n)
	}
	return out
}

// rates is the mean bandwidths and message rate of the measuring nodes
// that keep selects; the peak is at least the average.
func rates(res []nodeResult, keep func(nodeResult) bool) Side {
	var bw, peak, rate float64
	n := 0
	for _, r := range res {
		if !r.ok || !keep(r) {
			continue
		}
		n++
		if d := r.end.Sub(r.start).Seconds(); d > 0 {
			bw += float64(r.bytes) * 8 / d / 1e9
			rate += float64(r.msgs) / d / 1e6
		}
		peak += r.peak * 8 / 1e9
	}
	if n == 0 {
		return Side{}
	}
	return Side{BWAvgGbps: bw / float64(n), BWPeakGbps: math.Max(peak/float64(n), bw/float64(n)), MsgRateMpps: rate / float64(n)}
}

// latencyFigures fills out's latency statistics from lats, which it sorts.
func latencyFigures(out *Result, lats []fabric.Duration) {
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

// summarizeDuration turns out into a duration-mode result: the messages
// each of the n measuring nodes completed in the measured interval, no
// peak, and for latency tests perftest's duration-mode figures.
func summarizeDuration(out *Result, cfg *Config, res []nodeResult, n int) {
	out.RunS, out.MarginS = cfg.Duration.Seconds(), cfg.margin().Seconds()
	out.BWPeakGbps = 0 // not measured, as perftest in duration mode
	for i := range out.Sides {
		out.Sides[i].BWPeakGbps = 0
	}
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

package experiments

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"

	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/internal/setting"
	"github.com/rdmashuffle/rdmashuffle/tpch"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// MemoryEstimate is about how many bytes of memory a simulated run of cfg
// takes at its peak (resident size, as /usr/bin/time -f %M reports it).
// The simulator keeps state per node and peer node (queue pairs, address
// handles), per node, peer and thread (a thread's queue pairs, buffers and
// flow-control records for a peer), per buffer of those, and per pair of
// threads on two nodes (per-thread flow control with every remote
// thread); so memory grows with the square of the cluster size, with a
// weight per design (runMemoryOf, fitted to measured peaks). In payload
// mode the registered buffers hold real bytes as well, as far as the
// data written into them reaches. A TPC-H point (a
// TPC-H workload) is estimated by QueryMemoryEstimate instead.
func MemoryEstimate(cfg RunConfig) int64 {
	if w := cfg.Workload; w.Kind == results.TPCH {
		q, local, sfpn := tpch.Query(w.Query), w.Local, w.SFPerNode
		qc := QueryConfig{Query: q, SF: sfpn * float64(max(cfg.Nodes, 1)), Design: cfg.Design, Nodes: cfg.Nodes, Threads: cfg.Threads,
			Buffers: cfg.Buffers, MsgBytes: cfg.MsgBytes, Payload: cfg.Payload}
		if qc.Threads == 0 { // a query point's default: half the cores
			qc.Threads = 14
			if prof, err := sim.LoadProfile(cfg.Profile); err == nil {
				qc.Threads = max(prof.Host.Cores/2, 1)
			}
		}
		if local {
			qc.Design = LocalData
		}
		return QueryMemoryEstimate(qc)
	}
	n, t, b := int64(max(cfg.Nodes, 1)), int64(max(cfg.Threads, 1)), int64(max(cfg.Buffers, 1))
	if cfg.Threads == 0 {
		t = 2
	}
	if cfg.Buffers == 0 {
		b = 2
	}
	d := DesignOf(cfg.Design)
	msg := int64(cfg.MsgBytes)
	if msg == 0 {
		msg = int64(d.MsgBytes)
	}
	pages, steady := runReach(cfg, n, t, b, msg)
	est := runMemoryOf(d.Name).bytes(n, t, b, pages, steady)
	if cfg.Payload {
		registered := satMul(2*t, n, b, msg) // per node: send and receive buffers
		// Registered memory is mapped and costs only the pages written:
		// a node's send buffers up to what it sends, its receive
		// buffers up to what it receives (about as much).
		est = satAdd(est, satMul(n, min(registered, satMul(2, payloadSent(cfg, n, t)))))
	}
	return est
}

// satMul is the product of factors that are not negative, at most
// math.MaxInt64.
func satMul(factors ...int64) int64 {
	f := 1.0
	for _, x := range factors {
		f *= float64(x)
	}
	if f >= math.MaxInt64 {
		return math.MaxInt64
	}
	p := int64(1)
	for _, x := range factors {
		p *= x
	}
	return p
}

// satAdd is a + b (neither negative), at most math.MaxInt64.
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// payloadSent is about how many bytes a node of cfg's run sends (an
// upper bound): BytesPerNode, or BytesPerPair to every thread of every
// node from each of t threads, times the copies a broadcast or multicast
// pattern makes.
func payloadSent(cfg RunConfig, n, t int64) int64 {
	sent := max(cfg.BytesPerNode, 0)
	if cfg.BytesPerPair > 0 {
		sent = satMul(cfg.BytesPerPair, t, n)
	}
	switch p := string(cfg.Pattern); {
	case cfg.Pattern == algos.Broadcast:
		sent = satMul(sent, n)
	case strings.HasPrefix(p, string(algos.Multicast)+":"):
		var k int64
		if _, err := fmt.Sscanf(p, string(algos.Multicast)+":%d", &k); err == nil && k > 1 {
			sent = satMul(sent, k)
		}
	}
	return sent
}

// runMemory is what a design's simulated run keeps beyond a fixed part
// (runMemoryBase): bytes per node and
// peer node, per node, peer and thread, per buffer of those, per
// pair of threads on two nodes, and, for what a size-only run's input
// reaches (inputReach), per page of registered buffers written beyond
// the first on each connection (a node's thread sending to a peer) and
// on each pair of threads, and per connection as its input fills a
// design's own buffers. The per-peer bytes include the garbage collector's
// headroom (Go's default target, 100%) and the first page a connection
// writes (a message's header).
type runMemory struct {
	perPeer, perThread, perBuffer, perTwo, perPage, perSteady, perTwoPage int64
}

// inputReach is what a size-only run's input reaches on one connection
// (one node's thread sending to one peer), for perConn bytes in messages
// of up to msg bytes with b buffers. pages is how many pages of its
// registered buffers it writes beyond the first: its messages reach
// min(b, messages) buffers, and in each a message moves a window at its
// start and one at its end (fabric.SizeOnlyWindow), a page apart once
// the message is longer than a page. steady is how far the connection's
// bytes fill steadyBytes (1 from there on): what its design keeps
// whatever --buffers says (a pool, a multiplexer's buffers), which
// designs with buffers of their own pay instead of pages (HyPer, RDMA-MW,
// MPI, the shared-receive-queue designs; docs/performance.md). A
// connection of one short message writes no extra page.
func inputReach(perConn, msg, b int64) (pages, steady float64) {
	payload := msg - algos.HeaderBytes
	if perConn <= 0 || payload <= 0 {
		return 0, 0
	}
	msgs := (perConn + payload - 1) / payload
	size := min(msg, perConn+algos.HeaderBytes)
	windows := int64(1)
	if size > pageBytes {
		windows = 2
	}
	steady = min(float64(perConn)/steadyBytes, 1)
	return float64(max(min(b, msgs)*windows-1, 0)), steady
}

// runReach is inputReach for a run of cfg on n nodes of t threads with b
// buffers in messages of up to msg bytes: what each connection carries
// in a size-only run (nothing in payload mode, which MemoryEstimate
// estimates by the pages its data can reach).
func runReach(cfg RunConfig, n, t, b, msg int64) (pages, steady float64) {
	if cfg.Payload {
		return 0, 0
	}
	return inputReach(payloadSent(cfg, n, t)/satMul(n, t), msg, b)
}

// pageBytes is the size of a page of memory.
const pageBytes = 4096

// steadyBytes is the input per connection at which inputReach's steady
// reaches 1: a design's own buffers (a 64 KiB ring, a multiplexer's
// 64 KiB messages) are written through.
const steadyBytes = 64 << 10

// bytes is the estimate for n nodes of t threads with b buffers, and
// what the input reaches on each connection (inputReach), computed in
// floating point so that an absurd size (a million nodes of a thousand
// threads) is estimated as huge, at most math.MaxInt64, and refused, not
// wrapped around to a small number.
func (m runMemory) bytes(n, t, b int64, pages, steady float64) int64 {
	nn, tf, bf := float64(n)*float64(n), float64(t), float64(b)
	perConn := float64(m.perThread) + bf*float64(m.perBuffer) + pages*float64(m.perPage) + steady*float64(m.perSteady)
	perPeer := float64(m.perPeer) + tf*perConn + tf*tf*(float64(m.perTwo)+pages*float64(m.perTwoPage))
	est := runMemoryBase + nn*perPeer*(100+runMemoryMargin)/100
	if est >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(est)
}

// runMemoryOf is design's runMemory: fitted to the peak resident sizes in
// testdata/runmem.txt (the command and the fit are there and in
// docs/performance.md "The memory guard of explore run"); a design
// without a fit gets the largest of every fitted weight, which errs
// towards too much.
func runMemoryOf(design string) runMemory {
	if m, ok := runMemoryFits[design]; ok {
		return m
	}
	var top runMemory
	for _, m := range runMemoryFits {
		top.perPeer = max(top.perPeer, m.perPeer)
		top.perThread = max(top.perThread, m.perThread)
		top.perBuffer = max(top.perBuffer, m.perBuffer)
		top.perTwo = max(top.perTwo, m.perTwo)
		top.perPage = max(top.perPage, m.perPage)
		top.perSteady = max(top.perSteady, m.perSteady)
		top.perTwoPage = max(top.perTwoPage, m.perTwoPage)
	}
	return top
}

// AvailableMemory is the memory the operating system says a new process
// can use without swapping (MemAvailable in /proc/meminfo), and false
// where it does not say.
func AvailableMemory() (int64, bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 3 && fields[0] == "MemAvailable:" && fields[2] == "kB" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}

// ErrMemory marks a run refused because the simulated cluster would not
// fit in the memory allowed (CheckMemory, CheckBenchMemory).
var ErrMemory = errors.New("too much memory")

// CheckMemory refuses a run whose MemoryEstimate exceeds available bytes,
// with the estimate, what it grows with, and how to run it anyway.
func CheckMemory(cfg RunConfig, available int64) error {
	est := MemoryEstimate(cfg)
	if est <= available {
		return nil
	}
	return setting.New("Nodes", cfg.Nodes, "the simulated cluster would need about %s of memory (it grows with nodes squared times threads, buffers and the input each connection carries), more than the %s allowed: use fewer nodes, threads, buffers or bytes per node",
		GiB(est), GiB(available)).Sentinel(ErrMemory)
}

// QueryMemoryEstimate is about how many bytes of memory a simulated TPC-H
// query (RunQuery) takes at its peak: the cluster's state, as
// MemoryEstimate's, the operators' state per thread, and the generated
// columns and the operators' tuples, which grow with the scale factor.
// The MPI baseline also backs its registered buffers (a buffer per thread
// and destination on every node), and its memory per unit of scale factor
// grows with the nodes.
//
// Calibrated on peak resident sizes (/usr/bin/time -f %M explore query
// --threads 14 --sf SF --no-memory-check ..., size-only, edr-cx4,
// measured 2026-11-29), in MB:
//
//	MPI Q3, 16 nodes: SF 3.2 547, 12.8 749, 51.2 1157 (about 11-21 per SF)
//	MPI Q3, 8 nodes: SF 12.8 285
//	MPI Q3, 4 nodes:  SF 0.8 43, 3.2 64, 6.4 91 (about 9 per SF)
//	MPI, 16 nodes, SF 12.8: Q10 526, Q4 416
//	MESQ/SR, 16 nodes: Q3 SF 3.2 192, 12.8 269; Q10 SF 12.8 335, 51.2 676 (about 9 per SF)
//	Q4's local-data plan, 16 nodes: SF 12.8 19
//	--payload, Q3, 4 nodes, 2 threads: MESQ/SR SF 0.4 42, 1.6 107; MPI 50, 117
//
// The estimate takes the upper end, so it errs towards too much
// (TestQueryMemoryEstimate keeps it between each peak and twice it).
func QueryMemoryEstimate(qc QueryConfig) int64 {
	n, t, b := int64(max(qc.Nodes, 1)), int64(max(qc.Threads, 1)), int64(max(qc.Buffers, 2))
	if qc.Threads == 0 {
		t = 2
	}
	sf := max(qc.SF, 0)
	if qc.Design == LocalData {
		return 64<<20 + int64(sf*(1<<20))
	}
	est := MemoryEstimate(RunConfig{Design: qc.Design, Nodes: qc.Nodes, Threads: int(t), Buffers: int(b), MsgBytes: qc.MsgBytes, Payload: qc.Payload})
	est = satAdd(est, satMul(n, t, queryPerThread))
	perSF := float64(13 << 20)
	if qc.Payload { // the columns' values and the operators' tuples are real
		perSF = 60 << 20
	}
	if qc.Design == algos.NameMPI {
		msg := int64(qc.MsgBytes)
		if msg == 0 {
			msg = int64(DesignOf(qc.Design).MsgBytes)
		}
		est = satAdd(est, satMul(n, n, t, b, msg))
		perSF = max(perSF, float64(14<<20)+float64(n)*0.25*(1<<20))
	}
	return est + int64(sf*perSF)
}

// queryPerThread is a query's memory per thread of every node beyond its
// exchanges' (the operators' state): 16-node runs of 14 threads take
// about 100 MB more than their exchanges' estimate at the smallest scale
// factors.
const queryPerThread = 460 << 10

// MemoryBudget admits simulated runs that execute at the same time (the
// jobs of a sweep, a figure or explore reproduce) so that their
// MemoryEstimates together stay within a total, normally what the machine
// has available when the command starts: a run waits until its estimate
// is free. A run whose estimate alone exceeds the total is refused
// (ErrMemory) rather than started: on a machine without that memory it
// would swap or be killed, taking the runs beside it along; steady-state
// growth asks Fits first and keeps the run it has. A nil budget admits
// every run at once and fits everything. Safe for concurrent use.
type MemoryBudget struct {
	total int64 // bytes

	mu      sync.Mutex
	cond    *sync.Cond
	used    int64 // bytes admitted and not yet released
	waiting int   // runs waiting to be admitted
}

// NewMemoryBudget is a budget of total bytes (at least 1).
func NewMemoryBudget(total int64) *MemoryBudget {
	b := &MemoryBudget{total: max(total, 1)}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// Total is the budget's size in bytes; 0 for a nil budget (no limit).
func (b *MemoryBudget) Total() int64 {
	if b == nil {
		return 0
	}
	return b.total
}

// Fits reports whether a run estimated at est bytes fits in the budget
// by itself.
func (b *MemoryBudget) Fits(est int64) bool { return b == nil || est <= b.total }

// Refuse is the error of a run estimated at est bytes that does not fit
// in the budget by itself: it matches ErrMemory and names both sizes and
// what would let it run.
func (b *MemoryBudget) Refuse(est int64) error {
	return fmt.Errorf("%w: not run, estimated at %s, more than the %s the runs may take together (run it where there is more memory, raise the limit, or turn the memory check off)",
		ErrMemory, GiB(est), GiB(b.Total()))
}

// acquire waits until est bytes (at most the total) are free and takes
// them; the caller must release what it returns.
func (b *MemoryBudget) acquire(est int64) int64 {
	est = min(max(est, 0), b.total)
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.used+est > b.total {
		b.waiting++
		b.cond.Wait()
		b.waiting--
	}
	b.used += est
	return est
}

func (b *MemoryBudget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
	b.cond.Broadcast()
}

// Hold waits until est bytes (at most the total) are free in the budget
// and takes them for work that is not a run (explore reproduce's
// microbenchmarks), returning the function that gives them back. A nil
// budget holds nothing.
func (b *MemoryBudget) Hold(est int64) (release func()) {
	if b == nil {
		return func() {}
	}
	n := b.acquire(est)
	return func() { b.release(n) }
}

// Admit wraps run so that each call first waits for its configuration's
// MemoryEstimate to be free in the budget, and gives it back when the
// run returns; a configuration whose estimate alone exceeds the budget is
// refused with an error matching ErrMemory (Refuse), without running. A
// nil budget returns run itself.
//
// A run of at least releaseAfterBytes also gives its memory back to the
// operating system when it ends (debug.FreeOSMemory). Otherwise the Go
// runtime keeps the freed pages and zeroes them for the next run's
// allocations, which makes them resident: registered regions that a
// size-only run never touches cost nothing in a fresh process but their
// full size in a reused heap. Measured with MPI's Q3 on 16 nodes at 0.8,
// 1.6, 3.2, 0.8, 1.6, 3.2 SF per node, one after the other in one
// process: peak resident 0.97, 3.88, 4.87, 5.31, 5.31, 5.95 GB without
// the release, 0.97, 1.31, 1.31, 1.38 GB (the first four) with it, where
// each alone takes 0.98 to 2.1 GB. The estimates are of fresh processes,
// so without the release a budget would not hold.
func (b *MemoryBudget) Admit(run func(RunConfig) (*results.Record, error)) func(RunConfig) (*results.Record, error) {
	if b == nil {
		return run
	}
	return func(cfg RunConfig) (*results.Record, error) {
		est := MemoryEstimate(cfg)
		if !b.Fits(est) {
			return nil, b.Refuse(est)
		}
		n := b.acquire(est)
		defer b.release(n)
		if est >= releaseAfterBytes {
			defer debug.FreeOSMemory() // before the release above: the next run starts with it returned
		}
		return run(cfg)
	}
}

// releaseAfterBytes is the estimate from which a finished run's memory is
// given back to the system at once (Admit); below it the forced collection
// would cost more than the pages are worth.
const releaseAfterBytes = 256 << 20

// GiB formats a byte count for memory messages: in GiB with one decimal,
// or in whole MiB below 1 GiB (where 0.0 GiB would say nothing).
func GiB(v int64) string {
	if v < 1<<30 {
		return fmt.Sprintf("%.0f MiB", float64(v)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(v)/(1<<30))
}

// runMemoryBase is the fixed part of every design's estimate: the
// process, the profile and the cluster's first event rings, the mean of
// a fit that left it free (23.5-28.3 MiB over the designs).
const runMemoryBase = 26 << 20

// runMemoryFitNodes is the largest cluster whose measurements the fit
// takes; the larger ones (512 and 1024 nodes) test it.
const runMemoryFitNodes = 256

// runMemoryFits are the fitted weights per design, in bytes, in
// runMemory's order: per node and peer node, per node, peer and thread,
// per buffer of those, per pair of threads on two nodes, and for what the
// input reaches per extra page on a connection, per connection filled
// and per extra page on a pair of threads. They are the least-squares fit of the relative
// error to the peaks in testdata/runmem.txt of up to runMemoryFitNodes
// nodes (TestRunMemoryFits makes it again), with the fixed part at
// runMemoryBase; a weight that came out negative is 0 and the others
// fitted again. runMemory.bytes adds runMemoryMargin to them.
var runMemoryFits = map[string]runMemory{
	"HyPer":         {21085, 0, 126, 1599, 2621, 13222, 107},
	"HyPer/unsched": {16555, 1298, 189, 1365, 2362, 13119, 177},
	"IPoIB":         {1249, 4511, 5010, 10, 0, 8862, 0},
	"MEMQ/RD":       {819, 15761, 478, 240, 1424, 4541, 467},
	"MEMQ/SR":       {791, 5530, 5189, 125, 915, 7494, 361},
	"MEMQ/SR+dc":    {278, 10119, 221, 145, 5, 9576, 54},
	"MEMQ/SR+srq":   {0, 10480, 218, 84, 78, 9253, 25},
	"MEMQ/SR+xrc":   {2324, 9297, 239, 495, 52, 8937, 28},
	"MEMQ/WR":       {3704, 7501, 254, 782, 3399, 2817, 471},
	"MEMQ/WR+cw":    {3451, 7268, 252, 785, 3292, 2957, 421},
	"MEMQ/WR+dc":    {2072, 8255, 263, 410, 3255, 4469, 354},
	"MESQ/SR":       {0, 10221, 339, 0, 2552, 1339, 1685},
	"MPI":           {11117, 6666, 229, 275, 0, 14141, 0},
	"RDMA-MW":       {7087, 9661, 6, 0, 0, 38338, 0},
	"SEMQ/RD":       {12086, 10999, 245, 0, 2371, 2125, 218},
	"SEMQ/SR":       {1643, 4126, 5154, 0, 1282, 8361, 176},
	"SEMQ/WR":       {6645, 9456, 248, 0, 3608, 2779, 295},
	"SEMQ/WR+cw":    {5664, 9418, 176, 0, 3613, 2625, 252},
	"SESQ/SR":       {4571, 8923, 435, 113, 3362, 0, 188},
	"qperf":         {2514, 0, 37, 348, 83, 501, 11},
}

// runMemoryMargin is what the estimate adds to the fitted weights, in
// percent: peaks move by a few percent with the collector's timing, and
// the fit's largest errors are about 10% (MEMQ/RD at 256 nodes).
const runMemoryMargin = 10

package experiments

import (
	"bufio"
	"errors"
	"fmt"
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
// takes at its peak. The simulator keeps state per node, peer and sending
// thread (queue pairs or address handles, posted receives, flow-control
// records), so memory grows with the square of the cluster size; in
// payload mode the registered buffers hold real bytes as well.
//
// Calibrated on peak resident sizes (/usr/bin/time -f %M explore run
// --bytes-per-node 65536 ..., size-only unless noted, edr-cx4):
//
//	MEMQ/SR, 2 threads, 2 buffers:  32 nodes 106 MiB, 64 nodes 409 MiB, 128 nodes 1826 MiB
//	MESQ/SR, 2 threads, 2 buffers:  32 nodes  87 MiB, 64 nodes 560 MiB, 128 nodes 2237 MiB
//	MEMQ/SR, 64 nodes: 8 buffers 836 MiB, 4 threads 733 MiB, --payload 1307 MiB
//
// that is 51-70 KiB per node, peer and thread with 2 buffers, 9 KiB more
// per further buffer, and in payload mode about half the registered
// bytes. The estimate takes the upper end (MESQ/SR's), so it errs towards
// too much.
//
// A TPC-H point (a TPC-H workload) is estimated by QueryMemoryEstimate
// instead.
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
	const base, perPair, perBuffer = 64 << 20, 52 << 10, 9 << 10
	est := base + n*n*t*(perPair+perBuffer*b)
	if cfg.Payload {
		msg := int64(cfg.MsgBytes)
		if msg == 0 {
			msg = int64(DesignOf(cfg.Design).MsgBytes)
		}
		registered := 2 * t * n * b * msg // per node: send and receive buffers
		est += n * registered / 2
	}
	return est
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
	return setting.New("Nodes", cfg.Nodes, "the simulated cluster would need about %s of memory (it grows with nodes squared times threads and buffers), more than the %s allowed: use fewer nodes, threads or buffers",
		GiB(est), GiB(available)).Sentinel(ErrMemory)
}

// QueryMemoryEstimate is about how many bytes of memory a simulated TPC-H
// query (RunQuery) takes at its peak: the cluster's state, as
// MemoryEstimate's, and the generated columns and the operators' state,
// which grow with the scale factor. The MPI baseline also backs its
// registered buffers (a buffer per thread and destination on every node),
// and its memory per unit of scale factor grows with the nodes.
//
// Calibrated on peak resident sizes (/usr/bin/time -f %M explore query
// --threads 14 --sf SF ..., size-only, edr-cx4), in MB:
//
//	MPI Q3, 16 nodes: SF 3.2 619, 12.8 979, 51.2 2136 (about 30-37 per SF)
//	MPI Q3, 4 nodes:  SF 0.8 50, 3.2 96, 6.4 162 (about 19 per SF)
//	MPI, 16 nodes, SF 12.8: Q10 934, Q4 649
//	MESQ/SR, 16 nodes: Q3 SF 3.2 219, 12.8 322; Q10 SF 12.8 411, 51.2 838
//	Q4's local-data plan, 16 nodes: SF 3.2 and 12.8 17
//	--payload, Q3, 4 nodes, 2 threads: MESQ/SR SF 0.4 43, 1.6 102; MPI 72, 119
//
// The estimate takes the upper end, so it errs towards too much.
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
	perSF := float64(20 << 20)
	if qc.Payload { // the columns' values and the operators' tuples are real
		perSF = 60 << 20
	}
	if qc.Design == algos.NameMPI {
		msg := int64(qc.MsgBytes)
		if msg == 0 {
			msg = int64(DesignOf(qc.Design).MsgBytes)
		}
		est += n * n * t * b * msg
		perSF = max(perSF, float64(14<<20)+float64(n)*1.5*(1<<20))
	}
	return est + int64(sf*perSF)
}

// MemoryBudget admits simulated runs that execute at the same time (the
// jobs of a sweep, a figure or explore reproduce) so that their
// MemoryEstimates together stay within a total, normally what the machine
// has available when the command starts: a run waits until its estimate
// is free. A run whose estimate alone exceeds the total is admitted alone
// (its estimate counted as the whole total); steady-state growth asks
// Fits first and does not start such a run. A nil budget admits every
// run at once and fits everything. Safe for concurrent use.
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

// Admit wraps run so that each call first waits for its configuration's
// MemoryEstimate to be free in the budget, and gives it back when the
// run returns. A nil budget returns run itself.
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

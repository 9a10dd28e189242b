package experiments

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/rdmashuffle/rdmashuffle/internal/setting"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/perftest"
)

// The memory guard rail of explore bench: a simulated perftest run keeps
// state per queue pair, and an all-to-all of n nodes has n*(n-1) of them,
// so a run that does not fit is refused before it starts (with the
// estimate and the flag that runs it anyway) instead of swapping or being
// killed during setup.

// Memory of the simulator per queue pair, apart from its rings
// (calibrated on peak resident sizes, docs/performance.md "Scale" and
// testdata/benchmem.txt): the queue pair (384 bytes), perftest's records
// of it and its peer (its sender's progress, 32 bytes), the verbs
// checker's record of its receive range, its share of the events and
// packets in flight at the all-to-all's start, and of the completion
// queues.
const (
	benchBase      = 20 << 20 // the process: runtime, code, tables
	benchPerNode   = 96 << 10 // a node: NIC, threads' stacks, queues
	benchPerQP     = 736
	benchRecvEntry = 24  // bytes per receive-ring slot (rqe)
	benchSendEntry = 256 // bytes per send-ring slot (sqe)
)

// A run whose live heap is estimated at benchTightGCBytes or more runs
// with the garbage collector's target at benchGCPercent (Go's default is
// 100: the heap may grow to twice what is live before a collection), and
// its estimate counts that headroom. Results do not depend on it; the
// run's CPU time grows by a few percent (docs/performance.md "Scale").
const (
	benchTightGCBytes = 32 << 20
	benchGCPercent    = 20
)

// BenchMemory is an estimate of a simulated perftest run's peak memory,
// and what it is made of.
type BenchMemory struct {
	Bytes      int64 // the estimate
	QPs        int64 // queue pairs in the cluster
	PerQP      int64 // live bytes per queue pair, rings included
	Registered int64 // registered bytes backed by memory (payload mode, or a test that writes them)
	// GCPercent is the garbage collector's target the run should use
	// (debug.SetGCPercent), 0 for Go's default.
	GCPercent int
}

// EstimateBenchMemory estimates the peak memory of a simulated run of cfg
// on nodes nodes; payload is the simulator's payload mode. It errs towards
// too much. cfg is normalized on a copy; an invalid cfg returns its error.
func EstimateBenchMemory(cfg perftest.Config, nodes int, payload bool) (BenchMemory, error) {
	if err := cfg.Normalize(nodes); err != nil {
		return BenchMemory{}, err
	}
	n, q := int64(nodes), int64(cfg.QPs)
	var est BenchMemory
	switch cfg.Test {
	case "alltoall_bw":
		est.QPs = n * (n - 1) * q
	case "incast_bw": // node 0 to each other node
		est.QPs = 2 * (n - 1) * q
	case "reg_mr":
	default: // pairs of nodes
		est.QPs = n * q
	}
	recvs := cfg.Test == "send_bw" || cfg.Test == "send_lat" || cfg.Test == "alltoall_bw" || cfg.Test == "incast_bw"
	sends := cfg.TxDepth // in flight per queue pair
	if cfg.Iters > 0 {   // (duration mode, -D, has no -n)
		sends = min(sends, cfg.Iters)
	}
	est.PerQP = benchPerQP + int64(ringSize(sends))*benchSendEntry
	if recvs {
		// perftest posts every receive of a queue pair on the same slot
		// with the same wr_id, so the simulator's ring keeps one entry for
		// those not yet taken and one for each taken and not yet polled:
		// at most the messages in flight to it, -r, and the messages it
		// receives in all, -n.
		entries := cfg.RxDepth
		if cfg.Iters > 0 {
			entries = min(entries, cfg.Iters+1)
		}
		est.PerQP += int64(ringSize(entries)) * benchRecvEntry
	}
	// Registered memory has bytes behind it in payload mode and for the
	// latency tests, which write their buffers; otherwise the simulator
	// backs none (a view of a zero mapping).
	if payload || !strings.HasSuffix(cfg.Test, "_bw") {
		slot := int64(cfg.Size)
		if cfg.Conn == fabric.UD {
			slot += fabric.GRHBytes
		}
		est.Registered = est.QPs * 2 * slot // both sides' slots (write_lat's halves)
		if cfg.Test == "reg_mr" {
			est.Registered = int64(cfg.Size)
		}
		est.Registered += n * int64(cfg.Spread)
	}
	live := n*benchPerNode + est.QPs*est.PerQP + est.Registered
	headroom := int64(100) // the collector's target over the live heap, percent
	if live >= benchTightGCBytes {
		est.GCPercent, headroom = benchGCPercent, benchGCPercent
	}
	est.Bytes = benchBase + live + live*headroom/100
	return est, nil
}

// ringSize is the number of slots of a work-request ring holding n
// requests (fabric/sim: the next power of two).
func ringSize(n int) int {
	s := 1
	for s < n {
		s <<= 1
	}
	return s
}

// CheckBenchMemory refuses a run whose estimate exceeds limit bytes of
// memory (the machine's, or the user's --max-memory), naming the estimate,
// what it is made of and the flag that runs it anyway. limit <= 0
// (unknown) refuses nothing.
func CheckBenchMemory(cfg perftest.Config, nodes int, payload bool, limit int64) error {
	est, err := EstimateBenchMemory(cfg, nodes, payload)
	if err != nil || limit <= 0 || est.Bytes <= limit {
		return err
	}
	what := fmt.Sprintf("%d queue pairs of about %.1f KiB", est.QPs, float64(est.PerQP)/1024)
	if est.Registered > 0 {
		what += fmt.Sprintf(" and %s of registered memory", GiB(est.Registered))
	}
	return setting.New("Nodes", nodes, "the simulated %s would need about %s of memory (%s), more than the %s allowed: use fewer nodes, fewer queue pairs per peer or shallower queues",
		cfg.Test, GiB(est.Bytes), what, GiB(limit)).Sentinel(ErrMemory)
}

// PhysicalMemory is the machine's memory (MemTotal in /proc/meminfo), and
// false where the system does not say.
func PhysicalMemory() (int64, bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	return memInfo(f, "MemTotal")
}

// memInfo reads field (in kB) from a /proc/meminfo listing, in bytes.
func memInfo(r io.Reader, field string) (int64, bool) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[0] == field+":" && f[2] == "kB" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			return kb << 10, err == nil && kb > 0
		}
	}
	return 0, false
}

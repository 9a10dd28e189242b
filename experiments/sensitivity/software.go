package sensitivity

import (
	"fmt"
	"math"
	"strings"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// SoftwareEstimates are the estimated costs that are not profile
// parameters (docs/model.md §2 and §4): the MPI and IPoIB baselines'
// cycle counts and thresholds, constants in package algos, the cycles a
// polling loop pays per cache line, and SQ/SR's credit timers (design
// choices no source gives). A change to one of them moves it for
// every run (experiments.RunConfig.Software) instead of in the profiles.
var SoftwareEstimates = []Estimate{
	{"mpi.call_cycles", "one MPI call's bookkeeping: an estimate at the scale of a single-thread MPI_Isend (docs/model.md §4)"},
	{"mpi.match_cycles", "matching an incoming message against posted receives: an estimate"},
	{"mpi.eager_bytes", "the eager threshold: MVAPICH2's depends on the adapter; 16 KiB is an estimate"},
	{"ipoib.syscall_cycles", "a system call's entry, exit and socket lock: microsecond scale from a host-stack study"},
	{"ipoib.tx_segment_cycles", "the kernel's transmit path per IPoIB segment: microsecond scale from a host-stack study"},
	{"ipoib.rx_segment_cycles", "the kernel's receive path per IPoIB segment: microsecond scale from a host-stack study"},
	{"mpi.relock_cycles", "what MVAPICH2 does between its unlock and its lock when a waiting thread yields the global lock: two contended atomics, an estimate"},
	{"poll.line_cycles", "a polled line the NIC wrote costs a full L3 hit (measured on a client part), no overlap of loads"},
	{"credit.repeat_quiet_ns", "SQ/SR's first gap before a quiet connection's credit is repeated (50 us, doubling up to 32 times): a design choice, no source"},
	{"credit.repeat_scan_ns", "SQ/SR's shortest time between two looks for due repeats, and the spacing of a walk stopped by a full credit queue (25 us): a design choice, no source"},
	{"credit.owed_retry_ns", "how often an SQ/SR receiver with credit owed polls its credit queue for room (1 us, a few turns of the NIC's round robin): a design choice, no source"},
}

// creditTimer names SQ/SR's credit timers by their sensitivity names.
var creditTimer = map[string]func(*algos.CreditTimers) *fabric.Duration{
	"credit.repeat_quiet_ns": func(t *algos.CreditTimers) *fabric.Duration { return &t.RepeatQuiet },
	"credit.repeat_scan_ns":  func(t *algos.CreditTimers) *fabric.Duration { return &t.RepeatScan },
	"credit.owed_retry_ns":   func(t *algos.CreditTimers) *fabric.Duration { return &t.OwedRetry },
}

// isSoftware says whether field names a software estimate (a change that
// moves no profile).
func isSoftware(field string) bool {
	for _, p := range []string{"mpi.", "ipoib.", "poll.", "credit."} {
		if strings.HasPrefix(field, p) {
			return true
		}
	}
	return false
}

// ApplySoftware returns the software costs with c's field moved by c's
// factor from its default (whole numbers rounded, kept at 1 or more), or
// an error naming the field when c moves none of them.
func ApplySoftware(c Change) (results.SoftwareCosts, error) {
	var s results.SoftwareCosts
	move := func(v int64) int64 { return max(int64(math.Round(float64(v)*c.Factor)), min(v, 1)) }
	if c.Field == "poll.line_cycles" {
		s.PollLineCycles = move(algos.DefaultPollLineCycles)
		return s, nil
	}
	if field, ok := creditTimer[c.Field]; ok { // whole nanoseconds, at least one
		t := algos.DefaultCreditTimers
		d := field(&t)
		*d = fabric.Duration(move(int64(*d/fabric.Nanosecond))) * fabric.Nanosecond
		s.Credit = &t
		return s, nil
	}
	mpi, ipoib := algos.DefaultMPICosts, algos.DefaultIPoIBCosts
	v, err := algos.Cost(mpi, ipoib, c.Field)
	if err != nil {
		var names []string
		for _, e := range SoftwareEstimates {
			names = append(names, e.Field)
		}
		return s, fmt.Errorf("%s: no software cost %q: choose one of %s", c, c.Field, strings.Join(names, ", "))
	}
	v = move(v)
	if c.Field == "mpi.eager_bytes" {
		v = max(v, algos.HeaderBytes) // the threshold counts the header: it must still hold one
	}
	if err := algos.SetCost(&mpi, &ipoib, c.Field, v); err != nil {
		return s, fmt.Errorf("%s: %w", c, err)
	}
	if strings.HasPrefix(c.Field, "mpi.") {
		s.MPI = &mpi
	} else {
		s.IPoIB = &ipoib
	}
	return s, nil
}

// withSoftware runs each point with the software costs s.
func withSoftware(s results.SoftwareCosts) func(func(experiments.RunConfig) (*results.Record, error)) func(experiments.RunConfig) (*results.Record, error) {
	return func(run func(experiments.RunConfig) (*results.Record, error)) func(experiments.RunConfig) (*results.Record, error) {
		return func(cfg experiments.RunConfig) (*results.Record, error) {
			own := cfg.Software
			cfg.Software = s
			rec, err := run(cfg)
			if rec != nil { // the record names the point's own costs, as the other changes' wrappers do
				rec.Software = nil
				if !own.IsZero() {
					rec.Software = &own
				}
			}
			return rec, err
		}
	}
}

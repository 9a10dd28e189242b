package sensitivity

import (
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// Reach lists the designs that read an estimate only some designs read;
// nil for an estimate that (as far as the analysis knows) any design may
// read. A change of such an estimate leaves every other design's run as
// the baseline ran it, so the analysis reuses the baseline's records for
// those points instead of running them again (TestReachIsExact runs every
// other design under each such change and compares).
//
//   - mpi.*: the MPI baseline's software costs (algos.MPICosts), read by
//     the MPI endpoint only;
//   - host.futex_wake_ns, host.wakeup_ns, host.wakeup_tail_ns,
//     host.syscall_ns: the sleeping mutex's costs (fabric/sim/futex.go),
//     and only the MPI endpoint makes a sleeping mutex (MVAPICH2's global
//     lock);
//   - ipoib.*: the IPoIB baseline's kernel costs, read by the IPoIB
//     endpoint and by HyPer over TCP (its multiplexer thread pays them);
//   - credit.*: SQ/SR's credit timers (algos.CreditTimers), read by the
//     SQ/SR endpoint only, which every UD design opens.
func Reach(field string) []string {
	switch {
	case strings.HasPrefix(field, "credit."):
		return experiments.DesignNames(func(e experiments.CatalogueEntry) bool { return e.Design.Transport == fabric.UD })
	case strings.HasPrefix(field, "mpi."):
		return []string{"MPI"}
	case field == "host.futex_wake_ns" || field == "host.wakeup_ns" || field == "host.wakeup_tail_ns" || field == "host.syscall_ns":
		return []string{"MPI"}
	case strings.HasPrefix(field, "ipoib."):
		return []string{"IPoIB", "HyPer-TCP", "HyPer-TCP/unsched"}
	}
	return nil
}

// baselineRecords is the baseline's records, read once from its figure
// files and looked up by design.
type baselineRecords struct {
	dir  string
	once sync.Once
	by   map[string][]*results.Record
}

func (b *baselineRecords) load() {
	b.by = map[string][]*results.Record{}
	files, _ := filepath.Glob(filepath.Join(b.dir, "*.jsonl"))
	for _, f := range files {
		rs, err := results.ReadFile(f, nil)
		if err != nil {
			continue
		}
		for _, r := range rs {
			if !r.Failed() {
				b.by[r.Design] = append(b.by[r.Design], r.Record)
			}
		}
	}
}

// find returns the baseline's record of the point cfg, if it has one.
func (b *baselineRecords) find(cfg experiments.RunConfig) *results.Record {
	b.once.Do(b.load)
	for _, r := range b.by[cfg.Design] {
		if experiments.SameRun(r, cfg) == nil {
			return r
		}
	}
	return nil
}

// reuseOutside wraps a change's runner: a point of a design outside
// designs (the change's Reach) takes the baseline's record of the same
// point, found in the baseline's directory; every other point, and a point
// the baseline has no record of, runs. reused counts the records taken.
func reuseOutside(designs []string, baselineDir string, reused *int64) func(func(experiments.RunConfig) (*results.Record, error)) func(experiments.RunConfig) (*results.Record, error) {
	return reuseWhere(func(cfg experiments.RunConfig) bool { return !slices.Contains(designs, cfg.Design) }, baselineDir, reused)
}

// reuseUnchanged wraps a change's runner: a point on a profile the
// change leaves as it was (a field the profile does not use, at 0, moved
// by a factor: the same hash) cannot run differently from the baseline's,
// so it takes the baseline's record of the same point.
func reuseUnchanged(unchanged map[string]bool, baselineDir string, reused *int64) func(func(experiments.RunConfig) (*results.Record, error)) func(experiments.RunConfig) (*results.Record, error) {
	return reuseWhere(func(cfg experiments.RunConfig) bool {
		name := cfg.Profile
		if name == "" {
			name = sim.DefaultProfileName
		}
		return unchanged[name]
	}, baselineDir, reused)
}

// reuseWhere wraps a change's runner: a point that reuse accepts takes
// the baseline's record of the same point, found in the baseline's
// directory; every other point, and a point the baseline has no record
// of, runs. reused counts the records taken.
func reuseWhere(reuse func(experiments.RunConfig) bool, baselineDir string, reused *int64) func(func(experiments.RunConfig) (*results.Record, error)) func(experiments.RunConfig) (*results.Record, error) {
	base := &baselineRecords{dir: baselineDir}
	var mu sync.Mutex
	return func(run func(experiments.RunConfig) (*results.Record, error)) func(experiments.RunConfig) (*results.Record, error) {
		return func(cfg experiments.RunConfig) (*results.Record, error) {
			if reuse(cfg) {
				if r := base.find(cfg); r != nil {
					mu.Lock()
					*reused++
					mu.Unlock()
					c := *r
					return &c, nil
				}
			}
			return run(cfg)
		}
	}
}

// exists says whether a directory holds figure records.
func exists(dir string) bool {
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	return err == nil && len(files) > 0
}

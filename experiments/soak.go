package experiments

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
	"github.com/rdmashuffle/rdmashuffle/faults"
)

// SoakConfig is a soak test: randomized fault schedules over designs.
type SoakConfig struct {
	Seeds     int    // schedules drawn (one per seed)
	FirstSeed uint64 // seeds FirstSeed .. FirstSeed+Seeds-1 (0 means 1)
	// Designs to soak (default: Designs plus the MPI and IPoIB
	// baselines). UD designs run twice per schedule, without and with
	// loss recovery.
	Designs      []string
	Nodes        int   // default 4
	Threads      int   // default 2
	BytesPerNode int64 // default 256 KiB
	Profile      string
	Payload      bool          // move and check every byte
	Scenarios    []string      // draw only these (faults.Scenarios); default all
	WallLimit    time.Duration // a run taking longer is a hang (default 60 s)
	SimLimit     fabric.Duration
	Log          io.Writer // one line per run, if set
}

// SoakOutcome classifies one run.
type SoakOutcome string

// Outcomes.
const (
	Exact       SoakOutcome = "exact"       // delivered exactly the sent multiset
	CleanError  SoakOutcome = "clean-error" // stopped with an error (not a deadlock, time limit or checker finding)
	Silent      SoakOutcome = "silent"      // returned without error but delivered something else
	Hang        SoakOutcome = "hang"        // deadlock, simulated time limit or wall-time limit
	CheckerFail SoakOutcome = "checker"     // the verbs-usage checker found a hazard
	Unrecovered SoakOutcome = "unrecovered" // UD recovery under loss below 0.1% did not deliver exactly
)

// SoakRun is one run of a soak.
type SoakRun struct {
	Seed      uint64
	Design    string
	Recovery  bool
	Scenarios []string
	Injected  int64 // faults injected (packets hit, nodes crashed)
	Outcome   SoakOutcome
	Err       string
	Wall      time.Duration
}

// SoakResult counts a soak's outcomes.
type SoakResult struct {
	Runs, Injected                             int64
	Exact, CleanErrors, Silent, Hangs, Checker int
	Unrecovered                                int
	Failures                                   []SoakRun         // silent, hang, checker and unrecovered runs
	ByScenario                                 map[string][2]int // scenario -> exact, errors
	Wall                                       time.Duration
}

// OK reports whether no run failed silently, hung, broke the verbs
// contract or failed to recover.
func (r *SoakResult) OK() bool { return r.Silent+r.Hangs+r.Checker+r.Unrecovered == 0 }

func (r *SoakResult) String() string {
	return fmt.Sprintf("%d runs, %d faults injected: %d exact deliveries, %d clean errors, %d silent failures, %d hangs, %d checker hazards, %d unrecovered (UD recovery, loss < 0.1%%); %.1fs wall",
		r.Runs, r.Injected, r.Exact, r.CleanErrors, r.Silent, r.Hangs, r.Checker, r.Unrecovered, r.Wall.Seconds())
}

// SoakDesigns is the default design list of a soak.
func SoakDesigns() []string { return append(append([]string{}, Designs...), "MPI", "IPoIB") }

// Soak runs cfg.Seeds randomized fault schedules over every design.
func Soak(cfg SoakConfig) (*SoakResult, error) {
	if cfg.Seeds < 1 {
		return nil, fmt.Errorf("--seeds %d: need at least 1", cfg.Seeds)
	}
	if len(cfg.Designs) == 0 {
		cfg.Designs = SoakDesigns()
	}
	for _, d := range cfg.Designs {
		if !slices.Contains(AllDesigns, d) || d == "qperf" {
			return nil, fmt.Errorf("--designs: %q is not a design to soak (choose from %s)", d, strings.Join(SoakDesigns(), ", "))
		}
	}
	for _, s := range cfg.Scenarios {
		if !slices.Contains(faults.Scenarios, s) {
			return nil, fmt.Errorf("--scenarios: %q is not one of %s", s, strings.Join(faults.Scenarios, ", "))
		}
	}
	if cfg.FirstSeed == 0 {
		cfg.FirstSeed = 1
	}
	if cfg.Nodes == 0 {
		cfg.Nodes = 4
	}
	if cfg.Nodes < 2 {
		return nil, fmt.Errorf("--nodes %d: a soak needs at least 2 nodes", cfg.Nodes)
	}
	if cfg.Threads == 0 {
		cfg.Threads = 2
	}
	if cfg.BytesPerNode == 0 {
		cfg.BytesPerNode = 256 << 10
	}
	if cfg.Profile == "" {
		cfg.Profile = "edr-cx4"
	}
	if cfg.WallLimit == 0 {
		cfg.WallLimit = 60 * time.Second
	}
	if cfg.SimLimit == 0 {
		cfg.SimLimit = 20 * fabric.Second
	}
	base := func(design string, seed uint64) RunConfig {
		return RunConfig{Design: design, Nodes: cfg.Nodes, Threads: cfg.Threads, Profile: cfg.Profile, Buffers: 4, CreditEvery: 2,
			BytesPerNode: cfg.BytesPerNode, Seed: seed, Payload: cfg.Payload, TimeLimit: cfg.SimLimit}
	}
	// How long each design's shuffle lasts without faults: faults fall in
	// that span, setup included.
	span := map[string]faults.Phases{}
	for _, d := range cfg.Designs {
		rec, err := Run(base(d, cfg.FirstSeed))
		if err != nil {
			return nil, fmt.Errorf("%s without faults: %w", d, err)
		}
		span[d] = faults.Phases{Setup: fabric.Duration(rec.SetupMS / 1e3 * float64(fabric.Second)), Data: fabric.Duration(rec.ResponseS * float64(fabric.Second))}
	}
	res := &SoakResult{ByScenario: map[string][2]int{}}
	t0 := time.Now()
	for i := 0; i < cfg.Seeds; i++ {
		seed := cfg.FirstSeed + uint64(i)
		for _, d := range cfg.Designs {
			ud := strings.Contains(d, "SQ/")
			for _, recovery := range []bool{false, true} {
				if recovery && !ud {
					continue
				}
				// The same schedule for every design of a seed, scaled
				// to the design's span.
				r := rand.New(rand.NewPCG(seed, 0x50a4))
				var sched *faults.Schedule
				var names []string
				if len(cfg.Scenarios) > 0 {
					names = []string{cfg.Scenarios[r.IntN(len(cfg.Scenarios))]}
					sched, _ = faults.Scenario(r, names[0], cfg.Nodes, span[d])
				} else {
					sched, names = faults.Random(r, cfg.Nodes, span[d])
				}
				rc := base(d, seed)
				rc.UDRecovery = recovery
				run := soakOne(rc, sched, cfg.WallLimit)
				run.Scenarios = names
				if recovery && run.Outcome != Exact && run.Outcome != Silent && run.Outcome != Hang && udLossOnly(names) {
					run.Outcome = Unrecovered
				}
				res.add(run)
				if cfg.Log != nil {
					fmt.Fprintf(cfg.Log, "seed %d %s%s [%s]: %s, %d faults, %.2fs%s\n", seed, d, map[bool]string{true: " +recovery"}[recovery],
						strings.Join(names, "+"), run.Outcome, run.Injected, run.Wall.Seconds(), errSuffix(run.Err))
				}
			}
		}
	}
	res.Wall = time.Since(t0)
	return res, nil
}

func errSuffix(e string) string {
	if e == "" {
		return ""
	}
	if len(e) > 300 {
		e = e[:300] + "..."
	}
	return ": " + e
}

func udLossOnly(names []string) bool {
	for _, n := range names {
		if n != "ud-loss" {
			return false
		}
	}
	return true
}

func (r *SoakResult) add(run SoakRun) {
	r.Runs++
	r.Injected += run.Injected
	for _, s := range run.Scenarios {
		v := r.ByScenario[s]
		if run.Outcome == Exact {
			v[0]++
		} else {
			v[1]++
		}
		r.ByScenario[s] = v
	}
	switch run.Outcome {
	case Exact:
		r.Exact++
		return
	case CleanError:
		r.CleanErrors++
		return
	case Silent:
		r.Silent++
	case Hang:
		r.Hangs++
	case CheckerFail:
		r.Checker++
	case Unrecovered:
		r.Unrecovered++
	}
	r.Failures = append(r.Failures, run)
}

// soakOne runs cfg under sched and classifies the outcome; a run that
// outlasts wall is abandoned as a hang.
func soakOne(cfg RunConfig, sched *faults.Schedule, wall time.Duration) SoakRun {
	run := SoakRun{Seed: cfg.Seed, Design: cfg.Design, Recovery: cfg.UDRecovery}
	plan, err := sched.Plan(cfg.Nodes)
	if err != nil {
		run.Outcome, run.Err = CleanError, err.Error()
		return run
	}
	cfg.Plan, cfg.ProfileOverride = plan, sched.ProfileOverride()
	type result struct {
		rec      *Record
		err      error
		injected int64
	}
	done := make(chan result, 1)
	cfg.Inspect = func(c *sim.Cluster) {}
	t0 := time.Now()
	go func() {
		var injected int64
		c := cfg
		c.Inspect = func(cl *sim.Cluster) { injected = cl.FaultCounts().Total() }
		rec, err := Run(c)
		if sched.QPCacheEntries > 0 {
			injected++ // the profile change
		}
		done <- result{rec, err, injected}
	}()
	select {
	case r := <-done:
		run.Wall, run.Injected = time.Since(t0), r.injected
		switch {
		case r.err == nil && r.rec.Integrity == "ok":
			run.Outcome = Exact
		case r.err == nil:
			run.Outcome, run.Err = Silent, "integrity "+r.rec.Integrity
		case errors.Is(r.err, fabric.ErrDeadlock) || errors.Is(r.err, fabric.ErrTimeLimit):
			run.Outcome, run.Err = Hang, r.err.Error()
		case errors.Is(r.err, sim.ErrVerbsUsage):
			run.Outcome, run.Err = CheckerFail, r.err.Error()
		default:
			run.Outcome, run.Err = CleanError, r.err.Error()
		}
	case <-time.After(wall):
		run.Wall, run.Outcome, run.Err = wall, Hang, fmt.Sprintf("still running after %v of wall time (abandoned)", wall)
	}
	return run
}

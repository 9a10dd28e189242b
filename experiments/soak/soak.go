// Package soak runs randomized fault schedules over every design on the
// simulator and classifies each run (exact, clean error, silent, hang,
// checker finding, masked, unrecovered): the tool behind explore soak and
// docs/reliability.md.
package soak

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/internal/setting"

	"github.com/rdmashuffle/rdmashuffle/buildinfo"
	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
	"github.com/rdmashuffle/rdmashuffle/faults"
)

// Config is a soak test: randomized fault schedules over designs.
type Config struct {
	Seeds     int    // schedules drawn (one per seed)
	FirstSeed uint64 // seeds FirstSeed .. FirstSeed+Seeds-1 (0 means 1)
	// Designs to soak (default: Designs). UD designs run twice per
	// schedule, without and with loss recovery.
	Designs      []string
	Nodes        int   // default 4
	Threads      int   // default 2
	BytesPerNode int64 // default 256 KiB
	Profile      string
	Payload      bool          // move and check every byte
	Scenarios    []string      // draw only these (faults.Scenarios); default all
	Workloads    []Workload    // the families of runs under each schedule; default Workloads
	WallLimit    time.Duration // a run taking longer is a hang (default 60 s)
	Jobs         int           // seeds run at once (default 1)
	SimLimit     fabric.Duration
	Log          io.Writer // one line per run, if set
	// Progress, if set, is called after each seed with the seeds done,
	// the seeds in all and the runs so far.
	Progress func(done, seeds, runs int)
}

// Outcome classifies one run.
type Outcome string

// Outcomes.
const (
	Exact       Outcome = "exact"       // delivered exactly the sent multiset
	CleanError  Outcome = "clean-error" // stopped with an error (not a deadlock, time limit or checker finding)
	Silent      Outcome = "silent"      // returned without error but delivered something else
	Hang        Outcome = "hang"        // deadlock, simulated time limit or wall-time limit
	CheckerFail Outcome = "checker"     // the verbs-usage checker found a hazard, or objects left open
	Masked      Outcome = "masked"      // a panic (a programming error such as a sim misuse) ended the run: the fault's own error is lost
	Unrecovered Outcome = "unrecovered" // UD recovery under loss below 0.1% did not deliver exactly
	Unnamed     Outcome = "unnamed"     // stopped with an error that does not name the faults injected
)

// Trial is one run of a soak.
type Trial struct {
	Seed      uint64
	Workload  Workload // ShuffleWorkload when empty
	Detail    string   // the query, or the star join's tables
	Design    string
	Recovery  bool
	Scenarios []string
	Injected  int64 // faults injected (packets hit, nodes crashed)
	Outcome   Outcome
	Err       string
	Wall      time.Duration
}

// Counts counts runs by outcome: the soak record of docs/results.md,
// for the whole soak and per design and per fault kind.
type Counts struct {
	Runs        int64 `json:"runs"`
	Injected    int64 `json:"faults_injected"`
	Exact       int   `json:"exact_deliveries"`
	CleanErrors int   `json:"clean_errors"`
	Silent      int   `json:"silent_failures"`
	Hangs       int   `json:"hangs"`
	Checker     int   `json:"checker_findings"`
	Masked      int   `json:"masked_errors"`
	Unrecovered int   `json:"unrecovered"`
	Unnamed     int   `json:"unnamed_errors"`
}

func (c *Counts) add(run Trial) {
	c.Runs++
	c.Injected += run.Injected
	switch run.Outcome {
	case Exact:
		c.Exact++
	case CleanError:
		c.CleanErrors++
	case Silent:
		c.Silent++
	case Hang:
		c.Hangs++
	case CheckerFail:
		c.Checker++
	case Masked:
		c.Masked++
	case Unrecovered:
		c.Unrecovered++
	case Unnamed:
		c.Unnamed++
	}
}

// Result counts a soak's outcomes.
type Result struct {
	Counts
	Failures   []Trial            // every run but exact and clean-error ones
	ByDesign   map[string]*Counts // design, "+recovery" for UD runs with recovery
	ByScenario map[string]*Counts // fault kind (a run of two kinds counts in both)
	ByWorkload map[string]*Counts // Workload
	Wall       time.Duration
	Config     Config // as run, defaults filled in
}

// OK reports whether no run failed silently, hung, broke the verbs
// contract, masked its error with a panic or failed to recover.
func (r *Result) OK() bool { return r.Silent+r.Hangs+r.Checker+r.Masked+r.Unrecovered+r.Unnamed == 0 }

func (r *Result) String() string {
	return fmt.Sprintf("%d runs, %d faults injected: %d exact deliveries, %d clean errors, %d silent failures, %d hangs, %d checker findings, %d masked errors, %d unrecovered (UD recovery, loss < 0.1%%), %d errors not naming the faults; %.1fs wall",
		r.Runs, r.Injected, r.Exact, r.CleanErrors, r.Silent, r.Hangs, r.Checker, r.Masked, r.Unrecovered, r.Unnamed, r.Wall.Seconds())
}

// Record is the soak record of docs/results.md (explore soak --json).
type Record struct {
	Experiment string `json:"experiment"` // "soak"
	Seeds      int    `json:"seeds"`
	FirstSeed  uint64 `json:"first_seed"`
	Nodes      int    `json:"nodes"`
	Counts
	ByDesign map[string]*Counts `json:"by_design"`
	ByFault  map[string]*Counts `json:"by_fault"`
	// ByWorkload counts the runs of each workload: the shuffles, the
	// TPC-H queries and the star joins.
	ByWorkload map[string]*Counts `json:"by_workload"`
	WallS      float64            `json:"wall_s"`
	Version    string             `json:"version"` // the build that made it (buildinfo)
	Commit     string             `json:"commit"`
	GoVersion  string             `json:"go_version"`
}

// Record is r as the soak record.
func (r *Result) Record() Record {
	return Record{Experiment: "soak", Seeds: r.Config.Seeds, FirstSeed: r.Config.FirstSeed, Nodes: r.Config.Nodes,
		Counts: r.Counts, ByDesign: r.ByDesign, ByFault: r.ByScenario, ByWorkload: r.ByWorkload, WallS: r.Wall.Seconds(),
		Version: buildinfo.Get().Version, Commit: buildinfo.Get().Commit, GoVersion: buildinfo.Get().Go}
}

// Designs is the default design list of a soak: the eight designs, our
// variants of them (the completion-with-immediate Writes, shared receive
// queues, XRC), the MPI and IPoIB baselines and the peer designs (HyPer's multiplexer
// with and without its schedule and over TCP, the RDMA-Write middleware
// over RDMA, siw and sockets), and I-Store's two remote-read plans, which
// only the star joins run. The peers were left out until a soak of them
// found HyPer hanging when a peer crashed.
func Designs() []string {
	return append(append(experiments.PaperDesigns(), experiments.DesignNames(experiments.IsVariant)...), "MPI", "IPoIB",
		"HyPer", "HyPer/unsched", "HyPer-TCP", "HyPer-TCP/unsched", "RDMA-MW", "RDMA-MW/siw", "Sockets-MW",
		experiments.IStoreDesign, experiments.IStoreUnicastDesign)
}

func joinWorkloads(ws []Workload) string {
	s := make([]string, len(ws))
	for i, w := range ws {
		s[i] = string(w)
	}
	return strings.Join(s, ", ")
}

// Run runs cfg.Seeds randomized fault schedules over every design.
func Run(cfg Config) (*Result, error) {
	if cfg.Seeds < 1 {
		return nil, setting.New("Seeds", cfg.Seeds, "need at least 1")
	}
	if len(cfg.Designs) == 0 {
		cfg.Designs = Designs()
	}
	for _, d := range cfg.Designs {
		if x := experiments.DesignOf(d); !isIStore(d) && (x.Name == "" || !experiments.MovesTuples(x)) {
			return nil, setting.New("Designs", fmt.Sprintf("%q", d), "not a design to soak (choose from %s)", strings.Join(Designs(), ", "))
		}
	}
	for _, s := range cfg.Scenarios {
		if !slices.Contains(faults.Scenarios, s) && s != faults.HighUDLoss {
			return nil, setting.New("Scenarios", fmt.Sprintf("%q", s), "not one of %s, %s", strings.Join(faults.Scenarios, ", "), faults.HighUDLoss)
		}
	}
	if len(cfg.Workloads) == 0 {
		cfg.Workloads = Workloads
	}
	runnable := false
	for _, w := range cfg.Workloads {
		if !slices.Contains(Workloads, w) {
			return nil, setting.New("Workloads", fmt.Sprintf("%q", w), "not one of %s", joinWorkloads(Workloads))
		}
		runnable = runnable || len(workloadDesigns(w, cfg.Designs)) > 0
	}
	if !runnable {
		return nil, setting.New("Designs", strings.Join(cfg.Designs, ","), "no workload asked for (%s) runs them: I-Store's remote-read plans run only in star joins (%s)",
			joinWorkloads(cfg.Workloads), StarJoinWorkload)
	}
	if cfg.FirstSeed == 0 {
		cfg.FirstSeed = 1
	}
	if cfg.Nodes == 0 {
		cfg.Nodes = 4
	}
	if cfg.Jobs < 0 {
		return nil, setting.New("Jobs", cfg.Jobs, "must be at least 1 (0: 1)")
	}
	if cfg.Nodes < 2 {
		return nil, setting.New("Nodes", cfg.Nodes, "a soak needs at least 2 nodes")
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
	res := &Result{ByDesign: map[string]*Counts{}, ByScenario: map[string]*Counts{}, ByWorkload: map[string]*Counts{}, Config: cfg}
	span, err := cfg.spans()
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	bySeed, err := cfg.runSeeds(span)
	if err != nil {
		return nil, err
	}
	for _, trials := range bySeed {
		for _, run := range trials {
			res.add(run)
		}
	}
	res.Wall = time.Since(t0)
	return res, nil
}

// runSeeds runs every seed's runs, cfg.Jobs seeds at a time, and returns
// them by seed: the counts do not depend on the order seeds finish in.
// Each seed's lines are logged together when it finishes.
func (cfg *Config) runSeeds(span map[string]faults.Phases) ([][]Trial, error) {
	bySeed := make([][]Trial, cfg.Seeds)
	spans := &jobSpans{m: map[job]faults.Phases{}}
	var mu sync.Mutex
	var firstErr error
	done, runs := 0, 0
	next := make(chan int)
	var wg sync.WaitGroup
	for range max(cfg.Jobs, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				seed := cfg.FirstSeed + uint64(i)
				var trials []Trial
				if slices.Contains(cfg.Workloads, ShuffleWorkload) {
					trials = cfg.runShuffles(seed, span, trials)
				}
				var err error
				if cfg.drawn() {
					trials, err = cfg.runJobs(seed, spans, trials)
				}
				mu.Lock()
				bySeed[i], done, runs = trials, done+1, runs+len(trials)
				firstErr = cmp.Or(firstErr, err)
				for _, run := range trials {
					cfg.log(run)
				}
				if cfg.Progress != nil && done < cfg.Seeds {
					cfg.Progress(done, cfg.Seeds, runs)
				}
				mu.Unlock()
			}
		}()
	}
	for i := 0; i < cfg.Seeds; i++ {
		mu.Lock()
		stop := firstErr != nil
		mu.Unlock()
		if stop {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	return bySeed, firstErr
}

// base is the shuffle of design on seed's data.
func (cfg *Config) base(design string, seed uint64) experiments.RunConfig {
	return experiments.RunConfig{Design: design, Nodes: cfg.Nodes, Threads: cfg.Threads, Profile: cfg.Profile, Buffers: 4, CreditEvery: 2,
		BytesPerNode: cfg.BytesPerNode, Seed: seed, Payload: cfg.Payload}
}

// spans is how long each design's shuffle lasts without faults: faults
// fall in that span, set-up included.
func (cfg *Config) spans() (map[string]faults.Phases, error) {
	span := map[string]faults.Phases{}
	if !slices.Contains(cfg.Workloads, ShuffleWorkload) {
		return span, nil
	}
	for _, d := range cfg.Designs {
		if isIStore(d) {
			continue
		}
		rec, err := experiments.RunSim(cfg.base(d, cfg.FirstSeed), experiments.SimOptions{TimeLimit: cfg.SimLimit})
		if err != nil {
			return nil, fmt.Errorf("%s without faults: %w", d, err)
		}
		span[d] = phases{setupS: rec.SetupMS / 1e3, dataS: rec.ResponseS}.faults()
	}
	return span, nil
}

// drawn reports whether the soak draws schedules (not only the high UD
// loss family).
func (cfg *Config) drawn() bool {
	return len(cfg.Scenarios) == 0 || slices.ContainsFunc(cfg.Scenarios, func(s string) bool { return s != faults.HighUDLoss })
}

// schedule is seed's schedule, the same for every design and workload of
// the seed, scaled to span, and the scenarios it draws from.
func (cfg *Config) schedule(seed uint64, span faults.Phases) (*faults.Schedule, []string) {
	r := rand.New(rand.NewPCG(seed, 0x50a4))
	draw := slices.DeleteFunc(slices.Clone(cfg.Scenarios), func(s string) bool { return s == faults.HighUDLoss })
	if len(draw) > 0 {
		names := []string{draw[r.IntN(len(draw))]}
		sched, _ := faults.Scenario(r, names[0], cfg.Nodes, span)
		return sched, names
	}
	return faults.Random(r, cfg.Nodes, span)
}

// runShuffles runs seed's shuffles: every design under the seed's
// schedule (the UD designs with and without recovery), and the UD designs
// with recovery under high UD loss, a family of its own.
func (cfg *Config) runShuffles(seed uint64, span map[string]faults.Phases, out []Trial) []Trial {
	highLoss := len(cfg.Scenarios) == 0 || slices.Contains(cfg.Scenarios, faults.HighUDLoss)
	limit := experiments.SimOptions{TimeLimit: cfg.SimLimit}
	for _, d := range cfg.Designs {
		if isIStore(d) {
			continue
		}
		ud := experiments.IsUD(d)
		for _, recovery := range []bool{false, true} {
			if recovery && !ud || !cfg.drawn() {
				continue
			}
			sched, names := cfg.schedule(seed, span[d])
			rc := cfg.base(d, seed)
			rc.UDRecovery = recovery
			run := soakOne(rc, limit, sched, cfg.WallLimit)
			run.Scenarios = names
			if recovery && run.Outcome != Exact && run.Outcome != Silent && run.Outcome != Hang && udLossOnly(names) {
				run.Outcome = Unrecovered
			}
			out = append(out, run)
		}
		if ud && highLoss {
			r := rand.New(rand.NewPCG(seed, 0x1055))
			sched, _ := faults.Scenario(r, faults.HighUDLoss, cfg.Nodes, span[d])
			rc := cfg.base(d, seed)
			rc.UDRecovery = true
			run := soakOne(rc, limit, sched, cfg.WallLimit)
			run.Scenarios = []string{faults.HighUDLoss}
			out = append(out, run)
		}
	}
	return out
}

func (cfg *Config) log(run Trial) {
	if cfg.Log != nil {
		what := run.Design
		if run.Workload != "" && run.Workload != ShuffleWorkload {
			what = fmt.Sprintf("%s %s over %s", run.Workload, run.Detail, run.Design)
		}
		fmt.Fprintf(cfg.Log, "seed %d %s%s [%s]: %s, %d faults, %.2fs%s\n", run.Seed, what, map[bool]string{true: " +recovery"}[run.Recovery],
			strings.Join(run.Scenarios, "+"), run.Outcome, run.Injected, run.Wall.Seconds(), errSuffix(run.Err))
	}
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

func (r *Result) add(run Trial) {
	r.Counts.add(run)
	count := func(m map[string]*Counts, k string) {
		if m[k] == nil {
			m[k] = &Counts{}
		}
		m[k].add(run)
	}
	w := run.Workload
	if w == "" {
		w = ShuffleWorkload
	}
	count(r.ByWorkload, string(w))
	design := run.Design
	if run.Recovery {
		design += "+recovery"
	}
	if w != ShuffleWorkload {
		design += " (" + string(w) + ")"
	}
	count(r.ByDesign, design)
	for _, s := range run.Scenarios {
		count(r.ByScenario, s)
	}
	if run.Outcome != Exact && run.Outcome != CleanError {
		r.Failures = append(r.Failures, run)
	}
}

// soakOne runs cfg with opt under sched and classifies the outcome; a run
// that outlasts wall is abandoned as a hang.
func soakOne(cfg experiments.RunConfig, opt experiments.SimOptions, sched *faults.Schedule, wall time.Duration) Trial {
	trial := Trial{Seed: cfg.Seed, Design: cfg.Design, Recovery: cfg.UDRecovery, Workload: ShuffleWorkload}
	return soakRun(trial, cfg.Nodes, sched, wall, opt, func(o experiments.SimOptions) (string, error) {
		rec, err := experiments.RunSim(cfg, o)
		if err != nil {
			return "", err
		}
		return rec.Integrity, nil
	})
}

// soakRun runs one run of a cluster of nodes (run, given opt with sched's
// plan; it returns the run's integrity, "ok" when it delivered exactly)
// and classifies its outcome into trial; a run that outlasts wall is
// abandoned as a hang.
func soakRun(trial Trial, nodes int, sched *faults.Schedule, wall time.Duration, opt experiments.SimOptions,
	run func(experiments.SimOptions) (string, error)) Trial {
	plan, err := sched.Plan(nodes)
	if err != nil {
		trial.Outcome, trial.Err = CleanError, err.Error()
		return trial
	}
	opt.Plan, opt.ProfileOverride = plan, sched.ProfileOverride()
	type result struct {
		integrity string
		err       error
		injected  int64
	}
	done := make(chan result, 1)
	t0 := time.Now()
	go func() {
		var injected int64
		o := opt
		o.Inspect = func(cl *sim.Cluster) { injected = cl.FaultCounts().Total() }
		integrity, err := run(o)
		if sched.QPCacheEntries > 0 {
			injected++ // the profile change
		}
		done <- result{integrity, err, injected}
	}()
	select {
	case r := <-done:
		trial.Wall, trial.Injected = time.Since(t0), r.injected
		// A run whose every thread left is frozen by a crash (every node
		// crashed, say) ends with the simulator's error naming them, not
		// a deadlock: a clean error.
		trial.Outcome = classify(r.integrity, r.err)
		switch {
		case r.err != nil:
			trial.Err = r.err.Error()
		case trial.Outcome == Silent:
			trial.Err = "integrity " + r.integrity
		}
		// A clean error must say what was injected (the run's error
		// ends with the fault summary), so that a person can tell the
		// fault's consequence from a defect.
		if trial.Outcome == CleanError && trial.Injected > 0 && !strings.Contains(trial.Err, "[faults injected: ") {
			trial.Outcome = Unnamed
		}
	case <-time.After(wall):
		trial.Wall, trial.Outcome, trial.Err = wall, Hang, fmt.Sprintf("still running after %v of wall time (abandoned)", wall)
	}
	return trial
}

// classify names a run's outcome by its first cause: a run that reached
// the simulated time limit hung, whatever errors or panics its stop
// caused; a panic (a programming error, "sim: Unlock of an unlocked
// Mutex" say) masks the fault's own error; then deadlocks, the checker's
// findings (a hazard, or objects left open by a node that could still
// close them), and clean errors.
func classify(integrity string, err error) Outcome {
	switch {
	case err == nil && integrity == "ok":
		return Exact
	case err == nil:
		return Silent
	case errors.Is(err, fabric.ErrTimeLimit):
		return Hang
	case panicked(err):
		return Masked
	case errors.Is(err, fabric.ErrDeadlock):
		return Hang
	case errors.Is(err, sim.ErrVerbsUsage):
		return CheckerFail
	}
	return CleanError
}

// panicked reports whether err's chain holds a panic: the simulator turns
// a thread's panic into an error whose text starts with "panic: " after
// the thread's name.
func panicked(err error) bool {
	for _, e := range unwrapAll(err) {
		if m := e.Error(); strings.HasPrefix(m, "panic: ") || strings.Contains(m, ": panic: ") {
			return true
		}
	}
	return false
}

// unwrapAll lists err and every error in its chain (and in joined lists).
func unwrapAll(err error) []error {
	out := []error{err}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		if e := u.Unwrap(); e != nil {
			out = append(out, unwrapAll(e)...)
		}
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			out = append(out, unwrapAll(e)...)
		}
	}
	return out
}

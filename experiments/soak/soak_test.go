package soak

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
	"github.com/rdmashuffle/rdmashuffle/faults"
)

// TestSoakShort is the CI soak: randomized fault schedules over every
// design and baseline (UD designs with and without recovery); no run may
// fail silently, hang, break the verbs contract, or (UD recovery under
// loss below 0.1%) fail to deliver exactly.
func TestSoakShort(t *testing.T) {
	res, err := Run(Config{Seeds: 3, Nodes: 3, BytesPerNode: 128 << 10, Payload: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res)
	// 25 shuffles per seed under drawn schedules (the UD designs twice),
	// the UD designs with recovery under high UD loss, a TPC-H query and
	// a star join.
	w := res.ByWorkload
	if !res.OK() || res.Runs != 3*29 || res.Injected == 0 || res.ByScenario[faults.HighUDLoss].Runs != 3*2 ||
		w[string(ShuffleWorkload)].Runs != 3*27 || w[string(QueryWorkload)].Runs != 3 || w[string(StarJoinWorkload)].Runs != 3 {
		for _, f := range res.Failures {
			t.Errorf("%+v", f)
		}
		t.Fatalf("soak: %v", res)
	}
	if _, err := Run(Config{Seeds: 1, Designs: []string{"qperf"}}); err == nil || !strings.Contains(err.Error(), "not a design to soak") {
		t.Fatalf("qperf soak: %v", err)
	}
}

func runSchedule(t *testing.T, cfg experiments.RunConfig, yaml string) (*results.Record, error, *sim.Cluster) {
	t.Helper()
	s, err := faults.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	opt := experiments.SimOptions{ProfileOverride: s.ProfileOverride()}
	if opt.Plan, err = s.Plan(cfg.Nodes); err != nil {
		t.Fatal(err)
	}
	var cl *sim.Cluster
	opt.Inspect = func(c *sim.Cluster) { cl = c }
	rec, err := experiments.RunSim(cfg, opt)
	return rec, err, cl
}

// TestTargetedFaults: a fault aimed at one message hits it, and each
// design either recovers or names what is missing and the fault.
func TestTargetedFaults(t *testing.T) {
	ud := experiments.RunConfig{Design: "MESQ/SR", Nodes: 3, Threads: 1, Profile: "edr-cx4", Buffers: 4, BytesPerNode: 128 << 10, Seed: 1, Payload: true}
	eos := "drop:\n  - src: 2\n    dst: 0\n    kind: eos\n"
	_, err, c := runSchedule(t, ud, eos)
	if err == nil || !strings.Contains(err.Error(), "node 2: no end of stream") || !strings.Contains(err.Error(), "faults injected: lose 2->0 match #1: 1 packets") {
		t.Fatalf("end of stream lost without recovery: %v", err)
	}
	if c.FaultCounts().Lost != 1 {
		t.Fatalf("fault counts %+v", c.FaultCounts())
	}
	ud.UDRecovery = true
	rec, err, _ := runSchedule(t, ud, eos)
	if err != nil || rec.Integrity != "ok" || rec.Retransmits == 0 {
		t.Fatalf("end of stream lost with recovery: %v %+v", err, rec)
	}
	// The third credit message, on a UD and on an RC design.
	rec, err, c = runSchedule(t, ud, "drop:\n  - kind: credit\n    nth: 3\n")
	if err != nil || rec.Integrity != "ok" || c.FaultCounts().Lost != 1 {
		t.Fatalf("third UD credit message lost: %v", err)
	}
	rc := experiments.RunConfig{Design: "MEMQ/SR", Nodes: 3, Threads: 1, Profile: "edr-cx4", BytesPerNode: 512 << 10, Seed: 1, Payload: true}
	rec, err, c = runSchedule(t, rc, "drop:\n  - kind: credit\n    nth: 3\n  - kind: data\n    nth: 5\n")
	if err != nil || rec.Integrity != "ok" || c.FaultCounts().Lost != 2 || c.Stats().RCRetransmits == 0 {
		t.Fatalf("RC credit and data packets lost: %v %+v", err, c.FaultCounts())
	}
	// The timed faults below fall in the data phase, which starts when
	// the set-up ends.
	at := dataPhase(t, rc)
	// A node crashing mid-shuffle: its peers stop with an error that names it.
	_, err, _ = runSchedule(t, rc, fmt.Sprintf("crash:\n  - node: 1\n    at: %s\n", at(0.5)))
	if err == nil || !strings.Contains(err.Error(), "node 1 crashed at") {
		t.Fatalf("crash: %v", err)
	}
	// RC retry exhaustion: a link down longer than the capped retries.
	_, err, _ = runSchedule(t, rc, fmt.Sprintf("link_down:\n  - node: 2\n    from: %s\n    to: 30ms\nrc_retry:\n  retry_cnt: 1\n  timeout: 8\n", at(0.4)))
	if err == nil || !strings.Contains(err.Error(), "transport retry exceeded") || !strings.Contains(err.Error(), "link-down node 2") {
		t.Fatalf("retry exhaustion: %v", err)
	}
	// Receivers too slow to post: RC retries after RNR NAKs and recovers.
	rec, err, c = runSchedule(t, rc, fmt.Sprintf("slow_receiver:\n  - node: 0\n    from: %s\n    to: %s\n", at(0), at(0.8)))
	if err != nil || rec.Integrity != "ok" || c.Stats().RNRNaks == 0 {
		t.Fatalf("slow receiver: %v, %d RNR NAKs", err, c.Stats().RNRNaks)
	}
	// Context-cache thrashing changes timing only.
	rec, err, c = runSchedule(t, rc, "qp_cache_entries: 1\n")
	if err != nil || rec.Integrity != "ok" || c.Stats().QPCacheMissRate() < 0.3 {
		t.Fatalf("cache thrash: %v, miss rate %v", err, c.Stats().QPCacheMissRate())
	}
}

// TestUDDuplicateAndLossNotSilent: without loss recovery, a UD data
// message the network duplicates and another it loses must not add up to
// a complete stream (counting alone would accept it and deliver a wrong
// multiset without an error).
func TestUDDuplicateAndLossNotSilent(t *testing.T) {
	data := []sim.ByteMatch{{Off: 0, Mask: 0xff, Value: faults.HeaderMagic}, {Off: 1, Mask: faults.FlagDepleted, Value: 0}}
	for _, design := range []string{"SESQ/SR", "MESQ/SR"} {
		p := sim.NewPlan()
		p.Rules = []sim.Rule{
			{Action: sim.Dup, Src: 1, Dst: 0, Head: data, Nth: 1},
			{Action: sim.Lose, Src: 1, Dst: 0, Head: data, Nth: 3},
		}
		rec, err := experiments.RunSim(experiments.RunConfig{Design: design, Nodes: 3, Threads: 1, Profile: "edr-cx4", Buffers: 4, BytesPerNode: 128 << 10,
			Seed: 1, Payload: true}, experiments.SimOptions{Plan: p})
		if err == nil {
			t.Fatalf("%s: no error; integrity %s", design, rec.Integrity)
		}
		if !strings.Contains(err.Error(), "duplicate message") {
			t.Fatalf("%s: %v", design, err)
		}
	}
}

// TestCrashNamed: every run with a crashed node stops with an error that
// names it (not at its time limit). The
// cluster's clock at the end of a run can be short of a crash that has
// taken effect (a thread's clock runs ahead), and the fault summary used
// to leave such a crash out (found by the soak: MPI, seed 4).
func TestCrashNamed(t *testing.T) {
	for _, tc := range []struct {
		design string
		seed   uint64
		crash  string
	}{
		{"MPI", 4, "crash:\n  - node: 0\n    at: 1.597ms\n"},
		{"MEMQ/SR", 1, "crash:\n  - node: 3\n    at: 2.518ms\n"},
		// The multiplexer of a node that had sent everything waited for
		// the crashed peer's barrier word without a deadline (soak of the
		// peer designs, seed 21469): the run hung until its time limit.
		{"HyPer", 1, "crash:\n  - node: 3\n    at: 1.234ms\n"},
		{"HyPer-TCP/unsched", 1, "crash:\n  - node: 3\n    at: 1.234ms\n"},
	} {
		cfg := experiments.RunConfig{Design: tc.design, Nodes: 4, Threads: 2, Profile: "edr-cx4", Buffers: 4, CreditEvery: 2,
			BytesPerNode: 256 << 10, Seed: tc.seed, Payload: true}
		_, err, c := runSchedule(t, cfg, tc.crash)
		if err == nil || !strings.Contains(err.Error(), "crashed at") || errors.Is(err, fabric.ErrTimeLimit) || len(c.FaultCounts().Crashed) != 1 {
			t.Errorf("%s seed %d: %v; crashed %v", tc.design, tc.seed, err, c.FaultCounts().Crashed)
		}
	}
}

// TestMPICrashFailsFast: an MPI run whose peer crashes mid-shuffle ends
// in the transport's error (its retries to the dead node exhausted, about
// 537 ms of simulated time after the crash) without simulating every poll
// of its progress engine meanwhile. Before its threads slept once a peer
// had failed (fabric.PeerFailures), each such run fired about 69 million
// events and took 15-20 s of wall time (the soak's wall limit is 60 s);
// now about 20 thousand, as the designs that sleep while they wait.
func TestMPICrashFailsFast(t *testing.T) {
	for _, tc := range []struct {
		seed uint64
		frac float64 // of the data phase
	}{{7, 0.6}, {8, 0.3}} {
		cfg := experiments.RunConfig{Design: "MPI", Nodes: 4, Threads: 2, Profile: "edr-cx4", Buffers: 4, CreditEvery: 2,
			BytesPerNode: 256 << 10, Seed: tc.seed}
		_, err, c := runSchedule(t, cfg, fmt.Sprintf("crash:\n  - node: 2\n    at: %s\n", dataPhase(t, cfg)(tc.frac)))
		if err == nil || !strings.Contains(err.Error(), "transport retry exceeded") || !strings.Contains(err.Error(), "crashed at") {
			t.Errorf("seed %d: %v", tc.seed, err)
		}
		if ev := c.Events(); ev > 1_000_000 {
			t.Errorf("seed %d: %d simulated events to reach the error, want fewer than 1 million", tc.seed, ev)
		}
	}
}

// dataPhase runs cfg without faults and returns the time (as a schedule
// writes it) at a fraction of its data phase, which starts when the
// set-up ends.
func dataPhase(t *testing.T, cfg experiments.RunConfig) func(frac float64) string {
	t.Helper()
	rec, err := experiments.RunSim(cfg, experiments.SimOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return func(frac float64) string {
		return fmt.Sprintf("%.3fus", rec.SetupMS*1e3+frac*rec.ResponseS*1e6)
	}
}

// TestClassify: a run is classified by its first cause. A stop at the
// simulated time limit is a hang whatever panics or errors follow it; a
// panic is a masked error, not a clean one.
func TestClassify(t *testing.T) {
	limit := fmt.Errorf("%w: 20s simulated; still running: n0/main", fabric.ErrTimeLimit)
	pan := errors.New("n1/shuffle0: panic: sim: Unlock of an unlocked Mutex\ngoroutine 7 [running]:")
	clean := errors.New("n0/receive0: algos: no progress for 100.000ms")
	ok, missing := "ok", "missing"
	for _, tc := range []struct {
		name string
		rec  string
		err  error
		want Outcome
	}{
		{"exact", ok, nil, Exact},
		{"silent", missing, nil, Silent},
		{"clean", "", clean, CleanError},
		{"wrapped clean", "", fmt.Errorf("%w [faults injected: node 2 crashed at 1ms]", clean), CleanError},
		{"time limit", "", limit, Hang},
		{"time limit then panic", "", errors.Join(limit, pan), Hang},
		{"time limit wrapped", "", fmt.Errorf("%w [faults injected: x]", errors.Join(limit, clean)), Hang},
		{"panic", "", pan, Masked},
		{"panic then error", "", errors.Join(pan, clean), Masked},
		{"panic wrapped", "", fmt.Errorf("%w [faults injected: x]", pan), Masked},
		{"deadlock", "", fmt.Errorf("%w: n0/main waits", fabric.ErrDeadlock), Hang},
		{"checker", "", fmt.Errorf("%w: 3 objects still open", sim.ErrVerbsUsage), CheckerFail},
		{"leak after error", "", errors.Join(clean, fmt.Errorf("%w: 3 objects still open", sim.ErrVerbsUsage)), CheckerFail},
	} {
		if got := classify(tc.rec, tc.err); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestCrashDuringSetupLeavesNothingOpen: when a node crashes before the
// endpoints' connection exchange, every other node's open fails, and each
// must free what it had created: the run is a clean error (the crash,
// named), not a checker finding for objects left open. Before the
// endpoints freed what they created on a failed open, every design left
// its queue pairs and regions behind (the soak's `crash` findings).
func TestCrashDuringSetupLeavesNothingOpen(t *testing.T) {
	for _, design := range workloadDesigns(ShuffleWorkload, Designs()) {
		for _, recovery := range []bool{false, true} {
			if recovery && !experiments.IsUD(design) {
				continue
			}
			name := design
			if recovery {
				name += "+recovery"
			}
			t.Run(name, func(t *testing.T) {
				rc := experiments.RunConfig{Design: design, Nodes: 3, Threads: 1, Profile: "edr-cx4", BytesPerNode: 128 << 10, Seed: 1,
					Payload: true, UDRecovery: recovery}
				_, err, _ := runSchedule(t, rc, "crash:\n  - node: 1\n    at: 1us\n")
				if err == nil || !strings.Contains(err.Error(), "node 1 crashed") || errors.Is(err, sim.ErrVerbsUsage) ||
					classify("", err) != CleanError {
					t.Fatalf("crash before the exchange: %v (want a clean error naming node 1's crash)", err)
				}
			})
		}
	}
}

// TestEveryNodeCrashedIsNotAHang: a schedule that crashes every node ends
// the run with every thread frozen, which is the right end of it: the
// simulator says the crashes ended it (not a deadlock), and the soak
// counts it as a clean error, not a hang.
func TestEveryNodeCrashedIsNotAHang(t *testing.T) {
	s, err := faults.Parse([]byte("crash:\n  - node: 0\n    at: 1us\n  - node: 1\n    at: 1us\n  - node: 2\n    at: 1us\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := experiments.RunConfig{Design: "MEMQ/SR", Nodes: 3, Threads: 1, Profile: "edr-cx4", BytesPerNode: 128 << 10, Seed: 1}
	run := soakOne(cfg, experiments.SimOptions{}, s, time.Minute)
	if run.Outcome != CleanError {
		t.Errorf("every node crashed: %s (%s), want %s", run.Outcome, run.Err, CleanError)
	}
}

// TestFlushLeadsWithItsCause: a node that crashes mid-shuffle leaves its
// peers' queue pairs to it in the error state, and a receiving thread
// may see a flushed receive before the sending thread sees the request
// that failed. The error leads with the queue pair's failure (the first
// cause), not with the flush.
func TestFlushLeadsWithItsCause(t *testing.T) {
	for _, at := range []string{"3ms", "3.5ms", "4ms", "5ms"} {
		cfg := experiments.RunConfig{Design: "MEMQ/SR", Nodes: 3, Threads: 1, Profile: "edr-cx4", BytesPerNode: 32 << 20, Seed: 1}
		_, err, _ := runSchedule(t, cfg, "crash:\n  - node: 1\n    at: "+at+"\n")
		if err == nil {
			t.Fatalf("crash at %s: no error", at)
		}
		msg := err.Error()
		if !strings.Contains(msg, "RECV flushed") {
			continue // this crash surfaced another way first
		}
		if !strings.HasPrefix(msg, "node ") || !strings.Contains(msg, "failed (its ") || !strings.Contains(msg, "to node 1 ended in transport retry exceeded); after it: ") {
			t.Fatalf("crash at %s: the flush is not preceded by its cause: %v", at, err)
		}
		return
	}
	t.Skip("no crash time tried surfaced as a flushed receive")
}

// TestSoakWorkloads: the TPC-H queries and star joins run under each
// seed's schedule, over designs drawn per seed (I-Store's plans only in
// star joins), and are classified as the shuffles are; a crash in a query
// is a clean error naming it.
func TestSoakWorkloads(t *testing.T) {
	res, err := Run(Config{Seeds: 4, Nodes: 3, Payload: true, Workloads: []Workload{QueryWorkload, StarJoinWorkload},
		Designs: []string{"MEMQ/SR", "MPI", experiments.IStoreDesign}})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res)
	if !res.OK() || res.Runs != 8 || res.ByWorkload[string(QueryWorkload)].Runs != 4 || res.ByWorkload[string(StarJoinWorkload)].Runs != 4 ||
		res.ByWorkload[string(ShuffleWorkload)] != nil || res.Injected == 0 {
		t.Fatalf("soak: %v; by workload %v; failures %+v", res, res.ByWorkload, res.Failures)
	}
	for d := range res.ByDesign {
		if strings.HasPrefix(d, experiments.IStoreDesign) && !strings.HasSuffix(d, "(star-join)") {
			t.Errorf("%s ran outside the star joins", d)
		}
	}
	s, err := faults.Parse([]byte("crash:\n  - node: 2\n    at: 1us\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Nodes: 3, Threads: 2, Profile: "edr-cx4", Payload: true}
	for _, j := range []job{{workload: QueryWorkload, design: "MEMQ/SR", query: "Q3"}, {workload: StarJoinWorkload, design: experiments.IStoreDesign, tables: 2}} {
		run := soakRun(Trial{Design: j.design, Workload: j.workload}, 3, s, time.Minute, experiments.SimOptions{},
			func(opt experiments.SimOptions) (string, error) {
				integrity, _, err := j.run(&cfg, 1, opt)
				return integrity, err
			})
		if run.Outcome != CleanError || !strings.Contains(run.Err, "node 2 crashed") {
			t.Errorf("%s %s, node 2 crashed at once: %s (%s), want a clean error naming the crash", j.workload, j.detail(), run.Outcome, run.Err)
		}
	}
	if _, err := Run(Config{Seeds: 1, Designs: []string{experiments.IStoreDesign}, Workloads: []Workload{ShuffleWorkload}}); err == nil ||
		!strings.Contains(err.Error(), "only in star joins") {
		t.Errorf("I-Store shuffles: %v", err)
	}
}

// TestSoakJobs: seeds run at once give the counts of seeds run one after
// another, failures in seed order.
func TestSoakJobs(t *testing.T) {
	cfg := Config{Seeds: 4, Nodes: 3, BytesPerNode: 64 << 10, Designs: []string{"MESQ/SR", "MEMQ/SR", "MPI"}}
	one, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Jobs = 3
	three, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	strip := func(r *Result) string {
		return fmt.Sprintf("%+v %v %v %v", r.Counts, counts(r.ByDesign), counts(r.ByScenario), counts(r.ByWorkload))
	}
	if a, b := strip(one), strip(three); a != b {
		t.Fatalf("one at a time: %s\nthree at once: %s", a, b)
	}
	if _, err := Run(Config{Seeds: 1, Jobs: -1}); err == nil || !strings.Contains(err.Error(), "Jobs") {
		t.Errorf("Jobs -1: %v", err)
	}
}

func counts(m map[string]*Counts) string {
	var out []string
	for k, v := range m {
		out = append(out, fmt.Sprintf("%s:%+v", k, *v))
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

// TestUnnamedError: a run into which faults were injected and which
// stopped with an error that does not name them is a finding of its own
// (a person could not tell the fault's consequence from a defect); named,
// it is a clean error.
func TestUnnamedError(t *testing.T) {
	s, err := faults.Parse([]byte("qp_cache_entries: 1\n")) // one fault: the profile change
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		err  error
		want Outcome
	}{
		{errors.New("n0/main: algos: no progress for 1s"), Unnamed},
		{errors.New("n0/main: algos: no progress for 1s [faults injected: qp cache 1]"), CleanError},
	} {
		run := soakRun(Trial{}, 2, s, time.Minute, experiments.SimOptions{}, func(experiments.SimOptions) (string, error) { return "", tc.err })
		if run.Outcome != tc.want {
			t.Errorf("%v: %s, want %s", tc.err, run.Outcome, tc.want)
		}
	}
}

package experiments

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/tpch"
)

// TestCheckMemory: runs far beyond the machine's memory are refused with
// the estimate before they start (run --nodes 1000 grew to 6 GB without
// output); ordinary ones pass.
func TestCheckMemory(t *testing.T) {
	const gib = 1 << 30
	for _, tc := range []struct {
		cfg       RunConfig
		available int64
		want      string // "" for accepted
	}{
		{RunConfig{Design: "MEMQ/SR", Nodes: 8, Threads: 2, Buffers: 2}, 1 * gib, ""},
		{RunConfig{Design: "MEMQ/SR", Nodes: 128, Threads: 2, Buffers: 2}, 4 * gib, ""},
		{RunConfig{Design: "MEMQ/SR", Nodes: 1000, Threads: 2, Buffers: 2}, 23 * gib, "about 33.9 GiB of memory"},
		{RunConfig{Design: "MESQ/SR", Nodes: 128, Threads: 2, Buffers: 2}, 1 * gib, ""},
		{RunConfig{Design: "MESQ/SR", Nodes: 128, Threads: 2, Buffers: 2}, gib / 4, "Nodes 128: the simulated cluster would need about 401 MiB"},
		{RunConfig{Design: "MESQ/SR", Nodes: 1024, Threads: 4, Buffers: 2}, 23 * gib, "about 46.9 GiB of memory"},
		{RunConfig{Design: "MEMQ/SR", Nodes: 64, Threads: 2, Buffers: 2, Payload: true}, 1 * gib, ""},
		{RunConfig{Design: "MEMQ/SR", Nodes: 64, Threads: 2, Buffers: 2, BytesPerNode: 64 << 20, Payload: true}, 1 * gib, "fewer nodes"},
	} {
		err := CheckMemory(tc.cfg, tc.available)
		if tc.want == "" && err != nil || tc.want != "" && (!errors.Is(err, ErrMemory) || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s, %d nodes, %d GiB: got %v, want %q", tc.cfg.Design, tc.cfg.Nodes, tc.available/gib, err, tc.want)
		}
	}
	// How near the estimate is to measured peaks: TestRunMemoryNearMeasured.
}

// TestQueryMemoryEstimate: a TPC-H query's estimate covers the peaks
// measured (QueryMemoryEstimate's comment) without overshooting them by
// more than twice, so that steady-state growth does not stop far short of
// what the machine could run; a TPC-H point's label is estimated the same.
func TestQueryMemoryEstimate(t *testing.T) {
	for _, m := range []struct {
		design  string
		q       tpch.Query
		nodes   int
		sf      float64
		mb      int64
		payload bool // with 2 threads, not 14
	}{
		{"MESQ/SR", tpch.Q3, 4, 0.4, 42, true},
		{"MESQ/SR", tpch.Q3, 4, 1.6, 107, true},
		{"MPI", tpch.Q3, 4, 0.4, 50, true},
		{"MPI", tpch.Q3, 4, 1.6, 117, true},
		{"MPI", tpch.Q3, 16, 3.2, 547, false},
		{"MPI", tpch.Q3, 16, 12.8, 749, false},
		{"MPI", tpch.Q3, 16, 51.2, 1157, false},
		{"MPI", tpch.Q3, 8, 12.8, 285, false},
		{"MPI", tpch.Q3, 4, 0.8, 43, false},
		{"MPI", tpch.Q3, 4, 3.2, 64, false},
		{"MPI", tpch.Q3, 4, 6.4, 91, false},
		{"MPI", tpch.Q10, 16, 12.8, 526, false},
		{"MPI", tpch.Q4, 16, 12.8, 416, false},
		{"MESQ/SR", tpch.Q3, 16, 3.2, 192, false},
		{"MESQ/SR", tpch.Q3, 16, 12.8, 269, false},
		{"MESQ/SR", tpch.Q10, 16, 12.8, 335, false},
		{"MESQ/SR", tpch.Q10, 16, 51.2, 676, false},
		{LocalData, tpch.Q4, 16, 12.8, 19, false},
	} {
		qc := QueryConfig{Query: m.q, SF: m.sf, Design: m.design, Nodes: m.nodes, Threads: 14, Payload: m.payload}
		if m.payload {
			qc.Threads = 2
		}
		est := QueryMemoryEstimate(qc)
		if est < m.mb*1e6 || est > 2*m.mb*1e6+64<<20 {
			t.Errorf("%s %s, %d nodes, SF %g: estimate %d MB, measured %d MB (want at least that, at most about twice)", m.design, m.q, m.nodes, m.sf, est/1e6, m.mb)
		}
		local := m.design == LocalData
		point := RunConfig{Design: m.design, Nodes: m.nodes, Workload: results.Workload{Kind: results.TPCH, Query: string(m.q), Local: local, SFPerNode: m.sf / float64(m.nodes)}, Profile: "edr-cx4", Threads: qc.Threads, Payload: m.payload}
		if !m.payload {
			point.Threads = 0 // a query point's default, half of edr-cx4's 28 cores
		}
		if local {
			point.Design = "MESQ/SR"
		}
		if got := MemoryEstimate(point); got != est {
			t.Errorf("%s: point estimate %d, query estimate %d (threads default to half of edr-cx4's 28 cores)", point.Label, got, est)
		}
	}
}

// TestMemoryBudget: runs whose estimates do not fit together wait for
// each other; a run larger than the budget is refused; nil admits all.
func TestMemoryBudget(t *testing.T) {
	cfg := RunConfig{Design: "MEMQ/SR", Nodes: 64, Threads: 2, Buffers: 2}
	est := MemoryEstimate(cfg)
	b := NewMemoryBudget(est * 3 / 2)
	if !b.Fits(est) || b.Fits(2*est) || b.Total() != est*3/2 {
		t.Fatalf("budget of 1.5 estimates: fits one %v, fits two %v, total %d", b.Fits(est), b.Fits(2*est), b.Total())
	}
	release := make(chan struct{})
	started := make(chan int, 2)
	run := func(id int) func(RunConfig) (*results.Record, error) {
		return func(RunConfig) (*results.Record, error) {
			started <- id
			<-release
			return &results.Record{}, nil
		}
	}
	done := make(chan struct{}, 2)
	go func() { b.Admit(run(1))(cfg); done <- struct{}{} }()
	if id := <-started; id != 1 {
		t.Fatalf("run %d started first", id)
	}
	go func() { b.Admit(run(2))(cfg); done <- struct{}{} }()
	for { // the second run must queue while the first holds its memory
		b.mu.Lock()
		w := b.waiting
		b.mu.Unlock()
		if w == 1 {
			break
		}
		runtime.Gosched()
	}
	select {
	case id := <-started:
		t.Fatalf("run %d started while run 1 held the memory", id)
	default:
	}
	release <- struct{}{} // run 1 ends; run 2 is admitted
	<-done
	if id := <-started; id != 2 {
		t.Fatalf("run %d started, want 2", id)
	}
	release <- struct{}{}
	<-done
	if b.used != 0 {
		t.Errorf("%d bytes still admitted after both runs", b.used)
	}
	// Larger than the budget by itself: refused, never started, nothing
	// held.
	big := cfg
	big.Nodes *= 4
	ran := false
	_, err := b.Admit(func(RunConfig) (*results.Record, error) { ran = true; return &results.Record{}, nil })(big)
	if !errors.Is(err, ErrMemory) || ran || b.used != 0 {
		t.Errorf("an oversized run: err %v, ran %v, %d bytes held; want ErrMemory, not run, none", err, ran, b.used)
	}
	if err != nil && !strings.Contains(err.Error(), GiB(MemoryEstimate(big))) {
		t.Errorf("the refusal %q does not give the run's estimate", err)
	}
	var nilb *MemoryBudget
	if !nilb.Fits(1<<62) || nilb.Total() != 0 {
		t.Error("a nil budget must fit everything")
	}
	if rec, err := nilb.Admit(func(RunConfig) (*results.Record, error) { return &results.Record{Nodes: 3}, nil })(cfg); err != nil || rec.Nodes != 3 {
		t.Errorf("nil budget's Admit: %v, %v", rec, err)
	}
}

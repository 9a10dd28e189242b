package figures

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/experiments/chart"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/experiments/sweep"
)

// TestFiguresBuild: every figure's sweeps build at both scales, name the
// figure first, and every claim a figure names has a rule.
func TestFiguresBuild(t *testing.T) {
	for _, f := range AllFigures() {
		for _, full := range []bool{false, true} {
			sws, err := f.Sweeps(full)
			if err != nil || len(sws) == 0 || sws[0].Name != f.ID {
				t.Fatalf("%s full=%v: %v %v", f.ID, full, sws, err)
			}
		}
		for _, c := range f.Claims {
			if j, ok := judges[c]; !ok || j.fig != f.ID {
				t.Errorf("%s names claim %s, whose rule is %+v", f.ID, c, j)
			}
		}
		if f.X == "" {
			t.Errorf("%s has no x parameter", f.ID)
		}
	}
}

// figureFakeRun returns a record shaped like cfg's without simulating, with a
// throughput that depends on the design so that judges have data.
func figureFakeRun(cfg experiments.RunConfig) (*results.Record, error) {
	tp := map[string]float64{"MESQ/SR": 11, "SESQ/SR": 3.5, "MPI": 5, "IPoIB": 4, "qperf": 11.5}[cfg.Design]
	if tp == 0 {
		tp = 10
	}
	return &results.Record{Design: cfg.Design, Profile: cfg.Profile, Pattern: string(cfg.Pattern), Nodes: cfg.Nodes, Threads: cfg.Threads,
		MsgBytes: max(cfg.MsgBytes, 4096), Buffers: cfg.Buffers, CreditEvery: cfg.CreditEvery, Seed: cfg.Seed, Notify: string(cfg.Notify),
		CyclesPerTuple: cfg.CyclesPerTuple, BytesPerPair: cfg.BytesPerPair, BytesPerNode: cfg.BytesPerNode,
		ThroughputGiBs: tp, SetupMS: float64(cfg.Nodes), QPsPerNode: cfg.Nodes, RegisteredPer: 1 << 20, Integrity: "ok"}, nil
}

// TestRunFigureWritesFiles runs a figure with a fake runner: the JSONL,
// CSV and plots appear, and the claims report lists every claim.
func TestRunFigureWritesFiles(t *testing.T) {
	dir := t.TempDir()
	f, err := FigureByID("fig21")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := RunFigure(context.Background(), f, FigureOptions{OutDir: dir, Jobs: 1, NoSteadyCheck: true, Run: figureFakeRun})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"fig21.jsonl", "fig21.csv", "fig21.png", "fig21.svg"} {
		if st, err := os.Stat(filepath.Join(dir, name)); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
	vs := Judge(map[string][]results.Result{"fig21": rep.Results})
	if len(vs) != len(Claims) {
		t.Fatalf("%d verdicts for %d claims", len(vs), len(Claims))
	}
	var buf bytes.Buffer
	if err := WriteValidation(&buf, &ReproduceReport{Figures: []*FigureReport{rep}, Verdicts: vs}, false, "test"); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, c := range Claims {
		if !strings.Contains(out, "| "+c.ID+" |") {
			t.Errorf("claims report lacks %s", c.ID)
		}
	}
	if !strings.Contains(out, "figure fig19 was not run") || !strings.Contains(out, "| **not-run** | not analysed | needs ") {
		t.Errorf("not-run claims must say why:\n%s", out)
	}
	if _, err := FigureByID("fig99"); err == nil || !strings.Contains(err.Error(), "fig19") {
		t.Errorf("unknown figure: %v", err)
	}
}

func rec(design, profile, pattern string, nodes int, tp float64) *results.Record {
	return &results.Record{Design: design, Profile: profile, Pattern: pattern, Nodes: nodes, ThroughputGiBs: tp}
}

// c14 is C14's 16-node repartition points: SESQ/SR at fdr and edr GiB/s
// with its threads waiting for locks seLock of their time (its senders
// never idle: a spinning thread is not in Thread.Wait), MESQ/SR at the
// links' 6 and 11 with its threads waiting for locks meLock and its
// senders idle 70%.
func c14(fdr, edr, seLock, meLock float64) []*results.Record {
	rs := []*results.Record{rec("SESQ/SR", "fdr-cx3", "repartition", 16, fdr), rec("MESQ/SR", "fdr-cx3", "repartition", 16, 6),
		rec("SESQ/SR", "edr-cx4", "repartition", 16, edr), rec("MESQ/SR", "edr-cx4", "repartition", 16, 11)}
	rs[0].LockWait, rs[2].LockWait = seLock, seLock
	rs[1].LockWait, rs[3].LockWait = meLock, meLock
	rs[1].SenderIdle, rs[3].SenderIdle = 0.7, 0.7
	return rs
}

// c13 is C13's 16-node EDR broadcast points at threads per node: SEMQ/SR
// and MPI, the MQ/SR designs at sr and the RD designs at rd GiB/s.
func c13(threads int, semq, mpi, sr, rd float64) []*results.Record {
	rs := []*results.Record{rec("SEMQ/SR", "edr-cx4", "broadcast", 16, semq), rec("MPI", "edr-cx4", "broadcast", 16, mpi),
		rec("MEMQ/SR", "edr-cx4", "broadcast", 16, 2*sr-semq), rec("SEMQ/RD", "edr-cx4", "broadcast", 16, rd), rec("MEMQ/RD", "edr-cx4", "broadcast", 16, rd)}
	for _, r := range rs {
		r.Threads = threads
	}
	return rs
}

// c17 is C17's set-up records (fig21) with MESQ/SR's set-up at setupMS
// from 2 to 16 nodes and MEMQ/SR's growing 6x, and fig19's 8-node EDR
// repartition runs of MESQ/SR, MPI and IPoIB at their GiB/s.
func c17(setupMS, mesq, mpi, ipoib float64) ([]*results.Record, map[string][]results.Result) {
	var rs []*results.Record
	for _, n := range []int{2, 8, 16} {
		rs = append(rs, &results.Record{Design: "MESQ/SR", Nodes: n, SetupMS: setupMS},
			&results.Record{Design: "MEMQ/SR", Nodes: n, SetupMS: 2 * float64(n) / 2 * 3})
	}
	f19 := []results.Result{{Record: rec("MESQ/SR", "edr-cx4", "repartition", 8, mesq)}, {Record: rec("MPI", "edr-cx4", "repartition", 8, mpi)},
		{Record: rec("IPoIB", "edr-cx4", "repartition", 8, ipoib)}}
	return rs, map[string][]results.Result{"fig19": f19}
}

// TestJudges checks the rules on hand-made records.
func TestJudges(t *testing.T) {
	for _, tc := range []struct {
		name string
		rule judgeFunc
		rs   []*results.Record
		want string
	}{
		{"C9 about 2x", judgeC9, []*results.Record{rec("MESQ/SR", "edr-cx4", "repartition", 16, 10), rec("MPI", "edr-cx4", "repartition", 16, 5)}, Pass},
		{"C9 direction only", judgeC9, []*results.Record{rec("MESQ/SR", "edr-cx4", "repartition", 16, 10), rec("MPI", "edr-cx4", "repartition", 16, 8)}, Partial},
		{"C9 reversed", judgeC9, []*results.Record{rec("MESQ/SR", "edr-cx4", "repartition", 16, 5), rec("MPI", "edr-cx4", "repartition", 16, 8)}, Fail},
		{"C9 no data", judgeC9, nil, Fail},
		{"C14 contention", judgeC14, c14(4.0, 4.1, 0.85, 0.01), Pass},
		{"C14 on FDR the link caps MESQ/SR too", judgeC14, c14(4.6, 4.7, 0.85, 0.01), Pass},
		{"C14 rate follows the link", judgeC14, c14(2.5, 4.6, 0.85, 0.01), Partial},
		// Senders never idle but not held by the lock: busy with work, or
		// a record made before lock waits were recorded.
		{"C14 busy, not contending", judgeC14, c14(4.0, 4.1, 0.1, 0.01), Partial},
		{"C14 no lock waits recorded", judgeC14, c14(4.0, 4.1, 0, 0), Partial},
		{"C14 MESQ/SR contends too", judgeC14, c14(4.0, 4.1, 0.85, 0.2), Partial},
		{"C14 keeps up on EDR", judgeC14, c14(4.0, 7.0, 0.85, 0.01), Fail},
		{"C14 no data", judgeC14, nil, Fail},
		{"C13 inside the range", judgeC13, c13(14, 10, 2.5, 10, 6), Pass},
		{"C13 above the range", judgeC13, c13(14, 10, 1.9, 10, 6), Partial},
		{"C13 RD designs hold", judgeC13, c13(14, 10, 2.5, 10, 9), Partial},
		{"C13 neither", judgeC13, c13(14, 10, 8, 10, 9), Fail},
		// Only the runs at the paper's 14 threads decide it.
		{"C13 at another thread count", judgeC13, c13(10, 10, 2.5, 10, 6), Fail},
		{"C13 no data", judgeC13, nil, Fail},
		// On the bound: inside, and the margin says by how little.
		{"C13 on its bound", judgeC13, c13(14, 11.2721, 2.255, 10, 6), Pass},
		{"C12 flat", judgeC12, []*results.Record{
			rec("SEMQ/SR", "edr-cx4", "repartition", 2, 10), rec("SEMQ/SR", "edr-cx4", "repartition", 16, 9.5),
			rec("MEMQ/SR", "edr-cx4", "repartition", 2, 10), rec("MEMQ/SR", "edr-cx4", "repartition", 16, 9.5),
			rec("SEMQ/WR", "edr-cx4", "repartition", 2, 10), rec("SEMQ/WR", "edr-cx4", "repartition", 16, 9.5),
			rec("MEMQ/WR", "edr-cx4", "repartition", 2, 10), rec("MEMQ/WR", "edr-cx4", "repartition", 16, 8.5)}, Partial},
		// A threshold point grown 8x to steady state takes 8x as long: no
		// spread at the figure's input.
		{"C26 grown points", judgeC26, mwRecords(0.140, 0.130, map[int]float64{2: 8}), Fail},
		{"C26 spread", judgeC26, mwRecords(0.140, 0.130, map[int]float64{2: 1.5}), Partial},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if v := tc.rule(tc.rs, nil); v.Verdict != tc.want {
				t.Fatalf("got %s (%s; %s), want %s", v.Verdict, v.Measured, v.Reason, tc.want)
			}
		})
	}
}

// TestMargin: the margin to a range's nearer bound, to a hundredth of a
// percent when under one percent.
func TestMargin(t *testing.T) {
	for _, tc := range []struct {
		r    float64
		want string
	}{
		{11.2721 / 2.255, "inside the range, 0.03% below its top, 5.0x"},
		{5.26, "5% above the range's top, 5.0x"},
		{2.6, "inside the range, 4% above its bottom, 2.5x"},
		{2, "20% below the range's bottom, 2.5x"},
	} {
		if got := margin(tc.r, 2.5, 5, "%.1fx"); got != tc.want {
			t.Errorf("margin(%.4f): %q, want %q", tc.r, got, tc.want)
		}
	}
}

// TestC17BreakEven: C17's break-even (connecting per query against the
// faster pre-connected baseline, 8 EDR nodes) is judged at about 250 MB
// per node (175-325), with the set-up at about 40 ms.
func TestC17BreakEven(t *testing.T) {
	// MESQ/SR 10 GiB/s: against a baseline at 5 GiB/s the break-even is
	// setup x 10 GiB/s (setup x 10.7 GB/s), against one at 8 GiB/s
	// setup x 40 GiB/s.
	for _, tc := range []struct {
		name                  string
		setupMS, mpi, ipoib   float64
		want, measured, cause string
	}{
		{"about 250 MB", 6, 5, 8, Partial, "judged against IPoIB, the faster: 258 MB, inside the range", "set-up costs"},
		{"40 ms, 250 MB", 40, 2, 3.8, Pass, "judged against IPoIB, the faster: 263 MB, inside the range, 19% below its top, 325 MB", ""},
		{"40 ms, far above", 40, 5, 8, Partial, "judged against IPoIB, the faster: 1718 MB, 429% above the range's top", "the break-even against IPoIB is 1718 MB"},
		{"no slower baseline", 40, 11, 12, Partial, "no data", "no break-even"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs, res := c17(tc.setupMS, 10, tc.mpi, tc.ipoib)
			v := judgeC17(rs, res)
			if v.Verdict != tc.want || (tc.measured != "no data" && !strings.Contains(v.Measured, tc.measured)) || !strings.Contains(v.Reason, tc.cause) {
				t.Fatalf("got %s (%s; %s), want %s with %q and a reason naming %q", v.Verdict, v.Measured, v.Reason, tc.want, tc.measured, tc.cause)
			}
		})
	}
}

// TestC10ReasonSaysWhatTheEvidenceSettles: C10's reason names the
// evidence that settles one IPoIB stream and the multi-stream point that
// does not scale, with what MESQ/SR's advantage would be at its rate.
func TestC10ReasonSaysWhatTheEvidenceSettles(t *testing.T) {
	rs := []*results.Record{rec("MESQ/SR", "fdr-cx3", "repartition", 8, 6), rec("IPoIB", "fdr-cx3", "repartition", 8, 6)}
	v := judgeC10(rs, nil)
	for _, want := range []string{"not settled", "pvese-cx3-iperf3-connected-4streams", "+68%", "MESQ/SR would be 2.8x"} {
		if v.Verdict != Fail || !strings.Contains(v.Reason, want) {
			t.Errorf("%s: reason lacks %q: %s", v.Verdict, want, v.Reason)
		}
	}
}

// TestSteadyCheckUsesTheFigureRunner: the steady-state check reruns the
// largest point with the runner the figure's points used (it ran the
// simulator's Run whatever the runner, so a figure with its own runner was
// compared with a different experiment), and never divides by a zero
// throughput.
func TestSteadyCheckUsesTheFigureRunner(t *testing.T) {
	zero := func(cfg experiments.RunConfig) (*results.Record, error) {
		r, err := figureFakeRun(cfg)
		r.ThroughputGiBs = 0
		return r, err
	}
	for _, tc := range []struct {
		name string
		run  func(experiments.RunConfig) (*results.Record, error)
		want string
	}{
		{"fake", figureFakeRun, "steady: MEMQ/WR at 8 nodes, 10.00 GiB/s; twice the input 10.00 GiB/s (+0.0%)"},
		{"zero", zero, "not checked: no successful point with a positive throughput"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := FigureByID("fig16")
			if err != nil {
				t.Fatal(err)
			}
			rep, err := RunFigure(context.Background(), f, FigureOptions{OutDir: t.TempDir(), Jobs: 1, Run: tc.run})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Steady != tc.want {
				t.Fatalf("steady check: %q, want %q", rep.Steady, tc.want)
			}
		})
	}
}

// TestRatioVerdict: a ratio claim passes within its range, is partial for
// at least half the lower bound's advantage, and fails below that (a 1.1x
// gap does not support a 3x claim).
func TestRatioVerdict(t *testing.T) {
	for _, tc := range []struct {
		ratio float64
		want  string
	}{{2.5, Pass}, {1.7, Partial}, {1.6, Partial}, {1.12, Fail}, {0.9, Fail}, {5, Partial}} {
		rs := []*results.Record{
			{Design: "MESQ/SR", Profile: "fdr-cx3", Pattern: "repartition", Nodes: 8, ThroughputGiBs: tc.ratio},
			{Design: "IPoIB", Profile: "fdr-cx3", Pattern: "repartition", Nodes: 8, ThroughputGiBs: 1},
		}
		if v := ratioVerdict(rs, "MESQ/SR", "IPoIB", "fdr-cx3", "repartition", 8, 3, 2.2, 4); v.Verdict != tc.want {
			t.Errorf("ratio %.2f against 2.2-4x: %s (%s), want %s", tc.ratio, v.Verdict, v.Measured, tc.want)
		}
	}
}

// TestC16At16Nodes: C16 compares the designs at 16 nodes, each at its
// best; a small MQ configuration elsewhere does not decide it.
func TestC16At16Nodes(t *testing.T) {
	rec := func(d string, nodes, qps int, gibps float64) *results.Record {
		return &results.Record{Design: d, Nodes: nodes, QPsPerNode: qps, ThroughputGiBs: gibps}
	}
	rs := []*results.Record{
		rec("MESQ/SR", 16, 4, 10), rec("MEMQ/SR", 16, 32, 8), rec("MEMQ/SR", 16, 60, 9), rec("SEMQ/RD", 16, 16, 7),
		rec("MEMQ/SR", 2, 2, 11), // 2 nodes: fewer QPs and more throughput, but not the claim's cluster
	}
	if v := judgeC16(rs, nil); v.Verdict != Pass {
		t.Errorf("%+v", v)
	}
	rs = append(rs, rec("MEMQ/WR", 16, 3, 6))
	if v := judgeC16(rs, nil); v.Verdict != Partial || !strings.Contains(v.Measured, "MEMQ/WR") {
		t.Errorf("an MQ design with fewer QPs at its best: %+v", v)
	}
}

func TestApplyRobustnessDemotesFragilePasses(t *testing.T) {
	rep := &ReproduceReport{Verdicts: []Verdict{
		{Claim: "C1", Verdict: Pass},
		{Claim: "C2", Verdict: Pass},
		{Claim: "C3", Verdict: Fail, Reason: "slower"},
	}}
	rep.ApplyRobustness(map[string]string{"C1": "robust (32 changes)", "C2": "fragile (flips under: host.lock_ns x2: pass -> partial)", "C3": "fragile (...)"},
		map[string]bool{"C2": true, "C3": true}, "test analysis")
	want := []string{Pass, Partial, Fail}
	for i, v := range rep.Verdicts {
		if v.Verdict != want[i] {
			t.Errorf("%s: verdict %s, want %s", v.Claim, v.Verdict, want[i])
		}
	}
	if !strings.Contains(rep.Verdicts[1].Reason, "flips") || rep.Verdicts[2].Reason != "slower" {
		t.Errorf("reasons: %q, %q", rep.Verdicts[1].Reason, rep.Verdicts[2].Reason)
	}
	var buf bytes.Buffer
	if err := WriteValidation(&buf, rep, false, "test"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "| robust (32 changes) |") || !strings.Contains(buf.String(), "Robustness: test analysis") ||
		!strings.Contains(buf.String(), "Summary: 1 pass, 1 partial, 1 fail") {
		t.Errorf("validation lacks the robustness column:\n%s", buf.String())
	}
	// An analysis that has not finished: its passes are counted, and
	// named when not all of them wait on it.
	rep.Unconfirmed = []string{"C1"}
	buf.Reset()
	if err := WriteValidation(&buf, rep, false, "test"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "Summary: 1 pass (each robust only so far: the sensitivity analysis has not judged every change yet), 1 partial") {
		t.Errorf("summary of an unfinished analysis:\n%s", buf.String())
	}
	rep.Verdicts = append(rep.Verdicts, Verdict{Claim: "C4", Verdict: Pass})
	buf.Reset()
	if err := WriteValidation(&buf, rep, false, "test"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "Summary: 2 pass (1 of them, C1, robust only so far") {
		t.Errorf("summary of an unfinished analysis, one pass settled:\n%s", buf.String())
	}
}

// mwRecords builds the mw figure's records: sockets and RDMA-MW times at 4
// and 8 nodes, and the threshold sweep at rdma seconds, except the
// thresholds (KiB) in grown: grown by that factor (input_scale and time
// both multiplied) when it is a whole number, otherwise just slower.
func mwRecords(sockets, rdma float64, grown map[int]float64) []*results.Record {
	var rs []*results.Record
	for _, n := range []int{4, 8} {
		rs = append(rs, &results.Record{Design: "Sockets-MW", Nodes: n, Threads: 1, Integrity: "ok", ResponseS: sockets, BytesPerNode: 8 << 20},
			&results.Record{Design: "RDMA-MW/siw", Nodes: n, Threads: 1, Integrity: "ok", ResponseS: rdma, BytesPerNode: 8 << 20})
		for _, th := range algos.MWThresholds {
			r := &results.Record{Design: algos.MWDesign(th), Nodes: n, Threads: 2, Integrity: "ok", ResponseS: rdma, BytesPerNode: 8 << 20}
			if f, ok := grown[th>>10]; ok {
				r.ResponseS *= f
				if f == float64(int(f)) {
					r.InputScale, r.BytesPerNode = int(f), r.BytesPerNode*int64(f)
				}
			}
			rs = append(rs, r)
		}
	}
	return rs
}

// TestReproducePooledSameAsSequential: with several jobs every figure and
// sweep runs at once, their points taking turns at one set of slots; the
// reports, verdicts and files are those of one job at a time, no more
// points run at once than there are jobs, and the progress stream counts
// every point once, in one sequence.
func TestReproducePooledSameAsSequential(t *testing.T) {
	figs := []string{"fig13", "fig16", "fig19", "fig21", "fig27"}
	var running, most atomic.Int32
	run := func(cfg experiments.RunConfig) (*results.Record, error) {
		if n := running.Add(1); n > most.Load() {
			most.Store(n)
		}
		defer running.Add(-1)
		runtime.Gosched() // let other workers in while this one runs
		return figureFakeRun(cfg)
	}
	repro := func(jobs int) (*ReproduceReport, string, []sweep.Progress) {
		dir := t.TempDir()
		var prog []sweep.Progress
		var log strings.Builder
		rep, err := Reproduce(context.Background(), ReproduceOptions{FigureOptions: FigureOptions{OutDir: dir, Jobs: jobs, NoSteadyCheck: true, NoPlots: true,
			Run: run, Progress: func(p sweep.Progress) { prog = append(prog, p) }}, Figures: figs, Log: &log})
		if err != nil {
			t.Fatal(err)
		}
		var files strings.Builder
		for _, fr := range rep.Figures {
			for _, name := range fr.Files {
				b, err := os.ReadFile(name)
				if err != nil {
					t.Fatal(err)
				}
				files.WriteString(filepath.Base(name) + "\n" + string(b))
			}
		}
		return rep, files.String(), prog
	}
	seq, seqFiles, _ := repro(1)
	most.Store(0)
	pooled, pooledFiles, prog := repro(3)
	if m := most.Load(); m > 3 {
		t.Errorf("%d points ran at once with 3 jobs", m)
	}
	if seqFiles != pooledFiles {
		t.Error("the pooled run's files differ from the sequential run's")
	}
	if !reflect.DeepEqual(seq.Verdicts, pooled.Verdicts) {
		t.Errorf("verdicts differ:\n%+v\n%+v", seq.Verdicts, pooled.Verdicts)
	}
	total := 0
	for i, fr := range pooled.Figures {
		if fr.Figure.ID != seq.Figures[i].Figure.ID || len(fr.Results) != len(seq.Figures[i].Results) || fr.Steady != seq.Figures[i].Steady {
			t.Errorf("figure %d: %s with %d points, want %s with %d", i, fr.Figure.ID, len(fr.Results), seq.Figures[i].Figure.ID, len(seq.Figures[i].Results))
		}
		total += len(fr.Results)
	}
	for i, p := range prog {
		if p.Done != i+1 || p.Total > total || p.Done > p.Total {
			t.Fatalf("progress %d: %d of %d (want %d of at most %d)", i, p.Done, p.Total, i+1, total)
		}
	}
	if len(prog) != total || prog[len(prog)-1].Total != total {
		t.Errorf("progress reported %d points, last total %d; want %d", len(prog), prog[len(prog)-1].Total, total)
	}
}

// TestReplot redraws a figure from its records alone, and refuses a
// figure with some of its records missing.
func TestReplot(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"fig17.jsonl", "fig18.jsonl"} {
		data, err := os.ReadFile(filepath.Join("..", "..", "docs", "figures", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files, err := Replot(dir, false, []string{"fig17"})
	if err != nil || len(files) != 2 {
		t.Fatalf("fig17: %v, files %v", err, files)
	}
	for _, f := range files {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	if _, err := Replot(dir, false, []string{"fig18"}); err == nil || !strings.Contains(err.Error(), "not fig18-ud.jsonl") {
		t.Errorf("fig18 without fig18-ud.jsonl: %v", err)
	}
}

// TestMergeAlike: series within 1% of each other at every x are drawn as
// one, named after both; others are left as they are.
func TestMergeAlike(t *testing.T) {
	pts := func(ys ...float64) []chart.XY {
		var out []chart.XY
		for i, y := range ys {
			out = append(out, chart.XY{X: float64(i), Y: y})
		}
		return out
	}
	got := mergeAlike([]chart.Series{{Name: "A", Points: pts(1, 2)}, {Name: "B", Points: pts(5, 6)}, {Name: "C", Points: pts(1.005, 2)}, {Name: "D", Points: pts(1.02, 2)}})
	var names []string
	for _, s := range got {
		names = append(names, s.Name)
	}
	if strings.Join(names, "|") != "A = C|B|D" {
		t.Errorf("merged %q", names)
	}
}

// TestBenchJudgesLoadTheGivenProfile: the claims judged by microbenchmarks
// run on the profile FigureOptions.Profile names (a sensitivity change's
// copy), not the built-in one: a path that does not exist fails them,
// naming it. C30 reads no profile (a flow-level estimate of the tables).
func TestBenchJudgesLoadTheGivenProfile(t *testing.T) {
	o := FigureOptions{Profile: func(name string) string { return "/nonexistent/" + name + ".yaml" }}
	for _, b := range BenchJudges {
		for _, v := range b.Judge(o) {
			if v.Claim == "C30" {
				if v.Verdict == Fail && v.Measured == "no data" {
					t.Errorf("C30 failed: %+v", v)
				}
				continue
			}
			if v.Verdict != Fail || !strings.Contains(v.Reason, "/nonexistent/") {
				t.Errorf("%s on a missing profile: %+v", v.Claim, v)
			}
		}
	}
}

// TestEBBClaims judges C30 and C31 at the quick scale: both measure an
// effective bisection bandwidth between 0 and 1, and adaptive routing
// gives more than static routing.
func TestEBBClaims(t *testing.T) {
	if testing.Short() {
		t.Skip("two 128-node runs")
	}
	vs := judgeEBB(FigureOptions{})
	if len(vs) != 2 || vs[0].Claim != "C30" || vs[1].Claim != "C31" {
		t.Fatalf("verdicts %+v", vs)
	}
	for _, v := range vs {
		if v.Verdict == Fail || v.Verdict == NotRun || v.Figure != "ebb" {
			t.Errorf("%s: %+v", v.Claim, v)
		}
		t.Logf("%s %s: %s", v.Claim, v.Verdict, v.Measured)
	}
}

// TestJudgingIDsCoverEveryJudge: every claim's judge reads a figure or
// microbenchmark of JudgingIDs, and no figure without claims is in it.
func TestJudgingIDsCoverEveryJudge(t *testing.T) {
	ids := JudgingIDs()
	for c, j := range judges {
		if !contains(ids, j.fig) {
			t.Errorf("%s's figure %s is not in %v", c, j.fig, ids)
		}
	}
	for _, b := range BenchJudges {
		if !contains(ids, b.ID) {
			t.Errorf("%s missing from %v", b.ID, ids)
		}
	}
	for _, id := range []string{"trees", "peers"} {
		if contains(ids, id) {
			t.Errorf("%s judges no claim but is in %v", id, ids)
		}
	}
}

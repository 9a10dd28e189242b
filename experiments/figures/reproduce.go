package figures

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/experiments/chart"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/experiments/sweep"
)

// FigureOptions controls RunFigure.
type FigureOptions struct {
	Full   bool   // the paper's scale instead of the quick one
	OutDir string // where the JSONL, CSV and plots go (created)
	Jobs   int    // parallel runs (0: GOMAXPROCS)
	// Progress and Warn are passed to RunSweep.
	Progress func(sweep.Progress)
	Warn     func(string)
	// NoSteadyCheck skips the steady-state check (one extra run).
	NoSteadyCheck bool
	// Grow grows every point of a throughput figure to steady state (see
	// grow); the check above is then not needed and not run.
	Grow bool
	// Wrap, if set, wraps the function that runs each point (the figure's
	// own or experiments.Run), e.g. to run it on a changed profile.
	Wrap func(func(experiments.RunConfig) (*results.Record, error)) func(experiments.RunConfig) (*results.Record, error)
	// Profile, if set, names what a microbenchmark judged for a claim
	// (BenchJudges) loads for a built-in profile: a changed copy, as Wrap
	// gives the figures' points one. Nil: the profile itself.
	Profile func(name string) string
	// NoPlots skips the plots (the JSONL and CSV are still written).
	NoPlots bool
	// Resume keeps points already in the output files; otherwise they are
	// removed first, so that results always come from the current code.
	Resume bool
	// Memory, if set, admits the runs so that those running at once fit
	// in it, and stops steady-state growth before a doubling that would
	// not fit by itself (experiments.MemoryBudget). Nil: no limit.
	Memory *experiments.MemoryBudget
	// Run runs one point; default Run. Tests replace it.
	Run func(experiments.RunConfig) (*results.Record, error)
	// Slots, if set, is shared by every figure running at the same time
	// (Reproduce sets it): the figure's sweeps then run at once, their
	// points taking turns at the slots; Progress must then be safe for
	// concurrent use. Planned is passed to RunSweep.
	Slots   *sweep.Slots
	Planned func(points int)
	// Memo, if set, is shared by every figure of one invocation
	// (Reproduce sets it): a point whose configuration another figure's
	// point has (fig15 and fig16 share six) runs once and both take its
	// record (sweep.Memo). Nil: RunFigure shares points among its own
	// sweeps only.
	Memo *sweep.Memo
	// Cache, if set, keeps the records of Run's runs (experiments.Run's
	// by default; a Run given with a Cache must make the same records)
	// across invocations: a point it holds is not run again
	// (sweep.Cache). Nil: every point runs.
	Cache *sweep.Cache
	// Judged, if set, keeps the microbenchmarks' verdicts (BenchJudges)
	// across the reproductions that share it; nil: each is judged.
	Judged *Judged
}

// FigureReport is what RunFigure produced.
type FigureReport struct {
	Figure  Figure
	Results []results.Result // every sweep's results, in sweep order
	Failed  int
	Files   []string
	// Steady describes the steady-state check: the largest point run again
	// with twice the input, and how far its throughput moved.
	Steady string
}

// RunFigure runs a figure's sweeps (resuming any output already in
// OutDir), then writes <id>.csv and the plots (.png, .svg). Failed points
// are counted and kept in the JSONL; they do not stop the figure.
func RunFigure(ctx context.Context, f Figure, o FigureOptions) (*FigureReport, error) {
	if err := os.MkdirAll(o.OutDir, 0o755); err != nil {
		return nil, err
	}
	sws, err := f.Sweeps(o.Full)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.ID, err)
	}
	rep := &FigureReport{Figure: f}
	growing := o.Grow && !f.NoSteady
	if (growing || o.Wrap != nil || o.Memory != nil || o.Cache != nil) && o.Run == nil {
		for _, sw := range sws { // RunSweep checks points only when it runs them itself
			if err := sweep.ValidatePoints(sw.Points()); err != nil {
				return nil, fmt.Errorf("%s: %w", f.ID, err)
			}
		}
		o.Run = experiments.Run
	}
	o.Run = o.Cache.Wrap("experiments.Run", o.Run)
	if o.Wrap != nil {
		o.Run = o.Wrap(o.Run)
	}
	o.Run = o.Memory.Admit(o.Run)
	if growing {
		o.Run = grow(o.Run, o.Memory)
	}
	if o.Memo == nil {
		o.Memo = sweep.NewMemo()
	}
	memo := o.Memo.Tagged(fmt.Sprintf("grown=%v", growing)) // every figure's points run by the same o.Run but for growth
	outs := make([]string, len(sws))
	for i, sw := range sws {
		outs[i] = filepath.Join(o.OutDir, sw.Name+".jsonl")
		if !o.Resume {
			if err := os.Remove(outs[i]); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, err
			}
		}
	}
	// One after the other, or (with shared slots) all at once; the
	// results are the same, and are gathered in sweep order.
	reps := make([]*sweep.SweepReport, len(sws))
	errs := make([]error, len(sws))
	runOne := func(i int) {
		reps[i], errs[i] = sweep.RunSweep(ctx, sws[i], sweep.SweepOptions{Jobs: o.Jobs, Out: outs[i], Progress: o.Progress, Warn: o.Warn, Run: o.Run,
			Slots: o.Slots, Planned: o.Planned, Memo: memo})
	}
	if o.Slots == nil {
		for i := range sws {
			if runOne(i); errs[i] != nil && !errors.Is(errs[i], sweep.ErrPointsFailed) {
				break
			}
		}
	} else {
		var wg sync.WaitGroup
		for i := range sws {
			wg.Go(func() { runOne(i) })
		}
		wg.Wait()
	}
	for i, r := range reps {
		if err := errs[i]; err != nil && !errors.Is(err, sweep.ErrPointsFailed) {
			return nil, fmt.Errorf("%s: %w", f.ID, err)
		}
		if r == nil { // not run: an earlier sweep failed
			continue
		}
		rep.Results = append(rep.Results, r.Results...)
		rep.Failed += r.Failed
		rep.Files = append(rep.Files, outs[i])
	}
	csv := filepath.Join(o.OutDir, f.ID+".csv")
	if err := results.WriteCSV(csv, rep.Results); err != nil {
		return nil, err
	}
	rep.Files = append(rep.Files, csv)
	if err := writePlots(f, o, rep); err != nil {
		return nil, err
	}
	switch {
	case f.NoSteady:
		rep.Steady = "steady-state check not applicable (the figure's metric is not a throughput)"
	case growing:
		rep.Steady = growthSummary(rep.Results)
	case !o.NoSteadyCheck:
		run := o.Run
		if run == nil {
			run = experiments.Run
		}
		rep.Steady = steadyCheck(rep.Results, o.Slots.Gate(run))
	}
	return rep, nil
}

// plotMu serializes the plotting of figures that finish at the same time
// (the plotting library's fonts and caches are not documented as safe
// for concurrent use).
var plotMu sync.Mutex

// writePlots writes the figure's plots (unless o.NoPlots) into o.OutDir
// and adds their files to rep.
func writePlots(f Figure, o FigureOptions, rep *FigureReport) error {
	if o.NoPlots {
		return nil
	}
	plotMu.Lock()
	defer plotMu.Unlock()
	plots, err := f.Plots(rep.Results)
	if err != nil {
		return fmt.Errorf("%s plots: %w", f.ID, err)
	}
	for _, p := range plots {
		base := filepath.Join(o.OutDir, p.Name)
		p.Spec.StyleOrder = experiments.DesignNames(nil) // a design keeps its style in every figure
		if err := chart.Write(base, p.Spec); err != nil {
			return fmt.Errorf("%s: %w", p.Name, err)
		}
		rep.Files = append(rep.Files, base+".png", base+".svg")
	}
	return nil
}

// steadyCheck reruns the largest successful point with twice the input:
// if its rate (rate: a throughput, or a query's data per node over its
// response time) moves by more than 10%, the figure's scale is too short
// to be in steady state, and the report says so. run runs the point as
// the figure's own points were run.
func steadyCheck(rs []results.Result, run func(experiments.RunConfig) (*results.Record, error)) string {
	var big *results.Result
	for i := range rs {
		r := &rs[i]
		if !r.Failed() && !experiments.DesignOf(r.Design).Ceiling && rate(r.Record) > 0 && (big == nil || r.Nodes*int(r.BytesPerNode) > big.Nodes*int(big.BytesPerNode)) {
			big = r
		}
	}
	if big == nil {
		return "not checked: no successful point with a positive throughput"
	}
	cfg, ok := scaledInput(experiments.ConfigOf(big.Record), 2)
	if !ok {
		return "not checked: the largest point has no input size to double"
	}
	again, err := run(cfg)
	if err != nil {
		return fmt.Sprintf("not checked: %v", err)
	}
	if again.Integrity != "ok" {
		return fmt.Sprintf("not checked: the run with twice the input failed its integrity check (%s)", again.Integrity)
	}
	d := (rate(again) - rate(big.Record)) / rate(big.Record)
	verdict := "steady"
	if d > 0.10 || d < -0.10 {
		verdict = "NOT steady (the quick scale is short: start-up and drain weigh on it)"
	}
	if big.Experiment == "tpch" {
		return fmt.Sprintf("%s: %s at %d nodes, %.3g ms; twice the scale factor %.3g ms (rate %+.1f%%)",
			verdict, big.Design, big.Nodes, 1e3*big.ResponseS, 1e3*again.ResponseS, 100*d)
	}
	return fmt.Sprintf("%s: %s at %d nodes, %.2f GiB/s; twice the input %.2f GiB/s (%+.1f%%)",
		verdict, big.Design, big.Nodes, big.ThroughputGiBs, again.ThroughputGiBs, 100*d)
}

// ReproduceOptions controls Reproduce.
type ReproduceOptions struct {
	FigureOptions
	Figures []string  // figure IDs to run; empty means all
	Log     io.Writer // one line per figure as it finishes (nil: quiet)
}

// ReproduceReport is every figure's report and every claim's verdict.
type ReproduceReport struct {
	Figures  []*FigureReport
	Verdicts []Verdict
	// Robustness, when set (ApplyRobustness), is each claim's robustness
	// cell from a sensitivity analysis, and RobustnessFrom names it.
	Robustness     map[string]string
	RobustnessFrom string
	// Shared is the number of points that took the record of the same
	// point in another figure (or sweep) instead of running again.
	Shared int
	// Unconfirmed are the passes whose robustness a sensitivity analysis
	// written before it finished has not settled: no change judged so far
	// flips them, but some are not judged yet. The summary says so.
	Unconfirmed []string
}

// ApplyRobustness adds a sensitivity analysis's robustness to the report:
// cells by claim, and the claims it found fragile. A fragile pass is not a
// pass: it becomes a partial whose reason names the analysis.
func (rep *ReproduceReport) ApplyRobustness(cells map[string]string, fragile map[string]bool, from string) {
	rep.Robustness, rep.RobustnessFrom = cells, from
	for i, v := range rep.Verdicts {
		if v.Verdict == Pass && fragile[v.Claim] {
			rep.Verdicts[i].Verdict = Partial
			rep.Verdicts[i].Reason = strings.TrimSpace("passes on the profiles as they are, but an estimate moved by x0.5 or x2 flips it (robustness column). " + v.Reason)
		}
	}
}

// Reproduce runs the figures and judges every claim.
func Reproduce(ctx context.Context, o ReproduceOptions) (*ReproduceReport, error) {
	rep := &ReproduceReport{}
	res := map[string][]results.Result{}
	var figs []Figure
	for _, f := range AllFigures() {
		if len(o.Figures) == 0 || contains(o.Figures, f.ID) {
			figs = append(figs, f)
		}
	}
	if o.Memo == nil {
		o.Memo = sweep.NewMemo()
	}
	var benches []BenchJudge
	for _, b := range BenchJudges {
		if len(o.Figures) == 0 || contains(o.Figures, b.ID) {
			benches = append(benches, b)
		}
	}
	slots := o.Slots
	if slots == nil && o.jobs() > 1 {
		slots = sweep.NewSlots(o.jobs())
	}
	judged := startBenches(ctx, benches, o.FigureOptions, slots)
	frs, err := runFigures(ctx, figs, o, slots)
	benchVerdicts := judged(err != nil || ctx.Err() != nil)
	rep.Shared = o.Memo.Reused()
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for i, fr := range frs {
		rep.Figures = append(rep.Figures, fr)
		res[figs[i].ID] = fr.Results
	}
	rep.Verdicts = Judge(res)
	for _, vs := range benchVerdicts {
		rep.Verdicts = applyVerdicts(rep.Verdicts, vs)
	}
	return rep, nil
}

// jobs is the number of runs at once: o.Jobs, or one per core.
func (o ReproduceOptions) jobs() int {
	if o.Jobs <= 0 {
		return runtime.GOMAXPROCS(0)
	}
	return o.Jobs
}

// startBenches starts the microbenchmarks that judge claims (BenchJudges)
// before the figures' points, each holding one of slots while it runs, so
// that the longest of them (C31's packet-level bisections, about 15 s at
// the quick scale) runs beside the points instead of after them on one
// core. With nil slots (one job) they run when the returned function is
// called, after the figures, as one job would run them, unless it is told
// to skip them (the figures failed). The function waits for those running
// and returns each one's verdicts, in the order of benches; the verdicts do
// not depend on when they ran.
func startBenches(ctx context.Context, benches []BenchJudge, o FigureOptions, slots *sweep.Slots) func(skip bool) [][]Verdict {
	out := make([][]Verdict, len(benches))
	if slots == nil {
		return func(skip bool) [][]Verdict {
			if skip {
				return out
			}
			for i, b := range benches {
				out[i] = b.judge(o)
			}
			return out
		}
	}
	var wg sync.WaitGroup
	for i, b := range benches {
		release, ok := slots.Hold(ctx) // taken here, in order, before any point's
		if !ok {
			break // cancelled: Reproduce returns ctx's error
		}
		free := o.Memory.Hold(b.memory(o.Full)) // after the slot, as a point takes them
		wg.Go(func() {
			defer release()
			defer free()
			out[i] = b.judge(o)
		})
	}
	return func(bool) [][]Verdict {
		wg.Wait()
		return out
	}
}

// runFigures runs figs and returns their reports in the same order. With
// more than one job every figure runs at once and all their points take
// turns at one set of o.Jobs slots (sweep.Slots), the figures listed last
// (the TPC-H queries, whose grown points are the longest) starting first:
// no core waits for a sweep's last point while other figures have points
// to run. Results are the same either way; only the order in which figures
// finish, and so the order of o.Log's lines, differs.
func runFigures(ctx context.Context, figs []Figure, o ReproduceOptions, slots *sweep.Slots) ([]*FigureReport, error) {
	var logMu sync.Mutex
	logged := func(f Figure, fr *FigureReport) {
		if o.Log != nil {
			logMu.Lock()
			fmt.Fprintf(o.Log, "%s: %d points, %d failed; %s\n", f.ID, len(fr.Results), fr.Failed, fr.Steady)
			logMu.Unlock()
		}
	}
	frs := make([]*FigureReport, len(figs))
	if slots == nil || o.Slots != nil {
		for i, f := range figs {
			fr, err := RunFigure(ctx, f, o.FigureOptions)
			if err != nil {
				return nil, err
			}
			frs[i] = fr
			logged(f, fr)
		}
		return frs, nil
	}
	fo := o.FigureOptions
	fo.Slots = slots
	var progMu sync.Mutex
	planned, done := 0, 0
	fo.Planned = func(n int) {
		progMu.Lock()
		planned += n
		progMu.Unlock()
	}
	if inner := o.Progress; inner != nil {
		fo.Progress = func(pr sweep.Progress) { // one stream for every sweep, in turn
			progMu.Lock()
			defer progMu.Unlock()
			done++
			inner(sweep.Progress{Done: done, Total: max(planned, done), Result: pr.Result})
		}
	}
	errs := make([]error, len(figs))
	var wg sync.WaitGroup
	for i := len(figs) - 1; i >= 0; i-- {
		wg.Go(func() {
			frs[i], errs[i] = RunFigure(ctx, figs[i], fo)
			if errs[i] == nil {
				logged(figs[i], frs[i])
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return frs, nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// WriteValidation writes the claims report (docs/validation.md): one row
// per claim with its statement, expectation, measurement and verdict.
func WriteValidation(w io.Writer, rep *ReproduceReport, full bool, command string) error {
	mode := "quick"
	if full {
		mode = "full (the paper's scale)"
	}
	counts := map[string]int{}
	for _, v := range rep.Verdicts {
		counts[v.Verdict]++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Validation against the papers' claims\n\n")
	fmt.Fprintf(&b, "Written by `%s` (%s scale); do not edit by hand. Every figure is in `docs/figures/` "+
		"with its data (JSONL, CSV). Model parameters were not tuned to any claim (docs/model.md): a claim that fails is a finding, "+
		"with its reason. Thresholds: \"about x\" is read as roughly x +-30%%; each rule is in `experiments/figures/judge.go`.\n\n", command, mode)
	if o := grownPoints(rep); o > 0 {
		fmt.Fprintf(&b, "Every throughput and TPC-H point (%d) was grown to steady state before it was judged: run again with twice its input (a query: twice its scale factor per node) until its throughput (a query: scale factor per node over response time) moved by less than %.0f%%, up to %dx the quick input (fields `input_scale`, `steady_change`; docs/results.md).\n\n", o, 100*SteadyTolerance, MaxGrowth)
	}
	unconfirmed := ""
	switch n := len(rep.Unconfirmed); {
	case n > 0 && n == counts[Pass]:
		unconfirmed = " (each robust only so far: the sensitivity analysis has not judged every change yet)"
	case n > 0:
		unconfirmed = fmt.Sprintf(" (%d of them, %s, robust only so far: the sensitivity analysis has not judged every change yet)", n, strings.Join(rep.Unconfirmed, ", "))
	}
	fmt.Fprintf(&b, "Summary: %d pass%s, %d partial, %d fail, %d not-run (of %d claims).\n\n", counts[Pass], unconfirmed, counts[Partial], counts[Fail], counts[NotRun], len(rep.Verdicts))
	for _, fr := range rep.Figures {
		fmt.Fprintf(&b, "- %s, %s: %d points (%d failed). %s\n", fr.Figure.ID, fr.Figure.Title, len(fr.Results), fr.Failed, fr.Steady)
	}
	if rep.Robustness != nil {
		fmt.Fprintf(&b, "\nRobustness: %s. A pass that flips under any change of the analysis is counted as a partial.\n", rep.RobustnessFrom)
	} else {
		fmt.Fprintf(&b, "\nRobustness: not analysed (run `explore sensitivity --update-docs`, then this command again).\n")
	}
	fmt.Fprintf(&b, "\n| claim | source | statement | figure | expected | measured | verdict | robustness | reason |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, v := range rep.Verdicts {
		var c Claim
		for _, x := range Claims {
			if x.ID == v.Claim {
				c = x
			}
		}
		esc := func(s string) string { return strings.ReplaceAll(s, "|", "\\|") }
		rob := "not analysed"
		if cell, ok := rep.Robustness[v.Claim]; ok {
			rob = cell
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | **%s** | %s | %s |\n", v.Claim, c.Source, esc(c.Statement), v.Figure, esc(v.Expected), esc(v.Measured), v.Verdict, esc(rob), esc(v.Reason))
	}
	for _, fr := range rep.Figures {
		if fr.Figure.ID == "peers" {
			writeComparison(&b, all(fr.Results))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeComparison is the claims report's side-by-side section: every
// design on one cluster, from the "peers" figure, and what it shows.
func writeComparison(b *strings.Builder, rs []*results.Record) {
	at := func(design, pattern string) float64 {
		v, _ := mean(rs, func(r *results.Record) bool {
			return r.Design == design && r.Pattern == pattern && (r.Design != algos.NameHyPer || r.MsgBytes != 512<<10)
		}, tput)
		return v
	}
	var names []string
	for _, r := range rs {
		if !experiments.DesignOf(r.Design).Ceiling && !slices.Contains(names, r.Design) {
			names = append(names, r.Design)
		}
	}
	slices.SortStableFunc(names, func(x, y string) int { return cmp.Compare(at(y, "repartition"), at(x, "repartition")) })
	fmt.Fprintf(b, "\n## Every design on one cluster\n\nNo paper compared these designs with one another: each measured its own design against its own\n"+
		"baseline on its own hardware. Here they run on one simulated cluster (8 EDR nodes, 4 threads, `explore figure peers`),\n"+
		"receive throughput per node in GiB/s:\n\n| design | repartition | broadcast |\n|---|---|---|\n")
	for _, d := range names {
		fmt.Fprintf(b, "| %s | %.2f | %.2f |\n", d, at(d, "repartition"), at(d, "broadcast"))
	}
	best, bestV := "", 0.0
	for _, d := range experiments.PaperDesigns() {
		if v := at(d, "repartition"); v > bestV {
			best, bestV = d, v
		}
	}
	h, hu, mw, mpi, ipoib := at("HyPer", "repartition"), at("HyPer/unsched", "repartition"), at("RDMA-MW", "repartition"), at("MPI", "repartition"), at("IPoIB", "repartition")
	if bestV > 0 && h > 0 && hu > 0 {
		fmt.Fprintf(b, "\nWhat this shows: Roediger15's single multiplexer per server with round-robin scheduling reaches %.2f GiB/s, %.0f%% of Liu19's best design here (%s, %.2f); "+
			"without the scheduling it reaches %.2f (%.0f%%), against %.2f for MPI and %.2f for IPoIB. On this model the multiplexer's strength is coordinating the senders, "+
			"not owning the connections. MW-DQE's RDMA Write middleware, built for Gigabit Ethernet, reaches %.2f: its small appends, one write in flight per ring and "+
			"single network thread cap it far below the link when the network is fast. One difference favors the multiplexer: it hands a node's own share over in memory, "+
			"as Roediger15 describes, while Liu19's designs as built here send it through the adapter like any other, so up to 1/n of their link (%.1f%% at %d nodes) "+
			"carries traffic the multiplexer never puts on the wire.\n", h, 100*h/bestV, best, bestV, hu, 100*hu/bestV, mpi, ipoib, mw, 100/float64(rs[0].Nodes), rs[0].Nodes)
	}
}

// Replot draws again the plots of every figure (or of only, by ID) whose
// records are in dir, from those records, running nothing: after a change
// of the plotting code, the figures of a long run are redrawn in seconds.
// It returns the files written; a figure with none of its records in dir
// is skipped, one with some of them missing is an error.
func Replot(dir string, full bool, only []string) ([]string, error) {
	var files []string
	for _, f := range AllFigures() {
		if len(only) > 0 && !slices.Contains(only, f.ID) {
			continue
		}
		sws, err := f.Sweeps(full)
		if err != nil {
			return files, fmt.Errorf("%s: %w", f.ID, err)
		}
		rep := &FigureReport{Figure: f}
		var missing []string
		for _, sw := range sws {
			rs, err := results.ReadFile(filepath.Join(dir, sw.Name+".jsonl"), nil)
			if errors.Is(err, fs.ErrNotExist) {
				missing = append(missing, sw.Name+".jsonl")
				continue
			}
			if err != nil {
				return files, fmt.Errorf("%s: %w", f.ID, err)
			}
			rep.Results = append(rep.Results, rs...)
		}
		switch {
		case len(missing) == len(sws):
			continue
		case len(missing) > 0:
			return files, fmt.Errorf("%s: %s has some of its records but not %s: run the figure again", f.ID, dir, strings.Join(missing, ", "))
		}
		if err := writePlots(f, FigureOptions{OutDir: dir}, rep); err != nil {
			return files, err
		}
		files = append(files, rep.Files...)
	}
	return files, nil
}

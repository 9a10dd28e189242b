package sweep

// Running sweeps: RunSweep runs a sweep's points in parallel (sharded,
// resumable) and writes one JSON line per point; Merge joins the files of
// shards.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/internal/setting"
)

// Shard selects the points with Index % N == I-1 (I counts from 1, as in a
// Slurm job array). The zero Shard selects every point.
type Shard struct{ I, N int }

// ParseShard parses "i/N" with 1 <= i <= N.
func ParseShard(s string) (Shard, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(a))
	n, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil {
		return Shard{}, fmt.Errorf("shard %q: want i/N with whole numbers, e.g. 2/8", s)
	}
	sh := Shard{I: i, N: n}
	return sh, sh.check()
}

func (s Shard) check() error {
	if s == (Shard{}) {
		return nil
	}
	if s.N < 1 || s.I < 1 || s.I > s.N {
		return fmt.Errorf("shard %d/%d: want i/N with 1 <= i <= N", s.I, s.N)
	}
	return nil
}

// Has reports whether the shard includes point index i.
func (s Shard) Has(i int) bool { return s.N <= 1 || i%s.N == s.I-1 }

// String returns "i/N", or "all" for the zero Shard.
func (s Shard) String() string {
	if s == (Shard{}) {
		return "all"
	}
	return fmt.Sprintf("%d/%d", s.I, s.N)
}

// Progress reports one finished point to SweepOptions.Progress.
type Progress struct {
	Done, Total int            // points finished and to run in this invocation (skipped ones excluded)
	Result      results.Result // the point's result (Wall set)
}

// SweepOptions controls RunSweep. The zero value runs every point on
// GOMAXPROCS workers and keeps results in memory only.
type SweepOptions struct {
	Jobs  int    // parallel runs; 0 means runtime.GOMAXPROCS(0)
	Shard Shard  // which points to run; zero means all
	Out   string // JSONL output file: resumed if it exists, rewritten sorted at the end; "" for none
	// Progress, if set, is called after each point from a single goroutine
	// (it need not be thread-safe; a slow callback slows the sweep).
	Progress func(Progress)
	// Warn, if set, receives non-fatal problems (a truncated last line
	// left by a killed run); default: ignored.
	Warn func(string)
	// Run runs one point; default Run. Tests replace it.
	Run func(experiments.RunConfig) (*results.Record, error)
	// Memory, if set, admits the points running at once so that their
	// estimated memory fits in it (experiments.MemoryBudget); nil: none.
	Memory *experiments.MemoryBudget
	// Slots, if set, is shared with other sweeps running at the same time:
	// a point runs only while it holds one of them (Jobs still bounds this
	// sweep's own points). Nil: Jobs alone.
	Slots *Slots
	// Planned, if set, is called once, before any point runs, with the
	// number of points this invocation will run (skipped ones excluded),
	// so that the progress of sweeps running at once can be totalled.
	Planned func(points int)
	// Memo, if set, is shared with other sweeps run with the same Run: a
	// point whose configuration one of them has run takes its record
	// (see Memo). Nil: every point runs.
	Memo *Memo
}

// SweepReport is what RunSweep did.
type SweepReport struct {
	Results []results.Result // every result of this shard, sorted by point (those from a resumed file included)
	Ran     int              // points run now
	Skipped int              // points found done in the output file
	Failed  int              // results with an error (resumed ones included)
	Wall    time.Duration    // wall-clock time of this invocation
}

// ErrPointsFailed is returned (wrapped) by RunSweep when some point's run
// failed; the report and the output file are complete nevertheless.
var ErrPointsFailed = errors.New("sweep points failed")

// ErrOutputBusy is a sweep refused because another sweep is writing its
// output file.
var ErrOutputBusy = errors.New("another sweep is writing the output file")

// ErrOtherSpec is a resume refused: the output file holds results of
// another spec than the one run now.
var ErrOtherSpec = errors.New("the file holds results of another spec")

// RunSweep runs the points of sw selected by opts.Shard, opts.Jobs at a
// time, after checking every point with ValidatePoints (nothing runs if one
// is invalid). With opts.Out set, points whose key is already in the file
// with a record are skipped (points recorded as failed are run again);
// each finished point is appended at once, so a killed sweep loses only
// running points, and at the end the file is rewritten sorted by point
// (temporary file, then rename), so that it is byte-identical whatever
// Jobs and however often it was resumed. A failed point is recorded with
// its error and the sweep goes on; RunSweep then returns the report and an
// error wrapping ErrPointsFailed. When ctx is cancelled no new point
// starts; running ones finish and are written, and ctx.Err() is returned.
func RunSweep(ctx context.Context, sw *Sweep, opts SweepOptions) (*SweepReport, error) {
	t0 := time.Now()
	if err := opts.Shard.check(); err != nil {
		return nil, err
	}
	run := opts.Run
	if run == nil {
		run = experiments.Run
	}
	warn := opts.Warn
	if warn == nil {
		warn = func(string) {}
	}
	all := sw.Points()
	var pts []Point
	for _, p := range all {
		if opts.Shard.Has(p.Index) {
			pts = append(pts, p)
		}
	}
	if opts.Run == nil {
		if err := ValidatePoints(pts); err != nil {
			return nil, err
		}
	}
	run = opts.Memory.Admit(run)
	rep := &SweepReport{}
	done := map[int]results.Result{}
	var f *os.File
	if opts.Out != "" {
		if err := os.MkdirAll(filepath.Dir(opts.Out), 0o755); err != nil {
			return nil, err
		}
		unlock, err := lockOutput(opts.Out)
		if err != nil {
			return nil, err
		}
		defer unlock()
		if done, f, err = resume(sw, all, opts.Out, warn); err != nil {
			return nil, err
		}
		defer f.Close()
	}
	var todo []Point
	for _, p := range pts {
		if r, ok := done[p.Index]; ok {
			rep.Results = append(rep.Results, r)
			rep.Skipped++
		} else {
			todo = append(todo, p)
		}
	}
	if opts.Planned != nil {
		opts.Planned(len(todo))
	}
	if err := runPoints(ctx, run, todo, opts, f, rep); err != nil {
		return nil, err
	}
	slices.SortFunc(rep.Results, func(a, b results.Result) int { return a.Point - b.Point })
	for i, r := range rep.Results {
		rep.Results[i].Sweep = sw.Name
		if r.Failed() {
			rep.Failed++
		}
	}
	if f != nil {
		if err := rewriteResults(f, opts.Out, rep.Results, warn); err != nil {
			return nil, err
		}
	}
	rep.Wall = time.Since(t0)
	if err := ctx.Err(); err != nil {
		return rep, err
	}
	if rep.Failed > 0 {
		return rep, fmt.Errorf("%w: %d of %d", ErrPointsFailed, rep.Failed, len(pts))
	}
	return rep, nil
}

// resume reads the results a sweep's output file out already holds (the
// points that succeeded, by index; they must be points of sw as specified
// now) and opens the file to append, cut after its last whole line.
func resume(sw *Sweep, all []Point, out string, warn func(string)) (map[int]results.Result, *os.File, error) {
	done := map[int]results.Result{}
	old, good, err := results.ReadPrefix(out, warn)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, nil, err
	}
	for _, r := range old {
		if r.Point < 0 || r.Point >= len(all) || all[r.Point].Key != r.Key {
			return nil, nil, fmt.Errorf("%w: %s: point %d (%s) is not a point of sweep %s as specified now: write the results to another file, or remove it",
				ErrOtherSpec, out, r.Point, r.Key, sw.Name)
		}
		if !r.Failed() {
			// A point grown to steady state (explore reproduce) ran with
			// input_scale times the point's input.
			want := all[r.Point].Config
			if r.InputScale > 1 {
				want, _ = want.ScaledInput(int64(r.InputScale))
			}
			if err := experiments.SameRun(r.Record, want); err != nil {
				return nil, nil, fmt.Errorf("%w: %s: point %d (%s): %s: write the results to another file, or remove it", ErrOtherSpec, out, r.Point, r.Key, mismatch(err))
			}
			done[r.Point] = r
		}
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return nil, nil, err
	}
	f, err := os.OpenFile(out, os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, nil, err
	}
	if err := f.Truncate(good); err != nil { // drop a truncated last line
		f.Close()
		return nil, nil, err
	}
	if _, err := f.Seek(good, io.SeekStart); err != nil {
		f.Close()
		return nil, nil, err
	}
	return done, f, nil
}

// runPoints runs todo on opts.Jobs workers (GOMAXPROCS by default), appends
// each result to f (if not nil) as it finishes and to rep, and reports
// progress; it stops handing out points when ctx is done.
func runPoints(ctx context.Context, run func(experiments.RunConfig) (*results.Record, error), todo []Point, opts SweepOptions, f *os.File, rep *SweepReport) error {
	jobs := opts.Jobs
	if jobs <= 0 {
		jobs = runtime.GOMAXPROCS(0)
	}
	in := make(chan Point)
	out := make(chan results.Result)
	var wg sync.WaitGroup
	for w := 0; w < min(jobs, len(todo)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range in {
				rec, own := opts.Memo.take(p.Config)
				if rec != nil { // its twin's record, as its own run would make it
					out <- results.Result{Point: p.Index, Key: p.Key, Record: rec}
					continue
				}
				if !opts.Slots.acquire(ctx) {
					own.finish(nil)
					continue // interrupted while waiting: not run, so not recorded
				}
				r := runPoint(run, p)
				opts.Slots.release()
				if r.Failed() {
					own.finish(nil)
				} else {
					own.finish(r.Record)
				}
				out <- r
			}
		}()
	}
	go func() {
		defer close(in)
		for _, p := range todo {
			if ctx.Err() != nil { // select picks at random when a worker is free too
				return
			}
			select {
			case in <- p:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(out) }()
	var werr error
	for r := range out {
		rep.Ran++
		if f != nil && werr == nil {
			b, err := r.Line()
			if err == nil {
				_, err = f.Write(append(b, '\n'))
			}
			werr = err
		}
		rep.Results = append(rep.Results, r)
		if opts.Progress != nil {
			opts.Progress(Progress{Done: rep.Ran, Total: len(todo), Result: r})
		}
	}
	if werr != nil {
		return fmt.Errorf("%s: %w", opts.Out, werr)
	}
	return nil
}

// rewriteResults closes f and rewrites the output file sorted by point:
// points run again replace their old lines (a failed point run again, say);
// lines of other shards in the same file are kept.
func rewriteResults(f *os.File, out string, rs []results.Result, warn func(string)) error {
	keep := map[int]results.Result{}
	old, _, err := results.ReadPrefix(out, warn)
	if err != nil {
		return err
	}
	for _, r := range old {
		keep[r.Point] = r
	}
	for _, r := range rs {
		keep[r.Point] = r
	}
	if err := f.Close(); err != nil {
		return err
	}
	return results.WriteFile(out, sortedResults(keep))
}

// runPoint runs one point, turning an error or a panic into a failed result.
func runPoint(run func(experiments.RunConfig) (*results.Record, error), p Point) (r results.Result) {
	t0 := time.Now()
	r = results.Result{Point: p.Index, Key: p.Key}
	defer func() {
		if v := recover(); v != nil {
			r.Record, r.Error = nil, fmt.Sprintf("panic: %v", v)
		}
		r.Wall = time.Since(t0)
	}()
	rec, err := run(p.Config)
	if err != nil {
		r.Error, r.NotRun = inParamWords(err).Error(), errors.Is(err, experiments.ErrMemory)
		return r
	}
	if rec == nil {
		r.Error = "no record"
		return r
	}
	c := *rec
	c.WallS = 0 // sweep output is deterministic; the wall time is in r.Wall
	r.Record = &c
	return r
}

// mismatch words SameRun's error in the sweep's terms: the parameter
// named after the differing field, if there is one.
func mismatch(err error) string {
	var m *experiments.MismatchError
	if !errors.As(err, &m) {
		return err.Error()
	}
	name := setting.Kebab(m.Field)
	if name == "timeout" {
		name = "timeout-ms"
	}
	if !slices.Contains(Params(), name) {
		name = m.Field + " (no sweep parameter: set by the figure or the base configuration)"
	}
	return fmt.Sprintf("%s is %v in the file but %v in the spec", name, m.Got, m.Want)
}

// inParamWords rewords a refused setting in the sweep's terms: the
// parameter that sets it ("threads 100: ...", as a spec writes it).
func inParamWords(err error) error {
	se, ok := setting.As(err)
	if !ok || !slices.Contains(Params(), setting.Kebab(se.Setting)) {
		return err
	}
	return setting.Renamed(err, setting.Kebab(se.Setting))
}

func sortedResults(m map[int]results.Result) []results.Result {
	rs := make([]results.Result, 0, len(m))
	for _, r := range m {
		rs = append(rs, r)
	}
	slices.SortFunc(rs, func(a, b results.Result) int { return a.Point - b.Point })
	return rs
}

// MergeReport is what Merge did.
type MergeReport struct {
	Results []results.Result // the merged results, sorted by point
	Failed  int              // results with an error
	Missing []Point          // with a spec: its points in no input
}

// Merge writes to out the union of the sweep output files inputs (the
// shards of one sweep), sorted by point. The same point in several inputs
// is fine if its lines are identical and an error naming the point if not.
// With spec non-nil, every line must be one of its points, and the points
// in no input are listed in the report (the merged file is still written).
func Merge(out string, spec *Sweep, warn func(string), inputs ...string) (*MergeReport, error) {
	if len(inputs) == 0 {
		return nil, errors.New("merge: no input files")
	}
	var pts []Point
	if spec != nil {
		pts = spec.Points()
	}
	got := map[int]results.Result{}
	from := map[int]string{}
	for _, in := range inputs {
		rs, err := results.ReadFile(in, warn)
		if err != nil {
			return nil, err
		}
		for _, r := range rs {
			if spec != nil && (r.Point < 0 || r.Point >= len(pts) || pts[r.Point].Key != r.Key) {
				return nil, fmt.Errorf("merge: %s: point %d (%s) is not a point of sweep %s", in, r.Point, r.Key, spec.Name)
			}
			if prev, ok := got[r.Point]; ok {
				if !prev.SameLine(&r) {
					return nil, fmt.Errorf("merge: point %d (%s) differs between %s and %s", r.Point, r.Key, from[r.Point], in)
				}
				continue
			}
			got[r.Point], from[r.Point] = r, in
		}
	}
	rep := &MergeReport{Results: sortedResults(got)}
	for _, r := range rep.Results {
		if r.Failed() {
			rep.Failed++
		}
	}
	for _, p := range pts {
		if _, ok := got[p.Index]; !ok {
			rep.Missing = append(rep.Missing, p)
		}
	}
	if err := results.WriteFile(out, rep.Results); err != nil {
		return nil, err
	}
	return rep, nil
}

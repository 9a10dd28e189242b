package main

// explore sweep, merge and plot: the command-line face of
// package experiments/sweep (docs/sweeps.md).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/experiments/chart"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/experiments/sweep"
)

func sweepCmd() *cobra.Command {
	var out, shard string
	var jobs int
	var table bool
	var mem memoryLimits
	cmd := &cobra.Command{
		Use:   "sweep <spec.yaml>",
		Short: "Run every point of a sweep spec (in parallel, resumable, shardable) into a JSONL file",
		Long: `sweep runs the cartesian product of parameter values that a YAML spec describes
(docs/sweeps.md), one 'explore run' per point, several at a time, and writes one JSON
line per point: the run record plus the point's index and key, or its error. The file
is sorted by point and identical whatever --jobs; run the same command again to resume
(points already in the file are skipped, failed ones run again). --shard i/N runs only
every N-th point (for a Slurm job array); 'explore merge' joins the shards.

Parameters (explore run's flag names): ` + strings.Join(sweep.Params(), ", ") + `.`,
		Example: `  explore sweep experiments/specs/example.yaml
  explore sweep fig19.yaml --jobs 16 --shard $SLURM_ARRAY_TASK_ID/8`,
		Args:              specArg,
		ValidArgsFunction: specCompletion,
		RunE: func(cmd *cobra.Command, args []string) error {
			sw, err := readSpec(args[0])
			if err != nil {
				return err
			}
			var sh sweep.Shard
			if shard != "" {
				if sh, err = sweep.ParseShard(shard); err != nil {
					return fmt.Errorf("--shard: %w", err)
				}
			}
			if jobs < 0 {
				return fmt.Errorf("--jobs %d: want 1 or more (0: one per core)", jobs)
			}
			budget, err := mem.budget()
			if err != nil {
				return err
			}
			if out == "" {
				out = filepath.Join("results", sw.Name+".jsonl")
				if sh.N > 0 {
					out = filepath.Join("results", fmt.Sprintf("%s.shard-%d-of-%d.jsonl", sw.Name, sh.I, sh.N))
				}
			}
			stderr := cmd.ErrOrStderr()
			t := newTask(stderr, "sweep "+sw.Name, "points", 0)
			t.setDetail("the first points are running")
			defer t.finish()
			t.graceful = true
			t.resume = fmt.Sprintf("the finished points are in %s; resume with: %s", out, resumeCommand(cmd, args))
			opts := sweep.SweepOptions{Jobs: jobs, Shard: sh, Out: out, Progress: sweepProgress(t, stderr), Memory: budget,
				Warn: func(w string) { t.note(stderr, "warning: "+w) }}
			rep, err := sweep.RunSweep(cmd.Context(), sw, opts)
			t.finish()
			if rep == nil {
				return asInterrupted(t, err)
			}
			w := cmd.OutOrStdout()
			if table {
				printSweep(w, sw, rep.Results)
			}
			n := rep.Ran + rep.Skipped
			what := fmt.Sprintf("%s: %d points", sw.Name, n)
			if sh.N > 0 {
				what = fmt.Sprintf("%s shard %s: %d of %d points", sw.Name, sh, n, sw.Len())
			}
			notRun := results.CountNotRun(rep.Results)
			counts := fmt.Sprintf("%d run, %d already done, %d failed", rep.Ran-notRun, rep.Skipped, rep.Failed-notRun)
			if notRun > 0 {
				counts += fmt.Sprintf(", %d not run (more memory than allowed)", notRun)
			}
			fmt.Fprintln(w, wrapText(fmt.Sprintf("%s: %s; %.1fs wall; results in %s",
				what, counts, rep.Wall.Seconds(), out), tableWidth(), "  "))
			switch {
			case errors.Is(err, context.Canceled):
				return asInterrupted(t, err)
			case errors.Is(err, sweep.ErrPointsFailed) && notRun == rep.Failed:
				return fmt.Errorf("%d of %d points not run: each would need more memory than allowed (the error field in %s gives its estimate); %s", notRun, n, out, notRunAdvice)
			case errors.Is(err, sweep.ErrPointsFailed):
				return fmt.Errorf("%d of %d points failed (see the error field in %s)", rep.Failed, n, out)
			}
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&out, "out", "o", "", "output JSONL file (default results/<name>.jsonl, results/<name>.shard-i-of-N.jsonl with --shard)")
	fl.IntVarP(&jobs, "jobs", "j", 0, "points run at once (default: one per core)")
	fl.StringVar(&shard, "shard", "", "run only shard i of N (points with index % N == i-1), e.g. 2/8")
	fl.BoolVar(&table, "table", true, "print a summary table at the end (mean and 95% interval over seeds)")
	mem.register(fl)
	return cmd
}

// notRunAdvice ends the refusal of points whose memory estimate exceeded
// the budget (results.Result.NotRun): what would let them run.
const notRunAdvice = "run them on a machine with more memory, with a larger --max-memory, or with --no-memory-check"

func readSpec(path string) (*sweep.Sweep, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("sweep spec: %w", err)
	}
	sw, err := sweep.ParseSweep(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return sw, nil
}

// sweepProgress returns a SweepOptions.Progress callback that reports
// to t the points done of the sweep's total, and prints every failed
// point as a line on w (above the progress line).
func sweepProgress(t *task, w io.Writer) func(sweep.Progress) {
	sweeps := 0
	return func(pr sweep.Progress) {
		r := pr.Result
		t.mu.Lock()
		if pr.Done == 1 {
			sweeps++
			if sweeps > 1 { // the rate and time left of this sweep alone
				t.from = t.last
			}
		}
		t.done, t.total, t.last = pr.Done, pr.Total, time.Now()
		t.detail = fmt.Sprintf("last %s in %.1fs", r.Key, r.Wall.Seconds())
		if sweeps > 1 {
			t.detail = fmt.Sprintf("sweep %d, %s", sweeps, t.detail)
		}
		if pr.Done == pr.Total {
			t.detail += "; its points done, finishing"
		}
		t.mu.Unlock()
		if r.Failed() {
			what := "FAILED"
			if r.NotRun {
				what = "NOT RUN"
			}
			t.note(w, fmt.Sprintf("[%d/%d] %s %s: %s", pr.Done, pr.Total, r.Key, what, r.Error))
		}
	}
}

// resumeCommand is the command line that resumes cmd's interrupted work:
// the same arguments and changed flags, with --resume when cmd has it.
func resumeCommand(cmd *cobra.Command, args []string) string {
	parts := append([]string{cmd.CommandPath()}, args...)
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if f.Name == "resume" {
			return
		}
		v := f.Value.String()
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			v = strings.Join(sv.GetSlice(), ",")
		}
		if f.Value.Type() == "bool" && v == "true" {
			parts = append(parts, "--"+f.Name)
			return
		}
		parts = append(parts, "--"+f.Name+"="+shellQuote(v))
	})
	if cmd.Flags().Lookup("resume") != nil {
		parts = append(parts, "--resume")
	}
	return strings.Join(parts, " ")
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./,=:") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// printSweep prints one row per configuration (the varied parameters but
// the seed): runs, throughput mean (± 95% half-width over seeds),
// response time, integrity and failures.
func printSweep(w io.Writer, sw *sweep.Sweep, rs []results.Result) {
	var cols []string
	for _, k := range sw.Varied() {
		if k != "seed" {
			cols = append(cols, k)
		}
	}
	type group struct {
		key            string
		tput, resp     []float64
		integrity      map[string]int
		integrityOrder []string
		failed         int
	}
	var groups []*group
	byKey := map[string]*group{}
	for _, r := range rs {
		k := results.KeyDrop(r.Key, "seed")
		g := byKey[k]
		if g == nil {
			g = &group{key: k, integrity: map[string]int{}}
			byKey[k] = g
			groups = append(groups, g)
		}
		if r.Failed() {
			g.failed++
			continue
		}
		g.tput = append(g.tput, r.ThroughputGiBs)
		g.resp = append(g.resp, r.ResponseS*1e3)
		if g.integrity[r.Integrity] == 0 {
			g.integrityOrder = append(g.integrityOrder, r.Integrity)
		}
		g.integrity[r.Integrity]++
	}
	t := newTable(w)
	t.Header(append(append([]any{}, toAny(cols)...), "runs", "throughput[GiB/s]", "response[ms]", "integrity", "failed")...)
	for _, g := range groups {
		var row []string
		for _, c := range cols {
			v, _ := results.KeyValue(g.key, c)
			row = append(row, v)
		}
		tp, rs := results.Summarize1(g.tput), results.Summarize1(g.resp)
		integ := make([]string, len(g.integrityOrder))
		for i, s := range g.integrityOrder {
			integ[i] = s
			if len(g.integrityOrder) > 1 {
				integ[i] += " " + strconv.Itoa(g.integrity[s])
			}
		}
		row = append(row, strconv.Itoa(len(g.tput)), meanCI(tp, 2), meanCI(rs, 3), strings.Join(integ, ", "), strconv.Itoa(g.failed))
		t.Append(toAny(row)...)
	}
	t.Render()
}

func meanCI(s results.Summary, prec int) string {
	switch {
	case s.N == 0:
		return "-"
	case !s.HasCI:
		return strconv.FormatFloat(s.Mean, 'f', prec, 64)
	}
	return s.MeanCI(prec)
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func mergeCmd() *cobra.Command {
	var out, spec string
	cmd := &cobra.Command{
		Use:   "merge -o merged.jsonl a.jsonl b.jsonl ...",
		Short: "Join the output files of a sweep's shards into one file sorted by point",
		Long: `merge writes the union of sweep output files (the shards of one sweep) sorted by
point, byte-identical to what an unsharded run writes. A point in several files must
have identical lines there. With --spec, every line must be a point of that spec, and
points in no file are listed (the merged file is written, and merge exits non-zero).`,
		Example: `  explore merge --spec fig19.yaml -o results/fig19.jsonl results/fig19.shard-*-of-8.jsonl`,
		Args:    atLeast(1, "the shard files to join", "explore merge -o results/fig19.jsonl results/fig19.shard-*-of-8.jsonl"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return errors.New("-o: name the merged output file")
			}
			var sw *sweep.Sweep
			if spec != "" {
				var err error
				if sw, err = readSpec(spec); err != nil {
					return err
				}
			}
			stderr := cmd.ErrOrStderr()
			rep, err := sweep.Merge(out, sw, func(w string) { fmt.Fprintln(stderr, "warning:", w) }, args...)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%d points from %d files into %s; %d failed\n", len(rep.Results), len(args), out, rep.Failed)
			if len(rep.Missing) > 0 {
				for _, p := range rep.Missing {
					fmt.Fprintf(stderr, "missing: point %d %s\n", p.Index, p.Key)
				}
				return fmt.Errorf("%s lacks %d of the %d points of %s (listed above)", out, len(rep.Missing), sw.Len(), spec)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", "", "merged output file (required)")
	cmd.Flags().StringVar(&spec, "spec", "", "the sweep spec: check the points and list the missing ones")
	return cmd
}

func plotCmd() *cobra.Command {
	var ps chart.Spec
	var x, series, y, out, csvPath string
	var hlines []string
	cmd := &cobra.Command{
		Use:   "plot <results.jsonl> -o base --x nodes --series design",
		Short: "Plot sweep results (mean and 95% interval over seeds) as PNG and SVG",
		Long: `plot draws one metric of a sweep's results against a varied parameter, one line (or,
with --kind bars, one bar per category) for each value of another, averaging the seeds
and drawing 95% confidence intervals as error bars. It writes base.png and base.svg.`,
		Example: `  explore plot results/example.jsonl -o results/example --x nodes --series design
  explore plot results/fig19.jsonl -o fig19 --x nodes --series design --logx --hline qperf=11.2
  explore plot results/patterns.jsonl -o patterns --kind bars --x pattern --series design`,
		Args: exactly(1, "one results file, a sweep's JSONL", "explore plot results/example.jsonl -o results/example"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return errors.New("-o: name the output files' base (base.png, base.svg)")
			}
			metric, err := results.Metric(y)
			if err != nil {
				return fmt.Errorf("--y: %w", err)
			}
			stderr := cmd.ErrOrStderr()
			rs, err := results.ReadFile(args[0], func(w string) { fmt.Fprintln(stderr, "warning:", w) })
			if err != nil {
				return err
			}
			if csvPath != "" {
				for i := range rs { // the sweep column: the file's name
					rs[i].Sweep = strings.TrimSuffix(filepath.Base(args[0]), ".jsonl")
				}
				if err := results.WriteCSV(csvPath, rs); err != nil {
					return err
				}
			}
			if ps.Series, err = chart.SeriesOf(rs, series, x, metric); err != nil {
				return err
			}
			for _, h := range hlines {
				name, v, ok := strings.Cut(h, "=")
				f, err := strconv.ParseFloat(v, 64)
				if !ok || err != nil {
					return fmt.Errorf("--hline %q: want name=value, e.g. qperf=11.2", h)
				}
				ps.HLines = append(ps.HLines, chart.RefLine{Name: name, Y: f})
			}
			if ps.XLabel == "" {
				ps.XLabel = chart.AxisLabel(x)
			}
			if ps.YLabel == "" {
				ps.YLabel = chart.AxisLabel(y)
			}
			if ps.Title == "" {
				ps.Title = strings.TrimSuffix(filepath.Base(args[0]), ".jsonl")
			}
			ps.StyleOrder = experiments.DesignNames(nil)
			if err := chart.Write(out, ps); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s.png and %s.svg\n", out, out)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&out, "out", "o", "", "output base name (writes base.png and base.svg)")
	fl.StringVar(&x, "x", "nodes", "varied parameter along x")
	fl.StringVar(&series, "series", "design", "varied parameter that makes the series (\"\" for one series)")
	fl.StringVar(&y, "y", "throughput_gibps", "run-record field to plot")
	fl.StringVar(&ps.Kind, "kind", "lines", "lines or bars")
	fl.BoolVar(&ps.LogX, "logx", false, "log-scale x axis")
	fl.StringVar(&ps.Title, "title", "", "title (default: the results file's name)")
	fl.StringVar(&ps.XLabel, "xlabel", "", "x-axis label (default: --x's name and unit)")
	fl.StringVar(&ps.YLabel, "ylabel", "", "y-axis label (default: --y's name and unit)")
	fl.StringArrayVar(&hlines, "hline", nil, "dashed reference line name=value, e.g. qperf=11.2 (repeatable)")
	fl.StringVar(&csvPath, "csv", "", "also write the results as CSV to this file")
	return cmd
}

package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/experiments/figures"
	"github.com/rdmashuffle/rdmashuffle/experiments/report"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
)

// figureFlags are the options figure and reproduce share.
type figureFlags struct {
	full, quick, resume, noSteady, grow bool
	mem                                 memoryLimits
	out                                 string
	jobs                                int
}

func (f *figureFlags) register(cmd *cobra.Command, out string) {
	fl := cmd.Flags()
	fl.BoolVar(&f.full, "full", false, "the paper's scale (14 threads, far more data: hours) instead of the quick one")
	fl.BoolVar(&f.quick, "quick", true, "the quick scale (the default; about a minute per figure on 2 cores); --quick=false is --full")
	fl.BoolVar(&f.resume, "resume", false, "keep points already in the output files (otherwise they are rerun)")
	fl.BoolVar(&f.noSteady, "no-steady-check", false, "skip the steady-state check (one extra run per figure)")
	fl.StringVar(&f.out, "out", out, "output directory for JSONL, CSV and plots")
	fl.IntVar(&f.jobs, "jobs", 0, "parallel runs (default: one per core)")
	f.mem.register(fl)
	cmd.PreRunE = func(cmd *cobra.Command, _ []string) error {
		if _, err := f.mem.budget(); err != nil {
			return err
		}
		return f.scale(cmd.Flags())
	}
}

// scale settles the scale from --quick and --full: --quick=false asks for
// the other scale, the paper's; two flags that disagree are an error.
func (f *figureFlags) scale(fl *pflag.FlagSet) error {
	quick, full := fl.Changed("quick"), fl.Changed("full")
	switch {
	case quick && full && f.quick == f.full:
		return fmt.Errorf("--quick=%v with --full=%v: choose one scale (--quick, the default, or --full, the paper's)", f.quick, f.full)
	case quick && !f.quick:
		f.full = true
	}
	return nil
}

// options are the figure options of the flags, reporting progress to t
// and warnings and failed points on w.
func (f *figureFlags) options(w io.Writer, t *task) figures.FigureOptions {
	return figures.FigureOptions{Full: f.full, OutDir: f.out, Jobs: f.jobs, Resume: f.resume, NoSteadyCheck: f.noSteady, Grow: f.grow,
		Warn:     func(s string) { t.note(w, "warning: "+s) },
		Progress: sweepProgress(t, w), Memory: f.mem.mustBudget()}
}

// figureTask starts the progress of a command that runs figures: it
// stops gracefully on an interrupt, the finished points kept in out.
func figureTask(cmd *cobra.Command, args []string, what, out string) *task {
	t := newTask(cmd.ErrOrStderr(), what, "points", 0)
	t.setDetail("the first points are running")
	t.graceful = true
	t.resume = fmt.Sprintf("the finished points are in %s; resume with: %s", out, resumeCommand(cmd, args))
	return t
}

func figureIDs() string {
	figs := figures.AllFigures()
	ids := make([]string, len(figs))
	for i, f := range figs {
		ids[i] = f.ID
	}
	return strings.Join(ids, ", ")
}

func figureCmd() *cobra.Command {
	var ff figureFlags
	var reference string
	cmd := &cobra.Command{
		Use:   "figure <id>",
		Short: "Run one figure of Liu19's evaluation and write its data and plots",
		Long: `figure runs the sweeps behind one figure of Liu19's evaluation, writes
<sweep>.jsonl (one run record per line, byte-identical for the same code and
seed), <id>.csv and the plots (.png and .svg), prints a table, and judges the
claims the figure evaluates.

Figures: ` + figureIDs() + `.`,
		Example:           "  explore figure fig19 --out results/fig19\n  explore figure fig13 --full --resume",
		Args:              oneOf("figure", "explore figure fig13", figureIDList),
		ValidArgsFunction: fixed(figureIDList),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := figures.FigureByID(args[0])
			if err != nil {
				return err
			}
			if !cmd.Flags().Changed("out") {
				ff.out = filepath.Join("results", f.ID)
			}
			t := figureTask(cmd, args, "figure "+f.ID, ff.out)
			defer t.finish()
			rep, err := figures.RunFigure(cmd.Context(), f, ff.options(cmd.ErrOrStderr(), t))
			t.finish()
			if err != nil {
				return asInterrupted(t, err)
			}
			w := cmd.OutOrStdout()
			printFigure(w, rep)
			if len(f.Claims) == 0 {
				fmt.Fprintln(w, wrapText(fmt.Sprintf("%s judges no claim of the papers: it shows what they leave open.", f.ID), tableWidth(), "  "))
			} else {
				vs := figures.Judge(map[string][]results.Result{f.ID: rep.Results})
				printVerdicts(w, vs, f.Claims)
				if err := printAgainstReference(w, vs, f.Claims, ff, reference); err != nil {
					return err
				}
			}
			notRun := results.CountNotRun(rep.Results)
			switch {
			case rep.Failed > 0 && notRun == rep.Failed:
				return fmt.Errorf("%d of %d points not run: each would need more memory than allowed (listed above with its estimate); %s", notRun, len(rep.Results), notRunAdvice)
			case rep.Failed > 0 && notRun > 0:
				return fmt.Errorf("%d of %d points failed and %d were not run for memory (see %s)", rep.Failed-notRun, len(rep.Results), notRun, ff.out)
			case rep.Failed > 0:
				return fmt.Errorf("%d of %d points failed (see %s)", rep.Failed, len(rep.Results), ff.out)
			}
			return nil
		},
	}
	ff.register(cmd, "results/<id>")
	cmd.Flags().StringVar(&reference, "reference", filepath.Join("docs", "validation.md"), "the claims report whose verdicts this run's are compared with (\"\": none)")
	cmd.Flags().BoolVar(&ff.grow, "steady", false, fmt.Sprintf("grow every throughput point until doubling its input moves it by < 3%% (at most %dx), as explore reproduce does; several times slower", figures.MaxGrowth))
	return cmd
}

// printFigure prints the figure's results as a pivot table: one column per
// value of the figure's x parameter, one row per combination of the other
// varied parameters.
func printFigure(w io.Writer, rep *figures.FigureReport) {
	metric, unit := rep.Figure.TableMetric()
	fmt.Fprintf(w, "%s: %s\n%s\n", rep.Figure.ID, rep.Figure.Title, unit)
	var rows, cols []string
	cells := map[[2]string]string{}
	for _, r := range rep.Results {
		var others []string
		col := "-"
		for _, f := range results.KeyFields(r.Key) {
			if v, ok := strings.CutPrefix(f, rep.Figure.X+"="); ok {
				col = v // the header's first cell names the parameter
			} else {
				others = append(others, f)
			}
		}
		if col == "-" { // a point that does not vary x: name it by what it is
			switch {
			case r.Record != nil && r.Adaptive:
				col = "adaptive"
			case r.Record != nil && r.Label != "":
				col = r.Label + " runs" // their throughput, like every cell
			case r.Record != nil && experiments.DesignOf(r.Design).Ceiling:
				col = "baseline"
			}
		}
		row := strings.Join(others, " ")
		if w, err := results.WorkloadOf(r.Record); r.Record != nil && err == nil && !w.IsShuffle() {
			row = strings.TrimSpace(row + " " + w.Label()) // query figures name the query
		}
		if !contains(rows, row) {
			rows = append(rows, row)
		}
		if !contains(cols, col) {
			cols = append(cols, col)
		}
		v := "FAILED"
		if r.NotRun {
			v = "not run"
		}
		if !r.Failed() {
			v = fmt.Sprintf("%.2f", metric(r.Record))
			if r.Integrity != "ok" {
				v += " (" + r.Integrity + ")"
			}
		}
		cells[[2]string{row, col}] = v
	}
	var lines [][]string
	for _, row := range rows {
		line := []string{row}
		for _, c := range cols {
			line = append(line, cells[[2]string{row, c}])
		}
		lines = append(lines, line)
	}
	renderFitting(w, append([]string{rep.Figure.X + " ->"}, cols...), lines)
	fmt.Fprintf(w, "%s\n%s\n", wrapText(rep.Steady, tableWidth(), "  "), wrapText("files: "+strings.Join(rep.Files, " "), tableWidth(), "  "))
	if rep.Failed > 0 {
		for _, r := range rep.Results {
			switch {
			case r.NotRun:
				fmt.Fprintf(w, "not run: %s: %s\n", r.Key, r.Error)
			case r.Failed():
				fmt.Fprintf(w, "failed: %s: %s\n", r.Key, r.Error)
			}
		}
	}
}

func printVerdicts(w io.Writer, vs []figures.Verdict, only []string) {
	t := newWrappedTable(w)
	t.Header("claim", "verdict", "measured", "reason")
	for _, v := range vs {
		if only != nil && !contains(only, v.Claim) {
			continue
		}
		t.Append(v.Claim, v.Verdict, v.Measured, v.Reason)
	}
	t.Render()
}

// printAgainstReference says at what scale the verdicts were judged, and
// names each that differs from the reference claims report at path
// (docs/validation.md: the quick reproduction grown to steady state), so
// that a quick run's verdict is not taken for the project's.
func printAgainstReference(w io.Writer, vs []figures.Verdict, only []string, ff figureFlags, path string) error {
	if path == "" {
		return nil
	}
	ref, err := report.ReadReference(path)
	if err != nil {
		return fmt.Errorf("--reference %s: %w", path, err)
	}
	scale := "quick scale"
	if ff.full {
		scale = "full scale"
	}
	how := scale + ", points as run"
	if ff.grow {
		how = scale + ", grown to steady state"
	}
	if ref == nil {
		fmt.Fprintln(w, wrapText(fmt.Sprintf("These verdicts are this run's (%s); %s, the reference to compare them with, is not here.", how, path), tableWidth(), "  "))
		return nil
	}
	var differ []string
	for _, v := range vs {
		r, ok := ref.Verdicts[v.Claim]
		if (only != nil && !contains(only, v.Claim)) || !ok || r.Verdict == v.Verdict {
			continue
		}
		d := fmt.Sprintf("%s is %s here, %s in %s", v.Claim, v.Verdict, r.Verdict, path)
		if r.Measured != "" {
			d += " (" + r.Measured + ")"
		}
		differ = append(differ, d)
	}
	msg := fmt.Sprintf("These verdicts are this run's (%s). The project's reference is %s (%s scale, every throughput point grown to steady state by explore reproduce)", how, path, ref.Scale)
	if len(differ) == 0 {
		msg += ", and it agrees on every claim of this figure."
	} else {
		verb := "differ"
		if len(differ) == 1 {
			verb = "differs"
		}
		msg += fmt.Sprintf("; %d %s: %s.", len(differ), verb, strings.Join(differ, "; "))
	}
	fmt.Fprintln(w, wrapText(msg, tableWidth(), "  "))
	return nil
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func reproduceCmd() *cobra.Command {
	var ff figureFlags
	var validation, sens string
	var figs []string
	var updateDocs, replot bool
	var cf cacheFlags
	cmd := &cobra.Command{
		Use:   "reproduce",
		Short: "Run every figure that evaluates a claim, judge every claim, write the claims report",
		Long: `reproduce runs the figures of Liu19's evaluation (and the all-to-all
scheduling experiment of Roediger15), judges every claim of the project's claim
list (claims without an experiment yet are reported as not-run, never dropped),
writes the claims report and the figures, and prints a summary. They go to
results/reproduce/ unless --update-docs, which writes the project's own
docs/validation.md and docs/figures/. Every throughput point, and every
TPC-H point of figures 26 and 27 (its scale factor per node), is grown to
steady state (--steady, the default, up to 256x): everything took 17 to
19 minutes on 2 cores with 5 to 7 GB of peak memory (2026-11-27), most of
it figures 26 and 27, whose MPI points grow to 32-256x; a few minutes and
far less memory with --steady=false. --resume keeps
the points already in the output directory: after explore sensitivity, say,
it rewrites the claims report with the robustness column in a minute.
Finished runs are kept in a cache (--cache, results/cache) under the build's
commit and the point's whole configuration: run again on the same commit,
reproduce takes every point it has from there (a build with uncommitted
changes, or one that names no commit, neither takes nor keeps any). A
point that several figures share runs once.`,
		Example: "  explore reproduce --quick\n  explore reproduce --quick --update-docs\n  explore reproduce --figures fig19,fig21 --validation results/validation.md",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if updateDocs {
				if !cmd.Flags().Changed("out") {
					ff.out = filepath.Join("docs", "figures")
				}
				if !cmd.Flags().Changed("validation") {
					validation = filepath.Join("docs", "validation.md")
				}
			}
			for _, id := range figs {
				if _, err := figures.FigureByID(id); err != nil && !isBenchJudge(id) {
					return fmt.Errorf("--figures: %w (or %s)", err, strings.Join(benchJudgeIDs(), ", "))
				}
			}
			if replot {
				files, err := figures.Replot(ff.out, ff.full, figs)
				if err != nil {
					return fmt.Errorf("--replot: %w", err)
				}
				if len(files) == 0 {
					return fmt.Errorf("--replot: no figure's records in %s (--out names the directory)", ff.out)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "redrew %d plot files in %s from its records\n", len(files), ff.out)
				return nil
			}
			errw := cmd.ErrOrStderr()
			cache, err := cf.open(errw)
			if err != nil {
				return err
			}
			t := figureTask(cmd, nil, "reproduce", ff.out)
			defer t.finish()
			fo := ff.options(errw, t)
			fo.Cache = cache
			rep, err := figures.Reproduce(cmd.Context(), figures.ReproduceOptions{FigureOptions: fo, Figures: figs, Log: t.writer(errw)})
			t.finish()
			if err != nil {
				return asInterrupted(t, err)
			}
			cacheSummary(errw, cache, rep.Shared)
			if err := loadRobustness(rep, sens); err != nil {
				return fmt.Errorf("--sensitivity: %w", err)
			}
			var buf bytes.Buffer
			command := "explore reproduce"
			if updateDocs {
				command += " --update-docs"
			}
			if ff.full {
				command += " --full"
			}
			if !ff.grow {
				command += " --steady=false"
			}
			if err := figures.WriteValidation(&buf, rep, ff.full, command); err != nil {
				return err
			}
			if err := os.MkdirAll(filepath.Dir(validation), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(validation, buf.Bytes(), 0o644); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			printVerdicts(w, rep.Verdicts, nil)
			fmt.Fprintf(w, "wrote %s and the figures in %s\n", validation, ff.out)
			return nil
		},
	}
	ff.register(cmd, filepath.Join("results", "reproduce", "figures"))
	cmd.Flags().BoolVar(&ff.grow, "steady", true, fmt.Sprintf("grow every throughput point until doubling its input moves it by < 3%% (at most %dx; --steady=false judges at the quick scale, several times faster)", figures.MaxGrowth))
	cmd.Flags().StringVar(&sens, "sensitivity", filepath.Join("docs", "sensitivity.json"), "a sensitivity analysis (explore sensitivity) for the robustness column; a missing file leaves it \"not analysed\"")
	cmd.Flags().StringVar(&validation, "validation", filepath.Join("results", "reproduce", "validation.md"), "where to write the claims report")
	cmd.Flags().BoolVar(&replot, "replot", false, "run nothing: draw every figure's plots again from the records in the output directory (after a change of the plotting code)")
	cmd.Flags().BoolVar(&updateDocs, "update-docs", false, "write docs/validation.md and docs/figures/ (the project's tracked copies) instead of results/reproduce/")
	cmd.Flags().StringSliceVar(&figs, "figures", nil, "run only these figures (comma-separated IDs; alltoall_bw for C23, ebb for C30 and C31)")
	cf.register(cmd.Flags())
	return cmd
}

// benchJudgeIDs are the IDs --figures takes for the claims judged by
// microbenchmarks (figures.BenchJudges): alltoall_bw for C23, ebb for C30
// and C31.
func benchJudgeIDs() []string {
	var ids []string
	for _, b := range figures.BenchJudges {
		ids = append(ids, b.ID)
	}
	return ids
}

func isBenchJudge(id string) bool { return slices.Contains(benchJudgeIDs(), id) }

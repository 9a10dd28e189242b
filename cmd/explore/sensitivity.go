package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rdmashuffle/rdmashuffle/experiments/figures"
	"github.com/rdmashuffle/rdmashuffle/experiments/sensitivity"
)

// sensitivityLong is the command's long help, with the numbers of
// estimates, switches and controls it judges by default.
func sensitivityLong() string {
	return fmt.Sprintf(`sensitivity moves each model parameter that is an estimate (docs/model.md's
(E); --list prints them) by each factor: a profile parameter in every built-in
profile, a software cost (the MPI and IPoIB baselines' cycles and thresholds,
the cycles per polled cache line, the UD designs' credit timers) in every
run. It reruns the figures at the quick scale with the change, judges the
claims and reports per claim which changes flip its verdict. It also switches on each mechanism of the model
that no source settles ('nic.rx_miss_blocks =1': whether a packet waiting
for its queue-pair context holds the NIC's receive pipeline) or that a host
may run either way ('host.shared_doorbells =1': queue pairs sharing doorbell
registers as libmlx5 does by default, against a register per thread); a
verdict that flips under one rests on that choice. Beside them it judges four controls, every
run's random seed plus 1 and plus 2 ('seed +1', 'seed +2'), and every run under
queue-pair numberings 1 and 2 ('qp-numbering 1', 'qp-numbering 2'; the numbers
decide which queue pairs share a set of a NIC's context cache, chance on a
real host): a verdict that flips under them is decided by random draws or by
which queue pairs happen to conflict, so a flip under an estimate that the
controls share is not that number's. It writes <out>/sensitivity.md and sensitivity.json
(docs/ with --update-docs), which explore reproduce reads for
docs/validation.md's robustness column.

Every change reruns every figure (but for the points it cannot reach: an MPI
or IPoIB cost reruns only those designs' points, a credit timer only the UD
designs'): with the default %d estimates,
2 factors, %d mechanism switch(es) and the %d controls that is %d quick
reproductions of about 570 points, about a minute and a half each on 2 cores
(a change that reaches only MPI or IPoIB: a quarter of a minute or less), so
about an hour and a half for the whole analysis. Outcomes are saved as they
finish in <out>/outcomes.jsonl and an interrupted analysis resumes (outcomes
judged on other numbers of the model, before a change of a profile or a
cost, are judged again); --so-far writes the report from the changes judged
so far, naming the rest, and --resume-from goes on from such a report (for
example docs/sensitivity.json written with --so-far --update-docs) when --out
is gone: it judges the baseline again and, if every claim's verdict agrees
with the report's, takes the changes the report judged. Finished runs are kept in a cache (--cache,
results/cache) under the build's commit and the point's whole configuration,
its profile's parameters included: an analysis run again on the same commit
(in another --out, with more --figures, rejudged) takes the runs it has from
there; a build with uncommitted changes, or one that names no commit,
neither takes nor keeps any. A point that several figures share runs once.`, len(sensitivity.Estimates), len(sensitivity.MechanismSwitches), len(sensitivity.Controls),
		2*len(sensitivity.Estimates)+len(sensitivity.MechanismSwitches)+len(sensitivity.Controls)+1)
}

func sensitivityCmd() *cobra.Command {
	var (
		changes, figs []string
		factors       []float64
		out           string
		jobs          int
		updateDocs    bool
		rejudge       bool
		mem           memoryLimits
		soFar         bool
		resumeFrom    string
		list          bool
		cf            cacheFlags
	)
	cmd := &cobra.Command{
		Use:     "sensitivity",
		Short:   "Which claims' verdicts flip when an estimated model parameter moves (x0.5, x2)",
		Long:    sensitivityLong(),
		Example: "  explore sensitivity --list\n  explore sensitivity --change 'seed +1' --figures fig19\n  explore sensitivity --change 'host.lock_handoff_ns x2' --figures fig19\n  explore sensitivity --change 'mpi.call_cycles x0.5' --figures fig21\n  explore sensitivity --change 'nic.rx_miss_blocks =1' --figures fig19\n  explore sensitivity --change 'host.shared_doorbells =1' --figures fig19\n  explore sensitivity --update-docs\n  explore sensitivity --resume-from docs/sensitivity.json --update-docs",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w := cmd.OutOrStdout()
			if list {
				listEstimates(w)
				return nil
			}
			errw := cmd.ErrOrStderr()
			var err error
			t := newTask(errw, "sensitivity", "points", 0)
			defer t.finish()
			t.setDetail("the baseline's first points are running")
			t.graceful = true
			t.resume = fmt.Sprintf("the judged changes are in %s; resume with the same command", filepath.Join(out, "outcomes.jsonl"))
			o := sensitivity.Options{Figures: figs, OutDir: out, Jobs: jobs, Rejudge: rejudge, Log: t.writer(errw), Progress: sweepProgress(t, errw)}
			budget, berr := mem.budget()
			if berr != nil {
				return berr
			}
			o.Memory = budget
			if resumeFrom != "" {
				if rejudge {
					return fmt.Errorf("--resume-from and --rejudge: rejudging reads the runs kept in --out, and a summary keeps verdicts, not runs; give one of them")
				}
				if o.Resume, err = sensitivity.ReadSummary(resumeFrom); err != nil {
					return fmt.Errorf("--resume-from: %w", err)
				}
			}
			if !soFar {
				if o.Cache, err = cf.open(errw); err != nil {
					return err
				}
			}
			for _, c := range changes {
				ch, err := sensitivity.ParseChange(c)
				if err != nil {
					return fmt.Errorf("--change: %w", err)
				}
				o.Changes = append(o.Changes, ch)
			}
			for _, f := range factors {
				if f <= 0 || f == 1 {
					return fmt.Errorf("--factors %v: each factor must be positive and not 1, e.g. 0.5,2", factors)
				}
			}
			if len(o.Changes) == 0 {
				o.Changes = sensitivity.DefaultChanges(factors...)
			}
			for _, id := range figs {
				if _, err := figures.FigureByID(id); err != nil {
					return fmt.Errorf("--figures: %w", err)
				}
			}
			if rejudge && !soFar {
				// Rejudging reads the runs an analysis kept: without them it
				// would start an analysis of its own, over an hour.
				if _, err := os.Stat(filepath.Join(out, "outcomes.jsonl")); err != nil {
					return fmt.Errorf("--rejudge: nothing to judge again in %s (no outcomes.jsonl: %v); run the analysis first without --rejudge, or give the --out of one", out, err)
				}
			}
			var outs []sensitivity.Outcome
			var pending []string
			if soFar {
				if rejudge {
					return fmt.Errorf("--so-far and --rejudge: --so-far reports the stored verdicts and runs nothing")
				}
				outs, pending, err = sensitivity.Stored(o)
			} else {
				outs, err = sensitivity.Run(cmd.Context(), o)
			}
			t.finish()
			cacheSummary(errw, o.Cache, 0)
			if err != nil {
				if cmd.Context().Err() != nil {
					return asInterrupted(t, err)
				}
				if soFar || errors.Is(err, sensitivity.ErrOtherModel) {
					return err
				}
				return fmt.Errorf("%w (outcomes so far are in %s; run the same command again to resume)", err, filepath.Join(out, "outcomes.jsonl"))
			}
			return writeSensitivity(w, outs, pending, figs, out, soFar, updateDocs)
		},
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&changes, "change", nil, "a change to judge, '<profile field> x<factor>', '<mechanism switch> =1', 'seed +k' or 'qp-numbering k' (repeatable; default: every estimate at every --factors, every switch on ('nic.rx_miss_blocks =1'), and 'seed +1', 'seed +2', 'qp-numbering 1', 'qp-numbering 2')")
	fl.Float64SliceVar(&factors, "factors", []float64{0.5, 2}, "factors each estimate is moved by")
	fl.StringSliceVar(&figs, "figures", nil, "judge with only these figures (comma-separated IDs; default: every figure that judges a claim, and the microbenchmarks of C23, C30 and C31)")
	fl.StringVar(&out, "out", filepath.Join("results", "sensitivity"), "working directory: outcomes.jsonl (resumed) and each change's runs")
	fl.IntVar(&jobs, "jobs", 0, "parallel runs (default: one per core)")
	mem.register(fl)
	fl.BoolVar(&updateDocs, "update-docs", false, "write docs/sensitivity.md and docs/sensitivity.json (read by explore reproduce)")
	fl.BoolVar(&rejudge, "rejudge", false, "judge every change again from the runs kept in --out (after a change to the judge; runs only missing points) instead of reading the stored verdicts")
	fl.BoolVar(&soFar, "so-far", false, "write the report from the changes judged so far in --out (an analysis still running or interrupted), running nothing; it names the changes not judged yet")
	fl.StringVar(&resumeFrom, "resume-from", "", "take the changes judged in this summary (a sensitivity.json written by --update-docs or --so-far, of this model and these --figures) once the baseline, judged again, agrees with it: an analysis goes on after its --out is gone")
	fl.BoolVar(&list, "list", false, "print the estimated parameters and what each rests on, and exit")
	cf.register(fl)
	return cmd
}

// loadRobustness reads a sensitivity summary for the validation report;
// a missing file leaves the column "not analysed".
func loadRobustness(rep *figures.ReproduceReport, path string) error {
	_, err := sensitivity.ApplyFile(rep, path)
	return err
}

// listEstimates is --list: every estimate and control with its reason.
func listEstimates(w io.Writer) {
	for _, e := range sensitivity.Estimates {
		fmt.Fprintf(w, "%-28s %s\n", e.Field, e.Why)
	}
	for _, m := range sensitivity.MechanismSwitches {
		fmt.Fprintf(w, "%-28s mechanism switch (set =1): %s\n", m.Field, m.Why)
	}
	for _, c := range sensitivity.Controls {
		what := "every run's random seed moved"
		if c.IsNumbering() {
			what = "every run under another queue-pair numbering"
		}
		fmt.Fprintf(w, "%-28s control: %s, no parameter\n", c, what)
	}
}

// writeSensitivity analyses the outcomes, writes sensitivity.md and
// sensitivity.json (to out, or docs/ with --update-docs) and prints the
// fragile claims.
func writeSensitivity(w io.Writer, outs []sensitivity.Outcome, pending, figs []string, out string, soFar, updateDocs bool) error {
	s, err := sensitivity.Analyse(outs)
	if err != nil {
		return err
	}
	s.SetPending(pending)
	dir := out
	if updateDocs {
		dir = "docs"
	}
	command := "explore sensitivity"
	if len(figs) > 0 {
		command += " --figures " + strings.Join(figs, ",")
	}
	if soFar {
		command += " --so-far"
	}
	if updateDocs {
		command += " --update-docs"
	}
	var buf bytes.Buffer
	if err := s.WriteMarkdown(&buf, command); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "sensitivity.md"), buf.Bytes(), 0o644); err != nil {
		return err
	}
	if err := s.WriteJSON(filepath.Join(dir, "sensitivity.json")); err != nil {
		return err
	}
	fragile := 0
	for _, r := range s.Claims {
		if r.Fragile() {
			fragile++
			fmt.Fprintf(w, "%-4s %-8s %s\n", r.Claim, r.Verdict, r.Label())
		}
	}
	fmt.Fprintf(w, "%d of %d claims fragile under %d changes (%d could not be judged", fragile, len(s.Claims), len(s.Changes), len(s.Failed))
	if len(pending) > 0 {
		fmt.Fprintf(w, ", %d not judged yet", len(pending))
	}
	fmt.Fprintf(w, "); wrote %s\n", filepath.Join(dir, "sensitivity.md"))
	return nil
}

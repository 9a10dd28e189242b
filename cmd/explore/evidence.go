package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rdmashuffle/rdmashuffle/experiments/evidence"
)

func evidenceCmd() *cobra.Command {
	var out string
	var updateDocs bool
	var fit fitFlags
	cmd := &cobra.Command{
		Use:   "evidence",
		Short: "Compare the simulator with public hardware measurements (experiments/evidence)",
		Long: `evidence runs the model at every public measurement it can reproduce (the YAML files of
experiments/evidence: message rates and bandwidths by message size and queue pairs, per verb
and NIC generation; iperf over IPoIB and MPI point-to-point runs on the baseline designs) and
prints the model's value beside the measured one, with the error and
the point's tolerance; points the model cannot reproduce yet are listed with the reason. It
writes the report as Markdown to results/evidence.md (docs/evidence.md with --update-docs) and
exits non-zero when a modelled point falls outside its tolerance. Each such point's finding (why
the model misses it, the point's finding field) is printed beside it in the report; the error
names any point outside without one.

--points runs only the points it selects (by id or glob), and the report covers those.

With --fit it fits instead: it runs the points --points selects with every combination of the
--fit values and prints the combinations best first, by the rule the profiles' context caches
were fitted by (docs/model.md): the smallest worst-case error, then the smallest mean. The model
as it is comes first, for comparison. A --fit names a profile field (the points then share one
profile, or --profile names it) or one of the baselines' software costs (` + "`explore sensitivity --list`" + `'s
mpi.* and ipoib.* names; each point keeps its own profile).`,
		Example: `  explore evidence
  explore evidence --update-docs
  explore evidence --points 'krcore-*' --points 'minio236-*'
  explore evidence --points 'rcswarm-netapp-read32-qps-*' --fit nic.qp_cache_entries=1024,2048,4096 --fit nic.qp_cache_ways=1,2,4 --fit nic.qp_cache_fetches=16,32,64`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			pts, err := evidence.Load()
			if err != nil {
				return err
			}
			if fit.numberings < 1 {
				return fmt.Errorf("--numberings %d: must be at least 1", fit.numberings)
			}
			if len(fit.axes) > 0 {
				if updateDocs {
					return fmt.Errorf("--fit and --update-docs: a fit writes no report; run them separately")
				}
				return runFit(cmd, pts, fit)
			}
			if len(fit.points) > 0 {
				if updateDocs {
					return fmt.Errorf("--points and --update-docs: docs/evidence.md reports every point; run --update-docs without --points")
				}
				if pts, err = evidence.Select(pts, fit.points...); err != nil {
					return fmt.Errorf("--points %w", err)
				}
			}
			w := cmd.OutOrStdout()
			var rs []evidence.Result
			prog := newTask(cmd.ErrOrStderr(), "evidence", "points", len(pts))
			for _, p := range pts {
				prog.setDetail(p.ID)
				rs = append(rs, evidence.EvaluateOn(p, nil, evidence.Software{}, fit.numberings))
				prog.step(1, "")
			}
			prog.finish()
			renderOrNarrow(w, evidenceTable(rs, fit.numberings, false), evidenceTable(rs, fit.numberings, true))
			s := evidence.Summarize(rs)
			fmt.Fprintln(w, wrapText(fmt.Sprintf("%d points from %d sources; the model ran %d, %d within tolerance, median absolute error %.0f%% (%.0f%% over %d held out); %d not modelled yet (see the report)",
				s.Points, s.Sources, s.Modelled, s.Within, 100*s.MedianAbsError, 100*s.MedianAbsErrorHeldOut, s.HeldOut, s.Points-s.Modelled), tableWidth(), "  "))
			if updateDocs {
				out = filepath.Join("docs", "evidence.md")
			}
			var md bytes.Buffer
			writeEvidence(&md, rs, s, fit.points)
			if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(out, md.Bytes(), 0o644); err != nil {
				return err
			}
			fmt.Fprintf(w, "wrote %s\n", out)
			if s.Within < s.Modelled {
				why := fmt.Sprintf("each with its finding in %s", out)
				if n := len(s.Unexplained); n > 0 {
					why = fmt.Sprintf("%d with no finding recorded in experiments/evidence: %s", n, strings.Join(s.Unexplained, ", "))
				}
				return findingf("%d of %d modelled points are outside their tolerance (%s)", s.Modelled-s.Within, s.Modelled, why)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", filepath.Join("results", "evidence.md"), "where to write the report")
	cmd.Flags().BoolVar(&updateDocs, "update-docs", false, "write the report to docs/evidence.md")
	cmd.Flags().StringArrayVar(&fit.axes, "fit", nil, "fit: a profile field or software cost and the values to try, name=v1,v2,... (repeatable; every combination runs)")
	cmd.Flags().StringArrayVar(&fit.points, "points", nil, "the points to run (with --fit: to fit to), by id or glob (repeatable)")
	cmd.Flags().StringVar(&fit.profile, "profile", "", "fit: the profile whose fields move (default: the points' own, which must be one)")
	cmd.Flags().IntVar(&fit.top, "top", 10, "fit: print this many combinations")
	cmd.Flags().IntVar(&fit.jobs, "jobs", 0, "fit: combinations run at once (default: one per core)")
	cmd.Flags().IntVar(&fit.numberings, "numberings", 1, "run each point under this many queue-pair numberings (0 to K-1) and compare their median (which queue pairs share a set of the NIC's context cache is chance; 1: numbering 0 only)")
	return cmd
}

func verdictOf(r evidence.Result) string {
	if r.Within {
		return "within"
	}
	return "outside"
}

// writeEvidence writes the report: how it was made, the summary, the
// modelled points and the points not modelled with their reasons.
func writeEvidence(w io.Writer, rs []evidence.Result, s evidence.Summary, selected []string) {
	fmt.Fprintf(w, `# The model against public measurements
`)
	if len(selected) > 0 {
		fmt.Fprintf(w, "\nOnly the points `--points %s` selects.\n", strings.Join(selected, " --points "))
	}
	fmt.Fprintf(w, `
Written by `+"`explore evidence --update-docs`"+`; the measurements, their sources and their
tolerances are in experiments/evidence/ (README.md). Each modelled point runs a
perftest-style benchmark between two simulated nodes of the point's profile, size-only, 1000
iterations, or, for the rc-swarm sweeps (many machines, threads and operations in flight), a
two-node swarm in which both nodes issue and serve with the source's threads and window on
random queue pairs, or, for iperf over IPoIB and MPI point-to-point points, the IPoIB or MPI
baseline design with its default costs: a one-directional stream from node 0 to node 1 on
x.parallel threads (osu_bw below 1 MiB and multithreaded message rates with a window of
non-blocking sends per thread, 64 unless the point says), or an IMB-style ping-pong, or, for
set-up costs, the calls the point times (registration, deregistration, completion-queue
creation) on one thread of node 0, or, for points measured on a network of switches, the
point's benchmark (explore bench shift_bw) on that network with the point's nodes; the error
is (model - measured) / measured. Points marked "fit" were used
to fit the profile fields named in experiments/evidence (`+"`fit_for`"+`; docs/model.md); every
other point is held out.

**%d points from %d sources; the model ran %d of them, %d within tolerance; median absolute
error %.0f%% (%.0f%% over the %d held-out points).** A point outside its tolerance is a finding about the model, never a
reason to tune a profile toward it: the last column gives its reason (the point's `+"`finding`"+` in
experiments/evidence; docs/model.md says more)%s.

## Modelled points

| point | profile | what ran | measured | model | error | tolerance | | used | finding |
|---|---|---|---|---|---|---|---|---|---|
`, s.Points, s.Sources, s.Modelled, s.Within, 100*s.MedianAbsError, 100*s.MedianAbsErrorHeldOut, s.HeldOut, unexplainedNote(s))
	for _, r := range rs {
		if r.Modelled {
			used := "held out"
			if r.FitFor != "" {
				used = "fit"
			}
			finding := ""
			if !r.Within {
				finding = r.Finding
				if finding == "" {
					finding = "**no reason recorded**"
				}
			}
			fmt.Fprintf(w, "| `%s` | %s | `%s` | %.4g %s | %.4g | %+.0f%% | %.0f%% | %s | %s | %s |\n",
				r.ID, r.Profile, strings.TrimSuffix(r.How, " on "+r.Profile), r.Y, r.Unit, r.Model, 100*r.Error, 100*r.Tolerance, verdictOf(r), used, finding)
		}
	}
	fmt.Fprintf(w, "\n## Not modelled yet\n\n| point | measured | why not |\n|---|---|---|\n")
	for _, r := range rs {
		if !r.Modelled {
			fmt.Fprintf(w, "| `%s` | %.4g %s | %s |\n", r.ID, r.Y, r.Unit, r.How)
		}
	}
}

// unexplainedNote is the report's count of points outside their tolerance
// that no finding explains, if any.
func unexplainedNote(s evidence.Summary) string {
	if len(s.Unexplained) == 0 {
		return ""
	}
	return fmt.Sprintf("; %d outside points have none yet", len(s.Unexplained))
}

// evidenceTable is the modelled points of rs, one a row; narrow puts the
// profile under the point, the tolerance beside the error and the
// numberings' range under the model.
func evidenceTable(rs []evidence.Result, numberings int, narrow bool) tableData {
	d := tableData{header: []string{"point", "profile", "measured", "model", "error", "tol.", "verdict"}}
	model := "model"
	if numberings > 1 {
		model = fmt.Sprintf("model (median of %d numberings)", numberings)
	}
	switch {
	case narrow && numberings > 1:
		d.header = []string{"point, profile", "measured", fmt.Sprintf("model, range\n(%d numberings)", numberings), "error (tol.)", "verdict"}
	case narrow:
		d.header = []string{"point, profile", "measured", model, "error (tol.)", "verdict"}
	case numberings > 1:
		d.header = []string{"point", "profile", "measured", model, "error", "tol.", "verdict", "lowest", "highest"}
	}
	for _, r := range rs {
		if !r.Modelled {
			continue
		}
		measured, m := fmt.Sprintf("%.4g %s", r.Y, r.Unit), fmt.Sprintf("%.4g", r.Model)
		errPct, tol := fmt.Sprintf("%+.0f%%", 100*r.Error), fmt.Sprintf("%.0f%%", 100*r.Tolerance)
		lo, hi := fmt.Sprintf("%.4g", r.Low), fmt.Sprintf("%.4g", r.High)
		if !narrow {
			row := []string{r.ID, r.Profile, measured, m, errPct, tol, verdictOf(r)}
			if numberings > 1 {
				row = append(row, lo, hi)
			}
			d.rows = append(d.rows, row)
			continue
		}
		if numberings > 1 {
			m += "\n" + lo + "-" + hi
		}
		d.rows = append(d.rows, []string{r.ID + "\n" + r.Profile, measured, m, errPct + " (" + tol + ")", verdictOf(r)})
	}
	return d
}

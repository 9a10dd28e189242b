package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rdmashuffle/rdmashuffle/experiments/figures"
	"github.com/rdmashuffle/rdmashuffle/experiments/report"
)

func reportCmd() *cobra.Command {
	var out, from, validation, sens, adviceDir string
	var run, noEvidence bool
	var jobs int
	var mem memoryLimits
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Write one self-contained HTML page: figures, every claim's verdict, the evidence table, provenance",
		Long: `report writes one HTML page that stands alone (plots embedded, no script, nothing
fetched): every claim's verdict with the paper's figure beside the measured one and the
figure's steady-state check, every figure, the model against public measurements
(experiments/evidence) and the provenance of the runs (version, commit, Go version,
profiles and their hashes, date from the records), and which design to use: the last
answer and map of explore advise in --advice (default docs/advise, the project's own;
results/advise for yours).

By default it reads the figures the project tracks (docs/figures, the quick-scale run
of explore reproduce --update-docs, with docs/validation.md beside it) and judges every
claim again from their records: seconds. --from reads another figures directory (say
results/reproduce/figures after explore reproduce); --run first runs the quick
reproduction itself, grown to steady state as explore reproduce does, into the
page's directory (several minutes on 2 cores).`,
		Example: "  explore report\n  explore report --from results/reproduce/figures --out results/mine.html\n  explore report --run",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			errw := cmd.ErrOrStderr()
			if st, err := os.Stat(out); err == nil && st.IsDir() {
				out = filepath.Join(out, "index.html")
			}
			if err := checkWritable("--out", out); err != nil {
				return err
			}
			if run {
				if cmd.Flags().Changed("from") {
					return fmt.Errorf("--run and --from: --run reports on the run it makes (in %s); drop one", filepath.Dir(out))
				}
				from = filepath.Join(filepath.Dir(out), "figures")
				validation = filepath.Join(filepath.Dir(out), "validation.md")
			}
			if run {
				if err := runReproduction(cmd, from, validation, sens, jobs, mem); err != nil {
					return err
				}
			}
			if _, err := os.Stat(adviceDir); err != nil && !cmd.Flags().Changed("advice") {
				adviceDir = "" // the default directory is not here: no advice section
			}
			p, err := report.Collect(cmd.Context(), report.Options{Dir: from, Validation: validation, NoEvidence: noEvidence, Sensitivity: sens,
				Advice: adviceDir, Command: commandLine(cmd), Log: errw})
			if err != nil {
				return err
			}
			var buf bytes.Buffer
			if err := report.Write(&buf, p); err != nil {
				return err
			}
			if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
				return err
			}
			c := p.Counts
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s (%.1f MB): %d pass, %d partial, %d fail, %d not-run of %d claims; %d figures\n",
				out, float64(buf.Len())/1e6, c.Pass, c.Partial, c.Fail, c.NotRun, c.Total, len(p.Figures))
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&out, "out", filepath.Join("results", "report", "index.html"), "the HTML file to write (a directory: index.html in it)")
	fl.StringVar(&from, "from", filepath.Join("docs", "figures"), "the figures directory to report on (JSONL records and plots)")
	fl.StringVar(&validation, "validation", "", "the claims report of that run, for its steady-state checks (default: validation.md beside the directory)")
	fl.BoolVar(&run, "run", false, "run the quick reproduction first (several minutes), into the page's directory, and report on it")
	fl.StringVar(&sens, "sensitivity", filepath.Join("docs", "sensitivity.json"), "a sensitivity analysis (explore sensitivity) for the robustness column; a missing file: not analysed")
	fl.BoolVar(&noEvidence, "no-evidence", false, "leave out the model-against-measurements section")
	fl.StringVar(&adviceDir, "advice", filepath.Join("docs", "advise"), "the advice to show (its last answer.json and map.json: explore advise writes them to results/advise); \"\": none")
	fl.IntVar(&jobs, "jobs", 0, "with --run: parallel runs (default: one per core)")
	mem.register(fl)
	return cmd
}

// runReproduction runs the quick reproduction as explore reproduce does,
// with its progress lines, into dir, and writes its claims report.
func runReproduction(cmd *cobra.Command, dir, validation, sens string, jobs int, mem memoryLimits) error {
	errw := cmd.ErrOrStderr()
	fmt.Fprintf(errw, "report: running the quick reproduction, grown to steady state, into %s (several minutes on 2 cores)\n", dir)
	if _, err := mem.budget(); err != nil {
		return err
	}
	ff := figureFlags{out: dir, jobs: jobs, grow: true, mem: mem}
	t := figureTask(cmd, nil, "report --run", dir)
	defer t.finish()
	rep, err := figures.Reproduce(cmd.Context(), figures.ReproduceOptions{FigureOptions: ff.options(errw, t), Log: t.writer(errw)})
	t.finish()
	if err != nil {
		return asInterrupted(t, err)
	}
	if err := loadRobustness(rep, sens); err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := figures.WriteValidation(&buf, rep, false, "explore report --run"); err != nil {
		return err
	}
	return os.WriteFile(validation, buf.Bytes(), 0o644)
}

// commandLine is the command as given: its path and the flags set.
func commandLine(cmd *cobra.Command) string {
	parts := []string{cmd.CommandPath()}
	cmd.Flags().Visit(func(f *pflag.Flag) { parts = append(parts, "--"+f.Name+"="+f.Value.String()) })
	return strings.Join(parts, " ")
}

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/experiments/figures"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
	"github.com/rdmashuffle/rdmashuffle/tpch"
)

// queryCmd is `explore query`: one TPC-H query over a design, or figure
// 26 or 27 (docs/tpch.md).
func queryCmd() *cobra.Command {
	var cfg experiments.QueryConfig
	var query, figure string
	var jsonOut, noCheck bool
	var ff figureFlags
	var simOptions func(nodes int) (experiments.SimOptions, error)
	cmd := &cobra.Command{
		Use:   "query",
		Short: "Run TPC-H Q3, Q4 or Q10 over a shuffle design (or figure 26 or 27)",
		Long: `query generates the TPC-H columns Q3, Q4 and Q10 touch at a scale factor, each row on
a pseudo-random node, runs the query's distributed plan of Liu19 (broadcast where it
moves fewer bytes, repartition by modulo elsewhere, hash joins on the receiving side)
over one design on a simulated cluster, and prints the response time, the bytes
shuffled per step and, with --payload, the answer, checked against a single-node
evaluation of the same data. Without --payload the run is size-only: tuple counts and
checksums travel in message headers, operator costs come from the CPU model, and no
answer is computed. --design local runs Q4's local-data plan (no shuffle).

The fault flags (--faults, --fault-*) inject faults as in explore run
(docs/reliability.md): a failed query's error names the faults injected. The
verbs-usage checker watches the query as it does a run (--no-check turns it off).

--figure fig26 or fig27 runs that figure (size-only, quick scale unless --full) and
judges its claim.

Designs: ` + strings.Join(experiments.DesignNames(experiments.MovesTuples), ", ") + `, local.`,
		Example: `  explore query --query Q4 --sf 0.05 --design MESQ/SR --nodes 4 --payload
  explore query --query Q10 --sf 1.6 --design MPI --nodes 16 --threads 8
  explore query --figure fig26`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w := cmd.OutOrStdout()
			if cmd.Flags().Changed("msg-bytes") && cfg.MsgBytes <= 0 {
				return fmt.Errorf("--msg-bytes %d: want at least 1 (leave the flag out for the design's default)", cfg.MsgBytes)
			}
			if cmd.Flags().Changed("threads") && cfg.Threads <= 0 {
				return fmt.Errorf("--threads %d: want at least 1 (it used to mean 2)", cfg.Threads)
			}
			if figure != "" {
				return runQueryFigure(cmd, figure, &ff)
			}
			opt, err := simOptions(cfg.Nodes)
			if err != nil {
				return err
			}
			opt.NoCheck = noCheck
			q, err := tpch.ParseQuery(query)
			if err != nil {
				return err
			}
			cfg.Query = q
			if cfg.Timeout <= 0 {
				return fmt.Errorf("--timeout %s: want a positive simulated duration, e.g. 100ms", cfg.Timeout.Std())
			}
			if b := ff.mem.mustBudget(); b != nil {
				if est := experiments.QueryMemoryEstimate(cfg); !b.Fits(est) {
					return fmt.Errorf("--sf %g: the simulated query would need about %s of memory (its columns grow with the scale factor, the cluster with nodes squared times threads), more than the %s available: use a smaller --sf, fewer nodes or threads, or pass --no-memory-check to run it anyway",
						cfg.SF, experiments.GiB(est), experiments.GiB(b.Total()))
				}
			}
			t := newTask(cmd.ErrOrStderr(), fmt.Sprintf("query %s over %s", q, cfg.Design), "", 0)
			opt.Progress = t.sim(fmt.Sprintf("%d nodes", cfg.Nodes))
			rec, err := experiments.RunQuerySim(cfg, opt)
			t.finish()
			if err != nil {
				return err
			}
			if jsonOut {
				if err := json.NewEncoder(w).Encode(rec); err != nil {
					return err
				}
				if rec.Integrity != "ok" {
					return findingf("integrity check failed: %s", rec.Integrity)
				}
				return checkAnswer(rec, cfg) // as without --json
			}
			if err := printQuery(w, rec, cfg); err != nil {
				return err
			}
			if rec.Integrity != "ok" {
				return findingf("integrity check failed: %s", rec.Integrity)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&query, "query", "Q4", "Q3, Q4 or Q10")
	fl.StringVar(&figure, "figure", "", "run figure fig26 or fig27 instead of one query")
	fl.Float64Var(&cfg.SF, "sf", 0.05, "scale factor of the whole database")
	fl.StringVar(&cfg.Design, "design", "MESQ/SR", "endpoint design, or local (Q4's local-data plan)")
	fl.IntVar(&cfg.Nodes, "nodes", 4, "cluster size")
	fl.IntVar(&cfg.Threads, "threads", 2, "sending threads per node (and as many receiving threads)")
	fl.StringVar(&cfg.Profile, "profile", sim.DefaultProfileName, "hardware profile: a built-in name or a .yaml path")
	fl.Uint64Var(&cfg.Seed, "seed", 1, "seed of the data and the simulation")
	fl.Uint64Var(&cfg.QPNumbering, "qp-numbering", 0, "the numbers the simulated NICs give their queue pairs, which decide the queue pairs that share a set of a NIC's context cache (0: the numbering the profiles were fitted with)")
	fl.BoolVar(&cfg.Payload, "payload", false, "move real bytes and compute the answer (small scale factors)")
	fl.IntVar(&cfg.MsgBytes, "msg-bytes", 0, "message size (default as explore run)")
	fl.IntVar(&cfg.Buffers, "buffers", 2, "registered buffers per thread per destination")
	fl.IntVar(&cfg.CreditEvery, "credit-every", 2, "receives per credit write-back")
	cfg.Timeout = algos.DefaultTimeout
	fl.Var(simDuration{&cfg.Timeout}, "timeout", "longest wait for progress, in simulated time (a Go duration: 100ms, 2.5s)")
	addDurationAlias(fl, "timeout-ms", "timeout", time.Millisecond, "100ms")
	fl.BoolVar(&jsonOut, "json", false, "print the record as JSON (the answer is still checked against the reference)")
	fl.BoolVar(&noCheck, "no-check", false, "turn the verbs-usage checker off (faster, same result; misuse of the verbs goes unreported; the record says verbs_check off)")
	ff.register(cmd, "results/<id>")
	simOptions = faultFlags(cmd)
	return cmd
}

// runQueryFigure is explore query --figure: the figure's own points, and
// its claim judged.
func runQueryFigure(cmd *cobra.Command, figure string, ff *figureFlags) error {
	w := cmd.OutOrStdout()
	var ignored []string
	for _, name := range []string{"query", "sf", "design", "nodes", "threads", "profile", "seed", "qp-numbering", "payload", "msg-bytes", "buffers", "credit-every", "no-check"} {
		if fl := cmd.Flags().Lookup(name); fl != nil && fl.Changed {
			ignored = append(ignored, "--"+name)
		}
	}
	cmd.Flags().Visit(func(fl *pflag.Flag) { // the fault flags set, by name
		if fl.Name == "faults" || strings.HasPrefix(fl.Name, "fault-") {
			ignored = append(ignored, "--"+fl.Name)
		}
	})
	if len(ignored) > 0 {
		return fmt.Errorf("--figure %s runs the figure's own points; %s set(s) one query: drop them, or drop --figure", figure, strings.Join(ignored, ", "))
	}
	f, err := figures.FigureByID(figure)
	if err != nil {
		return err
	}
	if !cmd.Flags().Changed("out") {
		ff.out = filepath.Join("results", f.ID)
	}
	t := figureTask(cmd, nil, "query --figure "+f.ID, ff.out)
	defer t.finish()
	rep, err := figures.RunQueryFigure(cmd.Context(), figure, ff.options(cmd.ErrOrStderr(), t))
	t.finish()
	if err != nil {
		return asInterrupted(t, err)
	}
	printFigure(w, rep)
	printVerdicts(w, figures.Judge(map[string][]results.Result{f.ID: rep.Results}), f.Claims)
	if rep.Failed > 0 {
		return fmt.Errorf("%d of %d points failed (see %s)", rep.Failed, len(rep.Results), ff.out)
	}
	return nil
}

// printQuery prints a query's record for a person and checks its answer
// against the single-node reference.
func printQuery(w io.Writer, rec *experiments.QueryRecord, cfg experiments.QueryConfig) error {
	fmt.Fprintf(w, "TPC-H %s, SF %g, %s plan over %s, %d nodes x %d threads, %s, %s\n", rec.Query, rec.SF, rec.Plan, rec.Design, rec.Nodes, rec.Threads, rec.Profile, rec.Mode)
	fmt.Fprintf(w, "response time %.3f ms (setup %.2f ms, excluded); %.2f MB shuffled; integrity %s; simulated in %.2f s\n",
		rec.ResponseS*1e3, rec.SetupMS, float64(rec.Shuffled)/1e6, rec.Integrity, rec.WallS)
	for _, s := range rec.Steps {
		fmt.Fprintf(w, "  step %-16s %-11s %10d tuples received (%.2f MB)\n", s.Name, s.Pattern, s.Tuples, float64(s.Bytes)/1e6)
	}
	if rec.Result() == nil {
		fmt.Fprintln(w, "answer: not computed (size-only; use --payload)")
	} else {
		for _, l := range rec.Answer {
			fmt.Fprintln(w, "  "+l)
		}
		if err := checkAnswer(rec, cfg); err != nil {
			return err
		}
		fmt.Fprintln(w, "answer equals the single-node reference evaluation")
	}
	return nil
}

// checkAnswer compares a payload run's answer with the single-node
// reference evaluation (a finding when they differ); a size-only run has
// no answer to compare.
func checkAnswer(rec *experiments.QueryRecord, cfg experiments.QueryConfig) error {
	if rec.Result() == nil {
		return nil
	}
	ref := tpch.Reference(tpch.Gen{Seed: cfg.Seed, SF: cfg.SF}, cfg.Query)
	if !rec.Result().Equal(ref) {
		return findingf("the answer differs from the single-node reference:\n%s", strings.Join(ref.Lines(), "\n"))
	}
	return nil
}

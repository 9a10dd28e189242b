package main

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/faults"
)

func soakCmd() *cobra.Command {
	var cfg experiments.SoakConfig
	var designs, scenarios string
	var verbose bool
	var wallS float64
	cmd := &cobra.Command{
		Use:   "soak",
		Short: "Run every design under randomized fault schedules; fail on any silent failure or hang",
		Long: `soak draws one random fault schedule per seed (loss, corruption, duplication,
reordering, a lost end of stream or credit message, a link down, slow receivers, a node
crash, RC retry exhaustion, context-cache thrashing; see docs/reliability.md) and runs
every design under it: the eight designs and the MPI and IPoIB baselines, the UD designs
both without and with --ud-recovery. Each run must either deliver exactly the sent
multiset or stop with an error; a run that returns a wrong result (silent), deadlocks or
outlives its time limits (hang), trips the verbs-usage checker, or (UD recovery under
random loss below 0.1%) fails to deliver, makes soak exit non-zero.

Scenarios: ` + strings.Join(faults.Scenarios, ", ") + `.`,
		Example: `  explore soak --seeds 200
  explore soak --seeds 50 --designs MESQ/SR,SESQ/SR --scenarios ud-loss,duplicate -v`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if designs != "" {
				cfg.Designs = strings.Split(designs, ",")
			}
			if scenarios != "" {
				cfg.Scenarios = strings.Split(scenarios, ",")
			}
			if wallS <= 0 {
				return fmt.Errorf("--wall-limit-s %v: must be positive", wallS)
			}
			cfg.WallLimit = time.Duration(wallS * float64(time.Second))
			w := cmd.OutOrStdout()
			if verbose {
				cfg.Log = w
			}
			res, err := experiments.Soak(cfg)
			if err != nil {
				return err
			}
			t := newTable(w)
			t.Header("runs", "faults injected", "exact", "clean errors", "silent", "hangs", "checker", "unrecovered")
			t.Append(fmt.Sprint(res.Runs), fmt.Sprint(res.Injected), fmt.Sprint(res.Exact), fmt.Sprint(res.CleanErrors),
				fmt.Sprint(res.Silent), fmt.Sprint(res.Hangs), fmt.Sprint(res.Checker), fmt.Sprint(res.Unrecovered))
			t.Render()
			var names []string
			for k := range res.ByScenario {
				names = append(names, k)
			}
			sort.Strings(names)
			t = newTable(w)
			t.Header("scenario", "exact", "errors")
			for _, k := range names {
				v := res.ByScenario[k]
				t.Append(k, fmt.Sprint(v[0]), fmt.Sprint(v[1]))
			}
			t.Render()
			fmt.Fprintf(w, "%d seeds from %d, %d nodes; %.1fs wall\n", cfg.Seeds, max(cfg.FirstSeed, 1), cfg.Nodes, res.Wall.Seconds())
			for _, f := range res.Failures {
				fmt.Fprintf(w, "FAILED seed %d %s (recovery %v) [%s]: %s: %s\n", f.Seed, f.Design, f.Recovery, strings.Join(f.Scenarios, "+"), f.Outcome, f.Err)
			}
			if !res.OK() {
				return fmt.Errorf("soak: %d silent failures, %d hangs, %d checker hazards, %d unrecovered", res.Silent, res.Hangs, res.Checker, res.Unrecovered)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&cfg.Seeds, "seeds", 20, "fault schedules to draw (one per seed)")
	fl.Uint64Var(&cfg.FirstSeed, "first-seed", 1, "first seed")
	fl.StringVar(&designs, "designs", "", "comma-separated designs (default: the eight designs, MPI and IPoIB)")
	fl.StringVar(&scenarios, "scenarios", "", "comma-separated scenarios to draw from (default: all)")
	fl.IntVar(&cfg.Nodes, "nodes", 4, "cluster size")
	fl.IntVar(&cfg.Threads, "threads", 2, "sending (and receiving) threads per node")
	fl.Int64Var(&cfg.BytesPerNode, "bytes-per-node", 256<<10, "payload bytes each node sends")
	fl.StringVar(&cfg.Profile, "profile", "edr-cx4", "hardware profile")
	fl.BoolVar(&cfg.Payload, "payload", true, "move and check every byte")
	fl.Float64Var(&wallS, "wall-limit-s", 60, "a run taking longer (wall seconds) counts as a hang")
	fl.BoolVarP(&verbose, "verbose", "v", false, "one line per run")
	return cmd
}

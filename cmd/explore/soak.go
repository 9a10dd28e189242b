package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rdmashuffle/rdmashuffle/experiments/soak"
	"github.com/rdmashuffle/rdmashuffle/faults"
)

func soakCmd() *cobra.Command {
	var cfg soak.Config
	var designs, scenarios, workloads string
	var verbose, jsonOut bool
	cmd := &cobra.Command{
		Use:   "soak",
		Short: "Run every design under randomized fault schedules; fail on any silent failure or hang",
		Long: `soak draws one random fault schedule per seed (loss, corruption, duplication,
reordering, a lost end of stream or credit message, a link down, slow receivers, a node
crash, RC retry exhaustion, context-cache thrashing; see docs/reliability.md) and runs
every design's shuffle under it: the eight designs, the MPI and IPoIB baselines and the
peer designs (HyPer and its variants, RDMA-MW, RDMA-MW/siw, Sockets-MW), the UD designs
both without and with --ud-recovery. Under the same schedule it runs one TPC-H query (Q3,
Q4 or Q10, SF 0.05) and one star join (2 to 4 tables, SF 0.01) per seed, each over a design
drawn per seed (the star joins also over I-Store's remote-read plans). Each run must either
deliver exactly the sent multiset (a query or star join: the reference answer) or stop with
an error; a run that returns a wrong result (silent), deadlocks or
outlives its time limits (hang), trips the verbs-usage checker, or (UD recovery under
random loss below 0.1%) fails to deliver, makes soak exit non-zero.

Scenarios: ` + strings.Join(faults.Scenarios, ", ") + `; and ` + faults.HighUDLoss + `, random UD
loss of 10% to 50%, which runs once per seed for the UD designs with --ud-recovery.`,
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
			if workloads != "" {
				for _, w := range strings.Split(workloads, ",") {
					cfg.Workloads = append(cfg.Workloads, soak.Workload(w))
				}
			}
			if cfg.WallLimit <= 0 {
				name := "wall-limit"
				if cmd.Flags().Changed("wall-limit-s") {
					name = "wall-limit-s"
				}
				return fmt.Errorf("--%s %s: must be positive (a Go duration: 60s, 5m)", name, cmd.Flags().Lookup(name).Value)
			}
			w := cmd.OutOrStdout()
			if verbose {
				cfg.Log = w
				if jsonOut {
					cfg.Log = cmd.ErrOrStderr()
				}
			}
			t := newTask(cmd.ErrOrStderr(), "soak", "seeds", cfg.Seeds)
			cfg.Progress = seedProgress(t)
			res, err := soak.Run(cfg)
			t.finish()
			if err != nil {
				return err
			}
			if jsonOut {
				if err := json.NewEncoder(w).Encode(res.Record()); err != nil {
					return err
				}
			} else {
				printSoak(w, res)
			}
			if !res.OK() {
				return findingf("soak: %d silent failures, %d hangs, %d checker findings, %d masked errors, %d unrecovered, %d errors not naming the faults", res.Silent, res.Hangs, res.Checker, res.Masked, res.Unrecovered, res.Unnamed)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&cfg.Seeds, "seeds", 20, "fault schedules to draw (one per seed)")
	fl.Uint64Var(&cfg.FirstSeed, "first-seed", 1, "first seed")
	fl.StringVar(&designs, "designs", "", "comma-separated designs (default: the eight designs, MPI, IPoIB and the peer designs)")
	fl.StringVar(&scenarios, "scenarios", "", "comma-separated scenarios to draw from (default: all)")
	fl.StringVar(&workloads, "workloads", "", "comma-separated workloads to run under each schedule: "+soakWorkloads()+" (default: all)")
	fl.IntVar(&cfg.Nodes, "nodes", 4, "cluster size")
	fl.IntVar(&cfg.Threads, "threads", 2, "sending (and receiving) threads per node")
	fl.Int64Var(&cfg.BytesPerNode, "bytes-per-node", 256<<10, "payload bytes each node sends")
	fl.StringVar(&cfg.Profile, "profile", "edr-cx4", "hardware profile")
	fl.BoolVar(&cfg.Payload, "payload", true, "move and check every byte")
	fl.DurationVar(&cfg.WallLimit, "wall-limit", time.Minute, "a run taking longer (wall clock, a Go duration: 60s, 5m) counts as a hang")
	addDurationAlias(fl, "wall-limit-s", "wall-limit", time.Second, "60s")
	fl.IntVar(&cfg.Jobs, "jobs", 1, "seeds to run at once (each run's wall time, and so --wall-limit, then counts time shared with the others)")
	fl.BoolVarP(&verbose, "verbose", "v", false, "one line per run (on standard error with --json)")
	fl.BoolVar(&jsonOut, "json", false, "print the soak record (docs/results.md) as one JSON object instead of tables")
	return cmd
}

func printSoak(w io.Writer, res *soak.Result) {
	t := newWrappedTable(w)
	t.Header("runs", "faults injected", "exact", "clean errors", "silent", "hung", "checker", "masked", "not recovered", "not named")
	t.Append(fmt.Sprint(res.Runs), fmt.Sprint(res.Injected), fmt.Sprint(res.Exact), fmt.Sprint(res.CleanErrors),
		fmt.Sprint(res.Silent), fmt.Sprint(res.Hangs), fmt.Sprint(res.Checker), fmt.Sprint(res.Masked), fmt.Sprint(res.Unrecovered), fmt.Sprint(res.Unnamed))
	t.Render()
	for _, by := range []struct {
		name string
		m    map[string]*soak.Counts
	}{{"scenario", res.ByScenario}, {"workload", res.ByWorkload}, {"design", res.ByDesign}} {
		var names []string
		for k := range by.m {
			names = append(names, k)
		}
		sort.Strings(names)
		t = newWrappedTable(w)
		t.Header(by.name, "runs", "exact", "clean errors", "silent", "hung", "checker", "masked", "not recovered", "not named")
		for _, k := range names {
			v := by.m[k]
			t.Append(k, fmt.Sprint(v.Runs), fmt.Sprint(v.Exact), fmt.Sprint(v.CleanErrors), fmt.Sprint(v.Silent), fmt.Sprint(v.Hangs),
				fmt.Sprint(v.Checker), fmt.Sprint(v.Masked), fmt.Sprint(v.Unrecovered), fmt.Sprint(v.Unnamed))
		}
		t.Render()
	}
	c := res.Config
	fmt.Fprintf(w, "%d seeds from %d, %d nodes; %.1fs wall\n", c.Seeds, c.FirstSeed, c.Nodes, res.Wall.Seconds())
	for _, f := range res.Failures {
		what := f.Design
		if f.Workload != soak.ShuffleWorkload {
			what = fmt.Sprintf("%s %s over %s", f.Workload, f.Detail, f.Design)
		}
		fmt.Fprintf(w, "FAILED seed %d %s (recovery %v) [%s]: %s: %s\n", f.Seed, what, f.Recovery, strings.Join(f.Scenarios, "+"), f.Outcome, f.Err)
	}
}

func soakWorkloads() string {
	var s []string
	for _, w := range soak.Workloads {
		s = append(s, string(w))
	}
	return strings.Join(s, ", ")
}

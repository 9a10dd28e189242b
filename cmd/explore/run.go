package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// runFlags are explore run's flags beyond the configuration's own.
type runFlags struct {
	cfg        experiments.RunConfig
	jsonOut    bool
	noCheck    bool
	tracePath  string
	mem        memoryLimits
	hw         hwFlags
	simOptions func(nodes int) (experiments.SimOptions, error)
	net        netFlags
}

func runCmd() *cobra.Command { return newRunCmd(&runFlags{cfg: experiments.DefaultConfig()}) }

// newRunCmd is explore run reading its flags into f.
func newRunCmd(f *runFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run one shuffle (design, cluster, workload) and check its integrity",
		Long: `run shuffles the synthetic table R(a, b) of 16-byte tuples between the nodes of a
simulated cluster with one endpoint design and prints the run record: throughput per
node (bytes received divided by the response time, setup excluded), setup time, queue
pairs and registered memory per node, and whether every node received exactly the
tuples sent to it.

Designs in this build: ` + strings.Join(experiments.DesignNames(nil), ", ") + `.`,
		Example: `  explore run --design MEMQ/SR --nodes 8 --pattern repartition --profile edr-cx4
  explore run --design SEMQ/SR --nodes 4 --threads 4 --pattern broadcast --json`,
		Args: flagsOnly,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opt, err := f.check(cmd)
			if err != nil {
				return err
			}
			rec, err := f.run(cmd, opt)
			if err != nil {
				return err
			}
			return reportRun(cmd.OutOrStdout(), rec, f.jsonOut)
		},
	}
	fl := cmd.Flags()
	// The sweep parameters' flags (design, nodes, pattern, ...) come from
	// their table; a new parameter is added there once.
	addRunFlags(fl, &f.cfg)
	// --timeout is the sweep parameter timeout-ms as a Go duration.
	fl.Var(simDuration{&f.cfg.Timeout}, "timeout", "longest wait for progress before the run fails (a Go duration: 100ms, 2.5s): simulated time on the simulator (default 1s), wall time on a real backend (default 20s)")
	fl.MarkDeprecated("timeout-ms", "use --timeout with a unit (e.g. --timeout 100ms)")
	fl.BoolVar(&f.jsonOut, "json", false, "print the run record as one JSON object")
	fl.StringVar(&f.tracePath, "trace", "", "simulator: write every event of the run to this file (explore trace show / diff read it)")
	fl.BoolVar(&f.noCheck, "no-check", false, "simulator: turn the verbs-usage checker off (faster, same result; misuse of the verbs goes unreported; the record says verbs_check off)")
	fl.BoolVar(&f.mem.off, "no-memory-check", false, "run even when the simulated cluster's estimated memory exceeds what the machine has available (or --max-memory)")
	fl.Var(byteSize{&f.mem.max}, "max-memory", "refuse a run whose estimated memory exceeds this, e.g. 8GiB (default: what the system has available at the start)")
	f.hw.levelsElsewhere = true
	f.hw.register(fl)
	f.net.register(fl)
	f.simOptions = faultFlags(cmd)
	setGroupedUsage(cmd, runGroups())
	return cmd
}

// runTable is a run's record as a table of one row; narrow puts the
// pattern under the design and the set-up under the response time.
func runTable(r *results.Record, narrow bool) tableData {
	rate, resp, setup := fmt.Sprintf("%.2f", r.ThroughputGiBs), fmt.Sprintf("%.3f", r.ResponseS*1e3), fmt.Sprintf("%.2f", r.SetupMS)
	tail := []string{fmt.Sprint(r.QPsPerNode), fmt.Sprintf("%.1f MiB", float64(r.RegisteredPer)/(1<<20)), r.Integrity}
	if narrow {
		return tableData{[]string{"design, pattern", "nodes x threads", "throughput [GiB/s]", "response, setup [ms]", "QPs per node", "reg. per node", "integrity"},
			[][]string{append([]string{r.Design + "\n" + r.Pattern, fmt.Sprintf("%d x %d", r.Nodes, r.Threads), rate, resp + "\n" + setup}, tail...)}}
	}
	return tableData{[]string{"design", "pattern", "nodes x threads", "throughput [GiB/s]", "response [ms]", "setup [ms]", "QPs per node", "reg. per node", "integrity"},
		[][]string{append([]string{r.Design, r.Pattern, fmt.Sprintf("%d x %d", r.Nodes, r.Threads), rate, resp, setup}, tail...)}}
}

// RealTimeout is the longest wait for progress on a real backend (loopback,
// ibv, tcp) unless --timeout says otherwise, as the tests' real-thread
// runs use.
const RealTimeout = 20 * fabric.Second

// check refuses flags that would run something else than asked, and
// builds the simulator's options from the fault flags.
func (f *runFlags) check(cmd *cobra.Command) (experiments.SimOptions, error) {
	cfg, hw := &f.cfg, &f.hw
	// The run configuration reads 0 as "the default": a 0 (or a
	// negative timeout) given on the command line would silently run
	// something else than asked.
	for _, z := range []struct {
		flag string
		bad  bool
		want string
	}{
		{"threads", cfg.Threads == 0, "at least 1"},
		{"buffers", cfg.Buffers == 0, "at least 1"},
		{"credit-every", cfg.CreditEvery == 0, "at least 1"},
		{"msg-bytes", cfg.MsgBytes == 0, "at least 1 (leave the flag out for the design's default)"},
		{"bytes-per-node", cfg.BytesPerNode == 0 && cfg.BytesPerPair == 0, "at least 1 (or size the input with --bytes-per-pair)"},
		{"timeout", cfg.Timeout <= 0, "a positive simulated duration, e.g. 100ms"},
		{"timeout-ms", cfg.Timeout <= 0, "a positive number of simulated milliseconds (better: --timeout 100ms)"},
	} {
		if z.bad && cmd.Flags().Changed(z.flag) {
			v := cmd.Flags().Lookup(z.flag).Value.String()
			return experiments.SimOptions{}, fmt.Errorf("--%s %s: want %s", z.flag, v, z.want)
		}
	}
	opt, err := f.simOptions(cfg.Nodes)
	if err != nil {
		return opt, err
	}
	if cmd.Flags().Changed("network") {
		for _, name := range netFlagNames {
			if cmd.Flags().Changed(name) {
				return opt, fmt.Errorf("--network and --%s both describe the network: give the whole network in --network, or use --topology and the flags beside it", name)
			}
		}
	} else if cfg.Network, err = f.net.spec(cmd.Flags().Changed); err != nil {
		return opt, err
	}
	if hw.backend == "sim" {
		return opt, nil
	}
	if !cmd.Flags().Changed("timeout") && !cmd.Flags().Changed("timeout-ms") {
		// On real threads the wait is wall time, and a loaded machine
		// (or GOMAXPROCS 1) can hold a thread off its processor for far
		// longer than the simulated default of 1 s: a stall is still
		// reported, after RealTimeout.
		cfg.Timeout = RealTimeout
	}
	switch {
	case !cfg.Network.IsSingle():
		return opt, fmt.Errorf("--topology chooses the simulator's network; the %s backend runs on the network it has: drop it", hw.backend)
	case f.tracePath != "":
		return opt, fmt.Errorf("--trace records the simulator's events; the %s backend has no event sequence to record: drop the flag", hw.backend)
	case f.noCheck:
		return opt, fmt.Errorf("--no-check turns off the simulator's verbs-usage checker; the %s backend has none: drop the flag", hw.backend)
	case cfg.QPNumbering != 0:
		return opt, fmt.Errorf("--qp-numbering %d chooses the simulator's queue-pair numbers; on the %s backend there is none to choose (a driver numbers real queue pairs): drop the flag", cfg.QPNumbering, hw.backend)
	case opt.InjectsFaults():
		return opt, fmt.Errorf("fault injection (--fault-* and --faults) needs the simulator, not the %s backend: drop the fault flags, or run with --backend sim", hw.backend)
	case hw.backend == "tcp" && !experiments.DesignOf(cfg.Design).RealOnly:
		return opt, fmt.Errorf("--backend tcp hosts no RDMA device: only --design TCP runs there (the RDMA designs need --backend sim or ibv)")
	}
	return opt, nil
}

// run runs the shuffle on the backend the flags chose, with progress.
func (f *runFlags) run(cmd *cobra.Command, opt experiments.SimOptions) (*results.Record, error) {
	cfg := f.cfg
	t := newTask(cmd.ErrOrStderr(), "run "+cfg.Design, "", 0)
	defer t.finish()
	fab, err := f.hw.open(cfg.Nodes, fmt.Sprintf("run %s %s %d %d %d %d", cfg.Design, cfg.Pattern, cfg.Nodes, cfg.Threads, cfg.MsgBytes, cfg.Buffers))
	if err != nil {
		return nil, err
	}
	if fab != nil {
		defer fab.Close()
		return experiments.Exec(experiments.On(fab), cfg)
	}
	if err := cfg.Validate(); err != nil { // before the memory estimate, which would blame the nodes
		return nil, err
	}
	if limit, ok, err := f.mem.single(experiments.AvailableMemory); err != nil {
		return nil, err
	} else if ok {
		if err := experiments.CheckMemory(cfg, limit); err != nil {
			return nil, err
		}
	}
	if cfg.Network.AdaptiveRC && (cfg.Notify == algos.NotifyBuffers || cfg.Notify == algos.NotifyQueue) {
		if prof, err := sim.LoadProfile(cfg.Profile); err == nil && prof.NIC.OOOWindow > 0 {
			t.note(cmd.ErrOrStderr(), wrapText(fmt.Sprintf("note: --notify %s polls memory for a seal written after the data; with RC packets routed adaptively, %s's NIC places packets as they arrive (out-of-order placement), so a seal can be in memory before the data it seals: expect a corrupt run, or one that stalls (docs/topology.md, \"RC under adaptive routing\"). --notify cq waits for the completion", cfg.Notify, prof.Name), tableWidth(), "  "))
		}
	}
	if note := fileSpeedNote(cfg.Network, cfg.Profile); note != "" {
		t.note(cmd.ErrOrStderr(), note)
	}
	opt.Progress = t.sim(fmt.Sprintf("%d nodes, %s", cfg.Nodes, cfg.Pattern))
	opt.NoCheck = f.noCheck
	if f.tracePath == "" {
		return experiments.Exec(experiments.Simulator{Options: opt}, cfg)
	}
	tw, err := newTraceWriter(f.tracePath, cfg, cmd.Flags())
	if err != nil {
		return nil, err
	}
	defer tw.Close() // a failed run's trace holds its events up to the failure
	opt.Trace = tw
	rec, err := experiments.Exec(experiments.Simulator{Options: opt}, cfg)
	if err == nil {
		if err := tw.Close(); err != nil {
			return nil, fmt.Errorf("--trace %s: %w", f.tracePath, err)
		}
	}
	return rec, err
}

// reportRun prints the record (as JSON, or a table) and then fails a run
// whose integrity check failed, whatever the format.
func reportRun(w io.Writer, rec *results.Record, jsonOut bool) error {
	if jsonOut {
		if err := json.NewEncoder(w).Encode(rec); err != nil {
			return err
		}
	} else {
		printRun(w, rec)
	}
	if rec.Integrity != "ok" {
		return findingf("integrity check failed: %s", rec.Integrity)
	}
	return nil
}

// creditParts names the parts of r's credit writes that SQ/SR sent as
// repeats to quiet connections and late, as owed credit ("" when none).
func creditParts(r *results.Record) string {
	var parts []string
	if r.CreditRepeats > 0 {
		parts = append(parts, fmt.Sprintf("%d repeats", r.CreditRepeats))
	}
	if r.CreditOwed > 0 {
		parts = append(parts, fmt.Sprintf("%d owed", r.CreditOwed))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func printRun(w io.Writer, r *results.Record) {
	renderOrNarrow(w, runTable(r, false), runTable(r, true))
	if !r.Network.IsSingle() {
		fmt.Fprintf(w, "network: %s\n", r.Network.Brief())
	}
	numbering := ""
	if r.QPNumbering != 0 {
		numbering = fmt.Sprintf(" (queue-pair numbering %d)", r.QPNumbering)
	}
	buffers := fmt.Sprintf("%d buffers per destination", r.Buffers)
	if r.Adaptive {
		buffers = fmt.Sprintf("adaptive buffers per destination (%d to start, at most %d; %.1f per node on average)", r.Buffers, r.MaxBuffers, r.RecvBuffersMean)
	}
	fmt.Fprintln(w, wrapText(fmt.Sprintf("%s, %d-byte messages, %s, credit every %d; %d tuples; %d credit writes%s, %d credit stalls; QP-cache miss rate %.1f%%%s; %.2fs wall",
		r.Profile, r.MsgBytes, buffers, r.CreditEvery, r.TuplesReceived, r.CreditWrites, creditParts(r), r.CreditStalls, 100*r.QPCacheMiss, numbering, r.WallS), tableWidth(), "  "))
	if r.Faults != "" {
		fmt.Fprintln(w, wrapText("faults injected: "+r.Faults, tableWidth(), "  "))
	}
	if skew := results.SkewLine(r); skew != "" {
		fmt.Fprintln(w, wrapText("skew: "+skew, tableWidth(), "  "))
	}
}

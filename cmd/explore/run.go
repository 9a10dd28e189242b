package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/experiments/sweep"
	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

func runCmd() *cobra.Command {
	var cfg experiments.RunConfig
	var pattern string
	var jsonOut bool
	var timeoutMS float64
	var notify string
	var nodeCycles string
	var noMemCheck bool
	var hw hwFlags
	var applyFaults func(*experiments.RunConfig) error
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
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// The run configuration reads 0 as "the default": a 0 (or a
			// negative timeout) given on the command line would silently
			// run something else than asked.
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
				{"timeout-ms", timeoutMS <= 0, "a positive number of simulated milliseconds"},
			} {
				if z.bad && cmd.Flags().Changed(z.flag) {
					v := cmd.Flags().Lookup(z.flag).Value.String()
					return fmt.Errorf("--%s %s: want %s", z.flag, v, z.want)
				}
			}
			cfg.Pattern = algos.Pattern(pattern)
			cfg.Notify = algos.Notify(notify)
			cy, err := sweep.ParseNodeCycles(nodeCycles)
			if err != nil {
				return fmt.Errorf("--node-cycles: %w", err)
			}
			cfg.NodeCycles = cy
			cfg.Timeout = fabric.Duration(timeoutMS * float64(fabric.Millisecond))
			if err := applyFaults(&cfg); err != nil {
				return err
			}
			if hw.backend == "tcp" && cfg.Design != "TCP" {
				return fmt.Errorf("--backend tcp hosts no RDMA device: only --design TCP runs there (the RDMA designs need --backend sim or ibv)")
			}
			var rec *experiments.Record
			fab, err := hw.open(cfg.Nodes, fmt.Sprintf("run %s %s %d %d %d %d", cfg.Design, cfg.Pattern, cfg.Nodes, cfg.Threads, cfg.MsgBytes, cfg.Buffers))
			if err != nil {
				return err
			}
			if fab != nil {
				defer fab.Close()
				rec, err = experiments.RunOn(fab, cfg)
			} else {
				if avail, ok := experiments.AvailableMemory(); ok && !noMemCheck {
					if err := experiments.CheckMemory(cfg, avail); err != nil {
						return err
					}
				}
				rec, err = experiments.Run(cfg)
			}
			if err != nil {
				return err
			}
			return reportRun(cmd.OutOrStdout(), rec, jsonOut)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&cfg.Design, "design", "MEMQ/SR", "endpoint design: "+strings.Join(experiments.DesignNames(nil), ", "))
	fl.StringVar(&notify, "notify", "", "RDMA Write designs: how receivers learn of a write: cq (write with immediate, default), buffers (a seal per buffer) or queue (a descriptor ring)")
	fl.IntVar(&cfg.Nodes, "nodes", 8, "cluster size")
	fl.IntVar(&cfg.Threads, "threads", 2, "sending threads per node (and as many receiving threads)")
	fl.StringVar(&pattern, "pattern", "repartition", "repartition, broadcast, or multicast:K (each tuple to K consecutive nodes)")
	fl.StringVar(&cfg.Profile, "profile", sim.DefaultProfileName, "hardware profile: a built-in name or a .yaml path")
	fl.IntVar(&cfg.MsgBytes, "msg-bytes", 0, "message (buffer) size in bytes, header included (default 4096 for UD designs, 65536 for RC)")
	fl.IntVar(&cfg.Buffers, "buffers", 2, "registered buffers per thread per destination")
	fl.IntVar(&cfg.CreditEvery, "credit-every", 2, "receives posted per credit write-back")
	fl.Int64Var(&cfg.BytesPerNode, "bytes-per-node", 64<<20, "payload bytes each node sends")
	fl.Int64Var(&cfg.BytesPerPair, "bytes-per-pair", 0, "size the input so each sending thread sends about this many bytes to each destination (overrides --bytes-per-node)")
	fl.Int64Var(&cfg.CyclesPerTuple, "cycles-per-tuple", 0, "receiving fragment's processing per tuple, CPU cycles")
	fl.StringVar(&nodeCycles, "node-cycles", "", "per-node cycles per tuple, comma-separated, node i taking entry i mod count (overrides --cycles-per-tuple), e.g. 21,95")
	fl.BoolVar(&cfg.Adaptive, "adaptive", false, "adaptive registered buffers from a pool per node (Liu19 §6): --buffers is where they start")
	fl.IntVar(&cfg.MaxBuffers, "max-buffers", 0, "with --adaptive: the most buffers per thread and peer (default: room within a 16,000-entry receive queue, at most 256)")
	fl.BoolVar(&cfg.UDRecovery, "ud-recovery", false, "UD designs: recover lost messages (acknowledgements, retransmission, duplicates dropped) instead of failing")
	fl.Int64Var(&cfg.PinnedCapMiB, "pinned-cap-mib", 0, "with --adaptive: the pool's pinned-memory cap per node in MiB (0: none)")
	fl.Uint64Var(&cfg.Seed, "seed", 1, "random seed")
	fl.BoolVar(&cfg.Payload, "payload", false, "move every byte and check tuple contents (default: size-only, checksums in headers)")
	fl.Float64Var(&timeoutMS, "timeout-ms", 100, "longest wait for progress, simulated milliseconds, before the run fails")
	fl.BoolVar(&jsonOut, "json", false, "print the run record as one JSON object")
	fl.BoolVar(&noMemCheck, "no-memory-check", false, "run even when the simulated cluster's estimated memory exceeds what the machine has available")
	hw.register(fl)
	applyFaults = faultFlags(cmd)
	return cmd
}

// reportRun prints the record (as JSON, or a table) and then fails a run
// whose integrity check failed, whatever the format.
func reportRun(w io.Writer, rec *experiments.Record, jsonOut bool) error {
	if jsonOut {
		if err := json.NewEncoder(w).Encode(rec); err != nil {
			return err
		}
	} else {
		printRun(w, rec)
	}
	if rec.Integrity != "ok" {
		return fmt.Errorf("integrity check failed: %s", rec.Integrity)
	}
	return nil
}

func printRun(w io.Writer, r *experiments.Record) {
	t := newTable(w)
	t.Header("design", "pattern", "nodes", "threads", "throughput[GiB/s]", "response[ms]", "setup[ms]", "QPs/node", "registered/node", "integrity")
	t.Append(r.Design, r.Pattern, fmt.Sprint(r.Nodes), fmt.Sprint(r.Threads), fmt.Sprintf("%.2f", r.ThroughputGiBs),
		fmt.Sprintf("%.3f", r.ResponseS*1e3), fmt.Sprintf("%.2f", r.SetupMS), fmt.Sprint(r.QPsPerNode),
		fmt.Sprintf("%.1f MiB", float64(r.RegisteredPer)/(1<<20)), r.Integrity)
	t.Render()
	fmt.Fprintf(w, "%s, %d-byte messages, %d buffers per destination, credit every %d; %d tuples; %d credit writes, %d credit stalls; QP-cache miss rate %.1f%%; %.2fs wall\n",
		r.Profile, r.MsgBytes, r.Buffers, r.CreditEvery, r.TuplesReceived, r.CreditWrites, r.CreditStalls, 100*r.QPCacheMiss, r.WallS)
}

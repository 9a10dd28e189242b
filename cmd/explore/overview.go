package main

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/perftest"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// overviewCmd is what `make run` shows: the simulated cluster's basic
// numbers, the first thing a user checks against their own hardware.
func overviewCmd() *cobra.Command {
	var f benchFlags
	cmd := &cobra.Command{
		Use:   "overview",
		Short: "Run the standard microbenchmarks on the default simulated cluster and print a summary",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.task = newTask(cmd.ErrOrStderr(), "overview", "runs", 0)
			defer f.task.finish()
			// Rows are printed as they come: clear the progress line first.
			return runOverview(f.task.writer(cmd.OutOrStdout()), &f)
		},
	}
	addCommonFlags(cmd, &f)
	cmd.Flags().Lookup("nodes").DefValue = "8"
	f.nodes = 8
	return cmd
}

func runOverview(w io.Writer, f *benchFlags) error {
	prof, err := sim.LoadProfile(f.profile)
	if err != nil {
		return err
	}
	if f.nodes < 2 {
		return fmt.Errorf("--nodes %d: the overview needs at least 2 nodes", f.nodes)
	}
	// With --json, every benchmark prints its microbenchmark record and
	// every shuffle its run record (docs/results.md), one per line, and
	// nothing else.
	var enc *json.Encoder
	if f.jsonOut {
		enc = json.NewEncoder(w)
	} else {
		fmt.Fprintf(w, "rdmashuffle overview: simulated %s cluster (%s)\n", prof.Name, prof.Description)
		fmt.Fprintf(w, "link data rate %.2f Gb/s after %s encoding, MTU %d, seed %d\n\n", prof.DataRateBps()/1e9, prof.Link.Encoding, prof.Link.MTU, f.seed)
	}
	type item struct {
		label string
		cfg   perftest.Config
		nodes int
	}
	pair := 2
	items := []item{
		{"send latency, 8 B (RC, inline)", perftest.Config{Test: "send_lat", Size: 8, Iters: 1000}, pair},
		{"write latency, 8 B (RC, inline)", perftest.Config{Test: "write_lat", Size: 8, Iters: 1000}, pair},
		{"send bandwidth, 4 KiB (UD)", perftest.Config{Test: "send_bw", Size: 4096, Iters: 5000, Conn: fabric.UD}, pair},
		{"send bandwidth, 64 KiB (RC)", perftest.Config{Test: "send_bw", Size: 65536, Iters: 2000}, pair},
		{"write bandwidth, 64 KiB (RC)", perftest.Config{Test: "write_bw", Size: 65536, Iters: 2000}, pair},
		{"read bandwidth, 64 KiB (RC)", perftest.Config{Test: "read_bw", Size: 65536, Iters: 2000}, pair},
		{"write message rate, 32 B, 16 QPs", perftest.Config{Test: "write_bw", Size: 32, Iters: 2000, QPs: 16}, pair},
		{fmt.Sprintf("all-to-all, %d nodes, 4 KiB (RC)", f.nodes), perftest.Config{Test: "alltoall_bw", Size: 4096, Iters: 2000}, f.nodes},
	}
	designs := experiments.DesignNames(func(d experiments.CatalogueEntry) bool {
		return experiments.IsPaperDesign(d) || experiments.IsBaseline(d)
	})
	if f.task != nil {
		f.task.setTotal(len(items) + len(designs))
	}
	t := newTable(w)
	t.Header("benchmark", "nodes", "result", "bound", "of bound", "sim wall[s]")
	var pkts int64
	t0 := time.Now()
	for _, it := range items {
		cfg := it.cfg
		if err := cfg.Normalize(it.nodes); err != nil {
			return err
		}
		ff := *f
		ff.nodes = it.nodes
		row, err := benchOnce(cfg, &ff, prof, 0)
		if err != nil {
			return fmt.Errorf("%s: %w", it.label, err)
		}
		pkts += row.stats.PacketsSent
		if f.task != nil {
			f.task.step(1, "")
		}
		r := row.res
		if enc != nil {
			if err := enc.Encode(stampBench(r)); err != nil {
				return err
			}
			continue
		}
		var result, bound, frac string
		if cfg.Test == "send_lat" || cfg.Test == "write_lat" {
			result = fmt.Sprintf("%.3f us one-way (p99 %.3f)", r.TTypicalUS, r.TP99US)
			bound, frac = "-", "-"
		} else if cfg.Size < 256 {
			result = fmt.Sprintf("%.2f M msg/s", r.MsgRateMpps)
			bound, frac = "-", "-"
		} else {
			result = fmt.Sprintf("%.2f Gb/s", r.BWAvgGbps)
			bound = fmt.Sprintf("%.2f Gb/s", row.bound)
			frac = fmt.Sprintf("%.1f%%", 100*r.BWAvgGbps/row.bound)
		}
		t.Append(it.label, fmt.Sprint(it.nodes), result, bound, frac, fmt.Sprintf("%.2f", row.wall.Seconds()))
	}
	if enc != nil {
		return overviewShuffle(w, f)
	}
	if f.task != nil {
		f.task.clear()
	}
	if err := t.Render(); err != nil {
		return err
	}
	el := time.Since(t0)
	fmt.Fprintf(w, "\nsimulated %d packets in %.2fs of wall time (%.2f M packets/s).\n", pkts, el.Seconds(), float64(pkts)/el.Seconds()/1e6)
	if err := overviewShuffle(w, f); err != nil {
		return err
	}
	fmt.Fprintln(w, "Bandwidth is payload only (Gb/s = 10^9 bit/s); the bound counts encoding and every packet header.")
	fmt.Fprintln(w, "Next: explore bench --help, explore run --help, explore profiles, docs/architecture.md.")
	return nil
}

// overviewShuffle runs the eight shuffle designs and the three baselines
// on one configuration and prints one row each.
func overviewShuffle(w io.Writer, f *benchFlags) error {
	const threads, mib = 4, 32
	var enc *json.Encoder
	if f.jsonOut {
		enc = json.NewEncoder(w)
	} else {
		fmt.Fprintf(w, "\nShuffle designs and baselines: %d nodes, repartition of 16-byte tuples, %d sending and %d receiving threads per node, %d MiB per node\n",
			f.nodes, threads, threads, mib)
	}
	t := newTable(w)
	t.Header("design", "throughput[GiB/s]", "response[ms]", "setup[ms]", "QPs/node", "registered/node", "integrity", "sim wall[s]")
	for _, d := range experiments.DesignNames(func(d experiments.CatalogueEntry) bool {
		return experiments.IsPaperDesign(d) || experiments.IsBaseline(d)
	}) {
		var opt experiments.SimOptions
		if f.task != nil {
			f.task.setDetail(d)
			opt.Progress = f.task.sim(d)
		}
		rec, err := experiments.RunSim(experiments.RunConfig{Design: d, Nodes: f.nodes, Threads: threads, Profile: f.profile,
			BytesPerNode: mib << 20, Seed: f.seed}, opt)
		if f.task != nil {
			f.task.step(1, "")
		}
		if err != nil {
			return fmt.Errorf("%s: %w", d, err)
		}
		if enc != nil {
			if err := enc.Encode(rec); err != nil {
				return err
			}
			continue
		}
		setup, reg := fmt.Sprintf("%.2f", rec.SetupMS), fmt.Sprintf("%.1f MiB", float64(rec.RegisteredPer)/(1<<20))
		if d == "qperf" {
			setup, reg = "n/a", "n/a" // a benchmark tool's own setup is not part of a shuffle
		}
		t.Append(d, fmt.Sprintf("%.2f", rec.ThroughputGiBs), fmt.Sprintf("%.3f", rec.ResponseS*1e3), setup,
			fmt.Sprint(rec.QPsPerNode), reg, rec.Integrity, fmt.Sprintf("%.2f", rec.WallS))
	}
	if enc != nil {
		return nil
	}
	if f.task != nil {
		f.task.finish()
	}
	if err := t.Render(); err != nil {
		return err
	}
	fmt.Fprintln(w, "Defaults as in Liu19: 4 KiB messages for UD (SQ), 64 KiB for RC (MQ) and MPI, 128 KiB for IPoIB, double buffering,")
	fmt.Fprintln(w, "credit every 2 receives. qperf moves no tuples (RC sends from one buffer to every other node: the network's ceiling);")
	fmt.Fprintln(w, "its integrity is checked per message.")
	return nil
}

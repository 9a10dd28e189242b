package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rdmashuffle/rdmashuffle/fabric/netbuild"

	"github.com/spf13/cobra"

	"github.com/rdmashuffle/rdmashuffle/buildinfo"
	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/experiments/evidence"
	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/netspec"
	"github.com/rdmashuffle/rdmashuffle/fabric/perftest"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// benchFlags are the flags shared by bench and overview.
type benchFlags struct {
	errw    io.Writer      // progress lines on long benchmarks
	task    *task          // the progress of the running command; nil: none
	cmd     *cobra.Command // bench's command (its flags), for runHWBench
	cfg     perftest.Config
	conn    string
	nodes   int
	profile string
	seed    uint64
	jsonOut bool
	output  string        // table, plain (perftest's report) or one of perftest's verbosity levels (benchOutputs)
	gbits   bool          // perftest's output in Gb/s (perftest's --report_gbits), not MiB/s
	pt      perftestFlags // perftest's other flags (bench only)
	// mtuWarned: the note that -m is above the port's MTU was given.
	mtuWarned bool
	duration  perftestSeconds // perftest's -D
	margin    perftestSeconds // perftest's -f
	all       bool
	sweepQPs  bool
	payload   bool
	hw        hwFlags
	mem       memoryLimits // bench: --no-memory-check, --max-memory (default: the machine's physical memory)
	noCheck   bool         // simulator: no verbs-usage checker
	// Simulator: the queue-pair numbering of the first run of each point
	// (sim.Config.QPNumbering) and how many numberings, from it on, each
	// point runs under (bench's --qp-numbering, --numberings; 0 means 1).
	qpNumbering uint64
	numberings  int
	// The simulator's network (--topology, --routing, --placement, ...)
	// and, once built, its wiring.
	net      netFlags
	netSpec  netspec.Spec
	netBuilt *netbuild.Built
}

func benchCmd() *cobra.Command {
	var f benchFlags
	cmd := &cobra.Command{
		Use:   "bench TEST",
		Short: "perftest-style microbenchmark: " + strings.Join(perftest.Tests, ", "),
		Long: `bench runs one microbenchmark in the style of perftest (ib_send_bw, ib_write_bw,
ib_read_bw, ib_send_lat, ib_write_lat, ib_read_lat) plus alltoall_bw, in which every
node sends to every other node, ebb, the effective bisection bandwidth of random
bisections, shift_bw, the shift permutations of an ordered all-to-all one stage at a
time (stage d: node i sends to node i+d; -n stages spread over the distances, default
every one), and read_swarm and write_swarm, the two-node form of
the rc-swarm benchmark (Kalia et al.): --threads threads per node keep --window
operations each in flight on queue pairs chosen at random, which is what shows a
NIC's queue-pair context cache (perftest's one posting thread keeps up with it).
Flags follow perftest's; the table is in Gb/s.
--output plain prints perftest's own report (its preamble, tables and columns), so
that scripts written for perftest's output read it (docs/bench.md); perftest's
atomic tests are refused (the fabric contract has no atomic operations).

Bandwidth tests pair node 2i (client) with node 2i+1 (server) and report the mean
over pairs. The "bound" column is the link's payload rate after line encoding and
per-packet headers for that message size.`,
		Example: `  explore bench send_bw -s 65536 --profile edr-cx4
  explore bench read_swarm -s 32 --threads 8 --sweep-qps --profile edr-cx4   # the READ rate against queue pairs: the NIC's context cache
  explore bench read_bw -a
  explore bench send_lat -s 8 --json
  explore bench write_lat -a --output plain | awk '/^ *8 /{print $8}'   # perftest's 99% percentile
  explore bench alltoall_bw --nodes 8 -s 4096
  explore bench shift_bw --nodes 64 --topology fat-tree --radix 8 --routing minhop`,
		Args:              benchArgs,
		ValidArgsFunction: fixed(tests),
		RunE: func(cmd *cobra.Command, args []string) error {
			f.cfg.Test = args[0]
			for _, name := range []string{"size", "iters", "qp", "tx-depth", "rx-depth", "cq-mod"} {
				fl := cmd.Flags().Lookup(name)
				if v, _ := strconv.Atoi(fl.Value.String()); fl.Changed && v < 1 {
					return fmt.Errorf("-%s %d: must be at least 1", fl.Shorthand, v)
				}
			}
			if err := checkOutput(&f); err != nil {
				return err
			}
			if err := f.pt.check(cmd, &f); err != nil {
				return err
			}
			switch {
			case f.jsonOut && cmd.Flags().Changed("output"):
				return fmt.Errorf("--json and --output %s both choose what is printed: give one", f.output)
			case cmd.Flags().Changed("duration") && f.duration <= 0:
				return fmt.Errorf("-D %v: give a positive duration (e.g. -D 5 or -D 10ms), or leave -D out to run -n messages", f.duration)
			case f.duration != 0 && (f.all || f.sweepQPs):
				return fmt.Errorf("-D with -a or --sweep-qps: every run would last -D; give -n, or run one size and QP count per invocation")
			case f.numberings < 1:
				return fmt.Errorf("--numberings %d: must be at least 1", f.numberings)
			case f.qpNumbering > math.MaxUint64-uint64(f.numberings-1):
				return fmt.Errorf("--qp-numbering %d with --numberings %d: the numberings would pass the largest, %d; start lower", f.qpNumbering, f.numberings, uint64(math.MaxUint64))
			case f.numberings > 1 && (strings.HasSuffix(f.cfg.Test, "_lat") || f.cfg.Test == "reg_mr"):
				return fmt.Errorf("--numberings with %s: it compares message rates over many queue pairs; latency tests and reg_mr use one queue pair or none", f.cfg.Test)
			case f.numberings > 1 && f.perftestText():
				return fmt.Errorf("--numberings with --output %s: perftest's layout has no column for the range over numberings; use the table or --json", f.output)
			case f.hw.backend != "sim" && (f.numberings > 1 || f.qpNumbering != 0):
				return fmt.Errorf("--qp-numbering and --numberings choose the simulator's queue-pair numbers; the %s backend gets its numbers from the driver: drop them", f.hw.backend)
			case f.gbits && f.output != "plain" && f.output != "bandwidth":
				return fmt.Errorf("--report_gbits applies to --output plain and bandwidth (the table is in Gb/s already)")
			}
			var err error
			if f.netSpec, err = f.net.spec(cmd.Flags().Changed); err != nil {
				return err
			}
			if f.hw.backend != "sim" && !f.netSpec.IsSingle() {
				return fmt.Errorf("--topology chooses the simulator's network; the %s backend runs on the network it has: drop it", f.hw.backend)
			}
			f.cfg.Duration = fabric.Duration(f.duration)
			f.cfg.Margin = fabric.Duration(f.margin)
			if cmd.Flags().Changed("margin") && f.margin == 0 {
				f.cfg.Margin = perftest.NoMargin
			}
			f.errw, f.cmd = cmd.ErrOrStderr(), cmd
			return runBench(cmd.OutOrStdout(), &f)
		},
	}
	fl := cmd.Flags()
	fl.VarP(perftestSize{&f.cfg.Size}, "size", "s", "message size in bytes, with perftest's K or M (64K: 65536), or with a unit: 4096, 64KiB, 1MB (default 65536 for bandwidth, 2 for latency)")
	fl.IntVarP(&f.cfg.Iters, "iters", "n", 0, "messages per queue pair (default 5000 for bandwidth, 1000 for latency); ebb: random bisections (default 20); shift_bw: stages (default every distance)")
	fl.IntVarP(&f.cfg.QPs, "qp", "q", 1, "queue pairs per peer")
	fl.StringVarP(&f.conn, "connection", "c", "RC", "transport: RC, UC or UD")
	fl.IntVarP(&f.cfg.TxDepth, "tx-depth", "t", 128, "outstanding sends per queue pair")
	fl.IntVarP(&f.cfg.RxDepth, "rx-depth", "r", 512, "receives posted per queue pair")
	fl.IntVarP(&f.cfg.CQMod, "cq-mod", "Q", 100, "signal one send in this many")
	fl.IntVarP(&f.cfg.Inline, "inline-size", "I", 220, "largest message sent inline")
	fl.BoolVarP(&f.all, "all", "a", false, "run every size from 2 bytes to 8 MiB, as perftest (powers of two; UD: to the MTU; reg_mr: 4 KiB to 1 GiB)")
	fl.StringVar(&f.cfg.Schedule, "schedule", "", "alltoall_bw: random (whole messages, random targets) or rr (round-robin phases with a barrier); default spreads over every queue pair")
	fl.IntVar(&f.cfg.Window, "window", 0, "alltoall_bw with --schedule: messages in flight per node (default 2); read_swarm, write_swarm: operations in flight per thread (default 16)")
	fl.IntVar(&f.cfg.Threads, "threads", 0, "read_swarm, write_swarm: issuing threads per node, each with its own completion queue and share of the -q queue pairs (default 8, at most -q)")
	fl.IntVar(&f.cfg.Burst, "burst", 8, "alltoall_bw --schedule rr: messages per target and phase")
	fl.BoolVar(&f.sweepQPs, "sweep-qps", false, "run every queue-pair count from 1 to 4096 (powers of two)")
	fl.Uint64Var(&f.qpNumbering, "qp-numbering", 0, "simulator: the queue-pair numbers each NIC hands out (0: from 0x100 on every node, the numbering the profiles were fitted with; k > 0: a base per node drawn from k), which decide the queue pairs that share a set of the NIC's context cache")
	fl.IntVar(&f.numberings, "numberings", 1, "simulator: run each point under this many queue-pair numberings (--qp-numbering and the next ones) and print the median and range of each rate")
	fl.BoolVar(&f.cfg.Interleave, "interleave", false, "post one request per queue pair in turn (as a shuffle does), not a window per queue pair (perftest)")
	fl.IntVar(&f.cfg.Spread, "spread", 0, "write_bw, read_bw: target random offsets in a remote region of this many bytes (exposes the NIC's translation cache)")
	fl.StringVar(&f.output, "output", "table", "table; plain: perftest's report, its preamble and tables (bandwidth in MiB/sec, 2^20 bytes, unless --report_gbits), for awk and scripts (docs/bench.md); or perftest's bandwidth, message_rate or latency: one number per size")
	fl.BoolVar(&f.gbits, "report_gbits", false, "with --output plain or bandwidth: bandwidth in Gb/sec, as perftest's --report_gbits")
	fl.VarP(&f.duration, "duration", "D", "run each test for this long instead of -n messages (perftest's duration mode; whole seconds as perftest, or a Go duration such as 10ms; simulated time on the simulator)")
	fl.VarP(&f.margin, "margin", "f", "with -D: leave this much out of the measurement at each end (default a quarter of -D; 0 measures it all)")
	f.net.register(fl)
	fl.BoolVar(&f.noCheck, "no-check", false, "simulator: turn the verbs-usage checker off (faster, same result; misuse of the verbs goes unreported)")
	fl.BoolVar(&f.mem.off, "no-memory-check", false, "run even when the simulated cluster's estimated memory exceeds the machine's physical memory (or --max-memory)")
	fl.Var(byteSize{&f.mem.max}, "max-memory", "refuse a run whose estimated memory exceeds this, e.g. 8GiB (default: the machine's physical memory)")
	addCommonFlagsShort(cmd, &f, true)
	f.pt.register(fl, &f.cfg)
	setGroupedUsage(cmd, benchGroups())
	return cmd
}

func addCommonFlags(cmd *cobra.Command, f *benchFlags) { addCommonFlagsShort(cmd, f, false) }

// addCommonFlagsShort is addCommonFlags with perftest's one-letter names
// for the hardware flags when perftest is set.
func addCommonFlagsShort(cmd *cobra.Command, f *benchFlags, perftest bool) {
	fl := cmd.Flags()
	fl.IntVar(&f.nodes, "nodes", 2, "cluster size")
	fl.StringVar(&f.profile, "profile", sim.DefaultProfileName, "hardware profile: a built-in name ("+strings.Join(sim.BuiltinProfiles(), ", ")+") or a .yaml path")
	fl.Uint64Var(&f.seed, "seed", 1, "random seed of the simulated run")
	fl.BoolVar(&f.jsonOut, "json", false, "print one JSON record per line instead of a table")
	fl.BoolVar(&f.payload, "payload", false, "move every payload byte (default: size-only, headers and trailers only)")
	f.hw.registerShort(fl, perftest)
}

func parseConn(s string) (fabric.QPType, error) {
	switch strings.ToUpper(s) {
	case "RC":
		return fabric.RC, nil
	case "UC":
		return fabric.UC, nil
	case "UD":
		return fabric.UD, nil
	}
	return 0, fmt.Errorf("-c %q: transport must be RC, UC or UD", s)
}

// benchRow is one finished benchmark with what the table shows beside it.
type benchRow struct {
	cfg   perftest.Config // normalized
	res   *perftest.Result
	bound float64
	wall  time.Duration
	stats sim.Stats
}

func runBench(w io.Writer, f *benchFlags) error {
	conn, err := parseConn(f.conn)
	if err != nil {
		return err
	}
	f.cfg.Conn = conn
	if f.hw.backend != "sim" && f.noCheck {
		return fmt.Errorf("--no-check turns off the simulator's verbs-usage checker; the %s backend has none: drop the flag", f.hw.backend)
	}
	if f.hw.backend != "sim" {
		return runHWBench(w, f)
	}
	if sl := f.hw.path.ServiceLevel; sl < 0 || sl > 15 {
		return fmt.Errorf("--service-level %d: a service level is 0..15", sl)
	}
	f.cfg.SL = uint8(f.hw.path.ServiceLevel)
	prof, err := sim.LoadProfile(f.profile)
	if err != nil {
		return err
	}
	if f.netBuilt, err = f.net.build(f.netSpec, f.nodes, prof, f.seed); err != nil {
		return err
	}
	if f.netBuilt.FellBack != "" {
		fmt.Fprintf(f.errw, "routing: %s; minhop computed the tables instead, as OpenSM does\n", f.netBuilt.FellBack)
	}
	sizes := []int{f.cfg.Size}
	if f.all {
		mtu := prof.Link.MTU
		if f.cfg.MTU > 0 {
			mtu = min(mtu, f.cfg.MTU)
		}
		sizes = perftest.AllSizes(f.cfg.Test, conn, mtu)
	}
	qps := []int{f.cfg.QPs}
	if f.sweepQPs {
		qps = nil
		for q := 1; q <= 4096; q *= 2 {
			qps = append(qps, q)
		}
	}
	type point struct {
		size, qps int
		numbering uint64
	}
	var points []point
	for _, s := range sizes {
		for _, q := range qps {
			for k := range uint64(max(f.numberings, 1)) {
				points = append(points, point{s, q, f.qpNumbering + k})
			}
		}
	}
	t := newTask(f.errw, "bench "+f.cfg.Test, "runs", len(points))
	defer t.finish()
	f.task = t
	w = t.writer(w)     // --json prints records as they come: clear the progress line first
	var rows []benchRow // guarded by t.mu: an interrupt prints them
	show := func(rows []benchRow) error {
		switch {
		case f.jsonOut:
		case f.output == "plain":
			return printPlain(w, f, rows)
		case f.perftestText():
			return printValues(w, f, rows)
		case f.numberings > 1:
			return printNumberings(w, f, prof, rows)
		default:
			return printBench(w, f, prof, rows)
		}
		return nil
	}
	t.flush = func() {
		t.mu.Lock()
		done := rows
		t.mu.Unlock()
		if len(done) > 0 && !f.jsonOut {
			fmt.Fprintf(f.errw, "\n%d of %d runs finished:\n", len(done), len(points))
			show(done)
		}
	}
	for _, pt := range points {
		cfg := f.cfg
		cfg.Size, cfg.QPs = pt.size, pt.qps
		if err := cfg.Normalize(f.nodes); err != nil {
			return err
		}
		if limit, ok, err := f.mem.single(experiments.PhysicalMemory); err != nil {
			return err
		} else if ok {
			if err := experiments.CheckBenchMemory(cfg, f.nodes, f.payload, limit); err != nil {
				return err
			}
		}
		row, err := benchOnce(cfg, f, prof, pt.numbering)
		if err != nil {
			return err
		}
		warnMTU(f, row)
		if f.jsonOut {
			if err := json.NewEncoder(w).Encode(stampBench(row.res)); err != nil {
				return err
			}
		}
		t.mu.Lock()
		rows = append(rows, row)
		t.resume = "the finished runs are printed above; bench keeps nothing between invocations, so a rerun starts over (narrow -a or --sweep-qps with -s or -q to run only the rest)"
		t.mu.Unlock()
		t.step(1, "")
	}
	t.finish()
	return show(rows)
}

func benchOnce(cfg perftest.Config, f *benchFlags, prof *sim.Profile, numbering uint64) (benchRow, error) {
	sc := sim.Config{Nodes: f.nodes, Profile: prof, Seed: f.seed, SizeOnly: !f.payload, NoCheck: f.noCheck, QPNumbering: numbering}
	if f.netBuilt != nil {
		sc.Fabric = f.netBuilt.Fabric
	}
	if f.task != nil {
		f.task.setDetail(fmt.Sprintf("-s %d -q %d", cfg.Size, cfg.QPs))
		sc.Progress = f.task.sim(fmt.Sprintf("-s %d -q %d", cfg.Size, cfg.QPs))
	}
	if est, err := experiments.EstimateBenchMemory(cfg, f.nodes, f.payload); err == nil && est.GCPercent > 0 {
		defer debug.SetGCPercent(debug.SetGCPercent(est.GCPercent))
	}
	c, err := sim.New(sc)
	if err != nil {
		return benchRow{}, err
	}
	defer c.Close()
	t0 := time.Now()
	res, err := perftest.Run(c, cfg)
	if err != nil {
		return benchRow{}, err
	}
	res.Profile, res.ProfileHash, res.QPNumbering = prof.Name, prof.Hash(), numbering
	res.Network = f.netSpec.String()
	if prof.Source() != "builtin" {
		res.Profile = "file:" + prof.Source()
	}
	op := map[string]fabric.Opcode{"write_bw": fabric.OpWrite, "write_lat": fabric.OpWrite, "read_bw": fabric.OpRead}[cfg.Test]
	return benchRow{cfg: cfg, res: res, bound: sim.GoodputBound(prof, cfg.Conn, op, cfg.Size), wall: time.Since(t0), stats: c.Stats()}, nil
}

// shiftStagesLine says how many of a shift_bw run's stages fell below 90%
// of one pair alone and names the slowest few, by distance.
func shiftStagesLine(x *perftest.Result) string {
	if x.PairGbps <= 0 || len(x.ShiftStages) == 0 {
		return ""
	}
	st := slices.Clone(x.ShiftStages)
	slices.SortStableFunc(st, func(a, b perftest.ShiftStage) int { return cmp.Compare(a.MeanGbps, b.MeanGbps) })
	slow := 0
	for _, s := range st {
		if s.MeanGbps < 0.9*x.PairGbps {
			slow++
		}
	}
	var names []string
	for _, s := range st[:min(5, len(st))] {
		names = append(names, fmt.Sprintf("distance %d at %.2f (lowest node %.2f)", s.Distance, s.MeanGbps, s.MinGbps))
	}
	return wrapText(fmt.Sprintf("%d of %d stages below 90%% of one pair; slowest, Gb/s per node: %s", slow, len(st), strings.Join(names, ", ")), tableWidth(), "  ") + "\n"
}

func printBench(w io.Writer, f *benchFlags, prof *sim.Profile, rows []benchRow) error {
	r0 := rows[0].res
	fmt.Fprintf(w, "%s on %s (%s, %.2f Gb/s data rate, MTU %d), %d nodes, %s, seed %d\n",
		r0.Test, prof.Name, r0.Backend, prof.DataRateBps()/1e9, prof.Link.MTU, r0.Nodes, r0.Conn, f.seed)
	if r0.RunS > 0 {
		fmt.Fprintln(w, wrapText(fmt.Sprintf("duration mode: each run lasted %v and was measured over the %v in its middle (a margin of %v at each end); #iterations counts what completed then, and BW peak is not measured, as in perftest",
			secs(r0.RunS), secs(r0.RunS-2*r0.MarginS), secs(r0.MarginS)), tableWidth(), "  "))
	}
	if r0.Network != "" {
		fmt.Fprintln(w, wrapText(fmt.Sprintf("network: %s (%s)", f.netBuilt.Name, f.netSpec.Brief()), tableWidth(), "  "))
		fmt.Fprint(w, inOrderNote(f.netSpec, prof, rows[0].cfg.Conn))
		if f.netSpec.HostLink.IsZero() { // slow hosts asked for need no note
			fmt.Fprint(w, speedNote(f.netBuilt.Fabric.Topology, prof))
		}
	}
	t := newWrappedTable(w)
	if r0.Test == "ebb" {
		t.Header("#bytes", "#patterns", "one pair[Gb/sec]", "mean[Gb/sec]", "lowest[Gb/sec]", "ebb")
		for _, r := range rows {
			x := r.res
			t.Append(fmt.Sprint(x.Bytes), fmt.Sprint(x.Iterations), f2(x.EBBPairGbps), f2(x.BWAvgGbps), f2(x.EBBMinGbps), fmt.Sprintf("%.3f", x.EBB))
		}
	} else if r0.Test == "shift_bw" {
		t.Header("#bytes", "#stages", "one pair[Gb/sec]", "mean[Gb/sec]", "slowest stage[Gb/sec]", "fastest stage[Gb/sec]", "slowest/pair")
		for _, r := range rows {
			x := r.res
			t.Append(fmt.Sprint(x.Bytes), fmt.Sprint(x.Iterations), f2(x.PairGbps), f2(x.BWAvgGbps), f2(x.ShiftLowGbps), f2(x.ShiftHighGbps),
				fmt.Sprintf("%.3f", x.ShiftLowGbps/x.PairGbps))
		}
	} else if r0.RunS > 0 && strings.HasSuffix(r0.Test, "_lat") {
		// Spaces before the units let the headers wrap within the
		// terminal (--output plain keeps perftest's headers).
		t.Header("#bytes", "#iterations", "t_avg [usec]", "tps average", "t_min [usec]", "t_typical [usec]", "t_99% [usec]", "t_max [usec]")
		for _, r := range rows {
			x := r.res
			t.Append(fmt.Sprint(x.Bytes), fmt.Sprint(x.Iterations), f2(x.TAvgUS), f2(x.TPS), f2(x.TMinUS), f2(x.TTypicalUS), f2(x.TP99US), f2(x.TMaxUS))
		}
	} else if strings.HasSuffix(r0.Test, "_lat") || r0.Test == "reg_mr" {
		t.Header("#bytes", "#iterations", "t_min [usec]", "t_typical [usec]", "t_avg [usec]", "t_99% [usec]", "t_max [usec]")
		for _, r := range rows {
			x := r.res
			t.Append(fmt.Sprint(x.Bytes), fmt.Sprint(x.Iterations), f2(x.TMinUS), f2(x.TTypicalUS), f2(x.TAvgUS), f2(x.TP99US), f2(x.TMaxUS))
		}
	} else {
		t.Header("#bytes", "#qps", "#iters", "peak Gb/s", "avg Gb/s", "M msg/s", "bound Gb/s", "avg/bound")
		for _, r := range rows {
			x := r.res
			peak := f2(x.BWPeakGbps)
			if x.RunS > 0 {
				peak = "-"
			}
			t.Append(fmt.Sprint(x.Bytes), fmt.Sprint(x.QPs), fmt.Sprint(x.Iterations), peak, f2(x.BWAvgGbps),
				fmt.Sprintf("%.3f", x.MsgRateMpps), f2(r.bound), fmt.Sprintf("%.1f%%", 100*x.BWAvgGbps/r.bound))
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	if r0.Test == "shift_bw" {
		for _, r := range rows {
			fmt.Fprint(w, shiftStagesLine(r.res))
		}
	}
	printFalls(w, rows)
	if f.sweepQPs && len(rows) > 1 && rows[0].res.MsgRateMpps > 0 {
		fmt.Fprintln(w, wrapText("(one queue-pair numbering: near a context cache's capacity the rate depends on which queue pairs share a set; --numberings 8 gives the median and range)", tableWidth(), " "))
	}
	var wall time.Duration
	var pkts int64
	for _, r := range rows {
		wall += r.wall
		pkts += r.stats.PacketsSent
	}
	fmt.Fprintf(w, "simulated %d packets in %.2fs of wall time (%.2f M packets/s)\n", pkts, wall.Seconds(), float64(pkts)/wall.Seconds()/1e6)
	return nil
}

// printNumberings prints bandwidth rows run under several queue-pair
// numberings (--numberings): one line per size and QP count, with the
// median of the numberings' rates and the range of the message rate.
func printNumberings(w io.Writer, f *benchFlags, prof *sim.Profile, rows []benchRow) error {
	r0 := rows[0].res
	fmt.Fprintln(w, wrapText(fmt.Sprintf("%s on %s (%s, %.2f Gb/s data rate, MTU %d), %d nodes, %s, seed %d, queue-pair numberings %d to %d (median and range over them)",
		r0.Test, prof.Name, r0.Backend, prof.DataRateBps()/1e9, prof.Link.MTU, r0.Nodes, r0.Conn, f.seed, f.qpNumbering, f.qpNumbering+uint64(f.numberings)-1), tableWidth(), "  "))
	t := newWrappedTable(w)
	t.Header("#bytes", "#qps", "#iters", "numberings", "avg Gb/s", "M msg/s", "M msg/s min", "M msg/s max", "bound Gb/s", "avg/bound")
	for _, g := range byPoint(rows) {
		x, bw, rate := g[0].res, make([]float64, len(g)), make([]float64, len(g))
		for i, r := range g {
			bw[i], rate[i] = r.res.BWAvgGbps, r.res.MsgRateMpps
		}
		m, mr := evidence.Median(bw), evidence.Median(rate) // sorts rate: its ends are the range
		t.Append(fmt.Sprint(x.Bytes), fmt.Sprint(x.QPs), fmt.Sprint(x.Iterations), fmt.Sprint(len(g)), f2(m),
			fmt.Sprintf("%.3f", mr), fmt.Sprintf("%.3f", rate[0]), fmt.Sprintf("%.3f", rate[len(rate)-1]),
			f2(g[0].bound), fmt.Sprintf("%.1f%%", 100*m/g[0].bound))
	}
	if err := t.Render(); err != nil {
		return err
	}
	printFalls(w, rows)
	var wall time.Duration
	for _, r := range rows {
		wall += r.wall
	}
	fmt.Fprintf(w, "%d runs in %.2fs of wall time\n", len(rows), wall.Seconds())
	return nil
}

// byPoint groups rows by message size and QP count, in the order they ran
// (a point's numberings run one after another).
func byPoint(rows []benchRow) [][]benchRow {
	var gs [][]benchRow
	for _, r := range rows {
		if n := len(gs); n > 0 && gs[n-1][0].res.Bytes == r.res.Bytes && gs[n-1][0].res.QPs == r.res.QPs {
			gs[n-1] = append(gs[n-1], r)
		} else {
			gs = append(gs, []benchRow{r})
		}
	}
	return gs
}

// printFalls prints fallLines.
func printFalls(w io.Writer, rows []benchRow) {
	for _, l := range fallLines(rows) {
		fmt.Fprintln(w, l)
	}
}

// fallLines says, for each message size run at more than one QP count
// (--sweep-qps), how far the message rate falls at most between
// consecutive counts: the median over numberings, and, under several
// numberings, the least and the most that one numbering alone falls. A
// rate that rises counts as no fall (1x); a pair with a zero rate (a run
// that moved nothing) is left out; a numbering missing from a point (an
// interrupted sweep) is compared only where it ran. Latency tests have no
// message rate and get no line.
func fallLines(rows []benchRow) []string {
	var out []string
	gs := byPoint(rows)
	for i := 0; i < len(gs); {
		j := i + 1
		for j < len(gs) && gs[j][0].res.Bytes == gs[i][0].res.Bytes {
			j++
		}
		size := gs[i:j:j]
		i = j
		if len(size) < 2 || size[0][0].res.MsgRateMpps == 0 {
			continue
		}
		// ratio is a's rate over b's, 1 when b's is not lower, 0 when
		// either moved nothing.
		ratio := func(a, b float64) float64 {
			if a <= 0 || b <= 0 {
				return 0
			}
			return max(a/b, 1)
		}
		fall, at := 0.0, 0
		least, most := len(size[0]), len(size[0])
		for k := 1; k < len(size); k++ {
			if r := ratio(medianRate(size[k-1]), medianRate(size[k])); r > fall {
				fall, at = r, k
			}
			least, most = min(least, len(size[k])), max(most, len(size[k]))
		}
		var l string
		switch {
		case at == 0:
			l = fmt.Sprintf("-s %d: no two consecutive QP counts both moved messages", size[0][0].res.Bytes)
		case fall > 1:
			l = fmt.Sprintf("-s %d: the message rate falls by at most %.2fx between consecutive QP counts (%d -> %d QPs)",
				size[0][0].res.Bytes, fall, size[at-1][0].res.QPs, size[at][0].res.QPs)
		default:
			l = fmt.Sprintf("-s %d: the message rate does not fall between consecutive QP counts", size[0][0].res.Bytes)
		}
		if most > 1 {
			n := fmt.Sprint(most)
			if least < most {
				n = fmt.Sprintf("%d to %d", least, most)
			}
			lo, hi := math.Inf(1), 0.0
			for u := range most {
				one, pairs := 1.0, 0
				for k := 1; k < len(size); k++ {
					if u < len(size[k]) && u < len(size[k-1]) {
						if r := ratio(size[k-1][u].res.MsgRateMpps, size[k][u].res.MsgRateMpps); r > 0 {
							one, pairs = max(one, r), pairs+1
						}
					}
				}
				if pairs > 0 {
					lo, hi = min(lo, one), max(hi, one)
				}
			}
			l += fmt.Sprintf(" for the median of %s numberings", n)
			switch {
			case hi == 0:
			case hi <= 1:
				l += "; no numbering alone falls"
			default:
				l += fmt.Sprintf("; each numbering alone falls by at most %.2fx to %.2fx", lo, hi)
			}
		}
		out = append(out, l)
	}
	return out
}

// medianRate is the median message rate of one point's runs.
func medianRate(g []benchRow) float64 {
	r := make([]float64, len(g))
	for i, x := range g {
		r[i] = x.res.MsgRateMpps
	}
	return evidence.Median(r)
}

func f2(v float64) string { return fmt.Sprintf("%.2f", v) }

// secs prints seconds as a duration (2.5ms).
func secs(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }

func profilesCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "profiles",
		Short: "List the built-in hardware profiles",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w := cmd.OutOrStdout()
			t := newWrappedTable(w)
			t.Header("profile", "data rate[Gb/s]", "MTU", "switch[ns]", "NIC tx+rx[ns]", "cores", "GHz")
			var about []string
			for _, name := range sim.BuiltinProfiles() {
				p, err := sim.LoadProfile(name)
				if err != nil {
					return err
				}
				t.Append(p.Name, f2(p.DataRateBps()/1e9), fmt.Sprint(p.Link.MTU), fmt.Sprint(p.Switch.LatencyNS),
					fmt.Sprint(p.NIC.TxLatencyNS+p.NIC.RxLatencyNS), fmt.Sprint(p.Host.Cores), fmt.Sprint(p.Host.GHz))
				about = append(about, wrapText(p.Name+": "+p.Description, tableWidth(), "  "))
			}
			if err := t.Render(); err != nil {
				return err
			}
			fmt.Fprintln(w, strings.Join(about, "\n"))
			fmt.Fprintln(w, "Sources for every number: docs/model.md. Load your own with --profile path/to/profile.yaml.")
			return nil
		},
	}
}

// runHWBench runs one benchmark (with -a, one per size) on real hardware
// and prints this process's measurements (in a job of one process per
// node, every process prints what its node measured).
func runHWBench(w io.Writer, f *benchFlags) error {
	if f.sweepQPs {
		return fmt.Errorf("--sweep-qps runs on the simulator only; on hardware run one QP count per invocation")
	}
	cfg := f.cfg
	if f.all {
		cfg.Size = 2 // the sizes come from the device's MTU once it is open
	}
	if err := cfg.Normalize(f.nodes); err != nil {
		return err
	}
	if err := f.pt.applyPort(f.cmd); err != nil {
		return err
	}
	size := fmt.Sprint(cfg.Size)
	if f.all {
		size = "all"
	}
	fab, err := f.hw.open(f.nodes, fmt.Sprintf("bench %s %s %d %d", cfg.Test, size, cfg.QPs, f.nodes))
	if err != nil {
		return err
	}
	defer fab.Close()
	if fab.Size() != f.nodes {
		return fmt.Errorf("--nodes %d but the job has %d nodes", f.nodes, fab.Size())
	}
	sizes := []int{cfg.Size}
	if f.all {
		mtu := fab.Local()[0].Device().Attr().MTU
		if cfg.MTU > 0 {
			mtu = min(mtu, cfg.MTU)
		}
		sizes = perftest.AllSizes(cfg.Test, cfg.Conn, mtu)
	}
	var rows []benchRow
	for _, s := range sizes {
		c := f.cfg
		c.Size = s
		if err := c.Normalize(f.nodes); err != nil {
			return err
		}
		res, err := perftest.Run(fab, c)
		if err != nil {
			return err
		}
		res.Profile = "hardware"
		row := benchRow{cfg: c, res: res}
		warnMTU(f, row)
		if f.jsonOut {
			if err := json.NewEncoder(w).Encode(stampBench(res)); err != nil {
				return err
			}
		}
		rows = append(rows, row)
	}
	switch {
	case f.jsonOut:
		return nil
	case f.output == "plain":
		return printPlain(w, f, rows)
	case f.perftestText():
		return printValues(w, f, rows)
	}
	t := newWrappedTable(w)
	t.Header("test", "#bytes", "#qps", "#iters", "peak Gb/s", "avg Gb/s", "M msg/s", "t_typical us")
	for _, r := range rows {
		res := r.res
		t.Append(res.Test, fmt.Sprint(res.Bytes), fmt.Sprint(res.QPs), fmt.Sprint(res.Iterations), f2(res.BWPeakGbps), f2(res.BWAvgGbps),
			fmt.Sprintf("%.3f", res.MsgRateMpps), f2(res.TTypicalUS))
	}
	return t.Render()
}

// stampBench adds the build's provenance to a benchmark record.
func stampBench(r *perftest.Result) *perftest.Result {
	b := buildinfo.Get()
	r.Version, r.Commit, r.GoVersion = b.Version, b.Commit, b.Go
	return r
}

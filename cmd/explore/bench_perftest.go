package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/host"
	"github.com/rdmashuffle/rdmashuffle/fabric/perftest"
)

// perftestFlags are perftest's flags that bench takes besides the ones it
// has always had (-s, -n, -q, -c, -t, -r, -Q, -I, -a, -D, -f, -d, -i, -x,
// -S, --report_gbits): each works as in perftest (linux-rdma/perftest
// 26.04.17, src/perftest_parameters.c) or is refused with what to use
// instead. docs/bench.md lists them.
type perftestFlags struct {
	tcpPort   int  // -p, --port: the TCP port of the out-of-band connection
	qpTimeout int  // -u, --qp-timeout
	cpuFreq   bool // -F: perftest's "no cpufreq warning"; there is none to give
	unsorted  bool // -U
	histogram bool // -H
	cycles    bool // -C: refused
	both      bool // --report-both
	// Refused: there is no such path here.
	rdmaCM, events, runInfinitely, cpuUtil bool
}

// register registers the flags on fl, the options among them into cfg.
func (p *perftestFlags) register(fl *pflag.FlagSet, cfg *perftest.Config) {
	fl.IntVarP(&p.tcpPort, "port", "p", 0, "ibv, tcp (one process per node): the TCP port node 0 listens on for the job's out-of-band connection, as perftest's -p (default: $RDMASHUFFLE_PORT, Slurm's reserved port, else 17219); the device port is -i")
	fl.BoolVarP(&cfg.Bidirectional, "bidirectional", "b", false, "send_bw, write_bw, read_bw: both nodes of a pair send; the bandwidth is the sum of the two directions, as perftest's")
	fl.BoolVarP(&cfg.NoPeak, "noPeak", "N", false, "bandwidth tests: do not measure the peak (printed 0)")
	fl.IntVarP(&cfg.MTU, "mtu", "m", 0, "path MTU of the RC and UC queue pairs: 256, 512, 1024, 2048 or 4096 bytes (above the port's active MTU: the port's, as perftest); over UD it bounds the message size (default: the port's active MTU)")
	fl.IntVarP(&cfg.Outs, "outs", "o", 0, "read_bw, read_lat: RDMA Reads in flight per queue pair (default 16)")
	fl.IntVarP(&p.qpTimeout, "qp-timeout", "u", 14, "RC queue pairs' ACK timeout code, 4.096 us * 2^code (0: none)")
	fl.IntVarP(&cfg.PostList, "post-list", "l", 0, "post at most this many requests per post call (default: every request a queue pair has room for, up to -t)")
	fl.BoolVarP(&p.cpuFreq, "CPU-freq", "F", false, "accepted for perftest's scripts: it silences a CPU-frequency warning that bench never gives")
	fl.BoolVarP(&p.unsorted, "report-unsorted", "U", false, "latency tests with --output plain: list every sample in the order taken, as perftest")
	fl.BoolVarP(&p.histogram, "report-histogram", "H", false, "latency tests with --output plain: list the samples the figures are made of, sorted, as perftest")
	fl.BoolVarP(&p.cycles, "report-cycles", "C", false, "refused: bench reports microseconds")
	fl.BoolVar(&p.both, "report-both", false, "with -b and --output plain: print each direction's results after their sum, as perftest")
	fl.BoolVarP(&p.rdmaCM, "rdma_cm", "R", false, "refused: queue pairs connect through the out-of-band exchange")
	fl.BoolVarP(&p.events, "events", "e", false, "refused: completions are polled")
	fl.BoolVar(&p.runInfinitely, "run_infinitely", false, "refused: give -D")
	fl.BoolVar(&p.cpuUtil, "cpu_util", false, "refused: bench measures no CPU utilisation")
	// perftest's spellings of flags bench names otherwise.
	fl.IntVar(&cfg.PostList, "post_list", 0, "perftest's name for --post-list")
	fl.IntVar(&cfg.Inline, "inline_size", 220, "perftest's name for --inline-size")
	fl.BoolVar(&p.histogram, "report-histogrm", false, "perftest's own spelling of --report-histogram")
	for _, alias := range []string{"post_list", "inline_size", "report-histogrm"} {
		fl.MarkHidden(alias)
	}
}

// refusals are perftest's flags bench has no way to honour, each with
// what to do instead.
func (p *perftestFlags) refusals() []struct {
	on  bool
	msg string
} {
	return []struct {
		on  bool
		msg string
	}{
		{p.rdmaCM, "-R (--rdma_cm): bench connects its queue pairs through its out-of-band exchange, as perftest does without -R (its 'Data ex. method : Ethernet'); there is no rdma_cm path: drop -R"},
		{p.events, "-e (--events): bench polls its completion queues, as perftest does without -e; it has no completion-event mode: drop -e"},
		{p.cycles, "-C (--report-cycles): bench reports microseconds only (a simulated thread has no cycle counter); cycles are microseconds times the clock in MHz (the profile's host GHz x 1000): drop -C"},
		{p.runInfinitely, "--run_infinitely: bench does not run for ever; -D runs a test for a set time and reports it, as perftest's duration mode: give -D"},
		{p.cpuUtil, "--cpu_util: bench measures no CPU utilisation (perftest reads /proc/stat over a -D run); explore run --json reports the threads' idle fractions (sender_idle, receiver_idle): drop --cpu_util"},
	}
}

// check refuses perftest's flags bench cannot honour and those given
// where perftest refuses them too, and sets cfg's ACK timeout.
func (p *perftestFlags) check(cmd *cobra.Command, f *benchFlags) error {
	for _, r := range p.refusals() {
		if r.on {
			return fmt.Errorf("%s", r.msg)
		}
	}
	test, plain := f.cfg.Test, f.output == "plain"
	lat := strings.HasSuffix(test, "_lat")
	switch {
	case f.cfg.NoPeak && !strings.HasSuffix(test, "_bw"):
		return fmt.Errorf("-N (--noPeak) applies to bandwidth tests, as in perftest; %s has no peak", test)
	case (p.unsorted || p.histogram) && !lat:
		return fmt.Errorf("-U and -H list latency samples, as in perftest: they apply to send_lat, write_lat and read_lat, not %s", test)
	case (p.unsorted || p.histogram) && !plain:
		return fmt.Errorf("-U and -H list the samples in perftest's layout: add --output plain")
	case (p.unsorted || p.histogram) && f.duration != 0:
		return fmt.Errorf("-U and -H with -D: perftest's duration mode keeps no samples to list; give -n")
	case p.both && !f.cfg.Bidirectional:
		return fmt.Errorf("--report-both splits a bidirectional run into its two directions: add -b")
	case p.both && (!plain || f.all):
		return fmt.Errorf("--report-both prints perftest's local and remote tables for one size: give --output plain, without -a")
	case p.qpTimeout < 0 || p.qpTimeout > 31:
		return fmt.Errorf("-u %d: an ACK timeout code is 0..31 (4.096 us * 2^code; 0: none)", p.qpTimeout)
	}
	f.cfg.QPTimeout = p.qpTimeout
	if p.qpTimeout == 0 {
		f.cfg.QPTimeout = perftest.NoTimeout
	}
	return p.checkPort(cmd, f)
}

// checkPort refuses a -p that cannot be perftest's TCP port: one below
// 1024, which is bench's old --port (the device port, now -i), and one
// given where no process listens (the simulator, --local, loopback).
func (p *perftestFlags) checkPort(cmd *cobra.Command, f *benchFlags) error {
	if !cmd.Flags().Changed("port") {
		return nil
	}
	switch {
	case p.tcpPort > 0 && p.tcpPort < 1024:
		return fmt.Errorf("--port %d: --port is perftest's -p, the TCP port of the out-of-band connection (1024..65535); the device port is -i: give -i %d (--ib-port)", p.tcpPort, p.tcpPort)
	case p.tcpPort < 1 || p.tcpPort > 65535:
		return fmt.Errorf("--port %d: a TCP port is 1024..65535", p.tcpPort)
	case f.hw.backend == "sim" || f.hw.backend == "loopback" || f.hw.local:
		return fmt.Errorf("-p %d is the TCP port node 0 listens on for a job's other processes; with --backend %s%s every node runs in this process and they exchange in memory: drop -p",
			p.tcpPort, f.hw.backend, map[bool]string{true: " --local", false: ""}[f.hw.local])
	}
	return nil
}

// applyPort makes -p the port of the job's out-of-band connection:
// RDMASHUFFLE_PORT for this process, which the job's bootstrap reads for
// hosts given without a port. A different RDMASHUFFLE_PORT, or node 0's
// address given with another port, is refused rather than overridden.
func (p *perftestFlags) applyPort(cmd *cobra.Command) error {
	if cmd == nil || !cmd.Flags().Changed("port") {
		return nil
	}
	want := strconv.Itoa(p.tcpPort)
	if env := strings.TrimSpace(os.Getenv(host.EnvPort)); env != "" && env != want {
		return fmt.Errorf("-p %d but %s=%s: give the job one port", p.tcpPort, host.EnvPort, env)
	}
	if err := os.Setenv(host.EnvPort, want); err != nil {
		return err
	}
	b, err := host.BootstrapFromEnv()
	if err != nil {
		return err
	}
	if _, port, err := net.SplitHostPort(b.Coordinator); err == nil && port != want {
		return fmt.Errorf("-p %d but the job's layout (%s) gives node 0's address as %s: -p applies to hosts given without a port; drop one of them", p.tcpPort, b.Source, b.Coordinator)
	}
	return nil
}

// benchOutputs are --output's values: table, plain (perftest's report) and
// perftest's verbosity levels, which print one number per size.
var benchOutputs = []string{"table", "plain", "bandwidth", "message_rate", "latency"}

// checkOutput refuses an --output that is not one of benchOutputs, or a
// perftest verbosity level the test has no number for (as perftest).
func checkOutput(f *benchFlags) error {
	lat := strings.HasSuffix(f.cfg.Test, "_lat") || f.cfg.Test == "reg_mr"
	switch f.output {
	case "table", "plain":
	case "bandwidth", "message_rate":
		if lat {
			return fmt.Errorf("--output %s: %s is a latency test; --output latency prints its average", f.output, f.cfg.Test)
		}
	case "latency":
		if !lat {
			return fmt.Errorf("--output latency: %s is a bandwidth test; --output bandwidth or message_rate prints its average", f.cfg.Test)
		}
	default:
		return fmt.Errorf("--output %q: choose table, plain (perftest's report), or bandwidth, message_rate or latency (perftest's one number per size)", f.output)
	}
	return nil
}

// perftestText says whether the output is perftest's (plain or a
// verbosity level) rather than the table.
func (f *benchFlags) perftestText() bool { return f.output != "table" }

// printPlain prints rows as perftest prints them: for perftest's own
// tests its preamble (from the first row's set-up), then the table's rule
// and header, a row per size and the closing rule; with --report-both,
// each direction's table after the sum's, as perftest. The others
// (alltoall_bw, incast_bw, ebb, shift_bw, reg_mr) get the table alone.
func printPlain(w io.Writer, f *benchFlags, rows []benchRow) error {
	r0 := rows[0]
	u := perftest.MiBPerSec
	if f.gbits {
		u = perftest.GbPerSec
	}
	if perftest.IsPerftest(r0.res.Test) && r0.res.Setup != nil {
		if err := perftest.WritePreamble(w, &r0.cfg, r0.res.Setup, f.hw.gid); err != nil {
			return err
		}
	}
	lat := strings.HasSuffix(r0.res.Test, "_lat") || r0.res.Test == "reg_mr"
	header := func() error {
		if lat {
			return perftest.WriteLatHeader(w, r0.res.RunS > 0)
		}
		return perftest.WriteBWHeader(w, u)
	}
	if err := header(); err != nil {
		return err
	}
	for _, r := range rows {
		var err error
		if lat {
			err = perftest.WriteLatRow(w, r.res, perftest.LatOptions{Unsorted: f.pt.unsorted, Histogram: f.pt.histogram})
		} else {
			err = perftest.WriteBWRow(w, r.res, u)
		}
		if err != nil {
			return err
		}
	}
	if f.pt.both && len(r0.res.Sides) == 2 {
		for i, name := range []string{"Local", "Remote"} {
			fmt.Fprintf(w, "%s\n\n %s results: \n", perftest.Rule, name)
			if err := header(); err != nil {
				return err
			}
			if err := perftest.WriteBWSide(w, r0.res, r0.res.Sides[i], u); err != nil {
				return err
			}
		}
	}
	_, err := fmt.Fprintln(w, perftest.Rule)
	return err
}

// printValues prints perftest's one number per size (its --output
// bandwidth, message_rate or latency, with C's %lf): the average
// bandwidth in MiB/sec (Gb/sec with --report_gbits), the message rate in
// millions a second, or the average latency in microseconds.
func printValues(w io.Writer, f *benchFlags, rows []benchRow) error {
	u := perftest.MiBPerSec
	if f.gbits {
		u = perftest.GbPerSec
	}
	for _, r := range rows {
		var v float64
		switch x := r.res; {
		case f.output == "bandwidth":
			v = u.Of(x.BWAvgGbps)
		case f.output == "message_rate":
			v = x.MsgRateMpps
		case x.RunS > 0:
			v = x.TAvgUS
		default:
			v = perftest.Figures(x.Samples).AvgUS
		}
		if _, err := fmt.Fprintf(w, "%f\n", v); err != nil {
			return err
		}
	}
	return nil
}

// perftestSize is -s: a size in bytes with perftest's suffixes (64K is
// 65536, 1M 1048576; perftest takes only these two, in capitals), a
// number in C's notation (0x1000), or a size with a unit (64KiB, 4kB).
type perftestSize struct{ n *int }

func (f perftestSize) String() string { return strconv.Itoa(*f.n) }
func (perftestSize) Type() string     { return "bytes" }

func (f perftestSize) Set(text string) error {
	mult := int64(1)
	num := text
	switch {
	case strings.HasSuffix(text, "K"):
		mult, num = 1<<10, strings.TrimSuffix(text, "K")
	case strings.HasSuffix(text, "M"):
		mult, num = 1<<20, strings.TrimSuffix(text, "M")
	}
	if v, err := strconv.ParseInt(num, 0, 64); err == nil {
		if v < 0 || v > (1<<40)/mult {
			return fmt.Errorf("want a size in bytes, e.g. 4096, 64K or 64KiB")
		}
		*f.n = int(v * mult)
		return nil
	}
	return sizeFlag{f.n}.Set(text)
}

// benchArgs checks bench's one argument, a test; perftest's atomic tests
// are refused with what the fabric contract lacks.
func benchArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 1 && slices.Contains(perftest.AtomicTests, args[0]) {
		cfg := perftest.Config{Test: args[0]}
		return cfg.Normalize(2)
	}
	return oneOf("test", "explore bench send_bw", tests)(cmd, args)
}

// warnMTU says on standard error when -m asked for a path MTU above the
// port's active MTU and the run took the port's, as perftest does.
func warnMTU(f *benchFlags, row benchRow) {
	if s := row.res.Setup; f.cfg.MTU > 0 && s != nil && s.MTU < f.cfg.MTU && f.cfg.Conn != fabric.UD && !f.mtuWarned {
		fmt.Fprintf(f.errw, "-m %d is above the port's active MTU: the queue pairs use %d, as perftest does\n", f.cfg.MTU, s.MTU)
		f.mtuWarned = true
	}
}

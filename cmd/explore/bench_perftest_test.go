package main

import (
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/rdmashuffle/rdmashuffle/fabric/host"
	"github.com/rdmashuffle/rdmashuffle/fabric/perftest"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// perftest's table formats, as linux-rdma/perftest release 26.04.17
// defines them in src/perftest_parameters.h (RESULT_LINE, RESULT_FMT,
// RESULT_FMT_G, RESULT_FMT_LAT, REPORT_FMT, REPORT_FMT_LAT; PRIu64 is
// "lu" on 64-bit Linux). goFormat turns a row format into Go's verbs,
// which print these conversions as C does.
const (
	ptResultLine = "---------------------------------------------------------------------------------------"
	ptResultFmt  = " #bytes     #iterations    BW peak[MiB/sec]    BW average[MiB/sec]   MsgRate[Mpps]"
	ptResultFmtG = " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]"
	ptResultLat  = " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] "
	ptReportFmt  = " %-7lu    %-10lu       %-7.2lf            %-7.2lf\t\t     %-7.6lf"
	ptReportLat  = " %-7lu %lu          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f"
)

func goFormat(c string) string { return strings.NewReplacer("lu", "d", "lf", "f").Replace(c) }

// rerender prints a row's fields again with perftest's format: the row
// is perftest's if it comes back the same, column for column.
func rerender(t *testing.T, format, row string) string {
	t.Helper()
	var args []any
	for i, f := range strings.Fields(row) {
		if i < 2 {
			n, err := strconv.Atoi(f)
			if err != nil {
				t.Fatalf("row %q: field %d %q", row, i+1, f)
			}
			args = append(args, n)
			continue
		}
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			t.Fatalf("row %q: field %d %q", row, i+1, f)
		}
		args = append(args, v)
	}
	return fmt.Sprintf(goFormat(format), args...)
}

// TestBenchPlainIsPerftest: --output plain prints perftest's report for
// the bandwidth and latency tests, -a included: the preamble's title, the
// rule, perftest's header text and rows that perftest's row format prints
// again column for column, one per size (2 B to 8 MiB with -a).
func TestBenchPlainIsPerftest(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		title  string
		header string
		format string
		sizes  int
	}{
		{[]string{"send_bw", "-n", "50"}, "Send BW Test", ptResultFmt, ptReportFmt, 1},
		{[]string{"write_bw", "-n", "50", "--report_gbits"}, "RDMA_Write BW Test", ptResultFmtG, ptReportFmt, 1},
		{[]string{"read_bw", "-n", "50", "-q", "2"}, "RDMA_Read BW Test", ptResultFmt, ptReportFmt, 1},
		{[]string{"send_lat", "-n", "50"}, "Send Latency Test", ptResultLat, ptReportLat, 1},
		{[]string{"write_lat", "-n", "50"}, "RDMA_Write Latency Test", ptResultLat, ptReportLat, 1},
		{[]string{"read_lat", "-n", "50"}, "RDMA_Read Latency Test", ptResultLat, ptReportLat, 1},
		{[]string{"write_bw", "-a", "-n", "5"}, "RDMA_Write BW Test", ptResultFmt, ptReportFmt, 23},
		{[]string{"read_lat", "-a", "-n", "5"}, "RDMA_Read Latency Test", ptResultLat, ptReportLat, 23},
		{[]string{"send_bw", "-a", "-n", "5", "-c", "UD"}, "Send BW Test", ptResultFmt, ptReportFmt, 12},
	} {
		args := append([]string{"bench"}, append(tc.args, "--output", "plain")...)
		out, err := run(t, args...)
		if err != nil {
			t.Errorf("%v: %v\n%s", tc.args, err, out)
			continue
		}
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if lines[0] != ptResultLine || lines[1] != strings.Repeat(" ", 20)+tc.title || lines[len(lines)-1] != ptResultLine {
			t.Errorf("%v: begins %q, ends %q", tc.args, lines[:2], lines[len(lines)-1])
		}
		h := -1
		for i, l := range lines {
			if l == tc.header {
				h = i
			}
		}
		if h < 1 || lines[h-1] != ptResultLine || len(lines)-h-2 != tc.sizes {
			t.Errorf("%v: no header %q after a rule, with %d rows below it:\n%s", tc.args, tc.header, tc.sizes, out)
			continue
		}
		for i, row := range lines[h+1 : len(lines)-1] {
			if got := rerender(t, tc.format, row); got != row {
				t.Errorf("%v: row\n%q\nis not perftest's\n%q", tc.args, row, got)
			}
			if size := strings.Fields(row)[0]; tc.sizes > 1 && size != strconv.Itoa(2<<i) {
				t.Errorf("%v: row %d is of %s bytes, want %d", tc.args, i, size, 2<<i)
			}
		}
	}
}

// awk splits a line into fields as awk does by default.
func awk(line string) []string { return strings.Fields(line) }

// TestBenchPlainAwk: the fields perftest's scripts take from its output
// hold the same figures here. awk '/^ *65536/{print $4}' is the average
// bandwidth (checked against the same run's record), and on a latency row
// $7 and $8 are the standard deviation and the 99th percentile (checked
// against the figures perftest computes from the run's samples). When awk
// is installed, it reads the output too.
func TestBenchPlainAwk(t *testing.T) {
	bw, err := run(t, "bench", "send_bw", "-s", "65536", "-n", "200", "--output", "plain")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := run(t, "bench", "send_bw", "-s", "64K", "-n", "200", "--json")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`"bw_avg_gbps":([0-9.e+-]+)`).FindStringSubmatch(rec)
	gbps, _ := strconv.ParseFloat(m[1], 64)
	wantBW := fmt.Sprintf("%.2f", perftest.MiBPerSec.Of(gbps))
	lat, err := run(t, "bench", "write_lat", "-s", "8", "-n", "300", "--output", "plain")
	if err != nil {
		t.Fatal(err)
	}
	prof, _ := sim.LoadProfile(sim.DefaultProfileName)
	c, err := sim.New(sim.Config{Nodes: 2, Profile: prof, Seed: 1, SizeOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := perftest.Run(c, perftest.Config{Test: "write_lat", Size: 8, Iters: 300})
	if err != nil {
		t.Fatal(err)
	}
	fig := perftest.Figures(res.Samples)
	for _, tc := range []struct {
		name, out, prefix string
		fields            []int
		want              []string
	}{
		{"BW average", bw, "65536", []int{4}, []string{wantBW}},
		{"t_stdev and 99% percentile", lat, "8", []int{7, 8}, []string{fmt.Sprintf("%.2f", fig.StdevUS), fmt.Sprintf("%.2f", fig.P99US)}},
		{"t_typical", lat, "8", []int{5}, []string{fmt.Sprintf("%.2f", fig.TypicalUS)}},
	} {
		var got []string
		for _, l := range strings.Split(tc.out, "\n") {
			if f := awk(l); len(f) > 0 && f[0] == tc.prefix && strings.HasPrefix(l, " ") {
				for _, k := range tc.fields {
					got = append(got, f[k-1])
				}
			}
		}
		if strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%s: fields %v are %q, want %q in\n%s", tc.name, tc.fields, got, tc.want, tc.out)
		}
		if _, err := exec.LookPath("awk"); err != nil {
			continue
		}
		var prog []string
		for _, k := range tc.fields {
			prog = append(prog, fmt.Sprintf("$%d", k))
		}
		cmd := exec.Command("awk", fmt.Sprintf("/^ *%s /{print %s}", tc.prefix, strings.Join(prog, ", ")))
		cmd.Stdin = strings.NewReader(tc.out)
		b, err := cmd.Output()
		if err != nil || strings.TrimSpace(string(b)) != strings.Join(tc.want, " ") {
			t.Errorf("%s: awk printed %q (%v), want %q", tc.name, b, err, strings.Join(tc.want, " "))
		}
	}
}

// TestBenchPerftestFlags: each of perftest's flags works as in perftest
// or is refused naming what to use instead.
func TestBenchPerftestFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // in the output, or in the error with refused
		fail bool
	}{
		{[]string{"send_bw", "-b"}, "Send Bidirectional BW Test", false},
		{[]string{"write_bw", "--bidirectional", "--report-both"}, " Remote results: ", false},
		{[]string{"send_lat", "-b"}, "-b true: applies to send_bw, write_bw and read_bw", true},
		{[]string{"write_bw", "--report-both"}, "add -b", true},
		{[]string{"write_bw", "-m", "1024"}, " Mtu             : 1024[B]", false},
		{[]string{"write_bw", "--mtu", "1500"}, "-m 1500: a path MTU is 256, 512, 1024, 2048 or 4096 bytes", true},
		{[]string{"send_bw", "-R"}, "no rdma_cm path: drop -R", true},
		{[]string{"send_bw", "--rdma_cm"}, "drop -R", true},
		{[]string{"send_bw", "-e"}, "no completion-event mode: drop -e", true},
		{[]string{"send_bw", "--events"}, "drop -e", true},
		{[]string{"write_bw", "-l", "4"}, " Post List       : 4", false},
		{[]string{"write_bw", "--post_list", "4"}, "RDMA_Write Post List BW Test", false},
		{[]string{"write_bw", "-l", "4", "--interleave"}, "-l 4: with Interleave", true},
		{[]string{"send_bw", "-F"}, "Send BW Test", false},
		{[]string{"send_bw", "--CPU-freq"}, "Send BW Test", false},
		{[]string{"write_bw", "-N", "-s", "4096"}, "4096       50               0.00   ", false},
		{[]string{"write_bw", "--noPeak", "-s", "4096"}, "               0.00   ", false},
		{[]string{"write_lat", "-N"}, "-N (--noPeak) applies to bandwidth tests", true},
		{[]string{"read_bw", "-o", "4"}, " Outstand reads  : 4", false},
		{[]string{"read_lat", "--outs", "2"}, " OUT 0x02 ", false},
		{[]string{"write_bw", "-o", "4"}, "-o 4: applies to read_bw and read_lat", true},
		{[]string{"send_bw", "-S", "1"}, "Send BW Test", false},
		{[]string{"send_bw", "--sl", "16"}, "--service-level 16: a service level is 0..15", true},
		{[]string{"send_bw", "-p", "18515"}, "exchange in memory: drop -p", true},
		{[]string{"send_bw", "--port", "2"}, "the device port is -i: give -i 2 (--ib-port)", true},
		{[]string{"send_bw", "-p", "70000"}, "a TCP port is 1024..65535", true},
		{[]string{"send_bw", "-u", "20"}, "Send BW Test", false},
		{[]string{"send_bw", "--qp-timeout", "0"}, "Send BW Test", false},
		{[]string{"send_bw", "-u", "32"}, "-u 32: an ACK timeout code is 0..31", true},
		{[]string{"send_lat", "-U"}, "#, usec\n1, ", false},
		{[]string{"send_lat", "--report-unsorted"}, "#, usec\n1, ", false},
		{[]string{"write_lat", "-H"}, "#, usec\n1, ", false},
		{[]string{"write_lat", "--report-histogram"}, "#, usec\n1, ", false},
		{[]string{"write_lat", "--report-histogrm"}, "#, usec\n1, ", false},
		{[]string{"send_bw", "-U"}, "apply to send_lat, write_lat and read_lat", true},
		{[]string{"send_lat", "-C"}, "reports microseconds only", true},
		{[]string{"send_lat", "--report-cycles"}, "drop -C", true},
		{[]string{"send_bw", "--run_infinitely"}, "give -D", true},
		{[]string{"send_bw", "--cpu_util"}, "measures no CPU utilisation", true},
		{[]string{"send_bw", "--inline_size", "64"}, " Max inline data : 64[B]", false},
		{[]string{"send_bw", "--ib-dev", "mlx5_0", "--ib-port", "2", "--backend", "ibv"}, "-tags ibverbs", true},
		{[]string{"send_bw", "-s", "64K"}, " 65536      50   ", false},
		{[]string{"atomic_bw"}, "fabric.Opcode has no atomic opcode", true},
		{[]string{"atomic_lat"}, "fabric.Opcode has no atomic opcode", true},
	} {
		args := append([]string{"bench"}, tc.args...)
		if !tc.fail {
			args = append(args, "-n", "50", "--output", "plain")
		}
		out, err := run(t, args...)
		switch {
		case tc.fail && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: %v, want a refusal naming %q", tc.args, err, tc.want)
		case !tc.fail && (err != nil || !strings.Contains(out, tc.want)):
			t.Errorf("%v: %v, want %q in\n%s", tc.args, err, tc.want, out)
		}
	}
}

// TestBenchPerftestNames: perftest's long names set the flags bench has
// under other names (--ib-dev is -d, --ib-port -i, --sl -S, --inline_size
// -I, --post_list -l).
func TestBenchPerftestNames(t *testing.T) {
	cmd := benchCmd()
	if err := cmd.ParseFlags([]string{"--ib-dev", "mlx5_1", "--ib-port", "2", "--sl", "3", "--inline_size", "64", "--post_list", "8"}); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"device": "mlx5_1", "ib-port": "2", "service-level": "3", "inline-size": "64", "post-list": "8"} {
		if got := cmd.Flags().Lookup(name).Value.String(); got != want {
			t.Errorf("--%s is %q, want %q", name, got, want)
		}
	}
	if f := cmd.Flags().ShorthandLookup("i"); f == nil || f.Name != "ib-port" {
		t.Errorf("-i is %v, want --ib-port", f)
	}
	if f := cmd.Flags().ShorthandLookup("p"); f == nil || f.Name != "port" {
		t.Errorf("-p is %v, want --port (the out-of-band TCP port)", f)
	}
	if run := runCmd().Flags().Lookup("port"); run == nil || run.Usage != "ibv: the device port" {
		t.Errorf("explore run's --port is %v, want the device port as before", run)
	}
}

// TestBenchOutputValues: perftest's verbosity levels print one number
// per size, and are refused for a test that has no such number.
func TestBenchOutputValues(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		lines int
		err   string
	}{
		{[]string{"send_bw", "-s", "4096", "--output", "bandwidth"}, 1, ""},
		{[]string{"send_bw", "-a", "-n", "5", "-c", "UD", "--output", "message_rate"}, 12, ""},
		{[]string{"write_lat", "--output", "latency"}, 1, ""},
		{[]string{"write_lat", "--output", "bandwidth"}, 0, "write_lat is a latency test"},
		{[]string{"send_bw", "--output", "latency"}, 0, "send_bw is a bandwidth test"},
		{[]string{"send_bw", "--output", "csv"}, 0, `--output "csv": choose table, plain`},
	} {
		out, err := run(t, append(append([]string{"bench"}, tc.args...), "-n", "50")...)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: %v, want %q", tc.args, err, tc.err)
			}
			continue
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if err != nil || len(lines) != tc.lines {
			t.Errorf("%v: %v, %d lines, want %d:\n%s", tc.args, err, len(lines), tc.lines, out)
			continue
		}
		for _, l := range lines {
			if v, err := strconv.ParseFloat(l, 64); err != nil || v <= 0 || !regexp.MustCompile(`^[0-9]+\.[0-9]{6}$`).MatchString(l) {
				t.Errorf("%v: %q is not a positive number with six decimals (C's %%lf)", tc.args, l)
			}
		}
	}
}

// TestBenchTCPPort: -p becomes the port of the job's out-of-band
// connection (RDMASHUFFLE_PORT, which the bootstrap reads for hosts given
// without a port), and is refused where it would disagree with the
// job's own layout.
func TestBenchTCPPort(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string // the coordinator's address, or the refusal
		fail bool
	}{
		{map[string]string{"RDMASHUFFLE_COORDINATOR": "node0"}, "node0:20000", false},
		{map[string]string{"RDMASHUFFLE_COORDINATOR": "node0", host.EnvPort: "20000"}, "node0:20000", false},
		{map[string]string{"RDMASHUFFLE_COORDINATOR": "node0", host.EnvPort: "19000"}, "-p 20000 but RDMASHUFFLE_PORT=19000", true},
		{map[string]string{"RDMASHUFFLE_COORDINATOR": "node0:19000"}, "gives node 0's address as node0:19000", true},
	} {
		t.Setenv(host.EnvRank, "1")
		t.Setenv(host.EnvSize, "2")
		t.Setenv(host.EnvPort, "")
		for k, v := range tc.env {
			t.Setenv(k, v)
		}
		var p perftestFlags
		var cfg perftest.Config
		cmd := &cobra.Command{}
		p.register(cmd.Flags(), &cfg)
		if err := cmd.Flags().Parse([]string{"-p", "20000"}); err != nil {
			t.Fatal(err)
		}
		err := p.applyPort(cmd)
		switch {
		case tc.fail:
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%v: %v, want %q", tc.env, err, tc.want)
			}
		case err != nil:
			t.Errorf("%v: %v", tc.env, err)
		default:
			if b, err := host.BootstrapFromEnv(); err != nil || b.Coordinator != tc.want {
				t.Errorf("%v: node 0 at %q (%v), want %q", tc.env, b.Coordinator, err, tc.want)
			}
		}
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/fabric/perftest"
)

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	return out.String(), inFlagWords(cmd, err)
}

// execWords executes cmd as the tool does, errors in flag words.
func execWords(cmd *cobra.Command) error {
	c, err := cmd.ExecuteC()
	return inFlagWords(c, err)
}

func TestBenchJSON(t *testing.T) {
	out, err := run(t, "bench", "send_bw", "-s", "65536", "-n", "200", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &rec); err != nil {
		t.Fatalf("--json output does not parse: %v\n%s", err, out)
	}
	for _, f := range []string{"test", "backend", "profile", "nodes", "bytes", "iterations", "qps", "bw_peak_gbps", "bw_avg_gbps", "msg_rate_mpps"} {
		if _, ok := rec[f]; !ok {
			t.Errorf("record lacks %q: %s", f, out)
		}
	}
	if rec["profile"] != "edr-cx4" || rec["backend"] != "sim" {
		t.Errorf("profile/backend = %v/%v", rec["profile"], rec["backend"])
	}
}

func TestBenchTableAndSweep(t *testing.T) {
	out, err := run(t, "bench", "write_lat", "-s", "8", "-n", "50")
	if err != nil || !strings.Contains(out, "t_typical") || !strings.Contains(out, "t_min [usec]") {
		t.Fatalf("latency table: %v\n%s", err, out)
	}
	out, err = run(t, "bench", "send_bw", "-a", "-c", "UD", "-n", "50", "--json")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(strings.TrimSpace(out), "\n") + 1; n != 12 { // 2 B .. 4 KiB
		t.Errorf("-a with UD gave %d records, want 12 (2 B to the 4096-byte MTU)", n)
	}
}

func TestProfileFromFile(t *testing.T) {
	data, err := os.ReadFile("../../fabric/sim/profiles/edr-cx4.yaml")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mine.yaml")
	os.WriteFile(path, bytes.Replace(data, []byte("latency_ns: 90"), []byte("latency_ns: 300"), 1), 0o644)
	out, err := run(t, "bench", "send_lat", "-n", "20", "--profile", path, "--json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `"profile":"file:`+path) {
		t.Errorf("a file profile must be named as file:<path>: %s", out)
	}
}

func TestBadInput(t *testing.T) {
	data, err := os.ReadFile("../../fabric/sim/profiles/edr-cx4.yaml")
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, bytes.Replace(data, []byte("mtu: 4096"), []byte("mtu: 3000"), 1), 0o644)
	hugeReg := filepath.Join(t.TempDir(), "huge.yaml")
	os.WriteFile(hugeReg, regexp.MustCompile(`\breg_mr_us: [0-9.]+`).ReplaceAll(data, []byte("reg_mr_us: 1e13")), 0o644)
	emptyFaults := filepath.Join(t.TempDir(), "empty.yaml")
	os.WriteFile(emptyFaults, nil, 0o644)
	openLink := filepath.Join(t.TempDir(), "link.yaml")
	os.WriteFile(openLink, []byte("link_down:\n  - node: 1\n    from: 100us\n"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "nope"}, `"nope" is not a test: choose one of send_bw`},
		{[]string{"bench", "send_bw", "-c", "XX"}, "RC, UC or UD"},
		{[]string{"bench", "send_bw", "--nodes", "3"}, "even count"},
		{[]string{"bench", "send_bw", "--nodes", "1"}, "at least 2 nodes"},
		{[]string{"bench", "send_bw", "-s", "0"}, "-s 0"},
		{[]string{"bench", "read_bw", "-c", "UD"}, "UD does not have"},
		{[]string{"bench", "send_bw", "-c", "UD", "-s", "8192"}, "one MTU"},
		{[]string{"bench", "send_bw", "--profile", "nope"}, "unknown profile"},
		{[]string{"bench", "send_bw", "--profile", bad}, "link.mtu"},
		{[]string{"bench", "send_bw", "--backend", "ibv"}, "-tags ibverbs"},
		{[]string{"bench", "send_bw", "--backend", "gpu"}, "choose sim, ibv, loopback or tcp"},
		{[]string{"run", "--backend", "ibv", "--nodes", "2"}, "-tags ibverbs"},
		{[]string{"run", "--traffic-class", "3", "--nodes", "2"}, "apply with --backend ibv"},
		{[]string{"run", "--service-level", "16", "--nodes", "2"}, "\"16\" is not a service level (0 to 15)"},
		{[]string{"run", "--design", "IPoIB", "--service-level", "1", "--nodes", "2"}, "--service-level 1: not with IPoIB: it sends over the kernel's TCP"},
		{[]string{"run", "--design", "MEMQ/SR", "--control-service-level", "1", "--nodes", "2"}, "--control-service-level 1: not with MEMQ/SR: it writes its credit on its data queue pairs"},
		{[]string{"run", "--design", "qperf", "--service-level", "1", "--nodes", "2"}, "--service-level 1: the qperf baseline runs on service level 0"},
		{[]string{"run", "--backend", "ibv", "--local", "--nodes", "2"}, "-tags ibverbs"},
		{[]string{"run", "--backend", "tcp", "--design", "TCP", "--local", "--nodes", "2", "--fault-loss", "0.01"}, "fault injection (--fault-* and --faults) needs the simulator, not the tcp backend"},
		{[]string{"bench"}, "bench needs a test: one of send_bw, "},
		{[]string{"overview", "--nodes", "1"}, "at least 2 nodes"},
		// Zero means "default" inside a run configuration; on the
		// command line it ran the default silently.
		{[]string{"run", "--nodes", "2", "--threads", "0"}, "--threads 0: want at least 1"},
		{[]string{"run", "--nodes", "2", "--buffers", "0"}, "--buffers 0"},
		{[]string{"run", "--nodes", "2", "--credit-every", "0"}, "--credit-every 0"},
		{[]string{"run", "--nodes", "2", "--bytes-per-node", "0"}, "--bytes-per-node 0"},
		{[]string{"run", "--nodes", "2", "--timeout-ms", "-1"}, "--timeout-ms -1"},
		{[]string{"run", "--nodes", "2", "--timeout-ms", "0"}, "--timeout-ms 0"},
		{[]string{"run", "--nodes", "2", "--msg-bytes", "0"}, "--msg-bytes 0: want at least 1"},
		{[]string{"run", "--nodes", "100000"}, "--nodes 100000: the simulated cluster would need about"},
		{[]string{"bench", "alltoall_bw", "--nodes", "100000"}, "--nodes 100000: the simulated alltoall_bw would need about"},
		{[]string{"run", "--nodes", "2", "--msg-bytes", "-5"}, "--msg-bytes -5: must be positive"},
		{[]string{"query", "--msg-bytes", "0"}, "--msg-bytes 0: want at least 1"},
		{[]string{"run", "--nodes", "2", "--faults", emptyFaults}, "injects no fault"},
		{[]string{"run", "--nodes", "2", "--faults", openLink}, "link_down[0].to: missing"},
		{[]string{"run", "--nodes", "2", "--profile", hugeReg}, "setup.reg_mr_us: 10000000000000 us outside the range 0 to 1000000 us"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			if _, ok := experiments.PhysicalMemory(); !ok && strings.Contains(tc.want, "would need about") {
				t.Skip("the system does not say how much memory it has: nothing is refused")
			}
			_, err := run(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}

func TestProfiles(t *testing.T) {
	out, err := run(t, "profiles")
	if err != nil || !strings.Contains(out, "edr-cx4") {
		t.Fatalf("%v\n%s", err, out)
	}
}

func TestTCPBackendNeedsTheTCPDesign(t *testing.T) {
	if out, err := run(t, "run", "--backend", "tcp", "--local", "--design", "MESQ/SR", "--nodes", "2"); err == nil || !strings.Contains(err.Error(), "--design TCP") {
		t.Fatalf("got %v (%s)", err, out)
	}
}

// TestOverviewJSON: overview --json prints records, one per line (the
// microbenchmarks' and the shuffles'), and no tables.
func TestOverviewJSON(t *testing.T) {
	out, err := run(t, "overview", "--nodes", "2", "--json")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var bench, runs int
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("line does not parse: %v\n%s", err, line)
		}
		switch {
		case rec["test"] != nil:
			bench++
		case rec["experiment"] == "run":
			runs++
		}
	}
	if bench != 8 || runs != len(experiments.DesignNames(func(d experiments.CatalogueEntry) bool {
		return experiments.IsPaperDesign(d) || experiments.IsBaseline(d)
	})) {
		t.Fatalf("%d benchmark and %d run records:\n%s", bench, runs, out)
	}
}

// TestRunReportFailsOnIntegrity: a failed integrity check fails the
// command with --json as without (it used to return after encoding).
func TestRunReportFailsOnIntegrity(t *testing.T) {
	for _, jsonOut := range []bool{false, true} {
		var out bytes.Buffer
		err := reportRun(&out, &results.Record{Design: "MESQ/SR", Integrity: "missing"}, jsonOut)
		if err == nil || !strings.Contains(err.Error(), "integrity check failed: missing") || out.Len() == 0 {
			t.Errorf("json %v: %v, printed %q", jsonOut, err, out.String())
		}
		out.Reset()
		if err := reportRun(&out, &results.Record{Design: "MESQ/SR", Integrity: "ok"}, jsonOut); err != nil {
			t.Errorf("json %v: %v", jsonOut, err)
		}
	}
}

// TestEvidenceReport: explore evidence writes its report where it is told
// and fails while a modelled point is outside its tolerance.
func TestEvidenceReport(t *testing.T) {
	out := filepath.Join(t.TempDir(), "evidence.md")
	stdout, err := run(t, "evidence", "--out", out)
	if !strings.Contains(stdout, "points from") {
		t.Fatalf("no summary line:\n%s", stdout)
	}
	md, rerr := os.ReadFile(out)
	if rerr != nil || !strings.Contains(string(md), "# The model against public measurements") || !strings.Contains(string(md), "## Not modelled yet") {
		t.Fatalf("report %s: %v\n%s", out, rerr, md)
	}
	if strings.Contains(string(md), "| outside |") != (err != nil) {
		t.Errorf("exit error %v, but the report's verdicts say otherwise", err)
	}
}

// TestEvidenceFit: explore evidence --fit prints the profile as it is,
// then the combinations best first.
func TestEvidenceFit(t *testing.T) {
	out, err := run(t, "evidence", "--points", "rcswarm-apt-read-48qps-8b", "--points", "rcswarm-apt-read-48qps-40b",
		"--fit", "nic.qp_cache_entries=8,80", "--fit", "nic.qp_cache_ways=2", "--top", "1")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"fit on fdr-cx3 to 2 points (errors in this order): rcswarm-apt-read-48qps-8b, rcswarm-apt-read-48qps-40b",
		"as is: 80", "2 combinations, best first"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	if lines := strings.Count(out, "\n"); lines != 8 { // title, 3 header lines, as is, the best, bottom rule, summary
		t.Errorf("%d lines, want 8 (--top 1):\n%s", lines, out)
	}

	// A software cost: points of two profiles, each on its own.
	out, err = run(t, "evidence", "--points", "mpich3917-global-cs-msgrate-1t", "--points", "ohpc207-cx3-imb-pingpong-lat-1b",
		"--fit", "mpi.call_cycles=300,600")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"fit on each point's own profile to 2 points", "as is: 600", "2 combinations, best first"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}

	// Over queue-pair numberings: the fit and the report say so.
	out, err = run(t, "evidence", "--points", "rcswarm-apt-read-48qps-8b", "--fit", "nic.qp_cache_ways=2,4", "--numberings", "2")
	if err != nil || !strings.Contains(out, "the median of 2 queue-pair numberings") {
		t.Errorf("--fit --numberings 2: %v\n%s", err, out)
	}
	md := filepath.Join(t.TempDir(), "evidence.md")
	run(t, "evidence", "--points", "rcswarm-apt-read-48qps-8b", "--numberings", "2", "--out", md)
	if b, err := os.ReadFile(md); err != nil || !strings.Contains(string(b), "median of 2 queue-pair numberings") {
		t.Errorf("--numberings 2: the report does not say what the model value is (%v)", err)
	}
	for _, args := range [][]string{
		{"evidence", "--numberings", "0"},
		{"evidence", "--points", "rcswarm-apt-read-48qps-8b", "--fit", "nic.qp_cache_ways=2", "--numberings", "0"},
	} {
		if _, err := run(t, args...); err == nil || !strings.Contains(err.Error(), "--numberings 0") {
			t.Errorf("%v: %v, want an error naming --numberings 0", args, err)
		}
	}
}

func TestVersion(t *testing.T) {
	out, err := run(t, "--version")
	if err != nil || !strings.HasPrefix(out, "rdmashuffle ") || !strings.Contains(out, " commit ") {
		t.Errorf("--version: %q %v", out, err)
	}
}

// TestBenchDuration: perftest's duration mode (-D, whole seconds or a Go
// duration, with -f margins) runs, prints perftest's duration-mode
// latency columns, and refuses what it cannot do.
func TestBenchDuration(t *testing.T) {
	out, err := run(t, "bench", "write_lat", "-s", "8", "-D", "1ms", "--output", "plain")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if n := len(lines); err != nil || n < 4 || strings.Join(strings.Fields(lines[n-3]), " ") != "#bytes #iterations t_avg[usec] tps average" {
		t.Fatalf("write_lat -D 1ms --output plain: %v\n%s", err, out)
	}
	out, err = run(t, "bench", "send_bw", "-s", "65536", "-D", "2ms", "-f", "0", "--json")
	if err != nil || !strings.Contains(out, `"run_s":0.002`) || strings.Contains(out, `"margin_s"`) {
		t.Errorf("send_bw -D 2ms -f 0 --json: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "send_bw", "-D", "1ms", "-n", "10"}, "not both"},
		{[]string{"bench", "send_bw", "-D", "1ms", "-a"}, "-a or --sweep-qps"},
		{[]string{"bench", "send_bw", "-D", "soon"}, "whole seconds"},
		{[]string{"bench", "send_bw", "-D", "1ms", "-f", "1ms"}, "twice the margin"},
	} {
		if _, err := run(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error naming %q", tc.args, err, tc.want)
		}
	}
}

// TestNoCheckFlag: --no-check runs without the verbs-usage checker and the
// record says so; off the simulator, where there is no such checker, the
// flag is refused.
func TestNoCheckFlag(t *testing.T) {
	out, err := run(t, "run", "--design", "MESQ/SR", "--nodes", "2", "--bytes-per-node", "65536", "--no-check", "--json")
	if err != nil || !strings.Contains(out, `"verbs_check":"off"`) {
		t.Errorf("run --no-check --json: %v\n%s", err, out)
	}
	out, err = run(t, "bench", "send_bw", "-n", "50", "--no-check")
	if err != nil || !strings.Contains(out, "send_bw") {
		t.Errorf("bench --no-check: %v\n%s", err, out)
	}
	for _, args := range [][]string{
		{"run", "--design", "MESQ/SR", "--nodes", "2", "--no-check", "--backend", "loopback"},
		{"bench", "send_bw", "--no-check", "--backend", "loopback"},
	} {
		if _, err := run(t, args...); err == nil || !strings.Contains(err.Error(), "--no-check") {
			t.Errorf("%v: %v, want an error naming --no-check", args, err)
		}
	}
}

// TestBenchNumberings: --numberings runs each point under that many
// queue-pair numberings (from --qp-numbering on), records each run's
// numbering, prints the median and range, and, for a sweep of QP counts,
// the largest fall; what it cannot do is refused with the flag's name.
func TestBenchNumberings(t *testing.T) {
	out, err := run(t, "bench", "read_bw", "-s", "32", "-q", "64", "--interleave", "-n", "20", "--profile", "fdr-cx3", "--numberings", "3", "--qp-numbering", "4", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got []float64
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("%v: %q", err, line)
		}
		n, _ := rec["qp_numbering"].(float64)
		got = append(got, n)
	}
	if fmt.Sprint(got) != "[4 5 6]" {
		t.Errorf("--numberings 3 --qp-numbering 4 recorded numberings %v, want [4 5 6]", got)
	}
	out, err = run(t, "bench", "read_bw", "-s", "32", "--sweep-qps", "--interleave", "-n", "2", "--profile", "fdr-cx3", "--numberings", "2")
	if err != nil || !strings.Contains(strings.Join(strings.Fields(out), " "), "numberings 0 to 1") || !strings.Contains(out, "M msg/s") ||
		!strings.Contains(out, "falls by at most") || !strings.Contains(out, "each numbering alone") || len(regexp.MustCompile(`(?m)^│ 32 `).FindAllString(out, -1)) != 13 {
		t.Errorf("--sweep-qps --numberings 2: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "read_bw", "--numberings", "0"}, "--numberings 0"},
		{[]string{"bench", "read_bw", "--numberings", "2", "--output", "plain"}, "--output plain"},
		{[]string{"bench", "write_lat", "--numberings", "2"}, "latency tests"},
		{[]string{"bench", "send_bw", "--qp-numbering", "1", "--backend", "loopback"}, "--qp-numbering"},
		{[]string{"bench", "read_bw", "--qp-numbering", "18446744073709551615", "--numberings", "2"}, "start lower"},
		{[]string{"run", "--design", "MESQ/SR", "--nodes", "2", "--qp-numbering", "1", "--backend", "loopback"}, "--qp-numbering 1"},
	} {
		if _, err := run(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want an error naming %q", tc.args, err, tc.want)
		}
	}
}

// TestFallLines: the largest fall of a QP sweep over numberings, with the
// edges a sweep can leave: a numbering missing from the last point (an
// interrupted sweep), a rate of zero, rates that only rise.
func TestFallLines(t *testing.T) {
	row := func(qps int, rate float64) benchRow {
		return benchRow{res: &perftest.Result{Bytes: 32, QPs: qps, MsgRateMpps: rate}}
	}
	for _, tc := range []struct {
		name string
		rows []benchRow
		want string
	}{
		{"one numbering", []benchRow{row(1, 4), row(2, 8), row(4, 2)},
			"-s 32: the message rate falls by at most 4.00x between consecutive QP counts (2 -> 4 QPs)"},
		{"two numberings", []benchRow{row(1, 9), row(1, 9), row(2, 6), row(2, 3), row(4, 2), row(4, 2)},
			"-s 32: the message rate falls by at most 2.25x between consecutive QP counts (2 -> 4 QPs) for the median of 2 numberings; each numbering alone falls by at most 3.00x to 3.00x"},
		{"interrupted", []benchRow{row(1, 9), row(1, 9), row(1, 9), row(2, 3), row(2, 1)},
			"-s 32: the message rate falls by at most 4.50x between consecutive QP counts (1 -> 2 QPs) for the median of 2 to 3 numberings; each numbering alone falls by at most 3.00x to 9.00x"},
		{"a zero rate", []benchRow{row(1, 4), row(1, 4), row(2, 0), row(2, 0), row(4, 2), row(4, 1)},
			"-s 32: no two consecutive QP counts both moved messages for the median of 2 numberings"},
		{"rising", []benchRow{row(1, 1), row(1, 2), row(2, 3), row(2, 4)},
			"-s 32: the message rate does not fall between consecutive QP counts for the median of 2 numberings; no numbering alone falls"},
	} {
		if got := fallLines(tc.rows); len(got) != 1 || got[0] != tc.want {
			t.Errorf("%s: %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

// TestExitCodes: 0 success, 1 a finding (an integrity failure here), 2 an
// error (no command, a bad flag, a run that cannot be made).
func TestExitCodes(t *testing.T) {
	var out bytes.Buffer
	if err := reportRun(&out, &results.Record{Design: "MESQ/SR", Integrity: "missing"}, false); !errors.As(err, new(finding)) {
		t.Errorf("an integrity failure is not a finding: %v", err)
	}
	for _, tc := range []struct {
		args []string
		code int
	}{
		{nil, exitError},
		{[]string{"run", "--threads", "0"}, exitError},
		{[]string{"run", "--design", "TCP", "--nodes", "2"}, exitError},
		{[]string{"run", "--design", "MESQ/SR", "--nodes", "2", "--bytes-per-node", "64KiB"}, 0},
		{[]string{"profiles"}, 0},
	} {
		root := newRoot()
		root.SetArgs(tc.args)
		root.SetOut(io.Discard)
		if code := execute(root, io.Discard); code != tc.code {
			t.Errorf("explore %v: exit %d, want %d", tc.args, code, tc.code)
		}
	}
}

// TestMisleadingInputsRefused: inputs that used to be accepted silently or
// answered with wrong advice.
func TestMisleadingInputsRefused(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "send_bw", "--json", "--output", "plain", "-n", "10"}, "--json and --output plain both choose"},
		{[]string{"bench", "read_bw", "-c", "UD"}, "use RC (UC has no RDMA Read either)"},
		{[]string{"completion", "klingon"}, `completion "klingon": not a shell`},
		{[]string{"completion"}, "completion needs a shell"},
		{[]string{"run", "--pattern", "broadcast", "--nodes", "1"}, "--nodes 1: a broadcast sends to other nodes"},
		{[]string{"bench", "send_lat", "-D", "0"}, "-D 0: give a positive duration"},
		{[]string{"sensitivity", "--rejudge", "--out", filepath.Join(t.TempDir(), "none")}, "--rejudge: nothing to judge again"},
		{[]string{"calibrate", "--out", "/proc/no/profile.yaml"}, "--out /proc/no/profile.yaml: cannot"},
		{[]string{"report", "--out", "/proc/no/index.html"}, "--out /proc/no/index.html: cannot"},
	} {
		if _, err := run(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("explore %v: %v, want %q", tc.args, err, tc.want)
		}
	}
	out, err := run(t, "run", "--adaptive", "--design", "MESQ/SR", "--nodes", "2", "--bytes-per-node", "1MiB")
	if err != nil || !strings.Contains(out, "adaptive buffers per destination (2 to start") {
		t.Errorf("run --adaptive: %v\n%s", err, out)
	}
}

// TestReadmeCommandsParse: every explore command the README shows names
// a command that exists, with flags it takes and arguments it accepts
// (none is run).
func TestReadmeCommandsParse(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		line, _, _ = strings.Cut(line, " #")
		for _, part := range strings.Split(line, " && ") {
			part = strings.TrimSpace(part)
			if !strings.HasPrefix(part, "bin/explore ") {
				continue
			}
			n++
			args := shellWords(strings.TrimPrefix(part, "bin/explore "))
			cmd, rest, err := newRoot().Find(args)
			if err != nil {
				t.Errorf("%s: %v", part, err)
				continue
			}
			cmd.InitDefaultHelpFlag()
			cmd.InitDefaultVersionFlag() // as Execute adds them
			if err := cmd.ParseFlags(rest); err != nil {
				t.Errorf("%s: %v", part, err)
				continue
			}
			if err := cmd.ValidateArgs(cmd.Flags().Args()); err != nil {
				t.Errorf("%s: %v", part, err)
			}
		}
	}
	if n < 30 {
		t.Errorf("%d explore commands found in the README, want the 30 or more it shows", n)
	}
}

// shellWords splits s at spaces outside single quotes, dropping the
// quotes.
func shellWords(s string) []string {
	var out []string
	var cur strings.Builder
	quoted, any := false, false
	for _, r := range s {
		switch {
		case r == '\'':
			quoted, any = !quoted, true
		case r == ' ' && !quoted:
			if any {
				out = append(out, cur.String())
				cur.Reset()
				any = false
			}
		default:
			cur.WriteRune(r)
			any = true
		}
	}
	if any {
		out = append(out, cur.String())
	}
	return out
}

package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// TestDurationFlags: every time flag takes a Go duration; the old
// spellings in milliseconds or seconds set the same value and print one
// deprecation line.
func TestDurationFlags(t *testing.T) {
	for _, c := range []struct {
		cmd        func() *cobra.Command
		args       []string
		flag, want string
		deprecated string // in the deprecation note; "" for none
	}{
		{runCmd, nil, "timeout", "1s", ""},
		{runCmd, []string{"--timeout", "250us"}, "timeout", "250µs", ""},
		{runCmd, []string{"--timeout", "1.5s"}, "timeout", "1.5s", ""},
		{runCmd, []string{"--timeout-ms", "2.5"}, "timeout", "2.5ms", "Flag --timeout-ms has been deprecated, use --timeout with a unit (e.g. --timeout 100ms)"},
		{queryCmd, nil, "timeout", "1s", ""},
		{queryCmd, []string{"--timeout", "30ms"}, "timeout", "30ms", ""},
		{queryCmd, []string{"--timeout-ms", "40"}, "timeout", "40ms", "Flag --timeout-ms has been deprecated, use --timeout"},
		{soakCmd, nil, "wall-limit", "1m0s", ""},
		{soakCmd, []string{"--wall-limit", "5m"}, "wall-limit", "5m0s", ""},
		{soakCmd, []string{"--wall-limit-s", "90"}, "wall-limit", "1m30s", "Flag --wall-limit-s has been deprecated, use --wall-limit with a unit (e.g. --wall-limit 60s)"},
		{launchCmd, []string{"--timeout", "30s"}, "timeout", "30s", ""},
		{runCmd, []string{"--time-limit", "2m"}, "time-limit", "2m0s", ""},
	} {
		cmd := c.cmd()
		var stderr bytes.Buffer
		cmd.SetOut(&stderr) // cobra prints the notes with Print: Out, else standard error
		cmd.SetErr(&stderr)
		if err := cmd.ParseFlags(c.args); err != nil {
			t.Errorf("%s %v: %v", cmd.Name(), c.args, err)
			continue
		}
		if got := cmd.Flags().Lookup(c.flag).Value.String(); got != c.want {
			t.Errorf("%s %v: --%s = %s, want %s", cmd.Name(), c.args, c.flag, got, c.want)
		}
		if note := stderr.String(); c.deprecated == "" && note != "" || !strings.Contains(note, c.deprecated) || strings.Count(note, "\n") > 1 {
			t.Errorf("%s %v: deprecation note %q, want one line with %q", cmd.Name(), c.args, note, c.deprecated)
		}
	}
	// The old spellings are hidden from the help.
	for _, c := range []struct {
		cmd  func() *cobra.Command
		flag string
	}{{runCmd, "timeout-ms"}, {queryCmd, "timeout-ms"}, {soakCmd, "wall-limit-s"}} {
		var out bytes.Buffer
		cmd := c.cmd()
		cmd.SetOut(&out)
		cmd.Usage()
		if strings.Contains(out.String(), "--"+c.flag) {
			t.Errorf("%s's help lists the deprecated --%s", cmd.Name(), c.flag)
		}
	}
}

func TestBadDurations(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--nodes", "2", "--timeout", "100"}, "want a duration with a unit, e.g. 100ms"},
		{[]string{"run", "--nodes", "2", "--timeout", "0s"}, "--timeout 0s: want a positive simulated duration"},
		{[]string{"run", "--nodes", "2", "--timeout", "-3ms"}, "--timeout -3ms: want a positive"},
		{[]string{"run", "--nodes", "2", "--timeout", "2000h"}, "at most 24h0m0s of simulated time"},
		{[]string{"run", "--nodes", "2", "--timeout-ms", "x"}, `invalid argument "x" for "--timeout-ms"`},
		{[]string{"query", "--timeout-ms", "x"}, "want a number"},
		{[]string{"query", "--timeout", "0s"}, "--timeout 0s: want a positive simulated duration"},
		{[]string{"soak", "--wall-limit", "0s"}, "--wall-limit 0s: must be positive"},
		{[]string{"soak", "--wall-limit-s", "-1"}, "--wall-limit-s -1: must be positive"},
	} {
		if _, err := run(t, c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want %q", c.args, err, c.want)
		}
	}
}

// TestArgumentMessages: a missing, extra or unknown argument is answered
// with the choices.
func TestArgumentMessages(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"bench"}, []string{"bench needs a test: one of send_bw, write_bw, read_bw, send_lat, write_lat, read_lat, alltoall_bw", "(e.g. explore bench send_bw)"}},
		{[]string{"bench", "send_bww"}, []string{`bench: "send_bww" is not a test: choose one of send_bw, `}},
		{[]string{"bench", "send_bw", "read_bw"}, []string{"bench takes one test, got 2 (send_bw read_bw): one of send_bw"}},
		{[]string{"figure"}, []string{"figure needs a figure: one of fig13, fig15", "fig19", "(e.g. explore figure fig13)"}},
		{[]string{"figure", "19"}, []string{`figure: "19" is not a figure: choose one of fig13`}},
		{[]string{"sweep"}, []string{"sweep needs a sweep spec: a YAML file as docs/sweeps.md describes", "(e.g. explore sweep experiments/specs/example.yaml)"}},
		{[]string{"sweep", "a.yaml", "b.yaml"}, []string{"sweep takes one sweep spec, got 2 (a.yaml b.yaml)"}},
		{[]string{"plot"}, []string{"plot needs one results file, a sweep's JSONL, got 0 arguments (e.g. explore plot results/example.jsonl"}},
		{[]string{"merge", "-o", "m.jsonl"}, []string{"merge needs the shard files to join (e.g. explore merge -o "}},
		{[]string{"launch", "--nodes", "2"}, []string{"launch needs the explore command each process runs, after -- (e.g. explore launch --nodes 4 -- run"}},
		{[]string{"run", "MESQ/SR"}, []string{`run takes flags only, not "MESQ/SR": explore run --help lists them`}},
		{[]string{"sensitivity", "--change", "seed +0"}, []string{`a seed control is "seed +k", k a whole number of at least 1`}},
		{[]string{"sensitivity", "--so-far", "--rejudge"}, []string{"--so-far and --rejudge: --so-far reports the stored verdicts and runs nothing"}},
		{[]string{"sensitivity", "--so-far", "--out", "/nonexistent/sensitivity"}, []string{"has no judged baseline yet: nothing to report so far"}},
		{[]string{"evidence", "--points", "no-such-*"}, []string{`--points "no-such-*" matches no point`}},
		{[]string{"evidence", "--points", "krcore-*", "--update-docs"}, []string{"--points and --update-docs"}},
		{[]string{"evidence", "--fit", "nic.qp_cache_ways=1,2"}, []string{"--fit without --points: name the points to fit to"}},
		{[]string{"evidence", "--fit", "nic.qp_cache_ways=1", "--points", "no-such-*"}, []string{`--points "no-such-*" matches no point`}},
		{[]string{"evidence", "--fit", "nic.qp_cache_ways", "--points", "rcswarm-apt-read32-qps-88"}, []string{"want <profile field>=<value>"}},
		{[]string{"evidence", "--fit", "nic.qp_cache_ways=1", "--points", "rcswarm-apt-read32-qps-88", "--points", "rcswarm-netapp-read32-qps-154"}, []string{"is a point of fdr-cx3 and rcswarm-netapp-read32-qps-154 one of edr-cx4"}},
		{[]string{"evidence", "--fit", "nic.qp_cache_ways=1", "--points", "rcswarm-netapp-ucwrite16-84qps"}, []string{"names no profile"}},
		{[]string{"evidence", "--fit", "nic.qp_cache_ways=1", "--points", "rcswarm-apt-read32-qps-88", "--update-docs"}, []string{"--fit and --update-docs"}},
		{[]string{"evidence", "--fit", "mpi.nope=1", "--points", "mpich3917-global-cs-msgrate-1t", "--points", "ohpc207-cx3-imb-pingpong-lat-1b"}, []string{`no software cost "mpi.nope": choose one of mpi.call_cycles`}},
		{[]string{"evidence", "--fit", "nic.qp_cache_ways=1", "--points", "rcswarm-apt-read32-qps-88", "--top", "0"}, []string{"--top 0: must be at least 1"}},
	} {
		_, err := run(t, c.args...)
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%v: got %v, want %q", c.args, err, w)
			}
		}
	}
}

// TestCompletionValues asks the completion command what it offers.
func TestCompletionValues(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"run", "--design", ""}, []string{"SESQ/SR", "MEMQ/WR", "MPI", "qperf"}},
		{[]string{"run", "--pattern", ""}, []string{"repartition", "broadcast", "multicast:2"}},
		{[]string{"run", "--profile", ""}, []string{"edr-cx4", "fdr-cx3", "hdr-cx6", "qdr-cx3"}},
		{[]string{"bench", ""}, []string{"send_bw", "read_bw", "alltoall_bw", "write_lat"}},
		{[]string{"bench", "send_bw", "-c", ""}, []string{"RC", "UC", "UD"}},
		{[]string{"bench", "send_bw", "--profile", ""}, []string{"edr-cx4"}},
		{[]string{"figure", ""}, []string{"fig13", "fig19", "fig27"}},
		{[]string{"reproduce", "--figures", ""}, []string{"fig19", "alltoall_bw"}},
		{[]string{"query", "--figure", ""}, []string{"fig26", "fig27"}},
		{[]string{"soak", "--scenarios", ""}, []string{"ud-loss", "crash"}},
		{[]string{"calibrate", "--target", ""}, []string{"hdr-cx6"}},
		{[]string{"sweep", ""}, []string{"yaml"}},
	} {
		out, err := run(t, append([]string{"__complete"}, c.args...)...)
		if err != nil {
			t.Errorf("%v: %v", c.args, err)
			continue
		}
		lines := strings.Split(out, "\n")
		for _, w := range c.want {
			found := false
			for _, l := range lines {
				found = found || l == w
			}
			if !found {
				t.Errorf("completing %v does not offer %q:\n%s", c.args, w, out)
			}
		}
	}
}

// TestGroupedHelp: run's and bench's help list their flags in groups,
// each flag once.
func TestGroupedHelp(t *testing.T) {
	for _, c := range []struct {
		args   []string
		groups []string // in this order
		flags  map[string]string
	}{
		{[]string{"run", "--help"}, []string{"Shuffle flags", "Fault flags", "Hardware-path flags", "Output flags"},
			map[string]string{"--design": "Shuffle flags", "--fault-loss": "Fault flags", "--backend": "Hardware-path flags", "--json": "Output flags", "--timeout ": "Shuffle flags"}},
		{[]string{"bench", "--help"}, []string{"Benchmark flags", "Hardware-path flags", "Output flags"},
			map[string]string{"--size": "Benchmark flags", "--device": "Hardware-path flags", "--report_gbits": "Output flags"}},
	} {
		out, err := run(t, c.args...)
		if err != nil {
			t.Fatal(err)
		}
		last := -1
		for _, g := range c.groups {
			i := strings.Index(out, "\n"+g)
			if i <= last {
				t.Errorf("%v: group %q missing or out of order:\n%s", c.args, g, out)
			}
			last = i
		}
		// The group of each flag: the last group title above its line.
		group := map[string]string{}
		title := ""
		for _, l := range strings.Split(out, "\n") {
			if strings.HasSuffix(l, "flags:") || strings.Contains(l, "flags (") && strings.HasSuffix(l, ":") {
				title = l
			}
			f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(l), "-"))
			if strings.HasPrefix(strings.TrimSpace(l), "-") && len(f) > 0 {
				name := f[0]
				if strings.HasSuffix(name, ",") && len(f) > 1 { // "-s, --size"
					name = f[1]
				}
				name = "-" + strings.TrimPrefix(name, "-")
				if name[1] != '-' {
					name = "-" + name
				}
				if group[name] != "" {
					t.Errorf("%v: %s listed twice", c.args, name)
				}
				group[name] = title
			}
		}
		for flag, want := range c.flags {
			if !strings.HasPrefix(group[strings.TrimSpace(flag)], want) {
				t.Errorf("%v: %s is under %q, want %q", c.args, flag, group[strings.TrimSpace(flag)], want)
			}
		}
	}
}

// TestRealBackendTimeout: on a real backend the no-progress wait is wall
// time, 20 s unless --timeout says otherwise; the simulator keeps its 1 s
// of simulated time.
func TestRealBackendTimeout(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want fabric.Duration
	}{
		{[]string{"--backend", "loopback"}, RealTimeout},
		{[]string{"--backend", "loopback", "--timeout", "3s"}, 3 * fabric.Second},
		{nil, algos.DefaultTimeout},
	} {
		f := &runFlags{cfg: experiments.DefaultConfig()}
		cmd := newRunCmd(f)
		if err := cmd.ParseFlags(tc.args); err != nil {
			t.Fatal(err)
		}
		if _, err := f.check(cmd); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if f.cfg.Timeout != tc.want {
			t.Errorf("%v: timeout %v, want %v", tc.args, f.cfg.Timeout, tc.want)
		}
	}
}

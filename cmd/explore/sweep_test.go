package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/experiments/sweep"
)

// cliSpec is small: 8 points of 1 MiB on 2 or 3 nodes.
const cliSpec = `name: cli
base: {profile: edr-cx4, threads: 1, bytes-per-node: 1048576}
vary:
  design: [MESQ/SR, MEMQ/SR]
  nodes: [2, 3]
  seed: [1, 2]
`

func writeSpec(t *testing.T, dir, spec string) string {
	t.Helper()
	path := filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSweepShardsMergeAndRepeat(t *testing.T) {
	dir := t.TempDir()
	spec := writeSpec(t, dir, cliSpec)
	whole := filepath.Join(dir, "whole.jsonl")
	out, err := run(t, "sweep", spec, "--out", whole, "--jobs", "2")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"throughput[GiB/s]", " (all equal)", "cli: 8 points: 8 run, 0 already done, 0 failed"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// The same spec again, into a new file: identical bytes.
	again := filepath.Join(dir, "again.jsonl")
	if out, err := run(t, "sweep", spec, "-o", again, "--jobs", "1", "--table=false"); err != nil || strings.Contains(out, "throughput[GiB/s]") {
		t.Fatalf("%v\n%s", err, out)
	}
	if !bytes.Equal(readFile(t, whole), readFile(t, again)) {
		t.Fatalf("two runs of one spec differ")
	}
	// Three shards, merged, equal the unsplit run.
	var shards []string
	for i := 1; i <= 3; i++ {
		p := filepath.Join(dir, fmt.Sprintf("shard%d.jsonl", i))
		out, err := run(t, "sweep", spec, "-o", p, "--shard", fmt.Sprintf("%d/3", i))
		if err != nil || !strings.Contains(out, fmt.Sprintf("cli shard %d/3: ", i)) {
			t.Fatalf("%v\n%s", err, out)
		}
		shards = append(shards, p)
	}
	merged := filepath.Join(dir, "merged.jsonl")
	out, err = run(t, append([]string{"merge", "--spec", spec, "-o", merged}, shards...)...)
	if err != nil || !strings.Contains(out, "8 points from 3 files") {
		t.Fatalf("%v\n%s", err, out)
	}
	if !bytes.Equal(readFile(t, whole), readFile(t, merged)) {
		t.Fatalf("merged shards differ from the unsplit run:\n%s\n%s", readFile(t, merged), readFile(t, whole))
	}
	// Two shards of three: the missing points are named.
	out, err = run(t, "merge", "--spec", spec, "-o", merged, shards[0], shards[2])
	if err == nil || !strings.Contains(err.Error(), "lacks 3 of the 8 points") || !strings.Contains(out, "missing: point 1 design=MESQ/SR nodes=2 seed=2") {
		t.Fatalf("%v\n%s", err, out)
	}
	// Plot and CSV from the results.
	base := filepath.Join(dir, "fig")
	if out, err := run(t, "plot", whole, "-o", base, "--x", "nodes", "--series", "design", "--hline", "qperf=11", "--csv", base+".csv"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, ext := range []string{".png", ".svg", ".csv"} {
		if fi, err := os.Stat(base + ext); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", ext, err)
		}
	}
}

func TestSweepResume(t *testing.T) {
	dir := t.TempDir()
	spec := writeSpec(t, dir, cliSpec)
	path := filepath.Join(dir, "r.jsonl")
	if out, err := run(t, "sweep", spec, "-o", path); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	full := readFile(t, path)
	// As if killed: five whole lines (in completion order) and part of a sixth.
	lines := bytes.SplitAfter(full, []byte("\n"))
	var cut []byte
	for _, i := range []int{4, 0, 7, 2, 5} {
		cut = append(cut, lines[i]...)
	}
	cut = append(cut, lines[1][:30]...)
	os.WriteFile(path, cut, 0o644)
	out, err := run(t, "sweep", spec, "-o", path)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"warning: " + path + ":6: ignoring a truncated last line", "8 points: 3 run, 5 already done"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !bytes.Equal(readFile(t, path), full) {
		t.Errorf("resumed file differs from the uninterrupted one")
	}
	// Nothing left to do.
	out, err = run(t, "sweep", spec, "-o", path)
	if err != nil || !strings.Contains(out, "0 run, 8 already done") {
		t.Fatalf("%v\n%s", err, out)
	}
}

func TestSweepFailedPoint(t *testing.T) {
	dir := t.TempDir()
	// Receivers that spend 100000 cycles per tuple starve the senders of
	// credit beyond a 0.1 ms timeout: that point fails (validation, with
	// no tuples to process, cannot tell), the other runs, and the sweep
	// records both and exits non-zero.
	spec := writeSpec(t, dir, "name: f\nbase: {nodes: 2, threads: 1, bytes-per-node: 1048576, timeout-ms: 0.1}\nvary: {cycles-per-tuple: [0, 100000]}\n")
	path := filepath.Join(dir, "f.jsonl")
	out, err := run(t, "sweep", spec, "-o", path)
	if err == nil || !strings.Contains(err.Error(), "1 of 2 points failed") || !strings.Contains(out, "/2] cycles-per-tuple=100000 FAILED: n1/shuffle0: algos: MQ/SR endpoint 0 on node 1: no progress") {
		t.Fatalf("%v\n%s", err, out)
	}
	if b := readFile(t, path); bytes.Count(b, []byte(`"error":`)) != 1 || bytes.Count(b, []byte("\n")) != 2 {
		t.Errorf("failed points not recorded:\n%s", b)
	}
}

func TestSweepBadInput(t *testing.T) {
	dir := t.TempDir()
	spec := writeSpec(t, dir, cliSpec)
	bad := func(name, text string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(text), 0o644)
		return p
	}
	out := filepath.Join(dir, "o.jsonl")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sweep", filepath.Join(dir, "nope.yaml")}, "nope.yaml: no such file"},
		{[]string{"sweep", bad("yaml.yaml", "name: x\nvary: [\n")}, "yaml.yaml: sweep spec: yaml"},
		{[]string{"sweep", bad("key.yaml", "name: x\nbsae: {}\n")}, `line 2: unknown key "bsae"`},
		{[]string{"sweep", bad("design.yaml", "name: x\nbase: {bytes-per-node: 1048576}\nvary: {design: [MEMQ/SR, MEMQ/XX]}\n"), "-o", out},
			`point 1 (design=MEMQ/XX): unknown design "MEMQ/XX"`},
		{[]string{"sweep", spec, "--shard", "3/2"}, "--shard: shard 3/2: want i/N with 1 <= i <= N"},
		{[]string{"sweep", spec, "--shard", "0/3"}, "1 <= i <= N"},
		{[]string{"sweep", spec, "--shard", "a/b"}, `shard "a/b": want i/N`},
		{[]string{"sweep", spec, "--jobs", "-1"}, "--jobs -1"},
		{[]string{"sweep"}, "sweep needs a sweep spec"},
		{[]string{"merge", "a.jsonl"}, "-o: name the merged output file"},
		{[]string{"merge", "-o", out, filepath.Join(dir, "none.jsonl")}, "none.jsonl"},
		{[]string{"plot", "x.jsonl"}, "-o: name the output files"},
		{[]string{"plot", "x.jsonl", "-o", "b", "--y", "colour"}, `--y: metric "colour": want a numeric field`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, err := run(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a sweep with an invalid point wrote %s", out)
	}
}

// TestSweepParamsMatchRunFlags: a sweep parameter for every flag of
// explore run, with the same default, so that a sweep point is the run
// those flags give. The parameters' flags come from the params table of
// experiments/sweep/sweep_params.go (sweep.Bindings); a flag declared by
// hand in run.go must be one of the exceptions below.
func TestSweepParamsMatchRunFlags(t *testing.T) {
	params := sweep.Params()
	def := experiments.DefaultConfig()
	flags := runCmd().Flags()
	flags.VisitAll(func(f *pflag.Flag) {
		// Output (and the event trace), where to run (the backend), the memory guard and the verbs
		// checker's switch (how a run is checked, not what it simulates)
		// are not sweep parameters.
		if slices.Contains([]string{"json", "backend", "device", "port", "gid-index", "local", "cores", "time-limit", "no-memory-check", "max-memory", "no-check", "trace",
			"traffic-class", "hop-limit", "static-rate", "pkey-index",
			"timeout"}, f.Name) || // --timeout is the parameter timeout-ms as a Go duration
			slices.Contains(netFlagNames, f.Name) || // the parameter network, in parts

			strings.HasPrefix(f.Name, "fault") { // faults are the soak's business, not a sweep's
			return
		}
		if !slices.Contains(params, f.Name) {
			t.Errorf("explore run --%s has no sweep parameter: add it to the params table in experiments/sweep/sweep_params.go", f.Name)
			return
		}
		if got := sweep.ParamString(def, f.Name); got != f.DefValue {
			t.Errorf("%s: sweeps default to %q, explore run to %q", f.Name, got, f.DefValue)
		}
	})
	for _, p := range params {
		if flags.Lookup(p) == nil {
			t.Errorf("sweep parameter %s is not an explore run flag", p)
		}
	}
}

// TestSweepPointNotRun: a point whose estimated memory alone is more than
// --max-memory is not run; its record says so, the other point runs, and
// the sweep names the flags that would let it run.
func TestSweepPointNotRun(t *testing.T) {
	dir := t.TempDir()
	spec := writeSpec(t, dir, "name: m\nbase: {design: MESQ/SR, threads: 1, bytes-per-node: 1048576}\nvary: {nodes: [2, 256]}\n")
	path := filepath.Join(dir, "m.jsonl")
	out, err := run(t, "sweep", spec, "-o", path, "--max-memory", "256MiB")
	if err == nil || !strings.Contains(err.Error(), "1 of 2 points not run") || !strings.Contains(err.Error(), "--max-memory") ||
		!strings.Contains(out, "1 run, 0 already done, 0 failed, 1 not run") || !strings.Contains(out, "nodes=256 NOT RUN: too much memory") {
		t.Fatalf("%v\n%s", err, out)
	}
	if b := readFile(t, path); bytes.Count(b, []byte(`"not_run":true`)) != 1 || bytes.Count(b, []byte("\n")) != 2 {
		t.Errorf("the refused point is not recorded as not run:\n%s", b)
	}
}

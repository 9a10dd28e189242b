package sweep

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/fabric"
)

const testSpec = `name: t
base: {profile: edr-cx4, threads: 1, bytes-per-node: 1048576}
vary:
  design: [MESQ/SR, MEMQ/SR]
  nodes: [2, 3]
  seed: [1, 2]
`

func mustParse(t testing.TB, spec string) *Sweep {
	t.Helper()
	s, err := ParseSweep([]byte(spec))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestParseSweepPoints(t *testing.T) {
	s := mustParse(t, testSpec)
	pts := s.Points()
	if len(pts) != 8 || s.Len() != 8 {
		t.Fatalf("%d points, want 8", len(pts))
	}
	want := []string{ // last key varies fastest
		"design=MESQ/SR nodes=2 seed=1", "design=MESQ/SR nodes=2 seed=2", "design=MESQ/SR nodes=3 seed=1", "design=MESQ/SR nodes=3 seed=2",
		"design=MEMQ/SR nodes=2 seed=1", "design=MEMQ/SR nodes=2 seed=2", "design=MEMQ/SR nodes=3 seed=1", "design=MEMQ/SR nodes=3 seed=2",
	}
	for i, p := range pts {
		if p.Index != i || p.Key != want[i] {
			t.Errorf("point %d: %d %q, want %q", i, p.Index, p.Key, want[i])
		}
	}
	c := pts[5].Config
	if c.Design != "MEMQ/SR" || c.Nodes != 2 || c.Seed != 2 || c.Threads != 1 || c.BytesPerNode != 1<<20 ||
		c.Buffers != 2 || c.Timeout != algos.DefaultTimeout || c.Pattern != algos.Repartition {
		t.Errorf("point 5 config %+v", c)
	}
	// Keys are in canonical order whatever the order in vary.
	s2 := mustParse(t, "name: t\nvary: {seed: [1], design: [MEMQ/SR]}\n")
	if k := s2.Points()[0].Key; k != "design=MEMQ/SR seed=1" {
		t.Errorf("key %q not canonical", k)
	}
	if k := mustParse(t, "name: t\n").Points()[0].Key; k != "base" {
		t.Errorf("no vary: key %q", k)
	}
	// Equal values written differently are the same point.
	if _, err := ParseSweep([]byte("name: t\nvary: {timeout-ms: [1, 1.0]}\n")); err == nil || !strings.Contains(err.Error(), "timeout-ms=1 given twice") {
		t.Errorf("duplicate value: %v", err)
	}
}

func TestParseSweepErrors(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{"", "empty"},
		{"[1, 2]", "want a mapping"},
		{"name: t\nbsae: {}\n", `line 2: unknown key "bsae": valid keys are name, base, vary`},
		{"name: t\nbase: {nodez: 2}\n", `line 2: base: unknown parameter "nodez": valid keys are design, notify, nodes`},
		{"name: t\nvary:\n  nodes: [2, x]\n", `line 3: vary.nodes: "x": want an integer >= 1`},
		{"name: t\nvary:\n  nodes: [2, 2.5]\n", `vary.nodes: 2.5: want an integer`},
		{"name: t\nbase: {design: \"\"}\n", `base.design: "": want a design name`},
		{"name: t\nbase: {pattern: sideways}\n", `pattern: "sideways": want repartition, broadcast or multicast:K`},
		{"name: t\nbase: {payload: 3}\n", `payload: 3: want true or false`},
		{"name: t\nbase: {timeout-ms: -1}\n", `timeout-ms: -1: want a number`},
		{"name: t\nbase: {seed: -1}\n", `seed: -1: want an integer >= 0`},
		{"name: t\nbase: {nodes: [2]}\n", "base.nodes: want a single value"},
		{"name: t\nbase: {nodes: }\n", "base.nodes: want a single value"},
		{"name: t\nvary: {nodes: 2}\n", "vary.nodes: want a non-empty list"},
		{"name: t\nvary: {nodes: []}\n", "vary.nodes: want a non-empty list"},
		{"name: t\nbase: {nodes: 2}\nvary: {nodes: [2, 4]}\n", "line 2: nodes is both in base and in vary"},
		{"name: t\nbase: {nodes: 2, nodes: 3}\n", "base.nodes given twice"},
		{"name: t\nname: u\n", "line 2: name given twice"},
		{"base: {nodes: 2}\n", "name is required"},
		{"name: ../x\n", `sweep name "../x"`},
		{"name: t\nbase: [1]\n", "base: want a mapping"},
		{"name: t\nvary: {seed: [1, 2], seed: [3]}\n", "seed given twice"},
		{"name: t\n  bad: indent\n", "sweep spec: yaml"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			_, err := ParseSweep([]byte(tc.spec))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestSetParam(t *testing.T) {
	for _, tc := range []struct {
		key   string
		value any
		check func(experiments.RunConfig) bool
		err   string
	}{
		{"nodes", 4, func(c experiments.RunConfig) bool { return c.Nodes == 4 }, ""},
		{"nodes", uint64(4), func(c experiments.RunConfig) bool { return c.Nodes == 4 }, ""},
		{"nodes", 4.0, func(c experiments.RunConfig) bool { return c.Nodes == 4 }, ""},
		{"nodes", 0, nil, "nodes: 0: want an integer >= 1"},
		{"nodes", "4", nil, `nodes: "4": want an integer`},
		{"bytes-per-node", int64(1) << 40, func(c experiments.RunConfig) bool { return c.BytesPerNode == 1<<40 }, ""},
		{"seed", uint64(7), func(c experiments.RunConfig) bool { return c.Seed == 7 }, ""},
		{"pattern", algos.Broadcast, func(c experiments.RunConfig) bool { return c.Pattern == algos.Broadcast }, ""},
		{"notify", "queue", func(c experiments.RunConfig) bool { return c.Notify == algos.NotifyQueue }, ""},
		{"notify", "smoke", nil, `notify: "smoke": want cq, buffers or queue`},
		{"timeout-ms", 0.5, func(c experiments.RunConfig) bool { return c.Timeout == fabric.Millisecond/2 }, ""},
		{"payload", true, func(c experiments.RunConfig) bool { return c.Payload }, ""},
		{"network", "fat-tree radix=8 routing=ftree placement=round-robin", func(c experiments.RunConfig) bool {
			return c.Network.String() == "fat-tree radix=8 routing=ftree placement=round-robin"
		}, ""},
		{"doorbells", "shared", func(c experiments.RunConfig) bool { return c.Doorbells == experiments.DoorbellsShared }, ""},
		{"doorbells", "per-thread", func(c experiments.RunConfig) bool { return c.Doorbells == experiments.DoorbellsPerThread }, ""},
		{"doorbells", "private", nil, `doorbells: "private": want shared or per-thread`},
		{"service-level", 3, func(c experiments.RunConfig) bool { return c.SL == 3 }, ""},
		{"service-level", "2", func(c experiments.RunConfig) bool { return c.SL == 2 }, ""},
		{"service-level", 16, nil, `service-level: 16: want a service level, 0 to 15`},
		{"control-service-level", 0, func(c experiments.RunConfig) bool { return c.ControlSL != nil && *c.ControlSL == 0 }, ""},
		{"control-service-level", "", func(c experiments.RunConfig) bool { return c.ControlSL == nil }, ""},
		{"control-service-level", 16, nil, `control-service-level: 16: want a service level, 0 to 15 (empty: unset)`},
		{"network", "torus", nil, `network: "torus": want a network as records write it`},
		{"profile", "", nil, `profile: "": want a built-in profile name`},
		{"colour", 1, nil, `unknown parameter "colour": valid keys are design`},
	} {
		t.Run(fmt.Sprintf("%s=%v", tc.key, tc.value), func(t *testing.T) {
			c := experiments.DefaultConfig()
			err := SetParam(&c, tc.key, tc.value)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || !tc.check(c) {
				t.Fatalf("err %v, config %+v", err, c)
			}
		})
	}
	// Every parameter round-trips through its canonical text.
	c := experiments.DefaultConfig()
	for _, k := range Params() {
		if ParamString(c, k) == "" && k != "notify" && k != "node-cycles" && k != "network" && k != "control-service-level" && k != "doorbells" { // empty: none (network: the single switch; control: the data's level; doorbells: the profile's)
			t.Errorf("%s has no canonical text", k)
		}
	}
}

func TestNewSweep(t *testing.T) {
	base := experiments.DefaultConfig()
	base.BytesPerNode = 1 << 20
	s, err := NewSweep("fig", base, Vary("nodes", 2, 4), Vary("design", "MESQ/SR", "MEMQ/SR"))
	if err != nil {
		t.Fatal(err)
	}
	if p := s.Points()[1]; p.Key != "design=MEMQ/SR nodes=2" || p.Config.BytesPerNode != 1<<20 {
		t.Errorf("point 1: %+v", p)
	}
	if got := s.Varied(); strings.Join(got, ",") != "design,nodes" {
		t.Errorf("Varied() = %v", got)
	}
	for _, tc := range []struct {
		vary []Axis
		want string
	}{
		{[]Axis{Vary("nodes")}, "nodes has no values"},
		{[]Axis{Vary("nodes", 2), Vary("nodes", 4)}, "nodes given twice"},
		{[]Axis{Vary("nodes", 2, -1)}, "nodes: -1"},
		{[]Axis{Vary("seed", make([]any, 1001)...), Vary("nodes", make([]any, 1001)...)}, "seed: no value"},
	} {
		if _, err := NewSweep("fig", base, tc.vary...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
	big := make([]any, 1001)
	for i := range big {
		big[i] = i + 1
	}
	if _, err := NewSweep("fig", base, Vary("seed", big...), Vary("nodes", big...)); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("a million-point sweep: %v", err)
	}
}

func TestParseShard(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Shard
		err  string
	}{
		{"1/3", Shard{1, 3}, ""},
		{"3/3", Shard{3, 3}, ""},
		{"3/2", Shard{}, "1 <= i <= N"},
		{"0/3", Shard{}, "1 <= i <= N"},
		{"a/b", Shard{}, "whole numbers"},
		{"2", Shard{}, "want i/N"},
	} {
		got, err := ParseShard(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: got %v, want %q", tc.in, err, tc.err)
			}
		} else if err != nil || got != tc.want {
			t.Errorf("%s: %v %v", tc.in, got, err)
		}
	}
	sel := 0
	for i := 0; i < 9; i++ {
		for k := 1; k <= 3; k++ {
			if (Shard{k, 3}).Has(i) {
				sel++
			}
		}
	}
	if sel != 9 {
		t.Errorf("shards 1..3 of 3 select %d of 9 points", sel)
	}
}

// TestRunSweepDeterministic: the same sweep with one and two workers gives
// byte-identical files. Run it with -race: the simulated clusters of
// parallel points must share nothing.
func TestRunSweepDeterministic(t *testing.T) {
	s := mustParse(t, testSpec)
	dir := t.TempDir()
	var files [][]byte
	for _, jobs := range []int{1, 2} {
		out := filepath.Join(dir, fmt.Sprintf("jobs%d.jsonl", jobs))
		rep, err := RunSweep(context.Background(), s, SweepOptions{Jobs: jobs, Out: out})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Ran != 8 || rep.Failed != 0 || len(rep.Results) != 8 {
			t.Fatalf("report %+v", rep)
		}
		for _, r := range rep.Results {
			if r.Integrity != "ok" || r.WallS != 0 || r.Wall <= 0 {
				t.Errorf("point %d: integrity %s wall_s %v wall %v", r.Point, r.Integrity, r.WallS, r.Wall)
			}
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, b)
	}
	if !bytes.Equal(files[0], files[1]) {
		t.Fatalf("Jobs=1 and Jobs=2 differ:\n%s\n%s", files[0], files[1])
	}
	if n := bytes.Count(files[0], []byte("\n")); n != 8 || !bytes.HasPrefix(files[0], []byte(`{"point":0,"key":"design=MESQ/SR nodes=2 seed=1","experiment":"run"`)) {
		t.Fatalf("%d lines:\n%s", n, files[0])
	}
}

// fakeRun is a Run that fails for seed 13 and counts its calls.
func fakeRun(calls *atomic.Int32) func(experiments.RunConfig) (*results.Record, error) {
	return func(c experiments.RunConfig) (*results.Record, error) {
		calls.Add(1)
		if c.Seed == 13 {
			return nil, errors.New("unlucky")
		}
		return &results.Record{Experiment: "run", Profile: c.Profile, Design: c.Design, Nodes: c.Nodes, Threads: c.Threads, Seed: c.Seed, BytesPerNode: c.BytesPerNode,
			Pattern: string(c.Pattern), Buffers: c.Buffers, CreditEvery: c.CreditEvery, Integrity: "ok", ThroughputGiBs: float64(c.Nodes), WallS: 1}, nil
	}
}

func TestRunSweepResumeAndFailures(t *testing.T) {
	s := mustParse(t, "name: t\nvary: {nodes: [2, 4], seed: [1, 13, 3]}\n")
	out := filepath.Join(t.TempDir(), "sub", "t.jsonl")
	var calls atomic.Int32
	var warnings []string
	opts := SweepOptions{Out: out, Run: fakeRun(&calls), Warn: func(w string) { warnings = append(warnings, w) }}
	rep, err := RunSweep(context.Background(), s, opts)
	if !errors.Is(err, ErrPointsFailed) || !strings.Contains(err.Error(), "2 of 6") {
		t.Fatalf("err %v, want 2 of 6 points failed", err)
	}
	if rep.Ran != 6 || rep.Failed != 2 || calls.Load() != 6 {
		t.Fatalf("report %+v, %d calls", rep, calls.Load())
	}
	full, _ := os.ReadFile(out)
	if !bytes.Contains(full, []byte(`{"point":1,"key":"nodes=2 seed=13","error":"unlucky"}`)) {
		t.Fatalf("failed point not recorded:\n%s", full)
	}
	// A killed run: two good lines and half of the third.
	lines := bytes.SplitAfter(full, []byte("\n"))
	cut := append(append(bytes.Clone(lines[0]), lines[2]...), lines[3][:20]...)
	os.WriteFile(out, cut, 0o644)
	calls.Store(0)
	rep, err = RunSweep(context.Background(), s, opts)
	if !errors.Is(err, ErrPointsFailed) {
		t.Fatal(err)
	}
	// Points 0 and 2 are done; 1 (failed before), 3, 4 (failed) and 5 run.
	if rep.Skipped != 2 || rep.Ran != 4 || calls.Load() != 4 {
		t.Errorf("resume: skipped %d ran %d calls %d, want 2, 4, 4", rep.Skipped, rep.Ran, calls.Load())
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "t.jsonl:3: ignoring a truncated last line") {
		t.Errorf("warnings %q", warnings)
	}
	again, _ := os.ReadFile(out)
	if !bytes.Equal(again, full) {
		t.Errorf("resumed file differs:\n%s\nwant\n%s", again, full)
	}
	// A file from another spec is refused.
	other := mustParse(t, "name: t\nbase: {threads: 3}\nvary: {nodes: [2, 4], seed: [1, 13, 3]}\n")
	if _, err := RunSweep(context.Background(), other, opts); err == nil || !strings.Contains(err.Error(), "threads is 2 in the file but 3 in the spec") {
		t.Errorf("other spec: %v", err)
	}
	// A bad line in the middle is an error, not a warning.
	os.WriteFile(out, append([]byte("garbage\n"), full...), 0o644)
	if _, err := RunSweep(context.Background(), s, opts); err == nil || !strings.Contains(err.Error(), "t.jsonl:1: not a sweep result") {
		t.Errorf("bad line: %v", err)
	}
}

func TestRunSweepValidatesFirst(t *testing.T) {
	s := mustParse(t, "name: t\nbase: {bytes-per-node: 1048576}\nvary: {nodes: [2], threads: [1, 100]}\n")
	out := filepath.Join(t.TempDir(), "t.jsonl")
	_, err := RunSweep(context.Background(), s, SweepOptions{Out: out})
	if err == nil || !strings.Contains(err.Error(), "point 1 (nodes=2 threads=100): threads 100") {
		t.Fatalf("got %v", err)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("an invalid sweep created its output file")
	}
	for _, tc := range []struct{ spec, want string }{
		{"vary: {nodes: [2, 4], pattern: [multicast:3]}", "point 0 (nodes=2 pattern=multicast:3): algos: invalid configuration: pattern \"multicast:3\""},
		{"vary: {design: [MEMQ/SR, XX/YY]}", `point 1 (design=XX/YY): unknown design "XX/YY"`},
		{"base: {pattern: multicast:2}\nvary: {design: [MEMQ/SR, MESQ/SR]}", "point 1 (design=MESQ/SR): pattern multicast:2: not with MESQ/SR"},
	} {
		_, err := RunSweep(context.Background(), mustParse(t, "name: t\n"+tc.spec), SweepOptions{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
	s = mustParse(t, "name: t\nbase: {bytes-per-node: 1048576, buffers: 1}\nvary: {design: [MESQ/SR, MEMQ/SR]}\n")
	if _, err := RunSweep(context.Background(), s, SweepOptions{}); err == nil || !strings.Contains(err.Error(), "credit every 2") {
		t.Fatalf("got %v", err)
	}
}

func TestMerge(t *testing.T) {
	s := mustParse(t, "name: t\nvary: {nodes: [2, 4], seed: [1, 2, 3]}\n")
	dir := t.TempDir()
	var calls atomic.Int32
	var shards []string
	for i := 1; i <= 3; i++ {
		out := filepath.Join(dir, fmt.Sprintf("s%d.jsonl", i))
		if _, err := RunSweep(context.Background(), s, SweepOptions{Out: out, Shard: Shard{i, 3}, Run: fakeRun(&calls)}); err != nil {
			t.Fatal(err)
		}
		shards = append(shards, out)
	}
	whole := filepath.Join(dir, "whole.jsonl")
	if _, err := RunSweep(context.Background(), s, SweepOptions{Out: whole, Run: fakeRun(&calls)}); err != nil {
		t.Fatal(err)
	}
	merged := filepath.Join(dir, "merged.jsonl")
	rep, err := Merge(merged, s, nil, append(shards, shards[0])...) // a duplicate input is fine
	if err != nil || len(rep.Missing) != 0 || len(rep.Results) != 6 {
		t.Fatalf("merge: %v %+v", err, rep)
	}
	a, _ := os.ReadFile(whole)
	b, _ := os.ReadFile(merged)
	if !bytes.Equal(a, b) {
		t.Fatalf("merged shards differ from the whole run:\n%s\n%s", b, a)
	}
	rep, err = Merge(merged, s, nil, shards[0], shards[2])
	if err != nil || len(rep.Missing) != 2 || rep.Missing[0].Key != "nodes=2 seed=2" {
		t.Fatalf("missing: %v %+v", err, rep.Missing)
	}
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, bytes.Replace(a, []byte(`"nodes":2,`), []byte(`"nodes":5,`), 1), 0o644)
	if _, err := Merge(merged, s, nil, whole, bad); err == nil || !strings.Contains(err.Error(), "point 0 (nodes=2 seed=1) differs between") {
		t.Errorf("conflict: %v", err)
	}
	other := mustParse(t, "name: u\nvary: {nodes: [2, 8]}\n")
	if _, err := Merge(merged, other, nil, whole); err == nil || !strings.Contains(err.Error(), "is not a point of sweep u") {
		t.Errorf("other spec: %v", err)
	}
	if _, err := Merge(merged, nil, nil, filepath.Join(dir, "nope.jsonl")); err == nil || !strings.Contains(err.Error(), "nope.jsonl") {
		t.Errorf("missing input: %v", err)
	}
}

// FuzzParseSweep: ParseSweep never panics, and what it accepts has points
// with distinct keys.
func FuzzParseSweep(f *testing.F) {
	f.Add([]byte(testSpec))
	f.Add([]byte("name: x\nbase: {payload: true, timeout-ms: 0.5, notify: queue, design: MEMQ/WR}\n"))
	f.Add([]byte("name: x\nvary: &a {nodes: [2]}\nbase: *a\n"))
	f.Add([]byte("name: [x]\n"))
	f.Add([]byte("{"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSweep(data)
		if err != nil {
			return
		}
		if s.Len() > 10000 {
			return
		}
		seen := map[string]bool{}
		for _, p := range s.Points() {
			if seen[p.Key] {
				t.Fatalf("key %q twice", p.Key)
			}
			seen[p.Key] = true
		}
	})
}

// TestResultsFileMode: a results file is 0644, like the CSV and plots.
func TestResultsFileMode(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.jsonl")
	if err := results.WriteFile(path, []results.Result{{Point: 0, Key: "k", Error: "x"}}); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, %v; want 0644", st.Mode().Perm(), err)
	}
}

// TestRunSweepCancelled: a sweep whose context is already cancelled (an
// interrupted figure going on to its next sweep) starts no point, however
// many workers are free, and says why.
func TestRunSweepCancelled(t *testing.T) {
	s := mustParse(t, "name: t\nbase: {nodes: 2}\nvary: {seed: [1, 2, 3, 4, 5, 6, 7, 8]}\n")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for range 20 { // the dispatch once chose at random between a free worker and the cancellation
		var calls atomic.Int32
		rep, err := RunSweep(ctx, s, SweepOptions{Jobs: 8, Run: fakeRun(&calls)})
		if !errors.Is(err, context.Canceled) || calls.Load() != 0 || rep == nil || rep.Ran != 0 {
			t.Fatalf("cancelled sweep: err %v, %d runs", err, calls.Load())
		}
	}
}

// TestValidatePointsChecksEndpointOptions: options that some designs
// refuse (UD recovery on RC, buffer ceilings without adaptive buffers) stop
// a sweep before it runs, naming the point.
func TestValidatePointsChecksEndpointOptions(t *testing.T) {
	base := experiments.DefaultConfig()
	base.Nodes = 2
	tests := []struct {
		name string
		mod  func(*experiments.RunConfig)
		want string
	}{
		{"ud recovery on RC", func(c *experiments.RunConfig) { c.Design, c.UDRecovery = "MEMQ/SR", true }, "point 1"},
		{"max buffers without adaptive", func(c *experiments.RunConfig) { c.MaxBuffers = 8 }, "point 1"},
	}
	for _, tt := range tests {
		ok := base
		ok.Design = "MEMQ/SR"
		bad := ok
		tt.mod(&bad)
		err := ValidatePoints([]Point{{Index: 0, Key: "ok", Config: ok}, {Index: 1, Key: "bad", Config: bad}})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error naming %s", tt.name, err, tt.want)
		}
	}
}

// TestRunSweepMemoryBudget: with a memory budget that holds each point's
// estimate but no two, the points all run one at a time, and the file is
// the same as without one; with a budget below the larger points', those
// are refused (failed, saying why) and the others run.
func TestRunSweepMemoryBudget(t *testing.T) {
	s := mustParse(t, "name: t\nvary: {nodes: [2, 4], seed: [1, 3]}\n")
	var largest, smallest int64
	for _, p := range s.Points() {
		est := experiments.MemoryEstimate(p.Config)
		largest = max(largest, est)
		if smallest == 0 || est < smallest {
			smallest = est
		}
	}
	var calls, running, most atomic.Int32
	run := func(c experiments.RunConfig) (*results.Record, error) {
		if n := running.Add(1); n > most.Load() {
			most.Store(n)
		}
		defer running.Add(-1)
		return fakeRun(&calls)(c)
	}
	dir := t.TempDir()
	with, without := filepath.Join(dir, "with.jsonl"), filepath.Join(dir, "without.jsonl")
	if _, err := RunSweep(context.Background(), s, SweepOptions{Out: with, Jobs: 4, Run: run, Memory: experiments.NewMemoryBudget(largest)}); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 4 || most.Load() != 1 {
		t.Errorf("%d runs, at most %d at once; want 4, one at a time", calls.Load(), most.Load())
	}
	calls.Store(0)
	rep, err := RunSweep(context.Background(), s, SweepOptions{Out: filepath.Join(t.TempDir(), "small.jsonl"), Jobs: 4, Run: run, Memory: experiments.NewMemoryBudget(smallest)})
	if !errors.Is(err, ErrPointsFailed) || calls.Load() != 2 {
		t.Fatalf("budget of the smaller points: err %v after %d runs; want 2 runs and the 4-node points failed", err, calls.Load())
	}
	for _, r := range rep.Results {
		if refused := r.Failed(); refused != strings.Contains(r.Key, "nodes=4") || refused != r.NotRun || refused && !strings.Contains(r.Error, "estimated at") {
			t.Errorf("%s: failed %v, not run %v (%q)", r.Key, refused, r.NotRun, r.Error)
		}
	}
	if _, err := RunSweep(context.Background(), s, SweepOptions{Out: without, Jobs: 4, Run: fakeRun(&calls)}); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(with)
	b, _ := os.ReadFile(without)
	if !bytes.Equal(a, b) {
		t.Errorf("results differ with a budget:\n%s\nwithout:\n%s", a, b)
	}
}

func TestParseSweepRefusesSecondDocument(t *testing.T) {
	_, err := ParseSweep([]byte("name: a\nbase: {nodes: 2}\n---\nname: b\nvary: {nodes: [4, 8]}\n"))
	if err == nil || !strings.Contains(err.Error(), "a second YAML document starts at line 4") {
		t.Fatalf("got %v", err)
	}
}

// TestResumeRefusesStaleResults: a resumed sweep whose base changed in
// anything a run depends on (profile, input size, payload, adaptive
// buffers, timeout) refuses the old results, naming the parameter, rather
// than skipping every point with them.
func TestResumeRefusesStaleResults(t *testing.T) {
	out := filepath.Join(t.TempDir(), "s.jsonl")
	base := "profile: edr-cx4, bytes-per-node: 65536"
	spec := func(b string) *Sweep {
		return mustParse(t, "name: stale\nbase: {"+b+"}\nvary: {design: [MESQ/SR, MEMQ/SR], nodes: [2]}\n")
	}
	if _, err := RunSweep(context.Background(), spec(base), SweepOptions{Out: out}); err != nil {
		t.Fatal(err)
	}
	rep, err := RunSweep(context.Background(), spec(base), SweepOptions{Out: out})
	if err != nil || rep.Skipped != 2 || rep.Ran != 0 {
		t.Fatalf("unchanged spec: %v, %+v", err, rep)
	}
	for _, tc := range []struct{ base, want string }{
		{"profile: fdr-cx3, bytes-per-node: 65536", "profile is edr-cx4 in the file but fdr-cx3 in the spec"},
		{"profile: edr-cx4, bytes-per-node: 131072", "bytes-per-node is 65536 in the file but 131072 in the spec"},
		{base + ", payload: true", "payload is false in the file but true in the spec"},
		{base + ", adaptive: true", "adaptive is false in the file but true in the spec"},
		{base + ", timeout-ms: 500", "timeout-ms is 1.000000s in the file but 500.000ms in the spec"},
	} {
		_, err := RunSweep(context.Background(), spec(tc.base), SweepOptions{Out: out})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("base {%s}: %v, want an error with %q", tc.base, err, tc.want)
		}
	}
}

// TestValidateProbesOneTuple: validation runs one tuple per node whatever
// the input asked for: a point sized by bytes per pair (1 MiB per pair
// here; at paper scale hundreds of MiB per node) validates in a probe of
// one tuple, not with the whole input.
func TestValidateProbesOneTuple(t *testing.T) {
	cfg := experiments.DefaultConfig()
	cfg.Design, cfg.Nodes, cfg.BytesPerPair = "MEMQ/SR", 4, 1<<20
	var sent uint64
	run := func(c experiments.RunConfig) (*results.Record, error) {
		rec, err := experiments.Run(c)
		if rec != nil {
			sent = rec.TuplesSent
		}
		return rec, err
	}
	if err := validateWith(cfg, run); err != nil {
		t.Fatal(err)
	}
	if sent == 0 || sent > 2 {
		t.Errorf("the probe sent %d tuples, want one per node (at most 2 nodes)", sent)
	}
}

// TestTwoSweepsOneFile: a second sweep (another shard, say) given the
// output file a running sweep writes is refused at once and writes
// nothing; the first finishes with every point; afterwards the file can
// be resumed.
func TestTwoSweepsOneFile(t *testing.T) {
	out := filepath.Join(t.TempDir(), "s.jsonl")
	s := mustParse(t, "name: t\nvary: {nodes: [2, 4], seed: [1, 2]}\n")
	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	slow := func(c experiments.RunConfig) (*results.Record, error) {
		once.Do(func() { close(started) })
		<-release
		return &results.Record{Experiment: "run", Profile: c.Profile, Design: c.Design, Nodes: c.Nodes, Threads: c.Threads, Seed: c.Seed,
			BytesPerNode: c.BytesPerNode, Pattern: string(c.Pattern), Buffers: c.Buffers, CreditEvery: c.CreditEvery, Integrity: "ok"}, nil
	}
	first := make(chan error)
	go func() {
		_, err := RunSweep(context.Background(), s, SweepOptions{Out: out, Run: slow, Shard: Shard{1, 2}})
		first <- err
	}()
	<-started
	fast := func(c experiments.RunConfig) (*results.Record, error) {
		return &results.Record{Experiment: "run", Profile: c.Profile, Design: c.Design, Nodes: c.Nodes, Integrity: "ok"}, nil
	}
	_, err := RunSweep(context.Background(), s, SweepOptions{Out: out, Run: fast, Shard: Shard{2, 2}})
	if !errors.Is(err, ErrOutputBusy) {
		t.Errorf("second sweep on the same file: %v, want ErrOutputBusy", err)
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	rs, err := results.ReadFile(out, nil)
	if err != nil || len(rs) != 2 {
		t.Fatalf("the first shard's file: %d results, %v", len(rs), err)
	}
	rep, err := RunSweep(context.Background(), s, SweepOptions{Out: out, Run: slow, Shard: Shard{1, 2}})
	if err != nil || rep.Skipped != 2 {
		t.Errorf("resume after the lock is released: %+v, %v", rep, err)
	}
}

// TestByteSizesWithUnits: byte sizes in specs take units as flags do.
func TestByteSizesWithUnits(t *testing.T) {
	s := mustParse(t, "name: u\nbase: {bytes-per-node: 256KiB, bytes-per-pair: 1MB}\nvary: {nodes: [2]}\n")
	if c := s.Points()[0].Config; c.BytesPerNode != 256<<10 || c.BytesPerPair != 1_000_000 {
		t.Errorf("bytes-per-node %d, bytes-per-pair %d", c.BytesPerNode, c.BytesPerPair)
	}
	if _, err := ParseSweep([]byte("name: u\nbase: {bytes-per-node: 64MB/s}\nvary: {nodes: [2]}\n")); err == nil || !strings.Contains(err.Error(), "bytes-per-node") {
		t.Errorf("a size with a rate's unit: %v", err)
	}
}

// TestResumeTakesGrownPoints: a point grown to steady state (explore
// reproduce runs it again with input_scale times its input) is the
// point's result, and a resumed sweep keeps it; a change of the spec's
// input is still refused.
func TestResumeTakesGrownPoints(t *testing.T) {
	out := filepath.Join(t.TempDir(), "s.jsonl")
	spec := func(b string) *Sweep {
		return mustParse(t, "name: grown\nbase: {profile: edr-cx4, bytes-per-node: "+b+"}\nvary: {design: [MESQ/SR, MEMQ/SR], nodes: [2]}\n")
	}
	grow := func(c experiments.RunConfig) (*results.Record, error) {
		g, _ := c.ScaledInput(4)
		rec, err := experiments.Run(g)
		if rec != nil {
			rec.InputScale = 4
		}
		return rec, err
	}
	if _, err := RunSweep(context.Background(), spec("65536"), SweepOptions{Out: out, Run: grow}); err != nil {
		t.Fatal(err)
	}
	rep, err := RunSweep(context.Background(), spec("65536"), SweepOptions{Out: out, Run: grow})
	if err != nil || rep.Skipped != 2 || rep.Ran != 0 {
		t.Fatalf("resumed: %v, %+v", err, rep)
	}
	if _, err := RunSweep(context.Background(), spec("131072"), SweepOptions{Out: out, Run: grow}); err == nil || !strings.Contains(err.Error(), "bytes-per-node is 262144 in the file but 524288 in the spec") {
		t.Errorf("another input: %v", err)
	}
}

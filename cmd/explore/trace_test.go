package main

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestTraceCommands: explore run --trace writes a trace whose hash is the
// run's; trace diff of two runs one parameter apart prints the parameter
// and the first divergent event and exits 1; of a trace with itself,
// says identical; trace show prints events; bad input is refused.
func TestTraceCommands(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.trace"), filepath.Join(dir, "b.trace")
	base := []string{"run", "--design", "MEMQ/SR", "--nodes", "4", "--bytes-per-node", "262144", "--seed", "3"}
	if _, err := run(t, append(base, "--trace", a)...); err != nil {
		t.Fatal(err)
	}
	if _, err := run(t, append(base, "--buffers", "3", "--trace", b)...); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "trace", "diff", a, b, "--context", "2")
	var status exitStatus
	if !errors.As(err, &status) || status != 1 {
		t.Fatalf("diff of different runs: %v, want exit status 1\n%s", err, out)
	}
	for _, want := range []string{"Buffers: 2 | 3", `--buffers: (absent) | "3"`, "part at event", "> #"} {
		if !strings.Contains(out, want) {
			t.Errorf("diff output lacks %q:\n%s", want, out)
		}
	}
	out, err = run(t, "trace", "diff", a, a)
	if err != nil || !strings.Contains(out, "the traces are identical") {
		t.Errorf("diff with itself: %v\n%s", err, out)
	}
	out, err = run(t, "trace", "diff", a, b, "--json")
	var d struct {
		Index  uint64
		Events uint64
		A, B   []map[string]any
	}
	if !errors.As(err, &status) || json.Unmarshal([]byte(out), &d) != nil || d.Index != d.Events+1 || len(d.A) == 0 || d.A[0]["source"] == nil {
		t.Errorf("diff --json: %v\n%s", err, out)
	}
	out, err = run(t, "trace", "show", a, "--count", "1", "--json")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); err != nil || len(lines) != 3 || !strings.Contains(lines[1], `"seq":1`) || !strings.Contains(lines[2], `"trace_hash"`) {
		t.Errorf("show --json: %v\n%s", err, out)
	}
	out, err = run(t, "trace", "show", a, "--from", "3", "--count", "2")
	if err != nil || strings.Count(out, "\n#") != 2 || !strings.Contains(out, "#3 ") || !strings.Contains(out, "trace hash") {
		t.Errorf("show: %v\n%s", err, out)
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"trace", "diff", a, filepath.Join(dir, "none")}, "no such file"},
		{[]string{"trace", "diff", a, filepath.Join("testdata", "..", "main.go")}, "not a trace file"},
		{[]string{"trace", "diff", a, b, "--context", "-1"}, "--context -1"},
		{[]string{"trace", "show", a, "--from", "0"}, "numbered from 1"},
		{append(base, "--backend", "loopback", "--trace", a), "--trace records the simulator's events"},
	} {
		if _, err := run(t, bad.args...); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%v: %v, want an error with %q", bad.args, err, bad.want)
		}
	}
}

// TestJobSizeCheckedFirst: on a real backend, the job's size and rank from
// the environment are checked before any connection is tried: a size past
// the limit (32,768 is the last accepted, so it reaches the check against
// --nodes), a rank outside the job, or a size that disagrees with --nodes,
// fails at once instead of allocating for it or waiting for peers that
// will not come.
func TestJobSizeCheckedFirst(t *testing.T) {
	t.Setenv("RDMASHUFFLE_COORDINATOR", "127.0.0.1:9")
	for _, tc := range []struct{ rank, size, want string }{
		{"0", "2147483648", "RDMASHUFFLE_SIZE=2147483648: more than 32768 nodes"},
		{"0", "32769", "RDMASHUFFLE_SIZE=32769: more than 32768 nodes"},
		{"0", "32768", "--nodes 2 but the job has 32768 nodes"},
		{"0", "0", `RDMASHUFFLE_SIZE="0" is not a number of nodes`},
		{"0", "4", "--nodes 2 but the job has 4 nodes"},
		{"2", "2", "rank 2 (from RDMASHUFFLE_RANK) outside 0..1"},
		{"-1", "2", `RDMASHUFFLE_RANK="-1" is not a rank`},
		{"99999999999999999999", "2", "is not a rank"},
	} {
		t.Setenv("RDMASHUFFLE_RANK", tc.rank)
		t.Setenv("RDMASHUFFLE_SIZE", tc.size)
		if _, err := run(t, "run", "--backend", "tcp", "--design", "TCP", "--nodes", "2"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("rank %s, size %s: %v, want %q", tc.rank, tc.size, err, tc.want)
		}
	}
}

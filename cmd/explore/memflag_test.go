package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func TestByteSizeFlag(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		err  bool
	}{
		{"8GiB", 8 << 30, false},
		{"500MB", 500e6, false},
		{"2.5 GiB", 5 << 29, false},
		{"1024", 1024, false},
		{"0", 0, true},
		{"-1GiB", 0, true},
		{"lots", 0, true},
	} {
		var n int64
		err := byteSize{&n}.Set(tc.in)
		if tc.err != (err != nil) || !tc.err && n != tc.want {
			t.Errorf("Set(%q) = %d, %v; want %d, error %v", tc.in, n, err, tc.want, tc.err)
		}
		if err != nil && !strings.Contains(err.Error(), "e.g. 8GiB") {
			t.Errorf("Set(%q): error %q does not show the form", tc.in, err)
		}
	}
}

func TestMemoryLimits(t *testing.T) {
	if _, err := (memoryLimits{off: true, max: 1 << 30}).budget(); err == nil || !strings.Contains(err.Error(), "choose one") {
		t.Errorf("--max-memory with --no-memory-check: error %v", err)
	}
	if b, err := (memoryLimits{off: true}).budget(); b != nil || err != nil {
		t.Errorf("--no-memory-check: budget %v, error %v; want none", b, err)
	}
	if b, err := (memoryLimits{max: 3 << 30}).budget(); err != nil || b.Total() != 3<<30 {
		t.Errorf("--max-memory 3GiB: budget %d, error %v", b.Total(), err)
	}
}

// TestSingleRunLimit: explore run and bench check one run against
// --max-memory, else the system's figure; --no-memory-check checks nothing.
func TestSingleRunLimit(t *testing.T) {
	system := func() (int64, bool) { return 5 << 30, true }
	for _, tc := range []struct {
		m     memoryLimits
		limit int64
		ok    bool
		err   bool
	}{
		{memoryLimits{}, 5 << 30, true, false},
		{memoryLimits{max: 1 << 30}, 1 << 30, true, false},
		{memoryLimits{off: true}, 0, false, false},
		{memoryLimits{off: true, max: 1 << 30}, 0, false, true},
	} {
		limit, ok, err := tc.m.single(system)
		if limit != tc.limit || ok != tc.ok || (err != nil) != tc.err {
			t.Errorf("%+v: %d, %v, %v; want %d, %v, error %v", tc.m, limit, ok, err, tc.limit, tc.ok, tc.err)
		}
	}
}

// TestRunRefusesAboveMaxMemory: explore run names the estimate, the limit
// and the way out, and runs nothing.
func TestRunRefusesAboveMaxMemory(t *testing.T) {
	for _, cmd := range []*cobra.Command{runCmd(), benchCmd()} {
		args := []string{"--nodes", "64", "--max-memory", "10MB"}
		if cmd.Name() == "bench" {
			args = append([]string{"alltoall_bw"}, args...)
		}
		cmd.SetArgs(args)
		cmd.SilenceUsage = true
		out := new(strings.Builder)
		cmd.SetOut(out)
		cmd.SetErr(new(strings.Builder))
		err := execWords(cmd)
		if err == nil || !strings.Contains(err.Error(), "more than the 10 MiB allowed") || !strings.Contains(err.Error(), "--no-memory-check") || out.Len() > 0 {
			t.Errorf("%s %v: error %v, output %q; want a refusal naming the limit", cmd.Name(), args, err, out)
		}
	}
}

// TestReproduceRejectsConflictingMemoryFlags: the conflict is reported
// before anything runs.
func TestReproduceRejectsConflictingMemoryFlags(t *testing.T) {
	cmd := reproduceCmd()
	cmd.SetArgs([]string{"--max-memory", "4GiB", "--no-memory-check", "--figures", "fig13", "--out", t.TempDir()})
	cmd.SetOut(new(strings.Builder))
	cmd.SetErr(new(strings.Builder))
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "choose one") {
		t.Errorf("error %v, want the conflict named", err)
	}
}

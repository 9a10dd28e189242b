package main

import (
	"strings"
	"testing"
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

package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestInterrupt sends SIGINT to a running explore (this test binary acting
// as it): a sweep keeps its finished points, says how to resume and exits
// 130, and the resumed sweep completes; a bench stops at once with the
// runs it finished.
func TestInterrupt(t *testing.T) {
	dir := t.TempDir()
	spec := writeSpec(t, dir, "name: intr\nbase: {nodes: 2, threads: 1, bytes-per-node: 4194304}\nvary: {seed: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16]}\n")
	out := filepath.Join(dir, "intr.jsonl")
	// The signal waits for the first finished point.
	stderr := interrupt(t, func(string) bool { b, _ := os.ReadFile(out); return bytes.Count(b, []byte("\n")) > 0 },
		"sweep", spec, "-o", out, "--jobs", "1")
	for _, want := range []string{"interrupt: no new point starts", "interrupted: sweep intr after ", " of 16 points", "resume with: explore sweep " + spec + " --jobs=1 --out=" + out} {
		if !strings.Contains(stderr, want) {
			t.Errorf("sweep's message lacks %q:\n%s", want, stderr)
		}
	}
	b, _ := os.ReadFile(out)
	if n := bytes.Count(b, []byte("\n")); n == 0 || n == 16 {
		t.Errorf("the interrupted sweep kept %d of 16 points", n)
	}
	resumed, err := run(t, "sweep", spec, "-o", out, "--jobs", "1", "--table=false")
	if err != nil || !strings.Contains(resumed, "already done, 0 failed") {
		t.Errorf("resume: %v\n%s", err, resumed)
	}

	// The signal waits for the first progress line (after a second).
	stderr = interrupt(t, func(stderr string) bool { return stderr != "" }, "bench", "send_bw", "-a", "-n", "20000")
	if !strings.Contains(stderr, "interrupted: bench send_bw after ") || !strings.Contains(stderr, " of 23 runs") {
		t.Errorf("bench's message:\n%s", stderr)
	}
}

// interrupt runs explore with args, waits (at most 60 s) until ready
// holds for its standard error so far, sends SIGINT and returns standard
// error after checking the exit status 130.
func interrupt(t *testing.T, ready func(stderr string) bool, args ...string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), asMain+"=1")
	f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd.Stderr = f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stderr := func() string { b, _ := os.ReadFile(f.Name()); return string(b) }
	for end := time.Now().Add(60 * time.Second); !ready(stderr()) && time.Now().Before(end); {
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGINT)
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted {
		t.Errorf("%v: exit %v, want status %d\n%s", args, err, exitInterrupted, stderr())
	}
	return stderr()
}

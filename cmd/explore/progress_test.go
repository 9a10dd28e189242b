package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestProgressStatus(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		what, unit, detail string
		total, done        int
		after, lastAt      time.Duration // now and the last step, after start
		want               string
	}{
		{"run MESQ/SR", "", "8 nodes", 0, 0, 3 * time.Second, 0, "run MESQ/SR: 3.0s elapsed; 8 nodes"},
		{"bench read_bw", "runs", "", 13, 0, 2 * time.Second, 0, "bench read_bw: 0/13 runs, 2.0s elapsed"},
		{"bench read_bw", "runs", "-s 64 -q 1", 13, 4, 20 * time.Second, 19 * time.Second,
			"bench read_bw: 4/13 runs, 12/min, about 45s left, 20s elapsed; -s 64 -q 1"},
		// The run going on has taken more than twice the average: no estimate.
		{"bench read_bw", "runs", "-s 32 -q 4096", 13, 12, 40 * time.Second, 12 * time.Second,
			"bench read_bw: 12/13 runs, 18/min, the one running for 28s (3.3s on average so far), 40s elapsed; -s 32 -q 4096"},
		{"figure fig19", "points", "", 88, 44, 10 * time.Minute, 10 * time.Minute, "figure fig19: 44/88 points, 4.4/min, about 10m00s left, 10m00s elapsed"},
		{"sweep 2", "points", "", 4, 1, 20 * time.Second, 10 * time.Second, "sweep 2: 1/4 points, 6.0/min, about 30s left, 20s elapsed"},
		// All done at 30 s, still writing at 50 s: the rate is the work's.
		{"sweep 1", "points", "", 6, 6, 50 * time.Second, 30 * time.Second, "sweep 1: 6/6 points, 12/min, about 0.0s left, 50s elapsed"},
		{"soak", "seeds", "", 200, 1, 90 * time.Second, 89 * time.Second, "soak: 1/200 seeds, 0.7/min, about 4h58m left, 1m30s elapsed"},
	} {
		tk := &task{what: c.what, unit: c.unit, total: c.total, done: c.done, detail: c.detail, start: start, last: start.Add(c.lastAt)}
		if c.what == "sweep 2" { // a figure's second sweep, begun at 10 s
			tk.from = start.Add(10 * time.Second)
		}
		if got := tk.status(start.Add(c.after)); got != c.want {
			t.Errorf("status:\n got %q\nwant %q", got, c.want)
		}
	}
}

// A task writing to a file that is not a terminal prints plain lines; one
// writing to anything but a file (a buffer) prints nothing.
func TestProgressPlainLines(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	tk := newTask(f, "bench send_bw", "runs", 2)
	tk.step(1, "-s 4096 -q 1")
	tk.print(time.Now())
	tk.finish()
	f.Close()
	b, _ := os.ReadFile(f.Name())
	if !strings.HasPrefix(string(b), "bench send_bw: 1/2 runs, ") || strings.Contains(string(b), "\r") || !strings.HasSuffix(string(b), "; -s 4096 -q 1\n") {
		t.Errorf("plain progress line: %q", b)
	}
	if tk.w == nil || tk.live {
		t.Errorf("a file: w %v, live %v", tk.w, tk.live)
	}
	if quiet := newTask(new(strings.Builder), "x", "", 0); quiet.w != nil {
		t.Error("a task writing to a buffer prints")
	}
}

func TestInterruptedMessage(t *testing.T) {
	for _, c := range []struct {
		graceful bool
		resume   string
		err      error
		want     []string
	}{
		{true, "resume with: explore figure fig19 --resume", fmt.Errorf("fig19: %w", context.Canceled),
			[]string{"interrupted: figure fig19 after 3 of 8 points (", "); resume with: explore figure fig19 --resume"}},
		{false, "", context.Canceled, []string{"interrupted: figure fig19 after 3 of 8 points", "nothing is kept: run the command again"}},
	} {
		tk := &task{what: "figure fig19", unit: "points", total: 8, done: 3, start: time.Now(), graceful: c.graceful, resume: c.resume}
		err := asInterrupted(tk, c.err)
		var ie *interruptedError
		if !errors.As(err, &ie) {
			t.Fatalf("asInterrupted(%v) = %v, want an interruptedError", c.err, err)
		}
		for _, w := range c.want {
			if !strings.Contains(ie.msg, w) {
				t.Errorf("%q lacks %q", ie.msg, w)
			}
		}
	}
	if err := asInterrupted(&task{}, errors.New("boom")); err.Error() != "boom" {
		t.Errorf("another error became %v", err)
	}
}

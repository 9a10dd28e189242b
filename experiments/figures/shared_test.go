package figures

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/experiments/sweep"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// TestReproduceSharesPointsAndCaches: fig15 and fig16 share six points,
// which a reproduction runs once, and every figure's files are those it
// writes alone; with a cache, a second reproduction runs nothing, with one
// job or several, and writes the same files.
func TestReproduceSharesPointsAndCaches(t *testing.T) {
	figs := []string{"fig15", "fig16"}
	var calls atomic.Int32
	run := func(cfg experiments.RunConfig) (*results.Record, error) {
		calls.Add(1)
		return figureFakeRun(cfg)
	}
	points := 0
	alone := map[string][]byte{}
	for _, id := range figs {
		f, err := FigureByID(id)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		rep, err := RunFigure(context.Background(), f, FigureOptions{OutDir: dir, Jobs: 1, NoSteadyCheck: true, NoPlots: true, Run: run})
		if err != nil {
			t.Fatal(err)
		}
		points += len(rep.Results)
		alone[id] = readAll(t, filepath.Join(dir, id+".jsonl"))
	}
	cacheDir := t.TempDir()
	for _, tc := range []struct {
		name  string
		jobs  int
		cache bool
		runs  int
	}{
		{"one job", 1, false, points - 6},
		{"two jobs", 2, false, points - 6},
		{"cached, first", 2, true, points - 6},
		{"cached, again", 2, true, 0},
		{"cached, again, one job", 1, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls.Store(0)
			var c *sweep.Cache
			if tc.cache {
				var err error
				if c, err = sweep.OpenCache(cacheDir, "c1"); err != nil {
					t.Fatal(err)
				}
			}
			dir := t.TempDir()
			rep, err := Reproduce(context.Background(), ReproduceOptions{FigureOptions: FigureOptions{OutDir: dir, Jobs: tc.jobs, NoSteadyCheck: true, NoPlots: true, Run: run, Cache: c}, Figures: figs})
			if err != nil {
				t.Fatal(err)
			}
			if n := int(calls.Load()); n != tc.runs || rep.Shared != 6 {
				t.Errorf("%d runs, %d shared; want %d and 6", n, rep.Shared, tc.runs)
			}
			for _, id := range figs {
				if got := readAll(t, filepath.Join(dir, id+".jsonl")); !bytes.Equal(got, alone[id]) {
					t.Errorf("%s differs from the figure run alone", id)
				}
			}
		})
	}
}

func readAll(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestJudgeOnce: a microbenchmark's verdict is judged once per claim,
// scale and profile parameters, within a process (Judged) and across
// processes (Cache): a profile copied elsewhere with the same parameters
// takes it, a changed one is judged again.
func TestJudgeOnce(t *testing.T) {
	dir := t.TempDir()
	p, err := sim.LoadProfile("edr-cx4")
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, mtu int) string {
		q := *p
		q.Link.MTU = mtu
		b, err := yaml.Marshal(&q)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	same, changed := write("same.yaml", p.Link.MTU), write("changed.yaml", 2048)
	calls := 0
	judge := func(o FigureOptions) Verdict {
		calls++
		prof, _ := o.loadProfile("edr-cx4")
		return Verdict{Claim: "C31", Verdict: Pass, Measured: fmt.Sprint(prof.Link.MTU)}
	}
	cacheDir := t.TempDir()
	judged := NewJudged()
	for _, tc := range []struct {
		name    string
		profile string // "": the built-in
		full    bool
		judged  *Judged
		cache   bool
		calls   int
		want    string
	}{
		{"first", "", false, judged, false, 1, "4096"},
		{"again", "", false, judged, false, 0, "4096"},
		{"a copy", same, false, judged, false, 0, "4096"},
		{"changed", changed, false, judged, false, 1, "2048"},
		{"full scale", "", true, judged, false, 1, "4096"},
		{"nothing kept", "", false, nil, false, 1, "4096"},
		{"cached", "", false, nil, true, 1, "4096"},
		{"cached, again", "", false, nil, true, 0, "4096"},
		{"cached, changed", changed, false, NewJudged(), true, 1, "2048"},
	} {
		calls = 0
		o := FigureOptions{Full: tc.full, Judged: tc.judged}
		if tc.profile != "" {
			o.Profile = func(string) string { return tc.profile }
		}
		if tc.cache {
			if o.Cache, err = sweep.OpenCache(cacheDir, "c1"); err != nil {
				t.Fatal(err)
			}
		}
		if v := o.judgeOnce("C31", "edr-cx4", judge); calls != tc.calls || v.Measured != tc.want {
			t.Errorf("%s: %d judged, measured %s; want %d and %s", tc.name, calls, v.Measured, tc.calls, tc.want)
		}
	}
}

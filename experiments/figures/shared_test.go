package figures

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/experiments/sweep"
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

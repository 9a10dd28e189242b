package sensitivity

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/experiments/sweep"
)

// TestRunCached: an analysis run again on the same code (its outcomes
// gone, so that it judges every change again) takes every run from the
// cache, and writes the same records and verdicts; a change not judged
// before runs its own points and takes the baseline's from the cache.
// (A changed profile is written in the change's directory under --out,
// and a record names a profile file by its path: an analysis in another
// --out runs its profile changes again.)
func TestRunCached(t *testing.T) {
	cacheDir, dir := t.TempDir(), t.TempDir()
	type result struct {
		outs       []Outcome
		hits, kept int64
		files      map[string][]byte
	}
	analyse := func(changes ...Change) result {
		c, err := sweep.OpenCache(cacheDir, "c1")
		if err != nil {
			t.Fatal(err)
		}
		os.Remove(filepath.Join(dir, "outcomes.jsonl"))
		outs, err := Run(context.Background(), Options{Changes: changes, Figures: []string{"fig21"}, OutDir: dir, Jobs: 2, Cache: c})
		if err != nil {
			t.Fatal(err)
		}
		checkedRuns(t, dir)
		files := map[string][]byte{}
		names, _ := filepath.Glob(filepath.Join(dir, "*", "*.jsonl"))
		for _, f := range names {
			if files[f], err = os.ReadFile(f); err != nil {
				t.Fatal(err)
			}
		}
		return result{outs, c.Hits(), c.Kept(), files}
	}
	first := analyse(Change{"setup.create_qp_us", 2}, SeedControls[0])
	if first.hits != 0 || first.kept != 60 {
		t.Errorf("first analysis: %d runs from the cache, %d kept; want 0 and 60 (fig21's 20 points, 3 times)", first.hits, first.kept)
	}
	again := analyse(Change{"setup.create_qp_us", 2}, SeedControls[0])
	if again.hits != 60 || again.kept != 0 {
		t.Errorf("again: %d runs from the cache, %d kept; want 60 and 0", again.hits, again.kept)
	}
	if fmt.Sprint(again.outs) != fmt.Sprint(first.outs) {
		t.Errorf("again: outcomes %v, first %v", again.outs, first.outs)
	}
	if len(again.files) != len(first.files) || len(first.files) == 0 {
		t.Errorf("%d record files, first %d", len(again.files), len(first.files))
	}
	for f, b := range first.files {
		if !bytes.Equal(again.files[f], b) {
			t.Errorf("%s differs from the first analysis's", f)
		}
	}
	other := analyse(Change{"setup.create_qp_us", 0.5})
	if other.hits != 20 || other.kept != 20 {
		t.Errorf("another change: %d runs from the cache, %d kept; want 20 (the baseline's) and 20", other.hits, other.kept)
	}
}

package advise

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
)

// TestStoreReusesRuns asks a question twice over one directory store:
// the second answer takes every run from the store, runs nothing, and is
// the first answer; a question with another seed reuses none of them; a
// damaged file is run again and written over.
func TestStoreReusesRuns(t *testing.T) {
	base := experiments.DefaultConfig()
	base.Nodes, base.Threads, base.BytesPerNode = 2, 1, 4<<20
	q := Question{Base: base, Designs: []string{"MESQ/SR", "SEMQ/SR"}, ScreenBytes: 1 << 20, Band: BandFull}
	dir := t.TempDir()
	ran := 0
	o := Options{Store: DirStore{Dir: dir}, Run: func(c experiments.RunConfig, so experiments.SimOptions) (*results.Record, error) {
		ran++
		return experiments.RunSim(c, so)
	}, StoreErr: func(err error) { t.Error(err) }}
	first, err := Advise(q, o)
	if err != nil {
		t.Fatal(err)
	}
	if first.Reused != 0 || ran != first.Runs || first.Runs == 0 {
		t.Fatalf("first answer: %d runs, %d reused, %d made", first.Runs, first.Reused, ran)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) != ran {
		t.Fatalf("%d runs made, %d kept", ran, len(files))
	}

	ran = 0
	again, err := Advise(q, o)
	if err != nil {
		t.Fatal(err)
	}
	if ran != 0 || again.Reused != again.Runs || again.Runs != first.Runs {
		t.Errorf("asked again: %d runs made, %d of %d reused", ran, again.Reused, again.Runs)
	}
	again.Reused = first.Reused
	one, _ := json.Marshal(first)
	two, _ := json.Marshal(again)
	if string(one) != string(two) {
		t.Errorf("the stored runs gave another answer:\n%s\n%s", one, two)
	}

	other := q
	other.Base.Seed += 100 // past the seeds of the controls (seed+1, seed+2), which it would share
	ran = 0
	if a, err := Advise(other, o); err != nil || a.Reused != 0 || ran != a.Runs {
		t.Errorf("another seed: %v, %d of %d reused", err, a.Reused, a.Runs)
	}

	if err := os.WriteFile(files[0], []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	ran = 0
	if a, err := Advise(q, o); err != nil || ran != 1 || a.Reused != a.Runs-1 {
		t.Errorf("one damaged file: %v, %d made", err, ran)
	}
	if _, ok := (DirStore{Dir: dir}).Load(filepath.Base(files[0][:len(files[0])-len(".json")])); !ok {
		t.Error("the damaged file was not written over")
	}
}

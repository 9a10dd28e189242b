package sensitivity

import (
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// TestReachIsExact: a change of an estimate with a Reach leaves every
// other design's record as the baseline made it (what reusing the
// baseline's records rests on). Each group of estimates with one reach is
// moved together (x2), and every simulated design outside the reach runs
// with and without it.
func TestReachIsExact(t *testing.T) {
	groups := map[string][]Change{}
	for _, e := range Estimates {
		if r := Reach(e.Field); r != nil {
			k := e.Field[:3] // mpi, ipo, hos, cre: the reach groups
			groups[k] = append(groups[k], Change{e.Field, 2})
		}
	}
	if len(groups) != 4 {
		t.Fatalf("reach groups %v", groups)
	}
	designs := append(experiments.DesignNames(experiments.MovesTuples), "qperf")
	for k, changes := range groups {
		reach := Reach(changes[0].Field)
		var sw results.SoftwareCosts
		var profile []Change
		mpi, ipoib, credit := algos.DefaultMPICosts, algos.DefaultIPoIBCosts, algos.DefaultCreditTimers
		for _, c := range changes {
			if !isSoftware(c.Field) {
				profile = append(profile, c)
				continue
			}
			if field, ok := creditTimer[c.Field]; ok {
				*field(&credit) *= 2
				sw.Credit = &credit
				continue
			}
			v, err := algos.Cost(algos.DefaultMPICosts, algos.DefaultIPoIBCosts, c.Field)
			if err != nil {
				t.Fatal(err)
			}
			if err := algos.SetCost(&mpi, &ipoib, c.Field, 2*v); err != nil {
				t.Fatal(err)
			}
			if k == "mpi" {
				sw.MPI = &mpi
			} else {
				sw.IPoIB = &ipoib
			}
		}
		override := func(p *sim.Profile) {
			for _, c := range profile {
				q, err := Apply(p, c)
				if err != nil {
					t.Fatal(err)
				}
				*p = *q
			}
		}
		for _, d := range designs {
			if slices.Contains(reach, d) {
				continue
			}
			cfg := experiments.DefaultConfig()
			cfg.Design, cfg.Nodes, cfg.Threads, cfg.BytesPerNode, cfg.Profile, cfg.Seed = d, 4, 2, 256<<10, "edr-cx4", 3
			base, err := experiments.Run(cfg)
			if err != nil {
				t.Fatalf("%s: %v", d, err)
			}
			changed := cfg
			changed.Software = sw
			got, err := experiments.RunSim(changed, experiments.SimOptions{ProfileOverride: override})
			if err != nil {
				t.Fatalf("%s under %s: %v", d, k, err)
			}
			for _, r := range []*results.Record{base, got} {
				r.WallS, r.Software, r.ProfileHash = 0, nil, ""
			}
			if !reflect.DeepEqual(base, got) {
				t.Errorf("%s changes %s, outside its reach %v:\n%+v\n%+v", k, d, reach, base, got)
			}
		}
	}
}

// TestReuseOutside: outside the reach, a point takes the baseline's
// record and does not run; inside it, and for a point the baseline lacks,
// the point runs.
func TestReuseOutside(t *testing.T) {
	dir := t.TempDir()
	cfg := experiments.DefaultConfig()
	cfg.Design, cfg.Nodes = "MEMQ/SR", 2
	rec := &results.Record{Experiment: "run", Design: "MEMQ/SR", Nodes: 2, Threads: cfg.Threads, Profile: cfg.Profile, Seed: cfg.Seed,
		Buffers: cfg.Buffers, CreditEvery: cfg.CreditEvery, BytesPerNode: cfg.BytesPerNode, Pattern: string(cfg.Pattern), MsgBytes: 65536,
		Integrity: "ok", ThroughputGiBs: 42}
	if err := results.WriteFile(filepath.Join(dir, "fig.jsonl"), []results.Result{{Point: 0, Key: "design=MEMQ/SR", Record: rec}}); err != nil {
		t.Fatal(err)
	}
	var reused int64
	ran := 0
	run := reuseOutside([]string{"MPI"}, dir, &reused)(func(c experiments.RunConfig) (*results.Record, error) {
		ran++
		return &results.Record{Design: c.Design}, nil
	})
	got, err := run(cfg)
	if err != nil || got.ThroughputGiBs != 42 || ran != 0 || reused != 1 {
		t.Fatalf("outside the reach: %+v, %v, ran %d, reused %d", got, err, ran, reused)
	}
	mpi := cfg
	mpi.Design = "MPI"
	other := cfg
	other.Seed++
	for _, c := range []experiments.RunConfig{mpi, other} {
		if _, err := run(c); err != nil {
			t.Fatal(err)
		}
	}
	if ran != 2 || reused != 1 {
		t.Errorf("inside the reach and without a baseline record: ran %d, reused %d; want 2 and 1", ran, reused)
	}
}

// TestRunUncheckedRunsEveryKind: a change's runs go without the verbs
// checker, and a kind of point that has none (the I-Store
// microbenchmark, which refuses to be asked) still runs.
func TestRunUncheckedRunsEveryKind(t *testing.T) {
	micro := experiments.DefaultConfig()
	micro.Profile, micro.Nodes, micro.Threads, micro.Design = "fdr-cx3", 2, 2, experiments.IStoreReadDesign
	micro.Workload = results.Workload{Kind: results.IStoreMicro, Blocks: 200}
	micro.BytesPerNode, micro.Pattern = 16, ""
	shuffle := experiments.DefaultConfig()
	shuffle.Nodes, shuffle.BytesPerNode = 2, 256<<10
	for _, cfg := range []experiments.RunConfig{micro, shuffle} {
		rec, err := runUnchecked(cfg)
		if err != nil || rec == nil {
			t.Errorf("%s %s: %v", cfg.Design, cfg.Workload.Label(), err)
		}
	}
}

// TestReuseUnchanged: a change that leaves a profile as it was (a field
// at 0 there, moved by a factor) reuses the baseline's records of that
// profile's points and runs the points of the profiles it changes.
func TestReuseUnchanged(t *testing.T) {
	_, unchanged, err := writeProfiles(t.TempDir(), Change{"nic.ooo_window", 2})
	if err != nil {
		t.Fatal(err)
	}
	if !unchanged["edr-cx4"] || unchanged["hdr-cx6"] {
		t.Fatalf("unchanged %v: want edr-cx4 unchanged and hdr-cx6 changed", unchanged)
	}
	if _, all, _ := writeProfiles(t.TempDir(), Change{"host.lock_ns", 2}); slices.Contains(slices.Collect(maps.Values(all)), true) {
		t.Errorf("host.lock_ns x2 leaves %v unchanged", all)
	}
	dir := t.TempDir()
	cfg := experiments.DefaultConfig()
	cfg.Design, cfg.Nodes, cfg.Profile = "MEMQ/SR", 2, "edr-cx4"
	rec := &results.Record{Experiment: "run", Design: "MEMQ/SR", Nodes: 2, Threads: cfg.Threads, Profile: cfg.Profile, Seed: cfg.Seed,
		Buffers: cfg.Buffers, CreditEvery: cfg.CreditEvery, BytesPerNode: cfg.BytesPerNode, Pattern: string(cfg.Pattern), MsgBytes: 65536,
		Integrity: "ok", ThroughputGiBs: 42}
	if err := results.WriteFile(filepath.Join(dir, "fig.jsonl"), []results.Result{{Point: 0, Key: "design=MEMQ/SR", Record: rec}}); err != nil {
		t.Fatal(err)
	}
	var reused int64
	ran := 0
	run := reuseUnchanged(unchanged, dir, &reused)(func(c experiments.RunConfig) (*results.Record, error) {
		ran++
		return &results.Record{Design: c.Design}, nil
	})
	if got, err := run(cfg); err != nil || got.ThroughputGiBs != 42 || ran != 0 || reused != 1 {
		t.Fatalf("an unchanged profile: %+v, %v, ran %d, reused %d", got, err, ran, reused)
	}
	hdr := cfg
	hdr.Profile = "hdr-cx6"
	if _, err := run(hdr); err != nil || ran != 1 || reused != 1 {
		t.Errorf("a changed profile: %v, ran %d, reused %d; want it run", err, ran, reused)
	}
}

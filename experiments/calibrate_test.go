package experiments

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// TestCalibrateRecoversAProfile calibrates, starting from the FDR profile,
// a "fabric" that is really the simulator running the EDR profile: the
// calibrated simulator must reproduce what it measured, and the fitted
// fields must move towards EDR's.
func TestCalibrateRecoversAProfile(t *testing.T) {
	target, err := sim.LoadProfile("edr-cx4")
	if err != nil {
		t.Fatal(err)
	}
	base, err := sim.LoadProfile("fdr-cx3")
	if err != nil {
		t.Fatal(err)
	}
	open := func(n int) (fabric.Fabric, error) {
		return sim.New(sim.Config{Nodes: n, Profile: target, Seed: 1, SizeOnly: true})
	}
	cal, err := Calibrate(open, base, "measured")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range cal.Measurements {
		t.Logf("%-30s fabric %8.3f  base %8.3f  calibrated %8.3f %s", m.Name, m.Fabric, m.Base, m.Calibrated, m.Unit)
		if rel := math.Abs(m.Calibrated-m.Fabric) / m.Fabric; rel > 0.15 {
			t.Errorf("%s: calibrated simulator %.3f against the fabric's %.3f (%.0f%% off)", m.Name, m.Calibrated, m.Fabric, 100*rel)
		}
	}
	if cal.Profile.Name != "measured" || cal.Profile.NIC.QPCacheEntries <= base.NIC.QPCacheEntries {
		t.Errorf("the QP cache should grow from FDR's %d towards EDR's %d: %d", base.NIC.QPCacheEntries, target.NIC.QPCacheEntries, cal.Profile.NIC.QPCacheEntries)
	}
	if _, err := ProfileYAML(cal.Profile); err != nil {
		t.Fatal(err)
	}
}

// TestCompareWithModel compares the simulator with itself (a fabric built
// from the same profile): every metric agrees exactly; with another profile
// the throughput differs and the comparison says by how much.
func TestCompareWithModel(t *testing.T) {
	cfg := RunConfig{Design: "MESQ/SR", Nodes: 2, Threads: 2, Profile: "edr-cx4", BytesPerNode: 2 << 20, Seed: 3}
	for _, tc := range []struct {
		fabric string
		same   bool
	}{{"edr-cx4", true}, {"fdr-cx3", false}} {
		p, err := sim.LoadProfile(tc.fabric)
		if err != nil {
			t.Fatal(err)
		}
		f, err := sim.New(sim.Config{Nodes: 2, Profile: p, Seed: 3, SizeOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		rows, _, _, err := CompareWithModel(f, cfg)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if tc.same && r.RelErr != 0 {
				t.Errorf("%s on the same profile: %+v", r.Metric, r)
			}
		}
		if !tc.same && rows[0].RelErr < 0.2 {
			t.Errorf("EDR model against an FDR fabric should overestimate throughput a lot: %+v", rows[0])
		}
	}
}

// TestComparisonJSON: every comparison encodes as JSON, also one whose
// metric is 0 on the fabric only (its relative error is infinite, which
// encoding/json refuses: explore validate --json failed on it).
func TestComparisonJSON(t *testing.T) {
	for _, tc := range []struct {
		c    Comparison
		want string
	}{
		{Comparison{Metric: "m", Fabric: 2, Model: 3, RelErr: 0.5}, `{"metric":"m","fabric":2,"model":3,"rel_err":0.5}`},
		{Comparison{Metric: "m", Fabric: 0, Model: 0}, `{"metric":"m","fabric":0,"model":0,"rel_err":0}`},
		{Comparison{Metric: "m", Fabric: 0, Model: 7, RelErr: math.Inf(1)}, `{"metric":"m","fabric":0,"model":7,"rel_err":null}`},
		{Comparison{Metric: "m", RelErr: math.NaN()}, `{"metric":"m","fabric":0,"model":0,"rel_err":null}`},
	} {
		b, err := json.Marshal([]Comparison{tc.c})
		if err != nil || string(b) != "["+tc.want+"]" {
			t.Errorf("%+v: got %s, %v; want %s", tc.c, b, err, tc.want)
		}
	}
}

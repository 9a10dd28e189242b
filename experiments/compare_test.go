package experiments

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

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

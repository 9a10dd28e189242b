package experiments

import (
	"encoding/json"
	"errors"
	"math"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
	"github.com/rdmashuffle/rdmashuffle/internal/setting"
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
		{Comparison{Metric: "m", Fabric: 1, Model: 1, Loopback: true}, `{"metric":"m","fabric":1,"model":1,"rel_err":0,"loopback":true}`},
		{Comparison{Metric: "m", Model: 1, RelErr: math.Inf(1), Loopback: true}, `{"metric":"m","fabric":0,"model":1,"rel_err":null,"loopback":true}`},
	} {
		b, err := json.Marshal([]Comparison{tc.c})
		if err != nil || string(b) != "["+tc.want+"]" {
			t.Errorf("%+v: got %s, %v; want %s", tc.c, b, err, tc.want)
		}
	}
}

// oneAdapter is a simulated cluster that says it is the libibverbs
// backend: its nodes, all in this process, then share one adapter
// (fabric.SharesAdapter), as those of ibv.OpenLocal do.
type oneAdapter struct{ fabric.Fabric }

func (oneAdapter) Backend() string { return "ibv" }

// TestCompareOnOneAdapter: nodes that share one adapter are compared with
// the model as a loopback, labelled in every row and in the fabric's
// record, and at most two: with more, the comparison would measure the
// one adapter carrying every node's traffic.
func TestCompareOnOneAdapter(t *testing.T) {
	for _, tc := range []struct {
		nodes    int
		shared   bool
		loopback bool
		refused  bool
	}{
		{2, false, false, false},
		{3, false, false, false},
		{2, true, true, false},
		{3, true, false, true},
		{4, true, false, true},
	} {
		f, err := sim.New(sim.Config{Nodes: tc.nodes, Seed: 3, SizeOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		var fab fabric.Fabric = f
		if tc.shared {
			fab = oneAdapter{f}
		}
		cfg := RunConfig{Design: "MESQ/SR", Nodes: tc.nodes, Threads: 2, Profile: sim.DefaultProfileName, BytesPerNode: 1 << 20, Seed: 3}
		rows, hw, _, err := CompareWithModel(fab, cfg)
		f.Close()
		if tc.refused {
			if se, ok := setting.As(err); !ok || se.Setting != "Nodes" || !errors.Is(err, ErrUnsupported) {
				t.Errorf("%d nodes on one adapter: got %v, want a Nodes setting error wrapping ErrUnsupported", tc.nodes, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%d nodes, shared %v: %v", tc.nodes, tc.shared, err)
		}
		if hw.Loopback != tc.loopback {
			t.Errorf("%d nodes, shared %v: record's loopback %v, want %v", tc.nodes, tc.shared, hw.Loopback, tc.loopback)
		}
		for _, r := range rows {
			if r.Loopback != tc.loopback {
				t.Errorf("%d nodes, shared %v: %s's loopback %v, want %v", tc.nodes, tc.shared, r.Metric, r.Loopback, tc.loopback)
			}
		}
	}
}

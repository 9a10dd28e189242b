package figures

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
)

// fakeRun returns a throughput for each input size (bytes per pair, in
// units of the base size), failing where tput is negative.
func fakeRun(base int64, tput map[int64]float64, calls *[]int64) func(experiments.RunConfig) (*results.Record, error) {
	return func(c experiments.RunConfig) (*results.Record, error) {
		f := c.BytesPerPair / base
		*calls = append(*calls, f)
		t, ok := tput[f]
		if !ok || t < 0 {
			return nil, errors.New("run failed")
		}
		return &results.Record{Design: "MESQ/SR", Nodes: 4, Integrity: "ok", ThroughputGiBs: t, BytesPerPair: c.BytesPerPair}, nil
	}
}

func TestGrowToSteadyState(t *testing.T) {
	const base = 1 << 20
	tests := []struct {
		name      string
		tput      map[int64]float64
		calls     []int64
		scale     int
		change    float64
		steadyNow bool
	}{
		{"steady at twice", map[int64]float64{1: 10, 2: 10.2}, []int64{1, 2}, 2, 0.02, true},
		{"grows twice", map[int64]float64{1: 8, 2: 9, 4: 9.1}, []int64{1, 2, 4}, 4, 0.1 / 9, true},
		{"never steady", map[int64]float64{1: 1, 2: 2, 4: 3, 8: 4, 16: 5, 32: 6, 64: 7, 128: 8, 256: 9}, []int64{1, 2, 4, 8, 16, 32, 64, 128, 256}, 256, 1.0 / 8, false},
		{"larger run fails", map[int64]float64{1: 8, 2: 9, 4: -1}, []int64{1, 2, 4}, 2, 0.125, false},
		{"first run fails", map[int64]float64{1: -1}, []int64{1}, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls []int64
			rec, err := grow(fakeRun(base, tt.tput, &calls), nil)(experiments.RunConfig{BytesPerPair: base})
			if !slices.Equal(calls, tt.calls) {
				t.Errorf("ran input scales %v, want %v", calls, tt.calls)
			}
			if tt.scale == 0 {
				if err == nil {
					t.Fatalf("first run failed but grow returned no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if rec.InputScale != tt.scale || abs(rec.SteadyChange-tt.change) > 1e-9 || steady(rec) != tt.steadyNow {
				t.Errorf("record at %dx, change %.4f, steady %v; want %dx, %.4f, %v", rec.InputScale, rec.SteadyChange, steady(rec), tt.scale, tt.change, tt.steadyNow)
			}
		})
	}
}

func TestGrowSkipsUnsizedAndFailedPoints(t *testing.T) {
	var calls []int64
	run := fakeRun(1, map[int64]float64{0: 5}, &calls)
	rec, err := grow(run, nil)(experiments.RunConfig{}) // no input size to scale
	if err != nil || rec.InputScale != 0 || len(calls) != 1 {
		t.Errorf("unsized point: scale %d, %d runs, err %v; want it run once and not grown", rec.InputScale, len(calls), err)
	}
}

// TestGrowTPCHPoint: a TPC-H point grows its scale factor per node (the
// label's sfpn), and what must settle is its rate, sfpn over response
// time; times at the figure's input then compare across growth factors.
func TestGrowTPCHPoint(t *testing.T) {
	// Response time: a fixed start-up plus 10 ms per unit of sfpn, the
	// start-up so long that the rate still moves at MaxGrowth.
	const startup = 0.5
	var sfpns []float64
	run := func(c experiments.RunConfig) (*results.Record, error) {
		sfpn := c.Workload.SFPerNode
		if c.Workload.Kind != results.TPCH {
			return nil, fmt.Errorf("not a query point: %+v", c.Workload)
		}
		sfpns = append(sfpns, sfpn)
		return &results.Record{Experiment: "tpch", Label: c.Workload.Label(), Design: "MPI", Nodes: 2, Integrity: "ok", ResponseS: startup + 10e-3*sfpn}, nil
	}
	cfg := experiments.RunConfig{Workload: results.Workload{Kind: results.TPCH, Query: "Q4", SFPerNode: 0.1}, BytesPerNode: 16}
	rec, err := grow(run, nil)(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var want []float64
	for f := 1; f <= MaxGrowth; f *= 2 {
		want = append(want, 0.1*float64(f))
	}
	if !slices.EqualFunc(sfpns, want, func(a, b float64) bool { return abs(a-b) < 1e-12 }) {
		t.Errorf("ran sfpn %v, want %v (bytes per node, %d, is not the input of a query)", sfpns, want, cfg.BytesPerNode)
	}
	top, half := 0.1*MaxGrowth, 0.05*MaxGrowth
	topT := startup + 10e-3*top
	rateTop, rateHalf := top/topT, half/(startup+10e-3*half)
	if wantChange := (rateTop - rateHalf) / rateHalf; rec.InputScale != MaxGrowth || abs(rec.SteadyChange-wantChange) > 1e-9 || steady(rec) {
		t.Errorf("grown to %dx, change %.4f, steady %v; want %dx, %.4f, not steady", rec.InputScale, rec.SteadyChange, steady(rec), MaxGrowth, wantChange)
	}
	if got := inputTime(rec); abs(got-topT/MaxGrowth) > 1e-12 {
		t.Errorf("time at the figure's input %v s, want %v", got, topT/MaxGrowth)
	}
	// 1 ms of start-up: rates 0.1/2 ms, 0.2/3, 0.4/5, 0.8/9, 1.6/17,
	// 3.2/33, 6.4/65: changes +33%, +20%, +11%, +6%, +3.0%, +1.5%: steady
	// at 64x.
	sfpns = nil
	short := func(c experiments.RunConfig) (*results.Record, error) {
		sfpn := c.Workload.SFPerNode
		sfpns = append(sfpns, sfpn)
		return &results.Record{Experiment: "tpch", Label: c.Workload.Label(), Integrity: "ok", ResponseS: 1e-3 + 10e-3*sfpn}, nil
	}
	if rec, _ := grow(short, nil)(cfg); rec.InputScale != 64 || !steady(rec) || len(sfpns) != 7 || abs(rec.SteadyChange-(6.4/65-3.2/33)/(3.2/33)) > 1e-9 {
		t.Errorf("1 ms start-up: grown to %dx over %d runs, change %.4f, steady %v; want 64x, 7 runs, +1.5%%, steady", rec.InputScale, len(sfpns), rec.SteadyChange, steady(rec))
	}
	// A query whose time is linear in its data is steady at the first doubling.
	sfpns = nil
	linear := func(c experiments.RunConfig) (*results.Record, error) {
		sfpn := c.Workload.SFPerNode
		sfpns = append(sfpns, sfpn)
		return &results.Record{Experiment: "tpch", Label: c.Workload.Label(), Integrity: "ok", ResponseS: 4e-3 * sfpn}, nil
	}
	if rec, _ := grow(linear, nil)(cfg); rec.InputScale != 2 || !steady(rec) || len(sfpns) != 2 {
		t.Errorf("linear query: grown to %dx over %d runs, steady %v; want 2x, 2 runs, steady", rec.InputScale, len(sfpns), steady(rec))
	}
}

func TestGrowthSummary(t *testing.T) {
	rec := func(scale int, change float64) results.Result {
		return results.Result{Record: &results.Record{Design: "MEMQ/SR", Nodes: 16, Integrity: "ok", ThroughputGiBs: 1, InputScale: scale, SteadyChange: change}}
	}
	got := growthSummary([]results.Result{rec(2, 0.01), rec(2, -0.02), rec(4, 0.0), rec(MaxGrowth, 0.05), {Error: "boom"}})
	for _, want := range []string{"2 at 2x", "1 at 4x", fmt.Sprintf("1 at %dx", MaxGrowth), fmt.Sprintf("NOT steady (at %dx, the most growth allowed, unless it says why not): MEMQ/SR at 16 nodes (+5.0%% at %dx)", MaxGrowth, MaxGrowth)} {
		if !strings.Contains(got, want) {
			t.Errorf("summary %q lacks %q", got, want)
		}
	}
	if s := growthSummary([]results.Result{rec(2, 0.01)}); strings.Contains(s, "NOT") {
		t.Errorf("all steady, but summary says %q", s)
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestGrowStopsBeforeMemory: with a memory budget, growth does not start a
// doubling whose estimate exceeds it; the record kept says why it was not
// grown further, and so does the figure's growth line. A doubling that
// fails says so too.
func TestGrowStopsBeforeMemory(t *testing.T) {
	cfg := experiments.RunConfig{Design: "MPI", Nodes: 16, Workload: results.Workload{Kind: results.TPCH, Query: "Q3", SFPerNode: 0.1}, Profile: "edr-cx4"}
	at := func(f float64) int64 {
		c := cfg
		c.Workload.SFPerNode = 0.1 * f
		return experiments.MemoryEstimate(c)
	}
	budget := experiments.NewMemoryBudget((at(8) + at(16)) / 2) // 8x fits, 16x does not
	var sfpns []float64
	slow := func(c experiments.RunConfig) (*results.Record, error) { // never settles
		sfpn := c.Workload.SFPerNode
		sfpns = append(sfpns, sfpn)
		return &results.Record{Experiment: "tpch", Label: c.Workload.Label(), Design: "MPI", Nodes: 16, Integrity: "ok", ResponseS: 1 + sfpn}, nil
	}
	rec, err := grow(budget.Admit(slow), budget)(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(sfpns) != 4 || rec.InputScale != 8 || steady(rec) {
		t.Fatalf("ran sfpn %v, kept %dx (steady %v); want 1x to 8x run, 8x kept, not steady", sfpns, rec.InputScale, steady(rec))
	}
	for _, want := range []string{"the run at 16x would need about", "GiB of memory, more than the", "--no-memory-check"} {
		if !strings.Contains(rec.SteadyStop, want) {
			t.Errorf("steady_stop %q lacks %q", rec.SteadyStop, want)
		}
	}
	line := growthSummary([]results.Result{{Record: rec}})
	if !strings.Contains(line, "NOT steady") || !strings.Contains(line, "MPI at 16 nodes") || !strings.Contains(line, "not grown further: the run at 16x") {
		t.Errorf("growth line %q does not name the point and why it stopped", line)
	}
	// Not even 2x fits: the quick run is kept, counted at 1x.
	rec, _ = grow(slow, experiments.NewMemoryBudget(at(1)))(cfg)
	if rec.InputScale != 0 || !strings.Contains(rec.SteadyStop, "at 2x") {
		t.Errorf("budget of the quick run: kept %dx, stop %q", rec.InputScale, rec.SteadyStop)
	}
	if line := growthSummary([]results.Result{{Record: rec}}); !strings.Contains(line, "1 at 1x") || strings.Contains(line, "not grown (no input") {
		t.Errorf("growth line %q: want the point at 1x with its reason", line)
	}
	// A failed doubling.
	var calls []int64
	rec, _ = grow(fakeRun(1<<20, map[int64]float64{1: 8, 2: 9, 4: -1}, &calls), nil)(experiments.RunConfig{BytesPerPair: 1 << 20})
	if rec.InputScale != 2 || rec.SteadyStop != "the run at 4x failed: run failed" {
		t.Errorf("failed doubling: kept %dx, stop %q", rec.InputScale, rec.SteadyStop)
	}
}

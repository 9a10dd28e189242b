package figures

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/experiments/sweep"
)

// fakeRun returns a throughput for each input size (bytes per pair, in
// units of the base size), failing where tput is negative.
func fakeRun(base int64, tput map[int64]float64, calls *[]int64) func(experiments.RunConfig) (*experiments.Record, error) {
	return func(c experiments.RunConfig) (*experiments.Record, error) {
		f := c.BytesPerPair / base
		*calls = append(*calls, f)
		t, ok := tput[f]
		if !ok || t < 0 {
			return nil, errors.New("run failed")
		}
		return &experiments.Record{Design: "MESQ/SR", Nodes: 4, Integrity: "ok", ThroughputGiBs: t, BytesPerPair: c.BytesPerPair}, nil
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
		{"never steady", map[int64]float64{1: 1, 2: 2, 4: 3, 8: 4, 16: 5}, []int64{1, 2, 4, 8, 16}, 16, 0.25, false},
		{"larger run fails", map[int64]float64{1: 8, 2: 9, 4: -1}, []int64{1, 2, 4}, 2, 0.125, false},
		{"first run fails", map[int64]float64{1: -1}, []int64{1}, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls []int64
			rec, err := grow(fakeRun(base, tt.tput, &calls))(experiments.RunConfig{BytesPerPair: base})
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
	rec, err := grow(run)(experiments.RunConfig{}) // no input size to scale
	if err != nil || rec.InputScale != 0 || len(calls) != 1 {
		t.Errorf("unsized point: scale %d, %d runs, err %v; want it run once and not grown", rec.InputScale, len(calls), err)
	}
}

func TestGrowthSummary(t *testing.T) {
	rec := func(scale int, change float64) sweep.Result {
		return sweep.Result{Record: &experiments.Record{Design: "MEMQ/SR", Nodes: 16, Integrity: "ok", ThroughputGiBs: 1, InputScale: scale, SteadyChange: change}}
	}
	got := growthSummary([]sweep.Result{rec(2, 0.01), rec(2, -0.02), rec(4, 0.0), rec(16, 0.05), {Error: "boom"}})
	for _, want := range []string{"2 at 2x", "1 at 4x", "1 at 16x", "NOT steady at 16x: MEMQ/SR at 16 nodes (+5.0% at 16x)"} {
		if !strings.Contains(got, want) {
			t.Errorf("summary %q lacks %q", got, want)
		}
	}
	if s := growthSummary([]sweep.Result{rec(2, 0.01)}); strings.Contains(s, "NOT") {
		t.Errorf("all steady, but summary says %q", s)
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

package evidence

import (
	"math"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

func TestParseAxis(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []float64
		err  string
	}{
		{"nic.qp_cache_ways=1,2,4", []float64{1, 2, 4}, ""},
		{" host.lock_ns = 20, 37.5 ", []float64{20, 37.5}, ""},
		{"nic.qp_cache_ways", nil, "want <profile field>=<value>"},
		{"=1,2", nil, "want <profile field>=<value>"},
		{"nic.qp_cache_ways=", nil, "want <profile field>=<value>"},
		{"nic.qp_cache_ways=1,two", nil, `"two" is not a number`},
		{"nic.qp_cache_ways=1,NaN", nil, `"NaN" is not a number`},
	} {
		a, err := ParseAxis(tt.in)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseAxis(%q): %v, want an error with %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || len(a.Values) != len(tt.want) || a.Field != strings.TrimSpace(strings.Split(tt.in, "=")[0]) {
			t.Errorf("ParseAxis(%q) = %+v, %v", tt.in, a, err)
			continue
		}
		for i := range tt.want {
			if a.Values[i] != tt.want[i] {
				t.Errorf("ParseAxis(%q) = %v, want %v", tt.in, a.Values, tt.want)
			}
		}
	}
}

// TestFit: a fit runs every combination, orders them by worst error, then
// mean, puts combinations the profile refuses last, and its errors are
// Evaluate's at the same values.
func TestFit(t *testing.T) {
	pts := []Point{
		{ID: "f-1", Metric: "message_rate_mops", Verb: "read", Profile: "fdr-cx3", X: map[string]any{"bytes": 32, "qps": 24, "threads": 2, "window": 8}, Y: 9, Unit: "Mops/s", Tolerance: 0.2},
		{ID: "f-2", Metric: "message_rate_mops", Verb: "read", Profile: "fdr-cx3", X: map[string]any{"bytes": 32, "qps": 96, "threads": 2, "window": 8}, Y: 3, Unit: "Mops/s", Tolerance: 0.2},
	}
	base, err := sim.LoadProfile("fdr-cx3")
	if err != nil {
		t.Fatal(err)
	}
	axes := []Axis{{"nic.qp_cache_entries", []float64{16, -5, 512}}, {"nic.qp_cache_ways", []float64{2, 4}}}
	steps := 0
	rs, err := Fit(pts, base, axes, 1, 2, func() { steps++ })
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 6 || steps != 6 {
		t.Fatalf("%d results, %d steps; want 6", len(rs), steps)
	}
	for i, r := range rs {
		if i > 0 && r.Err == nil && (r.Worst < rs[i-1].Worst || r.Worst == rs[i-1].Worst && r.Mean < rs[i-1].Mean) {
			t.Errorf("result %d (%v, worst %v) out of order after %v (worst %v)", i, r.Values, r.Worst, rs[i-1].Values, rs[i-1].Worst)
		}
		if refused := r.Values[0] < 0; refused != (r.Err != nil) || refused && i < 4 {
			t.Errorf("result %d, %v: error %v (a negative capacity is refused, and ranks last)", i, r.Values, r.Err)
		}
		if r.Err != nil {
			continue
		}
		q, _ := base.WithField("nic.qp_cache_entries", r.Values[0])
		q, _ = q.WithField("nic.qp_cache_ways", r.Values[1])
		for j, p := range pts {
			if e := EvaluateOn(p, q, Software{}, 1); e.Error != r.Errors[j] {
				t.Errorf("%v at %s: fit error %v, Evaluate %v", r.Values, p.ID, r.Errors[j], e.Error)
			}
		}
		if w := math.Max(math.Abs(r.Errors[0]), math.Abs(r.Errors[1])); w != r.Worst {
			t.Errorf("%v: worst %v, errors %v", r.Values, r.Worst, r.Errors)
		}
	}
	if base.NIC.QPCacheEntries != 80 {
		t.Errorf("the fit changed the profile it was given: %d entries", base.NIC.QPCacheEntries)
	}

	// A software cost: each point on its own profile, the cost set for
	// the run only.
	mt := Point{ID: "f-mt", Verb: "mpi_msgrate_mt", Profile: "edr-cx4", X: map[string]any{"threads": 1}, Y: 3, Unit: "Mops/s", Tolerance: 0.3}
	lat := Point{ID: "f-lat", Verb: "mpi_pingpong", Profile: "fdr-cx3", X: map[string]any{"bytes": 8, "ranks": 2}, Y: 1.7, Unit: "us", Tolerance: 0.3}
	srs, err := Fit([]Point{mt, lat}, nil, []Axis{{"mpi.call_cycles", []float64{150, 600}}}, 1, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range srs {
		mpi := algos.DefaultMPICosts
		mpi.CallCycles = int64(r.Values[0])
		if r.Err != nil || r.Errors[0] != EvaluateOn(mt, nil, Software{MPI: &mpi}, 1).Error {
			t.Errorf("call cycles %v: %v, errors %v", r.Values, r.Err, r.Errors)
		}
	}
	if len(srs) != 2 || srs[0].Model[0] == srs[1].Model[0] {
		t.Errorf("the call cycles moved nothing: %+v", srs)
	}
	if algos.DefaultMPICosts.CallCycles != 600 {
		t.Errorf("the fit changed the defaults: %d call cycles", algos.DefaultMPICosts.CallCycles)
	}

	for _, tc := range []struct {
		pts  []Point
		axes []Axis
		err  string
	}{
		{[]Point{mt}, []Axis{{"mpi.relock_cycles", []float64{100}}}, "moves nothing in the evidence runs"},
		{[]Point{mt}, []Axis{{"mpi.nope", []float64{100}}}, `no software cost "mpi.nope"`},
		{nil, axes, "no points"},
		{[]Point{{ID: "f-x", Verb: "read", X: map[string]any{"bytes": 32}, Unit: "Mops/s"}}, axes, "f-x is not modelled"},
		{pts, []Axis{{"nic.no_such", []float64{1}}}, `no numeric field "nic.no_such"`},
		{pts, []Axis{{"nic.qp_cache_ways", nil}}, "has no values"},
		{pts, []Axis{{"nic.qp_cache_entries", make([]float64, 400)}, {"nic.qp_cache_ways", make([]float64, 400)}}, "more than"},
	} {
		if _, err := Fit(tc.pts, base, tc.axes, 1, 1, nil); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("Fit(%d points, %v): %v, want an error with %q", len(tc.pts), tc.axes, err, tc.err)
		}
	}
	for _, k := range []int{0, maxFitRuns} { // none, or a typo that would run for days
		if _, err := Fit(pts, base, axes, k, 1, nil); err == nil || !strings.Contains(err.Error(), "numberings") {
			t.Errorf("Fit with %d numberings: %v, want an error naming the numberings", k, err)
		}
	}
	if _, err := Fit([]Point{mt}, nil, []Axis{{"nic.qp_cache_ways", []float64{2}}}, 1, 1, nil); err == nil || !strings.Contains(err.Error(), "name the profile") {
		t.Errorf("a profile field without a profile: %v", err)
	}
	if rs, err := Fit([]Point{mt}, nil, []Axis{{"mpi.call_cycles", []float64{10.5}}}, 1, 1, nil); err != nil || rs[0].Err == nil || !strings.Contains(rs[0].Err.Error(), "not a whole number") {
		t.Errorf("a fractional cycle count: %v, %+v", err, rs)
	}
}

// TestEvaluateNumberings: under several queue-pair numberings a point's
// model value is the median of its runs, within their range, and the
// description says so; one numbering is numbering 0, as Evaluate; a point
// with one queue pair does not depend on the numbering.
func TestEvaluateNumberings(t *testing.T) {
	many := Point{ID: "n-96", Metric: "message_rate_mops", Verb: "read", Profile: "fdr-cx3", X: map[string]any{"bytes": 32, "qps": 96, "threads": 2, "window": 8}, Y: 3, Unit: "Mops/s", Tolerance: 0.2}
	one := Point{ID: "n-1", Metric: "message_rate_mops", Verb: "read", Profile: "fdr-cx3", X: map[string]any{"bytes": 32, "qps": 1}, Y: 5, Unit: "Mops/s", Tolerance: 0.2}
	for _, p := range []Point{many, one} {
		r1, r3 := EvaluateOn(p, nil, Software{}, 1), EvaluateOn(p, nil, Software{}, 3)
		if !r1.Modelled || !r3.Modelled {
			t.Fatalf("%s: not modelled: %s / %s", p.ID, r1.How, r3.How)
		}
		if e := Evaluate(p); e.Model != r1.Model || r1.Numberings != 1 || r1.Low != r1.Model || r1.High != r1.Model || strings.Contains(r1.How, "numberings") {
			t.Errorf("%s, one numbering: %+v; Evaluate gave %v", p.ID, r1, e.Model)
		}
		if r3.Numberings != 3 || !(r3.Low <= r3.Model && r3.Model <= r3.High) || !strings.Contains(r3.How, "median of 3 queue-pair numberings") {
			t.Errorf("%s, three numberings: model %v in [%v, %v], %d numberings, %q", p.ID, r3.Model, r3.Low, r3.High, r3.Numberings, r3.How)
		}
		if varies := r3.Low != r3.High; varies != (p.ID == "n-96") {
			t.Errorf("%s: range over numberings [%v, %v]; want a range only with many queue pairs", p.ID, r3.Low, r3.High)
		}
	}
}

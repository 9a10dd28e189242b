package evidence

import (
	"strings"
	"testing"
)

func TestLoad(t *testing.T) {
	pts, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) < 60 {
		t.Errorf("%d points; the evidence files hold at least 60", len(pts))
	}
	for _, p := range pts {
		if p.Source == "" || p.URL == "" || p.Unit == "" {
			t.Errorf("%s (%s): needs a source, a URL and a unit", p.ID, p.File)
		}
	}
}

func TestEvaluate(t *testing.T) {
	for _, tc := range []struct {
		p        Point
		modelled bool
		how      string
	}{
		{Point{ID: "t-ud", Metric: "bandwidth_MBps", Verb: "send", Profile: "fdr-cx3", Setup: "ib_send_bw over UD", X: map[string]any{"bytes": 1024, "qps": 1}, Y: 800, Unit: "MB/s", Tolerance: 0.2}, true, "send_bw -s 1024 -q 1 -n 1000 -c UD on fdr-cx3"},
		{Point{ID: "t-rate", Metric: "message_rate_mops", Verb: "read", Profile: "hdr-cx6", X: map[string]any{"bytes": 32, "qps": 1}, Y: 2.5, Unit: "Mops/s", Tolerance: 0.2}, true, "read_bw -s 32"},
		{Point{ID: "t-noprof", Verb: "read", X: map[string]any{"bytes": 32}, Y: 1, Unit: "Mops/s", Tolerance: 0.2}, false, "no built-in profile"},
		{Point{ID: "t-swarm", Verb: "read", Profile: "fdr-cx3", X: map[string]any{"bytes": 32, "qps": 88, "threads": 8}, Y: 6.7, Unit: "Mops/s", Tolerance: 0.2}, false, "rc-swarm"},
		{Point{ID: "t-large", Verb: "read", Profile: "hdr-cx6", X: map[string]any{"bytes": "large"}, Y: 23, Unit: "GB/s", Tolerance: 0.2}, false, "not stated as a number"},
		{Point{ID: "t-mpi", Verb: "mpi_bw", Profile: "hdr-cx6", X: map[string]any{"bytes": 64}, Y: 110, Unit: "MB/s", Tolerance: 0.2}, false, "no model of mpi_bw"},
	} {
		r := Evaluate(tc.p)
		if r.Modelled != tc.modelled || !strings.Contains(r.How, tc.how) {
			t.Errorf("%s: modelled %v (%s), want %v and %q", tc.p.ID, r.Modelled, r.How, tc.modelled, tc.how)
		}
		if r.Modelled && (r.Model <= 0 || r.Error != (r.Model-tc.p.Y)/tc.p.Y) {
			t.Errorf("%s: model %v, error %v", tc.p.ID, r.Model, r.Error)
		}
	}
	s := Summarize([]Result{{Point: Point{ID: "a-1"}, Modelled: true, Error: 0.1, Within: true}, {Point: Point{ID: "a-2"}, Modelled: true, Error: -0.3}, {Point: Point{ID: "b-1"}}})
	if s.Points != 3 || s.Modelled != 2 || s.Within != 1 || s.Sources != 2 || s.MedianAbsError < 0.199 || s.MedianAbsError > 0.201 {
		t.Errorf("summary %+v", s)
	}
}

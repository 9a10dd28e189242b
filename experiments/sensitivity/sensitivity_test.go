package sensitivity

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/experiments/figures"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

func TestEstimatesAreProfileNumbers(t *testing.T) {
	p := sim.DefaultProfile()
	for _, e := range Estimates {
		for _, f := range []float64{0.5, 2} {
			if _, err := Apply(p, Change{e.Field, f}); err != nil {
				t.Errorf("%s: %v", e.Field, err)
			}
		}
	}
}

func TestApply(t *testing.T) {
	p := sim.DefaultProfile()
	tests := []struct {
		change Change
		get    func(*sim.Profile) float64
		want   float64
		err    string
	}{
		{Change{"host.lock_handoff_ns", 2}, func(q *sim.Profile) float64 { return q.Host.LockHandoffNS }, 2 * p.Host.LockHandoffNS, ""},
		{Change{"nic.qp_cache_entries", 0.5}, func(q *sim.Profile) float64 { return float64(q.NIC.QPCacheEntries) }, float64(p.NIC.QPCacheEntries / 2), ""},
		{Change{"host.cores", 0.01}, func(q *sim.Profile) float64 { return float64(q.Host.Cores) }, 1, ""}, // a positive count stays >= 1
		{Change{"host.no_such_field", 2}, nil, 0, "no numeric field"},
		{Change{"nosection.x", 2}, nil, 0, "no section"},
		{Change{"host.lock_ns", 1e9}, nil, 0, "host.lock_ns"}, // out of range: the profile check names it
	}
	for _, tt := range tests {
		q, err := Apply(p, tt.change)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: error %v, want one containing %q", tt.change, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tt.change, err)
		}
		if got := tt.get(q); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.change, got, tt.want)
		}
		if q.Hash() == p.Hash() {
			t.Errorf("%s: hash unchanged", tt.change)
		}
	}
}

func TestParseChange(t *testing.T) {
	tests := []struct {
		in   string
		want Change
		ok   bool
	}{
		{"host.lock_ns x2", Change{"host.lock_ns", 2}, true},
		{"host.lock_ns*0.5", Change{"host.lock_ns", 0.5}, true},
		{"host.lock_ns", Change{}, false},
		{"host.lock_ns x-1", Change{}, false},
		{"host.lock_ns xabc", Change{}, false},
	}
	for _, tt := range tests {
		got, err := ParseChange(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseChange(%q) = %v, %v; want %v, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestAnalyse(t *testing.T) {
	v := func(c, s string) figures.Verdict { return figures.Verdict{Claim: c, Verdict: s} }
	outs := []Outcome{
		{Change: "", Verdicts: []figures.Verdict{v("C1", figures.Pass), v("C2", figures.Fail), v("C3", figures.NotRun)}},
		{Change: "a x2", Verdicts: []figures.Verdict{v("C1", figures.Pass), v("C2", figures.Partial), v("C3", figures.NotRun)}},
		{Change: "a x0.5", Verdicts: []figures.Verdict{v("C1", figures.Pass), v("C2", figures.Fail), v("C3", figures.NotRun)}},
		{Change: "b x2", Error: "profile invalid"},
	}
	s, err := Analyse(outs)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"C1": "robust (2 changes)", "C2": "fragile (flips under: a x2: fail -> partial)", "C3": "not analysed"}
	for _, r := range s.Claims {
		if r.Label() != want[r.Claim] {
			t.Errorf("%s: %q, want %q", r.Claim, r.Label(), want[r.Claim])
		}
	}
	if len(s.Failed) != 1 || s.Baseline != "1 pass, 0 partial, 1 fail, 1 not-run" {
		t.Errorf("failed %v, baseline %q", s.Failed, s.Baseline)
	}
	if _, err := Analyse(outs[1:]); err == nil {
		t.Error("no baseline: want an error")
	}
	var buf bytes.Buffer
	if err := s.WriteMarkdown(&buf, "test"); err != nil || !strings.Contains(buf.String(), "| C2 | fail | fragile") {
		t.Errorf("markdown: %v\n%s", err, buf.String())
	}
}

func TestOnProfilesSubstitutesAndRelabels(t *testing.T) {
	var ran []string
	run := func(cfg experiments.RunConfig) (*experiments.Record, error) {
		ran = append(ran, cfg.Profile)
		return &experiments.Record{Profile: "file:" + cfg.Profile}, nil
	}
	w := onProfiles(map[string]string{"edr-cx4": "/x/edr-cx4.yaml"})(run)
	for _, tt := range []struct{ in, ran, label string }{
		{"edr-cx4", "/x/edr-cx4.yaml", "edr-cx4"},
		{"", "/x/edr-cx4.yaml", "edr-cx4"}, // the default profile
		{"fdr-cx3", "fdr-cx3", "file:fdr-cx3"},
	} {
		rec, _ := w(experiments.RunConfig{Profile: tt.in})
		if ran[len(ran)-1] != tt.ran || rec.Profile != tt.label {
			t.Errorf("profile %q: ran %q labelled %q; want %q, %q", tt.in, ran[len(ran)-1], rec.Profile, tt.ran, tt.label)
		}
	}
}

// TestRunResumes runs a cheap figure under one change, then again: the
// second run finds both outcomes in the file and runs nothing.
func TestRunResumes(t *testing.T) {
	dir := t.TempDir()
	var log bytes.Buffer
	o := Options{Changes: []Change{{"setup.create_qp_us", 2}}, Figures: []string{"fig21"}, OutDir: dir, Jobs: 2, Log: &log}
	outs, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 2 || outs[1].Error != "" || len(outs[1].Verdicts) == 0 {
		t.Fatalf("outcomes %+v", outs)
	}
	s, err := Analyse(outs)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Changes) != 1 {
		t.Errorf("changes %v", s.Changes)
	}
	log.Reset()
	again, err := Run(context.Background(), o)
	if err != nil || len(again) != 2 || log.Len() != 0 {
		t.Errorf("resumed run: %d outcomes, err %v, log %q; want both read back and nothing run", len(again), err, log.String())
	}
}

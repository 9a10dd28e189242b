package sensitivity

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/experiments/figures"
)

// resumeOutcomes is a small analysis on model m: a baseline, three judged
// changes (two flipping claims), one that failed.
func resumeOutcomes(m string) []Outcome {
	v := func(vs ...string) []figures.Verdict {
		out := make([]figures.Verdict, len(vs))
		for i, s := range vs {
			out[i] = figures.Verdict{Claim: fmt.Sprintf("C%d", i+1), Verdict: s, Measured: "x", Reason: "y"}
		}
		return out
	}
	return []Outcome{
		{Change: "", Verdicts: v(figures.Pass, figures.Fail, figures.NotRun), Commit: "aaa", Model: m},
		{Change: "host.lock_ns x2", Verdicts: v(figures.Pass, figures.Partial, figures.NotRun), Commit: "aaa", Model: m},
		{Change: "host.lock_ns x0.5", Verdicts: v(figures.Fail, figures.Pass, figures.NotRun), Commit: "bbb", Model: m},
		{Change: "seed +1", Verdicts: v(figures.Pass, figures.Fail, figures.NotRun), Commit: "bbb", Model: m},
		{Change: "nic.wqe_ns x2", Error: "profile invalid", Commit: "bbb", Model: m},
	}
}

// onModelM1 stands this build's model for "m1" until the test ends and
// returns resumeOutcomes on it and their summary.
func onModelM1(tb testing.TB) ([]Outcome, *Summary) {
	old := currentModel
	tb.Cleanup(func() { currentModel = old })
	currentModel = func() string { return "m1" }
	outs := resumeOutcomes("m1")
	s, err := Analyse(outs)
	if err != nil {
		tb.Fatal(err)
	}
	return outs, s
}

// TestFromSummary: the outcomes rebuilt from a summary analyse to the same
// summary (flips, counts, builds), the failed change left out to be judged
// again; summaries whose verdicts cannot be taken are refused.
func TestFromSummary(t *testing.T) {
	outs, s := onModelM1(t)
	path := filepath.Join(t.TempDir(), "sensitivity.json")
	if err := s.WriteJSON(path); err != nil {
		t.Fatal(err)
	}
	back, err := ReadSummary(path)
	if err != nil {
		t.Fatal(err)
	}
	base, changed, err := FromSummary(back, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(changed) != 3 || changed[0].Change != "host.lock_ns x2" || changed[2].Change != "seed +1" {
		t.Fatalf("changes taken %+v, want the three judged (not the failed one)", changed)
	}
	if d := sameVerdicts(base, outs[0]); d != "" {
		t.Errorf("baseline: %s", d)
	}
	for i, oc := range changed {
		if d := sameVerdicts(oc, outs[i+1]); d != "" {
			t.Errorf("%s: %s", oc.Change, d)
		}
	}
	again, err := Analyse(append([]Outcome{base}, changed...))
	if err != nil {
		t.Fatal(err)
	}
	want := *s
	want.Failed, want.Changes = nil, s.Changes[:3]
	for i := range want.Claims {
		want.Claims[i].Analysed = 3
	}
	a, _ := json.Marshal(want)
	b, _ := json.Marshal(again)
	if !bytes.Equal(a, b) {
		t.Errorf("analysed again:\n%s\nwant\n%s", b, a)
	}

	refuse := []struct {
		name   string
		edit   func(*Summary)
		figs   []string
		target error
		want   string
	}{
		{"another model", func(s *Summary) { s.Model = "m0" }, nil, ErrSummaryMismatch, "judged on model m0, this build's is m1"},
		{"other figures", func(*Summary) {}, []string{"fig19"}, ErrSummaryMismatch, "judge with the same figures"},
		{"claims judged under different changes", func(s *Summary) { s.Claims[1].Analysed-- }, nil, ErrSummaryMismatch, "claim C2 was judged under 2 changes, the summary judged 3"},
		{"a flip of a change not judged", func(s *Summary) { s.Claims[0].Flips = []string{"host.lock_ns x9: pass -> fail"} }, nil, ErrSummaryMismatch, "flip \"host.lock_ns x9: pass -> fail\""},
		{"a flip from another verdict", func(s *Summary) { s.Claims[0].Flips = []string{"host.lock_ns x2: fail -> pass"} }, nil, ErrSummaryMismatch, "is not"},
		{"a flip to no verdict", func(s *Summary) { s.Claims[0].Flips = []string{"host.lock_ns x2: pass -> maybe"} }, nil, ErrSummaryMismatch, "is not"},
	}
	for _, tc := range refuse {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ReadSummary(path)
			if err != nil {
				t.Fatal(err)
			}
			tc.edit(s)
			_, _, err = FromSummary(s, tc.figs)
			if !errors.Is(err, tc.target) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %v containing %q", err, tc.target, tc.want)
			}
		})
	}
}

// TestRunResumesFromSummary: with its working directory gone but for the
// baseline, an analysis takes the changes a summary judged, runs none of
// them, and saves them; one whose baseline now differs is refused.
func TestRunResumesFromSummary(t *testing.T) {
	outs, s := onModelM1(t)
	changes := []Change{{"host.lock_ns", 2}, {"host.lock_ns", 0.5}, SeedControls[0]}
	for _, tc := range []struct {
		name     string
		baseline Outcome
		want     string
	}{
		{"the same baseline", outs[0], ""},
		{"another baseline", Outcome{Change: "", Verdicts: []figures.Verdict{{Claim: "C1", Verdict: figures.Pass}, {Claim: "C2", Verdict: figures.Pass}, {Claim: "C3", Verdict: figures.NotRun}}, Model: "m1"},
			"baseline judged now differs from the summary's (C2 pass against C2 fail)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			b, _ := json.Marshal(tc.baseline)
			path := filepath.Join(dir, "outcomes.jsonl")
			if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
			var log bytes.Buffer
			o := Options{Changes: changes, OutDir: dir, Log: &log, Resume: s}
			got, err := Run(context.Background(), o)
			if tc.want != "" {
				if !errors.Is(err, ErrSummaryMismatch) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("error %v, want one containing %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 4 || strings.Contains(log.String(), "sensitivity [") || !strings.Contains(log.String(), "3 judged changes taken from it") {
				t.Fatalf("%d outcomes, log %q: want 4 and none run", len(got), log.String())
			}
			// Saved: a second run without the summary runs nothing either.
			log.Reset()
			o.Resume = nil
			if again, err := Run(context.Background(), o); err != nil || len(again) != 4 || log.Len() != 0 {
				t.Errorf("without the summary: %d outcomes, err %v, log %q", len(again), err, log.String())
			}
			a, err := Analyse(got)
			if err != nil {
				t.Fatal(err)
			}
			if !sameFlips(a, s) {
				t.Errorf("claims %+v, want %+v", a.Claims, s.Claims)
			}
			// Rejudging takes nothing from a summary.
			if _, err := Run(context.Background(), Options{Changes: changes, OutDir: t.TempDir(), Resume: s, Rejudge: true}); !errors.Is(err, ErrSummaryMismatch) {
				t.Errorf("rejudge with a summary: %v, want ErrSummaryMismatch", err)
			}
			// --so-far reads the summary's changes as judged too.
			stored, pending, err := Stored(Options{Changes: append(changes, Change{"nic.wqe_ns", 2}), OutDir: t.TempDir(), Resume: s})
			if err != nil || len(stored) != 4 || fmt.Sprint(pending) != "[nic.wqe_ns x2]" {
				t.Errorf("Stored: %d outcomes, pending %v, err %v", len(stored), pending, err)
			}
		})
	}
}

// sameFlips compares two summaries' flips claim by claim.
func sameFlips(a, b *Summary) bool {
	if len(a.Claims) != len(b.Claims) {
		return false
	}
	for i := range a.Claims {
		if strings.Join(a.Claims[i].Flips, ";") != strings.Join(b.Claims[i].Flips, ";") {
			return false
		}
	}
	return true
}

// FuzzFromSummary: whatever a summary file holds, FromSummary refuses it
// or returns outcomes that analyse to the same flips and counts.
func FuzzFromSummary(f *testing.F) {
	_, s := onModelM1(f)
	b, _ := json.Marshal(s)
	f.Add(b)
	f.Add([]byte(`{"model":"m1","changes":["a x2"],"claims":[{"claim":"C1","verdict":"pass","analysed":1,"flips":["a x2: pass -> fail"]}]}`))
	f.Add([]byte(`{"model":"m1","changes":["a x2","a x2"],"claims":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var in Summary
		if json.Unmarshal(data, &in) != nil {
			return
		}
		base, changed, err := FromSummary(&in, nil)
		if err != nil {
			if !errors.Is(err, ErrSummaryMismatch) {
				t.Fatalf("refused with %v, want ErrSummaryMismatch", err)
			}
			return
		}
		again, err := Analyse(append([]Outcome{base}, changed...))
		if err != nil {
			t.Fatal(err)
		}
		if len(again.Claims) != len(in.Claims) {
			t.Fatalf("%d claims, the summary %d", len(again.Claims), len(in.Claims))
		}
		for i, r := range again.Claims {
			want := slices.Clone(in.Claims[i].Flips)
			got := slices.Clone(r.Flips)
			slices.Sort(want)
			slices.Sort(got)
			if r.Claim != in.Claims[i].Claim || r.Verdict != in.Claims[i].Verdict || r.Analysed != in.Claims[i].Analysed || !slices.Equal(got, want) {
				t.Fatalf("claim %+v analysed again as %+v", in.Claims[i], r)
			}
		}
	})
}

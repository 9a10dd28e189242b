package sensitivity

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/experiments/figures"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/experiments/sweep"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

func TestEstimatesAreProfileNumbers(t *testing.T) {
	p := sim.DefaultProfile()
	for _, e := range ProfileEstimates {
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
		{Change{"host.poll_empty_ns", 0.5}, func(q *sim.Profile) float64 { return q.Host.PollEmptyNS }, p.Host.PollEmptyNS / 2, ""}, // a fractional field is not rounded, whatever its value
		{Change{"nic.processing_units", 0.01}, func(q *sim.Profile) float64 { return float64(q.NIC.ProcessingUnits) }, 1, ""},       // a positive count stays >= 1
		{Change{"host.cores", 0.01}, nil, 0, "host.sockets"},                                                                        // 1 core cannot be split over 2 sockets: the profile check says so
		{Change{"host.no_such_field", 2}, nil, 0, "no numeric field"},
		{Change{"nosection.x", 2}, nil, 0, "no section"},
		{Change{"host.lock_ns", 1e9}, nil, 0, "host.lock_ns"}, // out of range: the profile check names it
	}
	for _, tt := range tests {
		q, err := Apply(p, tt.change)
		if !applied(t, tt.change, err, tt.err) {
			continue
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
		{"seed +1", Change{SeedField, 1}, true},
		{"seed +12", Change{SeedField, 12}, true},
		{"seed +0", Change{}, false},
		{"seed 1", Change{}, false},
		{"seed +1.5", Change{}, false},
		{"seed x2", Change{}, false},
		{"seed*0.5", Change{}, false},
		{"seed*2", Change{}, false},
		{"seed x1.5", Change{}, false},
		{"qp-numbering 1", Change{NumberingField, 1}, true},
		{"qp-numbering 7", Change{NumberingField, 7}, true},
		{"qp-numbering 0", Change{}, false},
		{"qp-numbering +1", Change{}, false},
		{"qp-numbering x2", Change{}, false},
		{"qp-numbering*2", Change{}, false},
		{"qp-numbering 1.5", Change{}, false},
	}
	for _, tt := range tests {
		got, err := ParseChange(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseChange(%q) = %v, %v; want %v, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
		if tt.ok && got.String() != strings.ReplaceAll(tt.in, "*", " x") {
			t.Errorf("ParseChange(%q).String() = %q: does not print back", tt.in, got.String())
		}
	}
}

// TestSeedControls: every analysis judges the seed and numbering controls
// after the estimates; a seed control runs every point with its seed
// moved, whatever the point's own seed, and a numbering control under its
// numbering, and the records name the point's own.
func TestSeedControls(t *testing.T) {
	cs := DefaultChanges(0.5, 2)
	if n := len(cs); n != 2*len(Estimates)+len(MechanismSwitches)+4 || fmt.Sprint(cs[n-4:]) != "[seed +1 seed +2 qp-numbering 1 qp-numbering 2]" {
		t.Fatalf("DefaultChanges ends %v (%d changes)", cs[max(0, n-5):], n)
	}
	for _, c := range cs[:len(cs)-4] {
		if c.IsControl() {
			t.Errorf("%v among the estimates", c)
		}
	}
	var numbered []uint64
	nrun := withNumbering(2)(func(cfg experiments.RunConfig) (*results.Record, error) {
		numbered = append(numbered, cfg.QPNumbering)
		return &results.Record{QPNumbering: cfg.QPNumbering}, nil
	})
	if rec, _ := nrun(experiments.DefaultConfig()); rec.QPNumbering != 0 || fmt.Sprint(numbered) != "[2]" {
		t.Errorf("qp-numbering 2: ran under %v, record says %d; want [2] and the point's own 0", numbered, rec.QPNumbering)
	}
	var seen []uint64
	run := withSeed(2)(func(cfg experiments.RunConfig) (*results.Record, error) {
		seen = append(seen, cfg.Seed)
		return &results.Record{Seed: cfg.Seed}, nil
	})
	for _, seed := range []uint64{1, 7} {
		cfg := experiments.DefaultConfig()
		cfg.Seed = seed
		if rec, _ := run(cfg); rec.Seed != seed {
			t.Errorf("seed %d: record says %d, want the point's own seed (a rejudge matches records by it)", seed, rec.Seed)
		}
	}
	if fmt.Sprint(seen) != "[3 9]" {
		t.Errorf("runs saw seeds %v, want [3 9]", seen)
	}
}

// TestMechanismSwitch: a mechanism change sets its switch (it does not
// scale it: the default is 0), prints and parses as "field =v", and no
// other field takes that form.
func TestMechanismSwitch(t *testing.T) {
	p := sim.DefaultProfile()
	c, err := ParseChange("nic.rx_miss_blocks =1")
	if err != nil || c != (Change{"nic.rx_miss_blocks", 1}) || !c.IsMechanism() || c.String() != "nic.rx_miss_blocks =1" {
		t.Fatalf("ParseChange: %+v, %v (%q)", c, err, c.String())
	}
	if again, err := ParseChange(c.String()); err != nil || again != c {
		t.Errorf("round trip: %+v, %v", again, err)
	}
	q, err := Apply(p, c)
	if err != nil {
		t.Fatal(err)
	}
	if v, _, _ := q.Field("nic.rx_miss_blocks"); v != 1 || q.Hash() == p.Hash() {
		t.Errorf("applied: rx_miss_blocks %v, hash moved %v", v, q.Hash() != p.Hash())
	}
	if _, err := ParseChange("host.lock_ns =2"); err == nil || !strings.Contains(err.Error(), "nic.rx_miss_blocks") {
		t.Errorf("a field that is not a switch set with =: %v", err)
	}
	if _, err := Apply(p, Change{"nic.rx_miss_blocks", 2}); err == nil {
		t.Error("rx_miss_blocks =2 accepted")
	}
	for _, f := range []string{"switch.ar_ties", "host.shared_doorbells", "pcie.read_request_bytes"} {
		c, err := ParseChange(f + " =1")
		if err != nil || !c.IsMechanism() {
			t.Errorf("%s =1: %+v, %v", f, c, err)
			continue
		}
		if q, err := Apply(p, c); err != nil || q.Hash() == p.Hash() {
			t.Errorf("%s =1 applied: %v, hash moved %v", f, err, err == nil && q.Hash() != p.Hash())
		}
	}
	last := DefaultChanges(2)
	controls := len(Controls)
	for i, m := range MechanismSwitches {
		if c := last[len(last)-controls-len(MechanismSwitches)+i]; c != (Change{m.Field, 1}) {
			t.Errorf("DefaultChanges: %v before the controls, want %s on", c, m.Field)
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
	want := map[string]string{"C1": "robust (2 changes)", "C2": "fragile: 1 of 2 changes flips it (a x2: fail -> partial)", "C3": "not analysed"}
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
	run := func(cfg experiments.RunConfig) (*results.Record, error) {
		ran = append(ran, cfg.Profile)
		return &results.Record{Profile: "file:" + cfg.Profile}, nil
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
// TestStoredSoFar: a report written before the analysis finishes reads
// the stored outcomes of the changes asked for, runs nothing, names the
// changes not judged yet, and calls an unflipped claim robust only so far.
func TestStoredSoFar(t *testing.T) {
	dir := t.TempDir()
	v := func(c, s string) figures.Verdict { return figures.Verdict{Claim: c, Verdict: s} }
	var lines []byte
	for _, oc := range []Outcome{
		{Change: "", Verdicts: []figures.Verdict{v("C1", figures.Pass), v("C2", figures.Pass)}},
		{Change: "host.lock_ns x2", Verdicts: []figures.Verdict{v("C1", figures.Pass), v("C2", figures.Partial)}},
		{Change: "host.lock_ns x9", Verdicts: []figures.Verdict{v("C1", figures.Fail), v("C2", figures.Fail)}}, // not asked for
	} {
		b, _ := json.Marshal(oc)
		lines = append(append(lines, b...), '\n')
	}
	path := filepath.Join(dir, "outcomes.jsonl")
	if err := os.WriteFile(path, lines, 0o644); err != nil {
		t.Fatal(err)
	}
	o := Options{Changes: []Change{{"host.lock_ns", 2}, {"host.lock_ns", 0.5}}, OutDir: dir}
	outs, pending, err := Stored(o)
	if err != nil || len(outs) != 2 || outs[0].Change != "" || outs[1].Change != "host.lock_ns x2" || fmt.Sprint(pending) != "[host.lock_ns x0.5]" {
		t.Fatalf("Stored: %d outcomes, pending %v, err %v", len(outs), pending, err)
	}
	s, err := Analyse(outs)
	if err != nil {
		t.Fatal(err)
	}
	s.SetPending(pending)
	want := map[string]string{"C1": "robust so far (1 change judged, 1 not yet)", "C2": "fragile: 1 of 1 change flips it (host.lock_ns x2: pass -> partial)"}
	for _, r := range s.Claims {
		if r.Label() != want[r.Claim] {
			t.Errorf("%s: %q, want %q", r.Claim, r.Label(), want[r.Claim])
		}
	}
	var buf bytes.Buffer
	if err := s.WriteMarkdown(&buf, "test"); err != nil || !strings.Contains(buf.String(), "Changes judged: 1 of 2.") ||
		!strings.Contains(buf.String(), "1 change not judged yet (host.lock_ns x0.5)") {
		t.Errorf("markdown: %v\n%s", err, buf.String())
	}
	if err := os.WriteFile(path, lines[bytes.IndexByte(lines, '\n')+1:], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Stored(o); err == nil || !strings.Contains(err.Error(), "no judged baseline yet") {
		t.Errorf("no baseline: %v", err)
	}
}

func TestRunResumes(t *testing.T) {
	dir := t.TempDir()
	var log bytes.Buffer
	o := Options{Changes: []Change{{"setup.create_qp_us", 2}, SeedControls[0]}, Figures: []string{"fig21"}, OutDir: dir, Jobs: 2, Log: &log}
	outs, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 3 || outs[1].Error != "" || len(outs[1].Verdicts) == 0 || outs[2].Error != "" || len(outs[2].Verdicts) == 0 {
		t.Fatalf("outcomes %+v", outs)
	}
	s, err := Analyse(outs)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Changes) != 2 || len(s.Failed) != 0 {
		t.Errorf("changes %v, failed %v", s.Changes, s.Failed)
	}
	checkedRuns(t, dir)
	log.Reset()
	again, err := Run(context.Background(), o)
	if err != nil || len(again) != 3 || log.Len() != 0 {
		t.Errorf("resumed run: %d outcomes, err %v, log %q; want both read back and nothing run", len(again), err, log.String())
	}

	// Rejudge: stored verdicts are not read (here they are made wrong)
	// but judged again from the runs kept, running no point.
	path := filepath.Join(dir, "outcomes.jsonl")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{figures.Pass, figures.Partial, figures.Fail} {
		b = bytes.ReplaceAll(b, []byte(`"verdict":"`+v+`"`), []byte(`"verdict":"tampered"`))
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	ran := 0
	o.Rejudge, o.Progress = true, func(sweep.Progress) { ran++ }
	rejudged, err := Run(context.Background(), o)
	if err != nil || ran != 0 || len(rejudged) != 3 {
		t.Fatalf("rejudge: %d outcomes, %d points run, err %v; want 3 and none", len(rejudged), ran, err)
	}
	for _, oc := range rejudged {
		if oc.Error != "" {
			t.Errorf("rejudged %q: %s", oc.Change, oc.Error)
		}
	}
	for i := range outs {
		if fmt.Sprint(rejudged[i].Verdicts) != fmt.Sprint(outs[i].Verdicts) {
			t.Errorf("rejudged %q: %v, first judged %v", outs[i].Change, rejudged[i].Verdicts, outs[i].Verdicts)
		}
	}
	if back, _, err := readOutcomes(path, o.Figures); err != nil || fmt.Sprint(back[""].Verdicts) != fmt.Sprint(outs[0].Verdicts) {
		t.Errorf("outcomes.jsonl after the rejudge: %v, %v", back[""].Verdicts, err)
	}
}

// checkedRuns: the baseline's runs had the verbs checker, a change's did
// not (their records say verbs_check off).
func checkedRuns(t *testing.T, dir string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*", "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no records under %s: %v", dir, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.Count(b, []byte("\n"))
		off := bytes.Count(b, []byte(`"verbs_check":"off"`))
		baseline := filepath.Base(filepath.Dir(f)) == "baseline"
		if (baseline && off != 0) || (!baseline && off != lines) {
			t.Errorf("%s: %d of %d records without the checker", f, off, lines)
		}
	}
}

// TestApplyFileNotesABaselineThatDisagrees: where the analysis's own
// baseline verdict (quick scale) differs from the report's, the cell says
// so; where they agree, the cell is the label alone.
func TestApplyFileNotesABaselineThatDisagrees(t *testing.T) {
	s := &Summary{Commit: "abc", Changes: []string{"x"}, Claims: []Robustness{
		{Claim: "C1", Verdict: figures.Pass, Analysed: 1},
		{Claim: "C2", Verdict: figures.Partial, Analysed: 1, Flips: []string{"x: partial -> pass"}},
		{Claim: "C3", Verdict: figures.NotRun},
	}}
	path := filepath.Join(t.TempDir(), "s.json")
	if err := s.WriteJSON(path); err != nil {
		t.Fatal(err)
	}
	rep := &figures.ReproduceReport{Verdicts: []figures.Verdict{
		{Claim: "C1", Verdict: figures.Pass}, {Claim: "C2", Verdict: figures.Pass}, {Claim: "C3", Verdict: figures.Fail},
	}}
	if _, err := ApplyFile(rep, path); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"C1": "robust (1 change)",
		"C2": "fragile: 1 of 1 change flips it (x: partial -> pass); the analysis's own baseline, at the quick scale, judged it partial",
		"C3": "not analysed",
	}
	for c, w := range want {
		if got := rep.Robustness[c]; got != w {
			t.Errorf("%s: %q, want %q", c, got, w)
		}
	}

	// Written before the analysis finished: the cells and the report's
	// line say so.
	s.SetPending([]string{"y"})
	if err := s.WriteJSON(path); err != nil {
		t.Fatal(err)
	}
	if _, err := ApplyFile(rep, path); err != nil {
		t.Fatal(err)
	}
	if got := rep.Robustness["C1"]; got != "robust so far (1 change judged, 1 not yet)" || !strings.Contains(rep.RobustnessFrom, "written before the analysis finished: 1 change not judged yet") {
		t.Errorf("so far: C1 %q, from %q", got, rep.RobustnessFrom)
	}
	if fmt.Sprint(rep.Unconfirmed) != "[C1]" { // C2 is fragile: a partial now; C3 was not analysed
		t.Errorf("unconfirmed passes %v, want [C1]", rep.Unconfirmed)
	}

	// The seed controls are counted apart from the estimates.
	s.SetPending(nil)
	s.Changes = []string{"host.lock_ns x2", "seed +1", "seed +2"}
	if err := s.WriteJSON(path); err != nil {
		t.Fatal(err)
	}
	if _, err := ApplyFile(rep, path); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rep.RobustnessFrom, "1 change of the estimates (profile parameters in every profile, software costs in every run) and 2 of every run's random seed (controls), quick scale") {
		t.Errorf("from %q", rep.RobustnessFrom)
	}

	// And the numbering controls, and the report's paragraph on them.
	s.Changes = []string{"host.lock_ns x2", "seed +1", "qp-numbering 1", "qp-numbering 2"}
	if err := s.WriteJSON(path); err != nil {
		t.Fatal(err)
	}
	if _, err := ApplyFile(rep, path); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rep.RobustnessFrom, "1 change of the estimates (profile parameters in every profile, software costs in every run) and 1 of every run's random seed and 2 of its queue-pair numbering (controls), quick scale") {
		t.Errorf("from %q", rep.RobustnessFrom)
	}
	var md strings.Builder
	if err := s.WriteMarkdown(&md, "explore sensitivity"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "Numbering controls move no number either") || !strings.Contains(md.String(), "Seed controls move no number") {
		t.Errorf("the report does not explain both kinds of control:\n%s", md.String())
	}
}

func TestEstimatesHaveOneKind(t *testing.T) {
	seen := map[string]bool{}
	for _, e := range Estimates {
		if seen[e.Field] {
			t.Errorf("%s listed twice", e.Field)
		}
		seen[e.Field] = true
		_, err := ApplySoftware(Change{e.Field, 2})
		if got := err == nil; got != isSoftware(e.Field) {
			t.Errorf("%s: a software cost %v, but ApplySoftware's error is %v", e.Field, isSoftware(e.Field), err)
		}
	}
	if len(Estimates) != len(ProfileEstimates)+len(SoftwareEstimates) {
		t.Errorf("Estimates has %d entries, want %d", len(Estimates), len(ProfileEstimates)+len(SoftwareEstimates))
	}
}

func TestApplySoftware(t *testing.T) {
	mpi, ipoib := algos.DefaultMPICosts, algos.DefaultIPoIBCosts
	tests := []struct {
		change Change
		get    func(results.SoftwareCosts) float64
		want   float64
		err    string
	}{
		{Change{"mpi.call_cycles", 2}, func(s results.SoftwareCosts) float64 { return float64(s.MPI.CallCycles) }, float64(2 * mpi.CallCycles), ""},
		{Change{"mpi.match_cycles", 0.5}, func(s results.SoftwareCosts) float64 { return float64(s.MPI.MatchCycles) }, float64(mpi.MatchCycles / 2), ""},
		{Change{"mpi.eager_bytes", 1e-9}, func(s results.SoftwareCosts) float64 { return float64(s.MPI.EagerBytes) }, algos.HeaderBytes, ""}, // still holds a header
		{Change{"ipoib.tx_segment_cycles", 0.5}, func(s results.SoftwareCosts) float64 { return float64(s.IPoIB.TxSegmentCycles) }, float64(ipoib.TxSegmentCycles / 2), ""},
		{Change{"ipoib.syscall_cycles", 1e-9}, func(s results.SoftwareCosts) float64 { return float64(s.IPoIB.SyscallCycles) }, 1, ""}, // a positive cost stays >= 1
		{Change{"poll.line_cycles", 2}, func(s results.SoftwareCosts) float64 { return float64(s.PollLineCycles) }, 2 * algos.DefaultPollLineCycles, ""},
		{Change{"mpi.no_such_cost", 2}, nil, 0, "choose one of mpi.call_cycles"},
	}
	for _, tt := range tests {
		s, err := ApplySoftware(tt.change)
		if !applied(t, tt.change, err, tt.err) {
			continue
		}
		if got := tt.get(s); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.change, got, tt.want)
		}
		// Only the one cost moves.
		switch {
		case s.MPI != nil:
			other := *s.MPI
			other.CallCycles, other.MatchCycles, other.EagerBytes = mpi.CallCycles, mpi.MatchCycles, mpi.EagerBytes
			if other != mpi || s.IPoIB != nil || s.PollLineCycles != 0 {
				t.Errorf("%s moved more than its cost: %+v", tt.change, s)
			}
		case s.IPoIB != nil:
			other := *s.IPoIB
			other.SyscallCycles, other.TxSegmentCycles, other.RxSegmentCycles = ipoib.SyscallCycles, ipoib.TxSegmentCycles, ipoib.RxSegmentCycles
			if other != ipoib || s.PollLineCycles != 0 {
				t.Errorf("%s moved more than its cost: %+v", tt.change, s)
			}
		}
	}
	if algos.DefaultMPICosts != mpi || algos.DefaultIPoIBCosts != ipoib {
		t.Error("ApplySoftware changed the defaults")
	}
}

// TestAnalyseAcrossBuilds: an analysis resumed by later builds of the same
// model names every build; a change judged on another model is not
// compared with the baseline (its verdicts could differ for that reason)
// but listed as not judged.
func TestAnalyseAcrossBuilds(t *testing.T) {
	v := func(verdict string) []figures.Verdict { return []figures.Verdict{{Claim: "C1", Verdict: verdict}} }
	outs := []Outcome{
		{Change: "", Verdicts: v(figures.Pass), Commit: "aaa", Model: "m1"},
		{Change: "host.lock_ns x2", Verdicts: v(figures.Pass), Commit: "aaa", Model: "m1"},
		{Change: "mpi.call_cycles x2", Verdicts: v(figures.Fail), Commit: "bbb", Model: "m1"},
		{Change: "nic.wqe_ns x2", Verdicts: v(figures.Fail), Commit: "ccc", Model: "m2"},
	}
	s, err := Analyse(outs)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(s.Commits, ",") != "aaa,bbb,ccc" {
		t.Errorf("commits %v", s.Commits)
	}
	if len(s.Claims) != 1 || len(s.Claims[0].Flips) != 1 || !strings.HasPrefix(s.Claims[0].Flips[0], "mpi.call_cycles x2") {
		t.Errorf("flips %+v, want only mpi.call_cycles x2's", s.Claims)
	}
	if len(s.Failed) != 1 || !strings.Contains(s.Failed[0], "judged on model m2") {
		t.Errorf("failed %v, want nic.wqe_ns x2 on another model", s.Failed)
	}
	var b bytes.Buffer
	if err := s.WriteMarkdown(&b, "explore sensitivity"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "judged at commit aaa (changes judged by 3 builds of the same model: aaa, bbb, ccc)") {
		t.Errorf("report does not name the builds:\n%s", b.String())
	}
}

// applied checks a change's error against want (a substring; "" for none)
// and reports whether the change applied, so that its result can be
// checked.
func applied(t *testing.T, c Change, err error, want string) bool {
	t.Helper()
	if want != "" {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one containing %q", c, err, want)
		}
		return false
	}
	if err != nil {
		t.Fatalf("%s: %v", c, err)
	}
	return true
}

// TestOutcomesOfAnotherModel: an analysis resumed after the model's
// numbers changed does not take the verdicts the other model judged; it
// says so and judges those changes again, --so-far counts them as not
// judged, and --rejudge (which would judge the other model's runs)
// refuses.
func TestOutcomesOfAnotherModel(t *testing.T) {
	defer func(f func() string) { currentModel = f }(currentModel)
	currentModel = func() string { return "new" }
	v := func(c, s string) figures.Verdict { return figures.Verdict{Claim: c, Verdict: s} }
	tests := []struct {
		name        string
		stored      []Outcome
		wantResumed []string // changes read back, in Stored's order
		wantPending string
		wantErr     string // Stored's error
	}{
		{
			name: "same model",
			stored: []Outcome{
				{Change: "", Model: "new", Verdicts: []figures.Verdict{v("C1", figures.Pass)}},
				{Change: "host.lock_ns x2", Model: "new", Verdicts: []figures.Verdict{v("C1", figures.Pass)}},
			},
			wantResumed: []string{"", "host.lock_ns x2"}, wantPending: "[]",
		},
		{
			name: "unstamped outcomes are taken",
			stored: []Outcome{
				{Change: "", Verdicts: []figures.Verdict{v("C1", figures.Pass)}},
				{Change: "host.lock_ns x2", Verdicts: []figures.Verdict{v("C1", figures.Pass)}},
			},
			wantResumed: []string{"", "host.lock_ns x2"}, wantPending: "[]",
		},
		{
			name: "a change judged on the old model",
			stored: []Outcome{
				{Change: "", Model: "new", Verdicts: []figures.Verdict{v("C1", figures.Pass)}},
				{Change: "host.lock_ns x2", Model: "old", Verdicts: []figures.Verdict{v("C1", figures.Fail)}},
			},
			wantResumed: []string{""}, wantPending: "[host.lock_ns x2]",
		},
		{
			name: "judged again after the old model's line",
			stored: []Outcome{
				{Change: "", Model: "old", Verdicts: []figures.Verdict{v("C1", figures.Fail)}},
				{Change: "", Model: "new", Verdicts: []figures.Verdict{v("C1", figures.Pass)}},
				{Change: "host.lock_ns x2", Model: "new", Verdicts: []figures.Verdict{v("C1", figures.Pass)}},
				{Change: "host.lock_ns x2", Model: "old", Verdicts: []figures.Verdict{v("C1", figures.Fail)}},
			},
			wantResumed: []string{"", "host.lock_ns x2"}, wantPending: "[]",
		},
		{
			name: "unstamped outcomes beside stamped ones are another model's",
			stored: []Outcome{
				{Change: "", Verdicts: []figures.Verdict{v("C1", figures.Fail)}},
				{Change: "host.lock_ns x2", Model: "new", Verdicts: []figures.Verdict{v("C1", figures.Pass)}},
			},
			wantErr: "no judged baseline of this model yet (1 change in",
		},
		{
			name: "only the old model's baseline",
			stored: []Outcome{
				{Change: "", Model: "old", Verdicts: []figures.Verdict{v("C1", figures.Pass)}},
			},
			wantErr: "no judged baseline of this model yet (1 change in",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var lines []byte
			for _, oc := range tc.stored {
				b, _ := json.Marshal(oc)
				lines = append(append(lines, b...), '\n')
			}
			if err := os.WriteFile(filepath.Join(dir, "outcomes.jsonl"), lines, 0o644); err != nil {
				t.Fatal(err)
			}
			o := Options{Changes: []Change{{"host.lock_ns", 2}}, OutDir: dir}
			outs, pending, err := Stored(o)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Stored: %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, oc := range outs {
				got = append(got, oc.Change)
				if oc.Verdicts[0].Verdict != figures.Pass {
					t.Errorf("%q resumed with the old model's verdict %s", oc.Change, oc.Verdicts[0].Verdict)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.wantResumed) || fmt.Sprint(pending) != tc.wantPending {
				t.Errorf("resumed %q, pending %v; want %q, %s", got, pending, tc.wantResumed, tc.wantPending)
			}
		})
	}

	// Rejudging would stamp the old model's runs with the new model.
	dir := t.TempDir()
	b, _ := json.Marshal(Outcome{Change: "", Model: "old"})
	if err := os.WriteFile(filepath.Join(dir, "outcomes.jsonl"), append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Run(context.Background(), Options{Changes: []Change{{"host.lock_ns", 2}}, OutDir: dir, Rejudge: true})
	if !errors.Is(err, ErrOtherModel) || !strings.Contains(err.Error(), "cannot rejudge") || !strings.Contains(err.Error(), "in a new output directory") {
		t.Errorf("rejudge across models: %v", err)
	}
	// Once this model has judged the change again, the old line no
	// longer counts: nothing is stale, and a rejudge may go on.
	b2, _ := json.Marshal(Outcome{Change: "", Model: "new"})
	if err := os.WriteFile(filepath.Join(dir, "outcomes.jsonl"), append(append(append(b, '\n'), b2...), '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	if done, other, err := readOutcomes(filepath.Join(dir, "outcomes.jsonl"), nil); err != nil || other != "" || len(done) != 1 {
		t.Errorf("after judging again: %d read, other %q, err %v; want 1 and nothing stale", len(done), other, err)
	}
}

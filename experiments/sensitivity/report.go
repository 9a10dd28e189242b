package sensitivity

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/rdmashuffle/rdmashuffle/experiments/figures"
)

// Robustness is one claim's baseline verdict and the changes that flip it.
type Robustness struct {
	Claim    string   `json:"claim"`
	Verdict  string   `json:"verdict"`           // on the profiles as they are
	Flips    []string `json:"flips,omitempty"`   // "host.lock_ns x2: pass -> fail"
	Analysed int      `json:"analysed"`          // changes judged (a change that failed to run is not counted)
	Pending  int      `json:"pending,omitempty"` // changes of the analysis not judged yet (a report written so far)
}

// Label is the validation report's robustness cell.
func (r Robustness) Label() string {
	switch {
	case r.Verdict == figures.NotRun || r.Analysed == 0:
		return "not analysed"
	case len(r.Flips) == 0 && r.Pending > 0:
		return fmt.Sprintf("robust so far (%s judged, %d not yet)", changes(r.Analysed), r.Pending)
	case len(r.Flips) == 0:
		return fmt.Sprintf("robust (%s)", changes(r.Analysed))
	}
	verb := "flip"
	if len(r.Flips) == 1 {
		verb = "flips"
	}
	return fmt.Sprintf("fragile: %d of %s %s it (%s)", len(r.Flips), changes(r.Analysed), verb, strings.Join(r.Flips, "; "))
}

// changes is "1 change" or "n changes".
func changes(n int) string {
	if n == 1 {
		return "1 change"
	}
	return fmt.Sprintf("%d changes", n)
}

// Fragile reports whether some change flips the verdict.
func (r Robustness) Fragile() bool { return len(r.Flips) > 0 }

// Summary is what docs/sensitivity.json holds.
type Summary struct {
	Commit string `json:"commit"` // the baseline's
	// Commits are the builds that judged the baseline and the changes, in
	// order of first use: an interrupted analysis resumed by a later
	// build of the same model has several.
	Commits []string `json:"commits,omitempty"`
	// Model is the ModelID of the numbers the baseline was judged on
	// (outcomes from before it was recorded: the model at the analysis).
	Model   string   `json:"model,omitempty"`
	Figures []string `json:"figures,omitempty"`
	Changes []string `json:"changes"`
	Failed  []string `json:"failed,omitempty"` // changes that could not be judged, with why
	// Pending are the analysis's changes not judged yet: a report written
	// from the outcomes so far (explore sensitivity --so-far). A flip
	// found is final; "robust" holds only for the changes judged.
	Pending  []string     `json:"pending,omitempty"`
	Claims   []Robustness `json:"claims"`
	Baseline string       `json:"baseline"` // the baseline's pass/partial/fail counts
}

// Analyse compares every change's verdicts with the baseline's.
func Analyse(outs []Outcome) (*Summary, error) {
	var base *Outcome
	for i := range outs {
		if outs[i].Change == "" {
			base = &outs[i]
		}
	}
	if base == nil || base.Error != "" {
		return nil, errors.New("sensitivity: no baseline outcome to compare with")
	}
	s := &Summary{Commit: base.Commit, Model: base.Model, Figures: base.Figures}
	if s.Model == "" {
		s.Model = ModelID()
	}
	for _, oc := range outs {
		for _, c := range append([]string{oc.Commit}, oc.Commits...) {
			if c != "" && !slices.Contains(s.Commits, c) {
				s.Commits = append(s.Commits, c)
			}
		}
	}
	counts := map[string]int{}
	byClaim := map[string]*Robustness{}
	for _, v := range base.Verdicts {
		counts[v.Verdict]++
		s.Claims = append(s.Claims, Robustness{Claim: v.Claim, Verdict: v.Verdict})
	}
	for i := range s.Claims {
		byClaim[s.Claims[i].Claim] = &s.Claims[i]
	}
	s.Baseline = fmt.Sprintf("%d pass, %d partial, %d fail, %d not-run", counts[figures.Pass], counts[figures.Partial], counts[figures.Fail], counts[figures.NotRun])
	for _, oc := range outs {
		if oc.Change == "" {
			continue
		}
		s.Changes = append(s.Changes, oc.Change)
		if oc.Error != "" {
			s.Failed = append(s.Failed, oc.Change+": "+oc.Error)
			continue
		}
		if oc.Model != "" && base.Model != "" && oc.Model != base.Model {
			// Its verdicts differ from the baseline's for another reason
			// than the change: not comparable.
			s.Failed = append(s.Failed, fmt.Sprintf("%s: judged on model %s, the baseline on %s: run the analysis again in a fresh --out", oc.Change, oc.Model, base.Model))
			continue
		}
		for _, v := range oc.Verdicts {
			r := byClaim[v.Claim]
			if r == nil {
				continue
			}
			r.Analysed++
			if v.Verdict != r.Verdict {
				r.Flips = append(r.Flips, fmt.Sprintf("%s: %s -> %s", oc.Change, r.Verdict, v.Verdict))
			}
		}
	}
	return s, nil
}

// SetPending records the analysis's changes not judged yet (see Pending).
func (s *Summary) SetPending(pending []string) {
	s.Pending = pending
	for i := range s.Claims {
		s.Claims[i].Pending = len(pending)
	}
}

// at says at which commits the analysis was judged: the baseline's, and
// the later builds (of the same model) that resumed it.
func (s *Summary) at() string {
	if len(s.Commits) <= 1 {
		return "commit " + s.Commit
	}
	return fmt.Sprintf("commit %s (changes judged by %d builds of the same model: %s)", s.Commit, len(s.Commits), strings.Join(s.Commits, ", "))
}

// controls counts the seed and the numbering controls among changes
// named as Change.String prints them.
func controls(changes ...[]string) (seeds, numberings int) {
	for _, cs := range changes {
		for _, c := range cs {
			ch, err := ParseChange(c)
			switch {
			case err != nil:
			case ch.IsSeed():
				seeds++
			case ch.IsNumbering():
				numberings++
			}
		}
	}
	return seeds, numberings
}

// WriteMarkdown writes the sensitivity report (docs/sensitivity.md).
func (s *Summary) WriteMarkdown(w io.Writer, command string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# Sensitivity of the verdicts to the model's estimates\n\n")
	fmt.Fprintf(&b, "Written by `%s` from an analysis judged at %s; do not edit by hand. Each profile parameter that is an estimate "+
		"(marked (E) in docs/model.md; the list is `sensitivity.Estimates`) was moved in every built-in profile, each "+
		"estimated software cost outside the profiles (the MPI and IPoIB baselines' cycles and thresholds, the cycles per polled "+
		"cache line, and the UD designs' credit timers, design choices without a source) in every run, and the figures were rerun at the quick scale and judged. A claim whose verdict changes under some change is **fragile**: "+
		"the model decides it on a number nobody measured (or, under a control, on the runs' random draws or on which queue pairs happen to share a context-cache set). docs/validation.md shows this column and does not count a fragile pass as a pass.\n\n", command, s.at())
	seeds, numberings := controls(s.Changes, s.Pending)
	if seeds > 0 {
		b.WriteString("Seed controls move no number: every run's random seed plus k (`seed +k`). A verdict that flips under them is decided " +
			"by the runs' random draws at the quick scale (sleeping mutexes' wake-ups, random choices, the generated data); where an estimate flips it " +
			"the same way, the flip is not that estimate's. They count as changes like the others.\n\n")
	}
	if numberings > 0 {
		b.WriteString("Numbering controls move no number either: every run under another queue-pair numbering (`qp-numbering k`; the seed does not move it). " +
			"Which queue pairs share a set of a NIC's context cache follows from their numbers, which on a real host a driver hands out by the host's history, " +
			"and the profiles' caches were fitted under numbering 0. A verdict that flips under them rests on which queue pairs happen to conflict, " +
			"not on a number of the model. They count as changes like the others.\n\n")
	}
	if seeds+numberings > 0 {
		b.WriteString("Neither kind of control reaches the measurements made outside the figures' runs, on seed 1 and numbering 0: " +
			"C23's all-to-all microbenchmark (one queue pair per peer), C30's and C31's effective bisection bandwidths of fat trees, " +
			"and fig23's bandwidth-delay-product depth (measured on one queue pair). Changes of estimates reach them.\n\n")
	}
	if len(s.Figures) > 0 {
		fmt.Fprintf(&b, "Judged with %s only: claims that other figures judge are not analysed (not-run in the baseline).\n\n", strings.Join(s.Figures, ", "))
	}
	fmt.Fprintf(&b, "Baseline: %s. Changes judged: %d of %d.\n\n", s.Baseline, len(s.Changes)-len(s.Failed), len(s.Changes)+len(s.Pending))
	if len(s.Pending) > 0 {
		fmt.Fprintf(&b, "**Written before the analysis finished**: %s not judged yet (%s). A flip below is final; a claim robust so far may still flip under them.\n\n",
			changes(len(s.Pending)), strings.Join(s.Pending, ", "))
	}
	if len(s.Failed) > 0 {
		fmt.Fprintf(&b, "Changes that could not be judged:\n\n")
		for _, f := range s.Failed {
			fmt.Fprintf(&b, "- %s\n", f)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "| claim | verdict | robustness |\n|---|---|---|\n")
	for _, r := range s.Claims {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", r.Claim, r.Verdict, strings.ReplaceAll(r.Label(), "|", "\\|"))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes the summary that explore reproduce reads.
func (s *Summary) WriteJSON(path string) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// ReadSummary reads a summary written by WriteJSON.
func ReadSummary(path string) (*Summary, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s Summary
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w (rerun explore sensitivity to rewrite it)", path, err)
	}
	return &s, nil
}

// ApplyFile reads the summary at path (written by WriteJSON) and applies
// it to rep (figures.ReproduceReport.ApplyRobustness): the robustness
// cells, and fragile passes demoted. A missing file changes nothing and
// returns nil.
func ApplyFile(rep *figures.ReproduceReport, path string) (*Summary, error) {
	s, err := ReadSummary(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	cells, fragile := map[string]string{}, map[string]bool{}
	judged := map[string]string{}
	for _, v := range rep.Verdicts {
		judged[v.Claim] = v.Verdict
	}
	for _, r := range s.Claims {
		cells[r.Claim], fragile[r.Claim] = r.Label(), r.Fragile()
		// The analysis judges at the quick scale; the report may judge at
		// steady state. Where the two baselines disagree, say so: the
		// flips are of the analysis's verdict.
		if v, ok := judged[r.Claim]; ok && r.Analysed > 0 && r.Verdict != figures.NotRun && v != figures.NotRun && v != r.Verdict {
			cells[r.Claim] += fmt.Sprintf("; the analysis's own baseline, at the quick scale, judged it %s", r.Verdict)
		}
	}
	stale := s.Model != "" && s.Model != ModelID()
	if stale {
		for c, cell := range cells {
			if cell != "not analysed" {
				cells[c] = "stale: " + cell
			}
		}
	}
	seeds, numberings := controls(s.Changes)
	from := fmt.Sprintf("from `explore sensitivity` (%s) at %s, %s of the estimates (profile parameters in every profile, software costs in every run)", path, s.at(), changes(len(s.Changes)-seeds-numberings))
	var ctl []string
	if seeds > 0 {
		ctl = append(ctl, fmt.Sprintf("%d of every run's random seed", seeds))
	}
	if numberings > 0 {
		ctl = append(ctl, fmt.Sprintf("%d of its queue-pair numbering", numberings))
	}
	if len(ctl) > 0 {
		from += " and " + strings.Join(ctl, " and ") + " (controls)"
	}
	from += ", quick scale"
	if len(s.Pending) > 0 {
		from += fmt.Sprintf("; written before the analysis finished: %s not judged yet (docs/sensitivity.md lists them), so \"robust so far\" may still become fragile", changes(len(s.Pending)))
	}
	if stale {
		from += "; **stale**: the model's numbers have changed since that analysis (model %s, now %s), so its cells describe the earlier model until `explore sensitivity --update-docs` is run again"
		from = fmt.Sprintf(from, s.Model, ModelID())
	}
	if len(s.Figures) > 0 {
		from += ", judged with " + strings.Join(s.Figures, ", ") + " only"
	}
	rep.ApplyRobustness(cells, fragile, from)
	rep.Unconfirmed = nil
	if len(s.Pending) > 0 {
		for _, v := range rep.Verdicts {
			if v.Verdict == figures.Pass && !fragile[v.Claim] && cells[v.Claim] != "" && cells[v.Claim] != "not analysed" {
				rep.Unconfirmed = append(rep.Unconfirmed, v.Claim)
			}
		}
	}
	return s, nil
}

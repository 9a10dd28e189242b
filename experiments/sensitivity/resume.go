package sensitivity

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/rdmashuffle/rdmashuffle/experiments/figures"
)

// ErrSummaryMismatch is the refusal to resume from a summary whose
// verdicts cannot be taken: judged with other figures, inconsistent, or
// with a baseline that the analysis judges differently now.
var ErrSummaryMismatch = errors.New("sensitivity: cannot resume from the summary")

// FromSummary rebuilds the outcomes a summary (docs/sensitivity.json, as
// WriteJSON writes it) records: the baseline's verdicts and, for every
// change it judged, each claim's verdict (the baseline's, or the one a
// flip names). It is how an analysis longer than one sitting goes on
// after its working directory is gone: the report written so far
// (--so-far --update-docs) carries everything the analysis compares.
// The outcomes carry no measured values or reasons, which the analysis
// does not read. Changes the summary could not judge, and those it had
// not judged yet, are left out (they are judged again).
//
// It refuses (ErrSummaryMismatch) a summary judged on another model, with
// other figures, or whose claims were not all judged under the same
// changes: its verdicts cannot be taken then.
func FromSummary(s *Summary, figs []string) (base Outcome, changed []Outcome, err error) {
	if s.Model != currentModel() {
		return Outcome{}, nil, fmt.Errorf("%w: it was judged on model %s, this build's is %s: its verdicts describe other numbers; run the analysis without resuming from it", ErrSummaryMismatch, orUnknown(s.Model), currentModel())
	}
	if strings.Join(s.Figures, ",") != strings.Join(figs, ",") {
		return Outcome{}, nil, fmt.Errorf("%w: it was judged with figures %q, this analysis with %q: judge with the same figures", ErrSummaryMismatch, strings.Join(s.Figures, ","), strings.Join(figs, ","))
	}
	failed := map[string]bool{}
	for _, f := range s.Failed {
		name, _, _ := strings.Cut(f, ": ")
		failed[name] = true
	}
	var judged []string
	for i, c := range s.Changes {
		if c == "" || slices.Contains(s.Changes[:i], c) {
			return Outcome{}, nil, fmt.Errorf("%w: change %q is listed twice or has no name", ErrSummaryMismatch, c)
		}
		if !failed[c] {
			judged = append(judged, c)
		}
	}
	// verdict[change][claim], from the flips; every other verdict is the
	// baseline's.
	flipped := map[string]map[string]string{}
	for i, r := range s.Claims {
		if !isVerdict(r.Verdict) || slices.ContainsFunc(s.Claims[:i], func(o Robustness) bool { return o.Claim == r.Claim }) {
			return Outcome{}, nil, fmt.Errorf("%w: claim %q (verdict %q) is listed twice or has no verdict", ErrSummaryMismatch, r.Claim, r.Verdict)
		}
		if r.Analysed != len(judged) {
			return Outcome{}, nil, fmt.Errorf("%w: claim %s was judged under %d changes, the summary judged %d: it cannot say under which; run the analysis without resuming from it", ErrSummaryMismatch, r.Claim, r.Analysed, len(judged))
		}
		for _, f := range r.Flips {
			change, fromTo, ok1 := strings.Cut(f, ": ")
			from, to, ok2 := strings.Cut(fromTo, " -> ")
			if !ok1 || !ok2 || from != r.Verdict || !slices.Contains(judged, change) || !isVerdict(to) || to == from || flipped[change][r.Claim] != "" {
				return Outcome{}, nil, fmt.Errorf("%w: claim %s's flip %q is not \"<judged change>: %s -> <another verdict>\" once", ErrSummaryMismatch, r.Claim, f, r.Verdict)
			}
			if flipped[change] == nil {
				flipped[change] = map[string]string{}
			}
			flipped[change][r.Claim] = to
		}
	}
	verdicts := func(change string) []figures.Verdict {
		vs := make([]figures.Verdict, len(s.Claims))
		for i, r := range s.Claims {
			vs[i] = figures.Verdict{Claim: r.Claim, Verdict: r.Verdict}
			if to, ok := flipped[change][r.Claim]; ok {
				vs[i].Verdict = to
			}
		}
		return vs
	}
	from := func(change string) Outcome {
		return Outcome{Change: change, Figures: figs, Verdicts: verdicts(change), Version: "from a summary", Commit: "", Commits: s.Commits, Model: s.Model}
	}
	base = from("")
	base.Commit, base.Commits = s.Commit, nil
	for _, c := range judged {
		changed = append(changed, from(c))
	}
	return base, changed, nil
}

// sameVerdicts reports the first claim whose verdict differs between two
// outcomes ("" when they agree on every claim).
func sameVerdicts(a, b Outcome) string {
	if len(a.Verdicts) != len(b.Verdicts) {
		return fmt.Sprintf("%d claims against %d", len(a.Verdicts), len(b.Verdicts))
	}
	for i := range a.Verdicts {
		if a.Verdicts[i].Claim != b.Verdicts[i].Claim || a.Verdicts[i].Verdict != b.Verdicts[i].Verdict {
			return fmt.Sprintf("%s %s against %s %s", a.Verdicts[i].Claim, a.Verdicts[i].Verdict, b.Verdicts[i].Claim, b.Verdicts[i].Verdict)
		}
	}
	return ""
}

func isVerdict(v string) bool {
	return v == figures.Pass || v == figures.Partial || v == figures.Fail || v == figures.NotRun
}

func orUnknown(model string) string {
	if model == "" {
		return "(not recorded)"
	}
	return model
}

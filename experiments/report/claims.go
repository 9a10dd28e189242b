package report

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/rdmashuffle/rdmashuffle/experiments/figures"
)

// verdictKeys are the verdict fields the table has columns for; any other
// field the judge records goes to the robustness column.
var verdictKeys = map[string]bool{"claim": true, "figure": true, "expected": true, "measured": true, "verdict": true, "reason": true}

// claimRows joins each verdict with its claim's words, its figure's
// steady-state check and the verdict validation.md recorded.
func claimRows(vs []figures.Verdict, figs []Figure, rec *recorded) ([]ClaimRow, Counts) {
	steady := map[string]string{}
	for _, f := range figs {
		steady[f.ID] = f.Steady
		if f.Steady == "" {
			steady[f.ID] = "steady-state check not recorded (no claims report beside the figures)"
		}
	}
	claims := map[string]figures.Claim{}
	for _, c := range figures.Claims {
		claims[c.ID] = c
	}
	var rows []ClaimRow
	var n Counts
	for _, v := range vs {
		c := claims[v.Claim]
		row := ClaimRow{ID: v.Claim, Source: c.Source, Statement: c.Statement, Figure: v.Figure,
			Expected: v.Expected, Measured: v.Measured, Verdict: v.Verdict, Reason: v.Reason}
		if r := rec.verdictOf(v.Claim); r != "" && r != v.Verdict {
			row.Recorded = r
		}
		switch {
		case isBench(v.Claim):
			b, _ := figures.BenchJudgeOf(v.Claim)
			row.Robustness = append(row.Robustness, "no steady-state check: "+b.What+", run again for this page")
		case strings.Contains(steady[v.Figure], "steady-state"):
			row.Robustness = append(row.Robustness, steady[v.Figure])
		case steady[v.Figure] != "":
			row.Robustness = append(row.Robustness, "steady-state check: "+steady[v.Figure])
		}
		row.Robustness = append(row.Robustness, extraFields(v)...)
		rows = append(rows, row)
		n.count(v.Verdict)
	}
	return rows, n
}

// extraFields lists, as "key: value", the fields of v beyond the table's
// columns (what a newer judge may record about a verdict's robustness).
func extraFields(v figures.Verdict) []string {
	data, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(data, &m) != nil {
		return nil
	}
	var out []string
	for k, x := range m {
		if !verdictKeys[k] {
			out = append(out, fmt.Sprintf("%s: %v", k, x))
		}
	}
	sort.Strings(out)
	return out
}

func (n *Counts) count(verdict string) {
	n.Total++
	switch verdict {
	case figures.Pass:
		n.Pass++
	case figures.Partial:
		n.Partial++
	case figures.Fail:
		n.Fail++
	default:
		n.NotRun++
	}
}

// isBench says whether a microbenchmark judges claim (figures.BenchJudges).
func isBench(claim string) bool {
	_, ok := figures.BenchJudgeOf(claim)
	return ok
}

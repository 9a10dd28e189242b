package report

import (
	"errors"
	"io/fs"
	"os"
	"regexp"
	"strconv"
)

// recorded is what a claims report (validation.md, written by
// figures.WriteValidation) says about its run: the scale, each figure's
// steady-state check and point count, and each claim's verdict. A nil
// *recorded means none was found; its methods then answer "not recorded".
type recorded struct {
	isFull   bool
	steady   map[string]string // figure ID -> steady-state line
	points   map[string]int    // figure ID -> points
	verdicts map[string]string // claim ID -> verdict
	measured map[string]string // claim ID -> the measured cell
}

var (
	reScale   = regexp.MustCompile(`(?m)^Written by .*? \((full|quick)\b`)
	reFigLine = regexp.MustCompile(`(?m)^- ([A-Za-z0-9_.-]+), .*: (\d+) points \(\d+ failed\)\. (.*)$`)
	reVerdict = regexp.MustCompile(`(?m)^\| (C\d+) \|.*\| \*\*(pass|partial|fail|not-run)\*\* \|`)
	// reMeasured reads a verdict row's measured cell: the sixth (claim,
	// source, statement, figure, expected, measured); a row whose cells
	// hold a '|' is not read.
	reMeasured = regexp.MustCompile(`(?m)^\| (C\d+) \|(?:[^|\n]*\|){4} ([^|\n]*?) \| \*\*(?:pass|partial|fail|not-run)\*\* \|`)
)

// readValidationFile reads and parses path; a missing file gives nil.
func readValidationFile(path string) (*recorded, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return parseValidation(string(data)), nil
}

// parseValidation reads the lines of a claims report it knows and ignores
// the rest; text that is no claims report gives an empty record.
func parseValidation(text string) *recorded {
	r := &recorded{steady: map[string]string{}, points: map[string]int{}, verdicts: map[string]string{}, measured: map[string]string{}}
	if m := reScale.FindStringSubmatch(text); m != nil {
		r.isFull = m[1] == "full"
	}
	for _, m := range reFigLine.FindAllStringSubmatch(text, -1) {
		n, err := strconv.Atoi(m[2])
		if err != nil {
			continue // too many digits: not a line we wrote
		}
		r.points[m[1]], r.steady[m[1]] = n, m[3]
	}
	for _, m := range reVerdict.FindAllStringSubmatch(text, -1) {
		r.verdicts[m[1]] = m[2]
	}
	for _, m := range reMeasured.FindAllStringSubmatch(text, -1) {
		r.measured[m[1]] = m[2]
	}
	return r
}

// Recorded is a claim's verdict as a claims report recorded it.
type Recorded struct {
	Verdict  string
	Measured string // "" when the row could not be read
}

// Reference is what a claims report (docs/validation.md) recorded: its
// scale and every claim's verdict.
type Reference struct {
	Path     string
	Scale    string // "quick" or "full"
	Verdicts map[string]Recorded
}

// ReadReference reads the claims report at path; nil, with no error,
// when there is none.
func ReadReference(path string) (*Reference, error) {
	r, err := readValidationFile(path)
	if err != nil || r == nil {
		return nil, err
	}
	ref := &Reference{Path: path, Scale: r.scale(), Verdicts: map[string]Recorded{}}
	for id, v := range r.verdicts {
		ref.Verdicts[id] = Recorded{Verdict: v, Measured: r.measured[id]}
	}
	return ref, nil
}

func (r *recorded) full() bool { return r != nil && r.isFull }

func (r *recorded) scale() string {
	if r.full() {
		return "full"
	}
	return "quick"
}

func (r *recorded) steadyOf(fig string) string {
	if r == nil {
		return ""
	}
	return r.steady[fig]
}

func (r *recorded) verdictOf(claim string) string {
	if r == nil {
		return ""
	}
	return r.verdicts[claim]
}

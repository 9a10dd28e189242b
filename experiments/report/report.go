// Package report builds the one-page HTML report of a reproduction: every
// figure (embedded in the page, so that the file stands alone), every
// claim's verdict with the paper's figure beside the measured one and the
// figure's steady-state check, the model against public measurements
// (experiments/evidence), and the provenance of the runs (version, commit,
// Go version, profiles and their parameter hashes, date).
//
// It reads a figures directory written by explore reproduce (the JSONL
// records, the plots, and the validation.md beside the directory) and
// re-judges the claims from the records, so that the verdicts on the page
// are those of the judge in this build; the claims judged by
// microbenchmarks, not figures (C23, C30, C31), run them again. explore report is its command; the page is
// written with html/template.
package report

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/rdmashuffle/rdmashuffle/buildinfo"
	"github.com/rdmashuffle/rdmashuffle/experiments/evidence"
	"github.com/rdmashuffle/rdmashuffle/experiments/figures"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/experiments/sensitivity"
)

// Options says what Collect reads. The zero value of every field but Dir
// has a sensible default.
type Options struct {
	// Dir is the figures directory: the sweeps' JSONL files and the plots
	// (.png, or .svg when there is no PNG).
	Dir string
	// Validation is the claims report written with Dir (its steady-state
	// lines and recorded verdicts are shown); "" looks for validation.md
	// in Dir's parent. A missing file is not an error.
	Validation string
	// Sensitivity is a sensitivity analysis (explore sensitivity) whose
	// robustness cells the verdict table shows, fragile passes counted as
	// partials as in validation.md; "" or a missing file: not analysed.
	Sensitivity string
	// Advice is an advice directory (explore advise writes results/advise;
	// docs/advise is the project's) whose last answer and map the page
	// shows; "": no advice section.
	Advice string
	// NoEvidence leaves the evidence section out.
	NoEvidence bool
	// Command is the command line that made the page, shown on it.
	Command string
	// Log receives one line per step (nil: quiet).
	Log io.Writer
	// Build is the build that writes the page (default buildinfo.Get()).
	Build *buildinfo.Info
}

// Page is everything the HTML page shows. Built by Collect; read-only
// after that, so safe to share.
type Page struct {
	Title      string
	Scale      string // "quick" or "full"
	Counts     Counts
	Figures    []Figure
	Claims     []ClaimRow
	Evidence   *Evidence // nil when left out
	Advice     *Advice   // nil when left out
	Provenance Provenance
}

// Counts are the verdicts by kind.
type Counts struct {
	Pass, Partial, Fail, NotRun, Total int
	// Unconfirmed are the passes a sensitivity analysis written before it
	// finished has not settled (figures.ReproduceReport.Unconfirmed).
	Unconfirmed []string
}

// Figure is one figure of the reproduction as the page shows it.
type Figure struct {
	ID, Title      string
	Claims         []string
	Points, Failed int
	Steady         string // the steady-state check as recorded ("" when not recorded)
	Images         []Image
	Missing        []string // plots the figure draws that the directory lacks
}

// Image is one embedded plot: URI is a data: URI.
type Image struct {
	Name   string
	Format string // "png" or "svg"
	URI    string
	Bytes  int // size of the file embedded
}

// ClaimRow is one row of the verdict table.
type ClaimRow struct {
	ID, Source, Statement, Figure string
	Expected, Measured            string // the paper's figure (with the judge's thresholds) and ours
	Verdict, Reason               string
	// Recorded is the verdict validation.md recorded when it differs from
	// the one judged now (the judge changed since the run); "" otherwise.
	Recorded string
	// Robustness is what else the judge knows of the measurement: the
	// figure's steady-state check, and any further field of the verdict.
	Robustness []string
}

// Evidence is the model against public measurements.
type Evidence struct {
	Summary     evidence.Summary
	Modelled    []evidence.Result
	NotModelled []evidence.Result
}

// ErrNoFigures is a report asked of a directory without figure records.
var ErrNoFigures = errors.New("no figure records")

// Collect reads o.Dir, re-judges every claim, runs the evidence points and
// gathers the provenance. It fails with a message naming the fix when
// o.Dir holds no figure records.
func Collect(ctx context.Context, o Options) (*Page, error) {
	logf := func(format string, a ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, "report: "+format+"\n", a...)
		}
	}
	if st, err := os.Stat(o.Dir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("%w: figures directory %s not found: reproduce the figures first (explore reproduce writes results/reproduce/figures), name a directory of figure records, or have the report run them", ErrNoFigures, o.Dir)
	}
	if o.Validation == "" {
		o.Validation = filepath.Join(filepath.Dir(filepath.Clean(o.Dir)), "validation.md")
	}
	rec, err := readValidationFile(o.Validation)
	if err != nil {
		return nil, err
	}
	if rec != nil {
		logf("recorded steady-state checks and verdicts from %s (%s scale)", o.Validation, rec.scale())
	} else {
		logf("no %s: steady-state checks will show as not recorded", o.Validation)
	}
	p := &Page{Title: "rdmashuffle: reproduction report", Scale: rec.scale()}
	logf("reading the figures' records and plots in %s", o.Dir)
	res, err := loadFigures(o.Dir, rec, p, logf)
	if err != nil {
		return nil, err
	}
	logf("judging %d claims from the records; %s run their microbenchmarks again (about 10 s at the quick scale, minutes at the full)", len(figures.Claims), benchClaims())
	vs, err := judge(ctx, res, rec.full())
	if err != nil {
		return nil, err
	}
	jr := &figures.ReproduceReport{Verdicts: vs}
	if o.Sensitivity != "" {
		s, err := sensitivity.ApplyFile(jr, o.Sensitivity)
		if err != nil {
			return nil, err
		}
		if s != nil {
			logf("robustness from the sensitivity analysis in %s (%d changes)", o.Sensitivity, len(s.Changes))
		}
	}
	p.Claims, p.Counts = claimRows(jr.Verdicts, p.Figures, rec)
	p.Counts.Unconfirmed = jr.Unconfirmed
	for i := range p.Claims {
		if cell, ok := jr.Robustness[p.Claims[i].ID]; ok {
			p.Claims[i].Robustness = append([]string{cell}, p.Claims[i].Robustness...)
		}
	}
	if o.Advice != "" {
		if p.Advice, err = loadAdvice(o.Advice); err != nil {
			return nil, err
		}
		logf("advice from %s", o.Advice)
	}
	if !o.NoEvidence {
		p.Evidence, err = runEvidence(logf)
		if err != nil {
			return nil, err
		}
	}
	b := buildinfo.Get()
	if o.Build != nil {
		b = *o.Build
	}
	logf("provenance from the records")
	p.Provenance, err = provenance(o.Dir, b, o.Command)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// judge re-judges every claim from res; the claims of microbenchmarks
// (figures.BenchJudges) run them again at the scale of the directory.
func judge(ctx context.Context, res map[string][]results.Result, full bool) ([]figures.Verdict, error) {
	vs := figures.Judge(res)
	for _, b := range figures.BenchJudges {
		for _, w := range b.Judge(figures.FigureOptions{Full: full}) {
			for i := range vs {
				if vs[i].Claim == w.Claim {
					vs[i] = w
				}
			}
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	return vs, nil
}

// benchClaims names the claims judged by microbenchmarks, for the log.
func benchClaims() string {
	var ids []string
	for _, b := range figures.BenchJudges {
		ids = append(ids, b.Claims...)
	}
	return strings.Join(ids, ", ")
}

// runEvidence evaluates every public measurement the model can reproduce.
func runEvidence(logf func(string, ...any)) (*Evidence, error) {
	pts, err := evidence.Load()
	if err != nil {
		return nil, fmt.Errorf("evidence: %w", err)
	}
	logf("evidence: %d public measurements; running the model at those it covers", len(pts))
	e := &Evidence{}
	var rs []evidence.Result
	for i, pt := range pts {
		if i > 0 && i%10 == 0 {
			logf("evidence: %d of %d points", i, len(pts))
		}
		r := evidence.Evaluate(pt)
		rs = append(rs, r)
		if r.Modelled {
			e.Modelled = append(e.Modelled, r)
		} else {
			e.NotModelled = append(e.NotModelled, r)
		}
	}
	if len(rs) == 0 {
		return nil, errors.New("evidence: no measurements found in experiments/evidence")
	}
	e.Summary = evidence.Summarize(rs)
	return e, nil
}

package report

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/dustin/go-humanize"

	"github.com/rdmashuffle/rdmashuffle/experiments/advise"
)

// Advice is the page's "which design?" section: an advice directory's
// last answer (explore advise) and last map (explore advise --sweep).
type Advice struct {
	Dir    string
	Answer *advise.Answer // nil when the directory has none
	Rows   []AdviceRow    // the ranked designs
	Left   []string       // the refused, failed and not applied ones, with the reason
	Map    *advise.Map    // nil when the directory has none
	// MapRows are the map's winners as a table: a row per value of the
	// second axis (one row for a map of one axis), a cell per first-axis
	// value.
	MapHead  []string
	MapRows  [][]string
	MapImage *Image // nil when the figure is missing
}

// AdviceRow is one ranked design.
type AdviceRow struct {
	Rank, Design, Time, Band, Setup, Rate, Registered, QPs, Bottleneck, Why string
	Tied, Out, Winner                                                       bool
}

// ErrNoAdvice is an advice directory with neither an answer nor a map.
var ErrNoAdvice = errors.New("no advice")

// loadAdvice reads dir's answer and map; a directory with neither is
// ErrNoAdvice.
func loadAdvice(dir string) (*Advice, error) {
	a := &Advice{Dir: dir}
	ans, err := advise.ReadAnswer(filepath.Join(dir, advise.AnswerFile))
	switch {
	case err == nil:
		a.Answer = ans
		a.Rows, a.Left = adviceRows(ans)
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	m, err := advise.ReadMap(filepath.Join(dir, advise.MapFile))
	switch {
	case err == nil:
		a.Map = m
		a.MapHead, a.MapRows = m.Table()
		if img, err := embedImage(filepath.Join(dir, advise.MapFigure)); err == nil {
			a.MapImage = &img
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	if a.Answer == nil && a.Map == nil {
		return nil, fmt.Errorf("%w in %s: neither %s nor %s (explore advise writes them under results/advise; docs/advise holds the project's)", ErrNoAdvice, dir, advise.AnswerFile, advise.MapFile)
	}
	return a, nil
}

// adviceRows are an answer's ranked designs as the page shows them, and
// the others with their reason.
func adviceRows(a *advise.Answer) (rows []AdviceRow, left []string) {
	for i, d := range a.Designs {
		if d.Status != advise.Ranked {
			left = append(left, fmt.Sprintf("%s %s: %s", d.Name, d.Status, d.Reason))
			continue
		}
		r := AdviceRow{Rank: fmt.Sprint(i + 1), Design: d.Name, Time: fmt.Sprintf("%.1f", d.TimeS*1e3), Band: "-",
			Setup: fmt.Sprintf("%.1f", d.SetupS*1e3), Rate: fmt.Sprintf("%.2f", d.RateGiBs),
			Registered: humanize.IBytes(uint64(d.RegisteredBytes)), QPs: fmt.Sprint(d.QPs),
			Tied: d.Tied, Out: !d.Contender, Winner: d.Name == a.Winner}
		if d.Contender {
			r.Band = fmt.Sprintf("%.1f-%.1f", d.BandLowS*1e3, d.BandHighS*1e3)
		}
		if d.Bottleneck != nil {
			r.Bottleneck, r.Why = string(d.Bottleneck.Resource), d.Bottleneck.Why
		}
		rows = append(rows, r)
	}
	return rows, left
}

package report

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/rdmashuffle/rdmashuffle/experiments/figures"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
)

// loadFigures reads every figure's records from dir (a figure counts only
// when all its sweeps' files are there), embeds the plots the figure draws
// and appends the figures to p. It returns the results by figure ID, as
// the judge takes them.
func loadFigures(dir string, rec *recorded, p *Page, logf func(string, ...any)) (map[string][]results.Result, error) {
	res := map[string][]results.Result{}
	var first string
	for _, f := range figures.AllFigures() {
		rs, missing, err := readFigure(dir, f, rec.full(), logf)
		if err != nil {
			return nil, err
		}
		if first == "" {
			first = f.ID + ".jsonl"
		}
		if len(missing) > 0 {
			if len(rs) > 0 {
				logf("%s: incomplete, %s missing: left out (its claims are not-run)", f.ID, strings.Join(missing, ", "))
			}
			continue
		}
		res[f.ID] = rs
		fig := Figure{ID: f.ID, Title: f.Title, Claims: f.Claims, Points: len(rs), Steady: rec.steadyOf(f.ID)}
		for _, r := range rs {
			if r.Failed() {
				fig.Failed++
			}
		}
		if err := embedPlots(dir, f, rs, &fig); err != nil {
			return nil, err
		}
		logf("%s: %d points (%d failed), %d plots embedded", f.ID, fig.Points, fig.Failed, len(fig.Images))
		p.Figures = append(p.Figures, fig)
	}
	if len(res) == 0 {
		return nil, fmt.Errorf("%w: %s holds no figure records (%s and the like): reproduce the figures first and name the directory they were written to, or have the report run them", ErrNoFigures, dir, first)
	}
	return res, nil
}

// readFigure reads the JSONL files of f's sweeps; missing lists the ones
// dir does not have.
func readFigure(dir string, f figures.Figure, full bool, logf func(string, ...any)) (rs []results.Result, missing []string, err error) {
	sws, err := f.Sweeps(full)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", f.ID, err)
	}
	for _, sw := range sws {
		name := sw.Name + ".jsonl"
		r, err := results.ReadFile(filepath.Join(dir, name), func(s string) { logf("warning: %s", s) })
		switch {
		case errors.Is(err, fs.ErrNotExist):
			missing = append(missing, name)
		case err != nil:
			return nil, nil, err
		}
		rs = append(rs, r...)
	}
	return rs, missing, nil
}

// embedPlots embeds each plot f draws from rs: its PNG, or its SVG when
// there is no PNG. A plot with neither is listed in fig.Missing.
func embedPlots(dir string, f figures.Figure, rs []results.Result, fig *Figure) (err error) {
	defer func() { // a figure's plot code meeting records it did not expect
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: cannot draw its plots from the records in %s (%v): rerun the figure", f.ID, dir, r)
		}
	}()
	plots, err := f.Plots(rs)
	if err != nil {
		return fmt.Errorf("%s plots: %w", f.ID, err)
	}
	for _, pl := range plots {
		img, err := embedImage(filepath.Join(dir, pl.Name))
		if errors.Is(err, fs.ErrNotExist) {
			fig.Missing = append(fig.Missing, pl.Name)
			continue
		}
		if err != nil {
			return err
		}
		fig.Images = append(fig.Images, img)
	}
	return nil
}

// mediaTypes are the plot formats embedded, in order of preference: the
// PNG first, as it looks the same everywhere (a browser draws an SVG's
// text in its own fonts when the plot's are not installed, and the
// legends, measured in the plot's fonts, may then be clipped).
var mediaTypes = []struct{ ext, mime string }{{"png", "image/png"}, {"svg", "image/svg+xml"}}

// embedImage reads base.png, or base.svg, as a data: URI.
func embedImage(base string) (Image, error) {
	for _, t := range mediaTypes {
		data, err := os.ReadFile(base + "." + t.ext)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return Image{}, err
		}
		if len(data) == 0 {
			return Image{}, fmt.Errorf("%s.%s is empty: rerun the figure", base, t.ext)
		}
		return Image{Name: filepath.Base(base), Format: t.ext, Bytes: len(data),
			URI: "data:" + t.mime + ";base64," + base64.StdEncoding.EncodeToString(data)}, nil
	}
	return Image{}, fs.ErrNotExist
}

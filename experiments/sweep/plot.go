package sweep

// Figures from sweep results: WritePlot draws a line or grouped-bar chart
// (PNG and SVG) from a PlotSpec, SeriesOf builds its series from results
// (mean and 95% interval over seeds, stats.go), and WriteCSV exports
// results for other tools. Figure definitions call these after RunSweep or
// ReadResults; `explore plot` is their command-line face.

import (
	"encoding/csv"
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmashuffle/rdmashuffle/experiments"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// XY is one point of a series: a y value with an error half-width (no
// error bar when Err <= 0) at x; for bar charts Label names the category
// (X is then unused unless Label is empty).
type XY struct {
	X, Y, Err float64
	Label     string
}

// Series is one line, or one bar per category, with its legend name.
type Series struct {
	Name   string
	Points []XY
}

// RefLine is a horizontal reference line drawn dashed across the plot,
// e.g. a qperf ceiling, with its legend name.
type RefLine struct {
	Name string
	Y    float64
}

// PlotSpec describes a figure. Kind is "lines" (x numeric, one line with
// markers per series) or "bars" (grouped bars: the categories, from the
// points' Labels in order of first appearance, along x, one bar per series
// in each). LogX puts x on a log scale (lines only; x must be > 0).
type PlotSpec struct {
	Title, XLabel, YLabel string
	Kind                  string
	Series                []Series
	LogX                  bool
	HLines                []RefLine
}

// Plot sizes.
const (
	plotWidth  = 16 * vg.Centimeter
	plotHeight = 10 * vg.Centimeter
)

// WritePlot draws p to base+".png" and base+".svg".
func WritePlot(base string, p PlotSpec) error {
	plt, err := buildPlot(p)
	if err != nil {
		return err
	}
	for _, ext := range []string{".png", ".svg"} {
		if err := plt.Save(plotWidth, plotHeight, base+ext); err != nil {
			return fmt.Errorf("plot %q: %w", p.Title, err)
		}
	}
	return nil
}

func buildPlot(p PlotSpec) (*plot.Plot, error) {
	if len(p.Series) == 0 {
		return nil, fmt.Errorf("plot %q: no series to draw", p.Title)
	}
	for _, s := range p.Series {
		if len(s.Points) == 0 {
			return nil, fmt.Errorf("plot %q: series %q has no points", p.Title, s.Name)
		}
		for _, pt := range s.Points {
			if math.IsNaN(pt.Y) || math.IsInf(pt.Y, 0) || math.IsNaN(pt.X) || math.IsInf(pt.X, 0) || math.IsNaN(pt.Err) {
				return nil, fmt.Errorf("plot %q: series %q has a point that is not a number (x %v, y %v)", p.Title, s.Name, pt.X, pt.Y)
			}
			if p.LogX && p.Kind == "lines" && pt.X <= 0 {
				return nil, fmt.Errorf("plot %q: series %q has x = %v on a log scale", p.Title, s.Name, pt.X)
			}
		}
	}
	plt := plot.New()
	plt.Title.Text = p.Title
	plt.X.Label.Text = p.XLabel
	plt.Y.Label.Text = p.YLabel
	plt.Legend.Top = true
	plt.Add(plotter.NewGrid())
	switch p.Kind {
	case "lines":
		if err := addLines(plt, p); err != nil {
			return nil, err
		}
	case "bars":
		if p.LogX {
			return nil, fmt.Errorf("plot %q: LogX applies to lines, not bars", p.Title)
		}
		if err := addBars(plt, p); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("plot %q: kind %q: want lines or bars", p.Title, p.Kind)
	}
	for i, h := range p.HLines {
		if math.IsNaN(h.Y) || math.IsInf(h.Y, 0) {
			return nil, fmt.Errorf("plot %q: reference line %q at %v", p.Title, h.Name, h.Y)
		}
		y := h.Y
		f := plotter.NewFunction(func(float64) float64 { return y })
		f.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
		f.Width = vg.Points(1.5)
		f.Color = plotutil.Color(len(p.Series) + i)
		plt.Add(f)
		plt.Legend.Add(h.Name, f)
		plt.Y.Min = math.Min(plt.Y.Min, y)
		plt.Y.Max = math.Max(plt.Y.Max, y*1.05)
	}
	plt.Y.Min = math.Min(plt.Y.Min, 0) // bars and rates are read from zero
	// Headroom for the legend (top right), about 7% of the height a row.
	if rows := len(p.Series) + len(p.HLines); rows > 0 && plt.Y.Max > plt.Y.Min {
		plt.Y.Max = plt.Y.Min + (plt.Y.Max-plt.Y.Min)/(1-0.07*float64(min(rows, 8)))
	}
	return plt, nil
}

// xyErr adapts a series to gonum's XYer and YErrorer.
type xyErr []XY

func (s xyErr) Len() int                        { return len(s) }
func (s xyErr) XY(i int) (float64, float64)     { return s[i].X, s[i].Y }
func (s xyErr) YError(i int) (float64, float64) { return s[i].Err, s[i].Err }
func withErr(pts []XY) (out xyErr) {
	for _, p := range pts {
		if p.Err > 0 {
			out = append(out, p)
		}
	}
	return out
}

func addLines(plt *plot.Plot, p PlotSpec) error {
	if p.LogX { // ticks at the data's x values (nodes 2, 4, 8, ... are rarely powers of ten)
		plt.X.Scale = plot.LogScale{}
		var xs []float64
		for _, s := range p.Series {
			for _, pt := range s.Points {
				if !slices.Contains(xs, pt.X) {
					xs = append(xs, pt.X)
				}
			}
		}
		slices.Sort(xs)
		var ticks plot.ConstantTicks
		for _, x := range xs {
			ticks = append(ticks, plot.Tick{Value: x, Label: strconv.FormatFloat(x, 'g', 4, 64)})
		}
		plt.X.Tick.Marker = ticks
	}
	for i, s := range p.Series {
		pts := slices.Clone(s.Points)
		slices.SortStableFunc(pts, func(a, b XY) int { return cmpFloat(a.X, b.X) })
		l, sc, err := plotter.NewLinePoints(xyErr(pts))
		if err != nil {
			return fmt.Errorf("plot %q: series %q: %w", p.Title, s.Name, err)
		}
		l.Color = plotutil.Color(i)
		l.Width = vg.Points(1.5)
		sc.Color = plotutil.Color(i)
		sc.Shape = plotutil.Shape(i)
		plt.Add(l, sc)
		plt.Legend.Add(s.Name, l, sc)
		if e := withErr(pts); len(e) > 0 {
			eb, err := plotter.NewYErrorBars(e)
			if err != nil {
				return fmt.Errorf("plot %q: series %q: %w", p.Title, s.Name, err)
			}
			eb.Color = plotutil.Color(i)
			plt.Add(eb)
		}
	}
	return nil
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// category is a bar chart point's category name.
func (pt XY) category() string {
	if pt.Label != "" {
		return pt.Label
	}
	return strconv.FormatFloat(pt.X, 'g', -1, 64)
}

func addBars(plt *plot.Plot, p PlotSpec) error {
	var cats []string
	for _, s := range p.Series {
		for _, pt := range s.Points {
			if !slices.Contains(cats, pt.category()) {
				cats = append(cats, pt.category())
			}
		}
	}
	// Bars fill 80% of each category's share of the (approximate) data
	// area, at most 1 cm each.
	n := len(p.Series)
	w := min(vg.Centimeter, (plotWidth-2*vg.Centimeter)*0.8/vg.Length(len(cats)*n))
	for i, s := range p.Series {
		vals := make(plotter.Values, len(cats))
		var errs xyErr
		for _, pt := range s.Points {
			c := slices.Index(cats, pt.category())
			vals[c] = pt.Y
			if pt.Err > 0 {
				errs = append(errs, XY{X: float64(c), Y: pt.Y, Err: pt.Err})
			}
		}
		b, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return fmt.Errorf("plot %q: series %q: %w", p.Title, s.Name, err)
		}
		b.Color = plotutil.Color(i)
		b.LineStyle.Width = vg.Points(0.5)
		b.Offset = vg.Length(float64(i)-float64(n-1)/2) * w
		plt.Add(b)
		plt.Legend.Add(s.Name, b)
		if len(errs) > 0 {
			eb, err := plotter.NewYErrorBars(errs)
			if err != nil {
				return fmt.Errorf("plot %q: series %q: %w", p.Title, s.Name, err)
			}
			plt.Add(&shiftedErrBars{YErrorBars: eb, dx: b.Offset})
		}
	}
	plt.NominalX(cats...)
	return nil
}

// shiftedErrBars draws error bars dx to the right of their x (the offset
// of their series' bars in a grouped bar chart).
type shiftedErrBars struct {
	*plotter.YErrorBars
	dx vg.Length
}

func (e *shiftedErrBars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for i, err := range e.YErrors {
		x := trX(e.XYs[i].X) + e.dx
		lo, hi := trY(e.XYs[i].Y-math.Abs(err.Low)), trY(e.XYs[i].Y+math.Abs(err.High))
		c.StrokeLines(e.LineStyle, c.ClipLinesY([]vg.Point{{X: x, Y: lo}, {X: x, Y: hi}})...)
		for _, y := range []vg.Length{lo, hi} {
			if c.Contains(vg.Point{X: x, Y: y}) {
				c.StrokeLine2(e.LineStyle, x-e.CapWidth/2, y, x+e.CapWidth/2, y)
			}
		}
	}
}

// SeriesOf turns sweep results into plot series: one series per value of
// the parameter seriesBy (named by the value; a single series "all" if
// seriesBy is "" or not in the keys), one point per value of the
// parameter xBy (X its number if it is one, Label its text), with Y the
// mean of y over the results sharing both (the seeds) and Err the 95%
// confidence half-width when there are several. Failed results are left
// out. Series and points come in the order of the results.
func SeriesOf(results []Result, seriesBy, xBy string, y func(Result) float64) ([]Series, error) {
	type cell struct {
		series, x string
	}
	var cells []cell
	vals := map[cell][]float64{}
	for _, r := range results {
		if r.Failed() {
			continue
		}
		xv, ok := KeyValue(r.Key, xBy)
		if !ok {
			return nil, fmt.Errorf("result %d (%s): no parameter %q in its key; the varied parameters are the ones in the key", r.Point, r.Key, xBy)
		}
		sv := "all"
		if v, ok := KeyValue(r.Key, seriesBy); ok {
			sv = v
		}
		c := cell{sv, xv}
		if _, ok := vals[c]; !ok {
			cells = append(cells, c)
		}
		vals[c] = append(vals[c], y(r))
	}
	if len(cells) == 0 {
		return nil, errors.New("no results to plot (all failed?)")
	}
	var out []Series
	for _, c := range cells {
		i := slices.IndexFunc(out, func(s Series) bool { return s.Name == c.series })
		if i < 0 {
			out = append(out, Series{Name: c.series})
			i = len(out) - 1
		}
		s := Summarize1(vals[c])
		x, err := strconv.ParseFloat(c.x, 64)
		if err != nil {
			x = float64(len(out[i].Points))
		}
		out[i].Points = append(out[i].Points, XY{X: x, Y: s.Mean, Err: s.CI95, Label: c.x})
	}
	return out, nil
}

// CSVHeader returns WriteCSV's column names: point, key, the run record's
// JSON field names, error.
func CSVHeader() []string {
	h := []string{"point", "key"}
	rt := reflect.TypeFor[experiments.Record]()
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		if name == "-" || name == "" {
			continue
		}
		h = append(h, name)
	}
	return append(h, "error")
}

// WriteCSV writes results to path as CSV with the CSVHeader columns; a
// failed point has empty record columns and its error.
func WriteCSV(path string, results []Result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	w.Write(CSVHeader())
	rt := reflect.TypeFor[experiments.Record]()
	for _, r := range results {
		row := []string{strconv.Itoa(r.Point), r.Key}
		for i := range rt.NumField() {
			name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
			if name == "-" || name == "" {
				continue
			}
			if r.Record == nil {
				row = append(row, "")
				continue
			}
			row = append(row, csvValue(reflect.ValueOf(r.Record).Elem().Field(i)))
		}
		w.Write(append(row, r.Error))
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func csvValue(v reflect.Value) string {
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	}
	return fmt.Sprint(v.Interface())
}

// Metric returns a y function for SeriesOf: the numeric run-record field
// with JSON name name (throughput_gibps, response_s, setup_ms, ...).
func Metric(name string) (func(Result) float64, error) {
	rt := reflect.TypeFor[experiments.Record]()
	var numeric []string
	for i := range rt.NumField() {
		f := rt.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch f.Type.Kind() {
		case reflect.Int, reflect.Int64, reflect.Uint64, reflect.Float64:
		default:
			continue
		}
		if tag == name {
			return func(r Result) float64 {
				v := reflect.ValueOf(r.Record).Elem().Field(i)
				switch v.Kind() {
				case reflect.Float64:
					return v.Float()
				case reflect.Uint64:
					return float64(v.Uint())
				}
				return float64(v.Int())
			}, nil
		}
		numeric = append(numeric, tag)
	}
	return nil, fmt.Errorf("metric %q: want a numeric field of the run record: %s", name, strings.Join(numeric, ", "))
}

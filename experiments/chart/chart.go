// Package chart draws figures: Write renders a line or grouped-bar chart
// (PNG and SVG) from a Spec, and SeriesOf builds its series from sweep
// results (mean and 95% interval over seeds). Figure definitions call
// these after a sweep; explore plot is their command-line face.
package chart

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
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

// Spec describes a figure. Kind is "lines" (x numeric, one line with
// markers per series) or "bars" (grouped bars: the categories, from the
// points' Labels in order of first appearance, along x, one bar per series
// in each). LogX puts x on a log scale (lines only; x must be > 0).
type Spec struct {
	Title, XLabel, YLabel string
	Kind                  string
	Series                []Series
	LogX                  bool
	HLines                []RefLine
	// LogY puts y on a log scale (lines only; y must be > 0): for
	// quantities over decades, such as registered memory against
	// message size.
	LogY bool
	// ZoomY spans the y axis over the data instead of from zero, for
	// differences of a few percent (the title should say so).
	ZoomY bool
	// XBytes labels the x ticks as sizes (4 KiB, 1 MiB) rather than
	// byte counts.
	XBytes bool
	// StyleOrder lists the series names whose index picks their style
	// (colour and marker), so that a series keeps its style in every
	// figure: the design catalogue (experiments.DesignNames). Other
	// series take the styles left.
	StyleOrder []string
}

// Plot sizes.
const (
	plotWidth  = 16 * vg.Centimeter
	plotHeight = 10 * vg.Centimeter
)

// titleHeadroom is the space left above a plot's title.
const titleHeadroom = 3 * vg.Millimeter / 2

// pngDPI is the resolution of the PNG files: print quality.
const pngDPI = 300

// Write draws p to base+".png" (300 dpi, for print) and base+".svg"
// (vector), with the legend to the right of the data.
func Write(base string, p Spec) error {
	plt, leg, err := buildPlot(p)
	if err != nil {
		return err
	}
	return writeWithLegend(base, p.Title, plt, leg)
}

// writeWithLegend draws plt with leg to its right to base+".png" and
// base+".svg".
func writeWithLegend(base, title string, plt *plot.Plot, leg plot.Legend) error {
	r := leg.Rectangle(draw.Canvas{})
	// The legend's labels get a sixth more room than their laid-out
	// width: an SVG viewer without the fonts gonum measured them with may
	// substitute a wider one (DejaVu Serif is about 15% wider than Times).
	legW := r.Size().X*7/6 + vg.Centimeter/2
	w, h := plotWidth+legW, max(plotHeight, r.Size().Y+vg.Centimeter)
	for _, ext := range []string{".png", ".svg"} {
		var c vg.CanvasWriterTo
		switch ext {
		case ".png":
			c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(pngDPI))}
		case ".svg":
			c = vgsvg.New(w, h)
		}
		dc := draw.New(c)
		// A few points above the title: a viewer that substitutes a font
		// with a taller ascent (SVG) would otherwise clip its top.
		plt.Draw(draw.Crop(dc, 0, -legW, 0, -titleHeadroom))
		leg.Draw(draw.Crop(dc, plotWidth+vg.Centimeter/4, 0, 0, -vg.Centimeter/2))
		if err := writeCanvas(base+ext, c); err != nil {
			return fmt.Errorf("plot %q: %w", title, err)
		}
	}
	return nil
}

func writeCanvas(path string, c vg.CanvasWriterTo) error {
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return err
	}
	data := buf.Bytes()
	if strings.HasSuffix(path, ".svg") {
		data = svgFontFallbacks(data)
	}
	return os.WriteFile(path, data, 0o644)
}

// svgFontFallbacks names, after each font the plot was laid out with,
// fonts of the same widths: gonum lays text out with the Liberation
// fonts' metrics and names only them, so a viewer without them (most
// browsers on Windows and macOS, many Linux desktops) substitutes a font
// of other widths and labels overrun their boxes. Liberation Serif, Sans
// and Mono are metric-compatible with Times New Roman, Arial and Courier
// New.
func svgFontFallbacks(svg []byte) []byte {
	return []byte(svgFonts.Replace(string(svg)))
}

var svgFonts = strings.NewReplacer(
	"font-family:Liberation Serif;", `font-family:'Liberation Serif','Times New Roman',Times,serif;`,
	"font-family:Liberation Sans;", `font-family:'Liberation Sans',Arial,Helvetica,sans-serif;`,
	"font-family:Liberation Mono;", `font-family:'Liberation Mono','Courier New',Courier,monospace;`,
)

// buildPlot draws p's data and returns the legend apart (WritePlot puts
// it outside the data).
func buildPlot(p Spec) (*plot.Plot, plot.Legend, error) {
	plt, err := buildData(p)
	if err != nil {
		return nil, plot.Legend{}, err
	}
	leg := plt.Legend
	leg.Top, leg.Left = true, true
	leg.ThumbnailWidth = vg.Points(28)
	plt.Legend = plot.NewLegend()
	return plt, leg, nil
}

func buildData(p Spec) (*plot.Plot, error) {
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
			if p.LogY && pt.Y <= 0 {
				return nil, fmt.Errorf("plot %q: series %q has y = %v on a log scale", p.Title, s.Name, pt.Y)
			}
		}
	}
	if p.LogY {
		// Drawn as log10(y) on a linear axis, ticks labelled with y:
		// gonum's log scale places a centred axis label at the
		// arithmetic middle of the range and shrinks the plot to fit it.
		logged := make([]Series, len(p.Series))
		for i, s := range p.Series {
			logged[i] = Series{Name: s.Name, Points: slices.Clone(s.Points)}
			for j := range logged[i].Points {
				logged[i].Points[j].Y, logged[i].Points[j].Err = math.Log10(logged[i].Points[j].Y), 0
			}
		}
		p.Series = logged
	}
	if p.Kind == "lines" && !p.LogX && geometric(p.Series) {
		p.LogX = true // 1, 2, 4, ... 16 spread evenly, not crowded at the left
	}
	plt := plot.New()
	plt.Title.Text = p.Title
	plt.X.Label.Text = p.XLabel
	plt.Y.Label.Text = p.YLabel
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
		f.Dashes = plotutil.Dashes(i + 1)
		f.Width = vg.Points(1.5)
		f.Color = color.Gray{Y: uint8(80 * (i % 3))}
		plt.Add(f)
		plt.Legend.Add(h.Name, f)
		plt.Y.Min = math.Min(plt.Y.Min, y)
		if p.ZoomY {
			plt.Y.Max = math.Max(plt.Y.Max, y) // the zoom pads it
		} else {
			plt.Y.Max = math.Max(plt.Y.Max, y*1.05)
		}
	}
	if p.LogY {
		if p.Kind != "lines" {
			return nil, fmt.Errorf("plot %q: LogY applies to lines, not bars", p.Title)
		}
		plt.Y.Min, plt.Y.Max = plt.Y.Min-0.06, plt.Y.Max+0.06 // the markers stay inside the frame
		plt.Y.Tick.Marker = decadeTicks(math.Pow(10, plt.Y.Min), math.Pow(10, plt.Y.Max))
	} else if p.ZoomY && p.Kind == "lines" {
		pad := max((plt.Y.Max-plt.Y.Min)*0.15, math.Abs(plt.Y.Max)*0.005)
		plt.Y.Min, plt.Y.Max = plt.Y.Min-pad, plt.Y.Max+pad
		plt.Y.Tick.Marker = niceTicks{}
	} else {
		plt.Y.Min = math.Min(plt.Y.Min, 0) // bars and rates are read from zero
		if p.Kind == "lines" && plt.Y.Max > 0 {
			plt.Y.Max *= 1.06 // the top points and their markers stay inside the frame
		}
		plt.Y.Tick.Marker = niceTicks{}
	}
	if p.Kind == "lines" && !p.LogX {
		plt.X.Tick.Marker = niceTicks{}
		if xs := xValues(p.Series); len(xs) <= 8 && allWhole(xs) {
			// A few whole values (1, 2, 4 receives per credit): ticks
			// at them, not at steps of 1.5 between.
			plt.X.Tick.Marker = dataTicks(xs, tickLabel)
		}
	}
	if p.XBytes && p.Kind == "lines" {
		plt.X.Tick.Marker = dataTicks(xValues(p.Series), sizeLabel)
	}
	return plt, nil
}

// decadeTicks labels the powers of ten from lo to hi, with unlabelled
// ticks at 2 to 9 times each, on an axis that holds log10(y); over less
// than two decades, 2 and 5 times each are labelled too, so that the
// axis has more than one or two numbers.
func decadeTicks(lo, hi float64) plot.ConstantTicks {
	var t plot.ConstantTicks
	few := hi < 100*lo
	for d := math.Pow(10, math.Floor(math.Log10(lo))); d <= hi; d *= 10 {
		for m := 1.0; m < 10; m++ {
			if v := m * d; v >= lo && v <= hi {
				tk := plot.Tick{Value: math.Log10(v)} // the axis holds log10(y)
				if m == 1 || few && (m == 2 || m == 5) {
					tk.Label = tickLabel(v)
				}
				t = append(t, tk)
			}
		}
	}
	return t
}

// xValues are the series' distinct x values, ascending.
func xValues(ss []Series) []float64 {
	var xs []float64
	for _, s := range ss {
		for _, pt := range s.Points {
			if !slices.Contains(xs, pt.X) {
				xs = append(xs, pt.X)
			}
		}
	}
	slices.Sort(xs)
	return xs
}

// allWhole reports whether every x is a whole number.
func allWhole(xs []float64) bool {
	for _, x := range xs {
		if x != math.Trunc(x) {
			return false
		}
	}
	return true
}

// dataTicks labels each of xs with label.
func dataTicks(xs []float64, label func(float64) string) plot.ConstantTicks {
	t := make(plot.ConstantTicks, len(xs))
	for i, x := range xs {
		t[i] = plot.Tick{Value: x, Label: label(x)}
	}
	return t
}

// sizeLabel prints a byte count as a size: 4096 as "4 KiB".
func sizeLabel(x float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for x >= 1024 && i < len(units)-1 {
		x /= 1024
		i++
	}
	return tickLabel(math.Round(x*100)/100) + " " + units[i]
}

// niceTicks labels about six values at a step of 1, 2, 2.5 or 5 times a
// power of ten, with unlabelled minor ticks halfway (gonum's default often
// labels only two values, e.g. 0 and 25).
type niceTicks struct{}

// Ticks implements plot.Ticker.
func (niceTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || math.IsInf(hi-lo, 0) {
		return plot.DefaultTicks{}.Ticks(lo, hi)
	}
	raw := (hi - lo) / 7
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step, prec := 10*mag, 0
	for _, m := range []float64{1, 2, 2.5, 5} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	if d := -math.Floor(math.Log10(step) + 1e-9); d > 0 {
		prec = int(d)
	}
	if math.Abs(step/math.Pow(10, -float64(prec))-math.Round(step/math.Pow(10, -float64(prec)))) > 1e-6 {
		prec++ // 0.25, 2.5
	}
	var ticks []plot.Tick
	for i := math.Ceil(lo / step * 2); i/2*step <= hi*(1+1e-12); i++ {
		v := i / 2 * step
		t := plot.Tick{Value: v}
		if int64(i)%2 == 0 {
			t.Label = strconv.FormatFloat(v, 'f', prec, 64)
		}
		ticks = append(ticks, t)
	}
	return ticks
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

func addLines(plt *plot.Plot, p Spec) error {
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
		plt.X.Tick.Marker = logTicks(xs)
	}
	styles := seriesStyles(seriesNames(p.Series), p.StyleOrder)
	for i, s := range p.Series {
		pts := slices.Clone(s.Points)
		slices.SortStableFunc(pts, func(a, b XY) int { return cmpFloat(a.X, b.X) })
		l, sc, err := plotter.NewLinePoints(xyErr(pts))
		if err != nil {
			return fmt.Errorf("plot %q: series %q: %w", p.Title, s.Name, err)
		}
		l.Color = styles[i].color
		l.Width = vg.Points(1.5)
		sc.Color = styles[i].color
		sc.Shape = styles[i].shape
		sc.Radius = vg.Points(3)
		plt.Add(l, sc)
		plt.Legend.Add(s.Name, l, sc)
		if e := withErr(pts); len(e) > 0 {
			eb, err := plotter.NewYErrorBars(e)
			if err != nil {
				return fmt.Errorf("plot %q: series %q: %w", p.Title, s.Name, err)
			}
			eb.Color = styles[i].color
			plt.Add(eb)
		}
	}
	return nil
}

// logTicks labels the data's x values on a log axis, thinned so that labels
// stay at least a tenth of the axis apart; a value too close to the previous
// label keeps an unlabelled minor tick.
func logTicks(xs []float64) plot.ConstantTicks {
	if len(xs) == 0 {
		return nil
	}
	gap := (math.Log10(xs[len(xs)-1]) - math.Log10(xs[0])) / 10
	var ticks plot.ConstantTicks
	last := math.Inf(-1)
	for _, x := range xs {
		t := plot.Tick{Value: x}
		if math.Log10(x)-last >= gap {
			t.Label = tickLabel(x)
			last = math.Log10(x)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// tickLabel prints whole numbers in full (10000, not 1e+04) and others to
// four significant digits.
func tickLabel(x float64) string {
	if x == math.Trunc(x) && math.Abs(x) < 1e9 {
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return strconv.FormatFloat(x, 'g', 4, 64)
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

func addBars(plt *plot.Plot, p Spec) error {
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
	styles := seriesStyles(seriesNames(p.Series), p.StyleOrder)
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
		b.Color = styles[i].color
		b.LineStyle.Width = vg.Points(0.5)
		b.Offset = vg.Length(float64(i)-float64(n-1)/2) * w
		// The series' marker on top of each bar, so that bars of series
		// that share a colour differ, also in grey print.
		marks := &barMarks{vals: vals, dx: b.Offset, glyph: draw.GlyphStyle{Color: color.Black, Shape: styles[i].shape, Radius: min(w/2.5, vg.Points(2.5))}}
		plt.Add(b, marks)
		plt.Legend.Add(s.Name, barThumb{color: styles[i].color, glyph: marks.glyph})
		if len(errs) > 0 {
			eb, err := plotter.NewYErrorBars(errs)
			if err != nil {
				return fmt.Errorf("plot %q: series %q: %w", p.Title, s.Name, err)
			}
			plt.Add(&shiftedErrBars{YErrorBars: eb, dx: b.Offset})
		}
	}
	plt.NominalX(cats...)
	// Category names that would run into each other are set at 45 degrees.
	var total vg.Length
	for _, c := range cats {
		total += plt.X.Tick.Label.Width(c) + vg.Points(6)
	}
	if total > plotWidth*0.8 {
		plt.X.Tick.Label.Rotation = math.Pi / 4
		plt.X.Tick.Label.XAlign, plt.X.Tick.Label.YAlign = draw.XRight, draw.YTop
	}
	// Room for the outer bars of the first and last groups, and for the
	// markers above the tallest bars.
	plt.X.Min, plt.X.Max = -0.5, float64(len(cats))-0.5
	plt.Y.Max *= 1.06
	return nil
}

// seriesNames lists the series' names in order.
func seriesNames(ss []Series) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.Name
	}
	return out
}

// geometric reports whether the series' x values, taken together, are
// positive and each about twice the one before (powers of two, or any
// doubling sweep such as 1.7, 3.4, 6.9 us) and span at least a factor of 8:
// such data reads best on a log axis.
func geometric(ss []Series) bool {
	var xs []float64
	for _, s := range ss {
		for _, pt := range s.Points {
			if pt.X <= 0 {
				return false
			}
			if !slices.Contains(xs, pt.X) {
				xs = append(xs, pt.X)
			}
		}
	}
	slices.Sort(xs)
	if len(xs) < 3 || xs[len(xs)-1] < 8*xs[0] {
		return false
	}
	for i := 1; i < len(xs); i++ {
		if r := xs[i] / xs[i-1]; r < 1.8 || r > 4.4 {
			return false
		}
	}
	return true
}

// barMarks draws a series' marker just above each of its bars, dx to the
// right of the category (the bars' offset), in black on the background;
// as a legend thumbnail it draws the marker beside the colour.
type barMarks struct {
	vals  plotter.Values
	dx    vg.Length
	glyph draw.GlyphStyle
}

func (m *barMarks) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for i, v := range m.vals {
		if v == 0 {
			continue
		}
		c.DrawGlyph(m.glyph, vg.Point{X: trX(float64(i)) + m.dx, Y: trY(v) + m.glyph.Radius + vg.Points(1.5)})
	}
}

// barThumb is a bar series' legend thumbnail: its colour in a box and its
// marker beside it.
type barThumb struct {
	color color.Color
	glyph draw.GlyphStyle
}

func (t barThumb) Thumbnail(c *draw.Canvas) {
	mid := c.Min.X + (c.Max.X-c.Min.X)*0.55
	box := []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: mid, Y: c.Min.Y}, {X: mid, Y: c.Max.Y}, {X: c.Min.X, Y: c.Max.Y}, {X: c.Min.X, Y: c.Min.Y}}
	c.FillPolygon(t.color, box)
	c.StrokeLines(draw.LineStyle{Color: color.Black, Width: vg.Points(0.5)}, box)
	g := t.glyph
	g.Radius = vg.Points(3)
	c.DrawGlyph(g, vg.Point{X: (mid + c.Max.X) / 2, Y: (c.Min.Y + c.Max.Y) / 2})
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
func SeriesOf(rs []results.Result, seriesBy, xBy string, y func(results.Result) float64) ([]Series, error) {
	type cell struct {
		series, x string
	}
	var cells []cell
	vals := map[cell][]float64{}
	for _, r := range rs {
		if r.Failed() {
			continue
		}
		xv, ok := results.KeyValue(r.Key, xBy)
		if !ok {
			return nil, fmt.Errorf("result %d (%s): no parameter %q in its key; the varied parameters are the ones in the key", r.Point, r.Key, xBy)
		}
		sv := "all"
		if v, ok := results.KeyValue(r.Key, seriesBy); ok {
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
		s := results.Summarize1(vals[c])
		x, err := strconv.ParseFloat(c.x, 64)
		if err != nil {
			x = float64(len(out[i].Points))
		}
		out[i].Points = append(out[i].Points, XY{X: x, Y: s.Mean, Err: s.CI95, Label: c.x})
	}
	return out, nil
}

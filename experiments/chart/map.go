package chart

import (
	"errors"
	"fmt"
	"image/color"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// MapCell is one cell of a map: the name that won it (its colour), a
// note printed under the name, and whether it is hatched (the win is not
// clear). An empty Name leaves the cell grey with its note.
type MapCell struct {
	Name    string
	Note    string
	Hatched bool
}

// MapSpec describes a map of a parameter plane: a grid of cells, one per
// pair of an x and a y value, each coloured by the name that won it.
// Cells[y][x] is the cell at the x-th value of XTicks and the y-th of
// YTicks. HatchNote is the legend's words for a hatched cell.
type MapSpec struct {
	Title, XLabel, YLabel string
	XTicks, YTicks        []string
	Cells                 [][]MapCell
	HatchNote             string
	// StyleOrder orders the legend and the colours (the design
	// catalogue); names not in it follow in order of first appearance.
	StyleOrder []string
}

// ErrMap reports a map that cannot be drawn.
var ErrMap = errors.New("chart: map")

// WriteMap draws m to base+".png" and base+".svg", with the legend (one
// entry per name that won a cell, and the hatching's meaning) to the
// right. The names take distinct colours, in StyleOrder's order.
func WriteMap(base string, m MapSpec) error {
	if len(m.XTicks) == 0 || len(m.Cells) != len(m.YTicks) {
		return fmt.Errorf("%w %q: %d rows of cells for %d y values and %d x values", ErrMap, m.Title, len(m.Cells), len(m.YTicks), len(m.XTicks))
	}
	for i, row := range m.Cells {
		if len(row) != len(m.XTicks) {
			return fmt.Errorf("%w %q: row %d has %d cells for %d x values", ErrMap, m.Title, i, len(row), len(m.XTicks))
		}
	}
	names := mapNames(m)
	if len(names) > len(palette) {
		return fmt.Errorf("%w %q: %d winners, more than the %d colours that can be told apart", ErrMap, m.Title, len(names), len(palette))
	}
	colours := map[string]color.Color{}
	for i, n := range names {
		colours[n] = tint(palette[i])
	}
	plt := plot.New()
	plt.Title.Text = m.Title
	plt.X.Label.Text, plt.Y.Label.Text = m.XLabel, m.YLabel
	plt.X.Min, plt.X.Max = -0.5, float64(len(m.XTicks))-0.5
	plt.Y.Min, plt.Y.Max = -0.5, float64(len(m.YTicks))-0.5
	plt.X.Tick.Marker, plt.Y.Tick.Marker = indexTicks(m.XTicks), indexTicks(m.YTicks)
	plt.Add(cells{m: m, colours: colours})
	leg := plot.NewLegend()
	leg.Top, leg.Left = true, true
	leg.ThumbnailWidth = vg.Points(28)
	for _, n := range names {
		leg.Add(n, swatch{fill: colours[n]})
	}
	if m.HatchNote != "" && slices.ContainsFunc(m.Cells, func(r []MapCell) bool {
		return slices.ContainsFunc(r, func(c MapCell) bool { return c.Hatched })
	}) {
		leg.Add(m.HatchNote, swatch{fill: color.White, hatched: true})
	}
	return writeWithLegend(base, m.Title, plt, leg)
}

// mapNames lists the names that won a cell: those of StyleOrder in its
// order, then the others in order of first appearance.
func mapNames(m MapSpec) []string {
	var seen []string
	for _, row := range m.Cells {
		for _, c := range row {
			if c.Name != "" && !slices.Contains(seen, c.Name) {
				seen = append(seen, c.Name)
			}
		}
	}
	var out []string
	for _, n := range m.StyleOrder {
		if slices.Contains(seen, n) {
			out = append(out, n)
		}
	}
	for _, n := range seen {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// tint lightens c halfway to white, so that black text reads on it.
func tint(c color.Color) color.Color {
	r, g, b, _ := c.RGBA()
	mix := func(v uint32) uint8 { return uint8((v>>8 + 255) / 2) }
	return color.RGBA{mix(r), mix(g), mix(b), 0xff}
}

// indexTicks labels the cell centres 0, 1, ... with labels.
func indexTicks(labels []string) plot.ConstantTicks {
	t := make(plot.ConstantTicks, len(labels))
	for i, l := range labels {
		t[i] = plot.Tick{Value: float64(i), Label: l}
	}
	return t
}

// cells draws a map's cells.
type cells struct {
	m       MapSpec
	colours map[string]color.Color
}

var (
	emptyCell = color.Gray{Y: 0xdd}
	hatchLine = draw.LineStyle{Color: color.Gray{Y: 0x40}, Width: vg.Points(0.8)}
	cellEdge  = draw.LineStyle{Color: color.White, Width: vg.Points(2)}
)

// Plot implements plot.Plotter.
func (cs cells) Plot(c draw.Canvas, plt *plot.Plot) {
	tx, ty := plt.Transforms(&c)
	name := draw.TextStyle{Color: color.Black, Font: plt.X.Tick.Label.Font, XAlign: draw.XCenter, YAlign: draw.YCenter, Handler: plt.X.Tick.Label.Handler}
	note := name
	note.Font.Size = name.Font.Size * 0.85
	for y, row := range cs.m.Cells {
		for x, cell := range row {
			r := vg.Rectangle{
				Min: vg.Point{X: tx(float64(x) - 0.5), Y: ty(float64(y) - 0.5)},
				Max: vg.Point{X: tx(float64(x) + 0.5), Y: ty(float64(y) + 0.5)},
			}
			var fill color.Color = emptyCell
			if cell.Name != "" {
				fill = cs.colours[cell.Name]
			}
			drawSwatch(c, r, fill, cell.Hatched)
			c.StrokeLines(cellEdge, rectPath(r))
			mid := vg.Point{X: (r.Min.X + r.Max.X) / 2, Y: (r.Min.Y + r.Max.Y) / 2}
			h := name.Font.Size
			if cell.Hatched {
				// The text on a plain patch of the cell's colour: hatching
				// behind letters makes them hard to read.
				w := max(name.Width(cell.Name), note.Width(cell.Note)) + h
				c.FillPolygon(fill, rectPath(vg.Rectangle{Min: vg.Point{X: mid.X - w/2, Y: mid.Y - 1.2*h}, Max: vg.Point{X: mid.X + w/2, Y: mid.Y + 1.2*h}})[:4])
			}
			if cell.Name != "" {
				c.FillText(name, vg.Point{X: mid.X, Y: mid.Y + h/2}, cell.Name)
			}
			if cell.Note != "" {
				c.FillText(note, vg.Point{X: mid.X, Y: mid.Y - h/2}, cell.Note)
			}
		}
	}
}

// drawSwatch fills r and, if hatched, strokes diagonal lines across it.
func drawSwatch(c draw.Canvas, r vg.Rectangle, fill color.Color, hatched bool) {
	c.FillPolygon(fill, rectPath(r)[:4])
	if !hatched {
		return
	}
	w, h := r.Max.X-r.Min.X, r.Max.Y-r.Min.Y
	step := vg.Points(6)
	// Lines x - y = k for k from -h to w, each cut to the rectangle.
	for k := -h + step/2; k < w; k += step {
		x0, y0 := max(k, 0), max(-k, 0)
		run := min(w-x0, h-y0)
		c.StrokeLine2(hatchLine, r.Min.X+x0, r.Min.Y+y0, r.Min.X+x0+run, r.Min.Y+y0+run)
	}
}

// rectPath is r's outline, closed.
func rectPath(r vg.Rectangle) []vg.Point {
	return []vg.Point{r.Min, {X: r.Max.X, Y: r.Min.Y}, r.Max, {X: r.Min.X, Y: r.Max.Y}, r.Min}
}

// swatch is a legend's thumbnail: a filled, maybe hatched, square.
type swatch struct {
	fill    color.Color
	hatched bool
}

// Thumbnail implements plot.Thumbnailer.
func (s swatch) Thumbnail(c *draw.Canvas) {
	drawSwatch(*c, c.Rectangle, s.fill, s.hatched)
	c.StrokeLines(draw.LineStyle{Color: color.Gray{Y: 0x80}, Width: vg.Points(0.5)}, rectPath(c.Rectangle))
}

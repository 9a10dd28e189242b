package main

import (
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
)

// tableWidth is the widest a table may print: the terminal's width when
// the environment says it (COLUMNS), 100 columns otherwise. Longer cells
// wrap at word boundaries; --json and the CSV files keep every value whole.
func tableWidth() int {
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n >= 40 {
		return n
	}
	return 100
}

// newTable returns a table that prints headers exactly as written (units
// such as Gb/sec must not be re-cased).
func newTable(w io.Writer) *tablewriter.Table {
	return tablewriter.NewTable(w, tablewriter.WithHeaderAutoFormat(tw.Off), tablewriter.WithHeaderAlignment(tw.AlignLeft))
}

// newWrappedTable is newTable that fits tableWidth, wrapping long cells and
// headers at spaces: for tables of prose (claims and their reasons) and of
// many columns (a run's record).
func newWrappedTable(w io.Writer) *tablewriter.Table {
	return tablewriter.NewTable(w, tablewriter.WithHeaderAutoFormat(tw.Off), tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithMaxWidth(tableWidth()), tablewriter.WithRowAutoWrap(tw.WrapNormal), tablewriter.WithHeaderAutoWrap(tw.WrapNormal))
}

// wrapText breaks text into lines of at most width columns at spaces,
// indenting every line after the first.
func wrapText(text string, width int, indent string) string {
	var b strings.Builder
	line := 0
	for i, word := range strings.Fields(text) {
		n := utf8.RuneCountInString(word)
		switch {
		case i == 0:
		case line+1+n > width:
			b.WriteString("\n" + indent)
			line = utf8.RuneCountInString(indent)
		default:
			b.WriteByte(' ')
			line++
		}
		b.WriteString(word)
		line += n
	}
	return b.String()
}

// fourDigits prints v with about four significant digits and no more than
// three decimals: 4096, 66265, 32.45, 0.507 (not 4096.000 or 66265.048).
func fourDigits(v float64) string {
	a := math.Abs(v)
	decimals := 3
	switch {
	case a >= 1000:
		decimals = 0
	case a >= 100:
		decimals = 1
	case a >= 10:
		decimals = 2
	}
	return strconv.FormatFloat(v, 'f', decimals, 64)
}

// renderFitting prints a table as it is when it fits tableWidth, and
// wrapped at spaces (newWrappedTable) when it does not.
func renderFitting(w io.Writer, header []string, rows [][]string) {
	renderOrNarrow(w, tableData{header, rows}, tableData{header, rows})
}

// tableData is a table's header and rows.
type tableData struct {
	header []string
	rows   [][]string
}

// render prints d with a table from newTable (or newWrappedTable when
// wrapped) and returns its widest line.
func (d tableData) render(w io.Writer, wrapped bool) int {
	var buf strings.Builder
	t := newTable(&buf)
	if wrapped {
		t = newWrappedTable(&buf)
	}
	t.Header(d.header)
	for _, r := range d.rows {
		t.Append(r)
	}
	t.Render()
	widest := 0
	for _, l := range strings.Split(buf.String(), "\n") {
		widest = max(widest, utf8.RuneCountInString(l))
	}
	io.WriteString(w, buf.String())
	return widest
}

// renderOrNarrow prints wide as it is when it fits tableWidth, else
// wrapped at spaces if that fits, and otherwise narrow (the same data in
// fewer or narrower columns: cells of several lines, shorter headers)
// wrapped.
func renderOrNarrow(w io.Writer, wide, narrow tableData) {
	for _, wrapped := range []bool{false, true} {
		var buf strings.Builder
		if wide.render(&buf, wrapped) <= tableWidth() {
			io.WriteString(w, buf.String())
			return
		}
	}
	narrow.render(w, true)
}

package chart

import (
	"encoding/csv"
	"fmt"
	"image/color"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	lines := []Series{
		{Name: "MESQ/SR", Points: []XY{{X: 2, Y: 5.1, Err: 0.2}, {X: 4, Y: 4.8}, {X: 8, Y: 4.1, Err: 0.3}}},
		{Name: "MEMQ/SR", Points: []XY{{X: 8, Y: 5.9}, {X: 2, Y: 6.0, Err: 0.1}, {X: 4, Y: 6.1}}},
	}
	bars := []Series{
		{Name: "MESQ/SR", Points: []XY{{Label: "repartition", Y: 5, Err: 0.5}, {Label: "broadcast", Y: 3}}},
		{Name: "MEMQ/SR", Points: []XY{{Label: "repartition", Y: 6}, {Label: "broadcast", Y: 4, Err: 0.2}}},
		{Name: "MEMQ/WR", Points: []XY{{Label: "broadcast", Y: 4.5}}},
	}
	for _, tc := range []struct {
		name string
		spec Spec
	}{
		{"lines", Spec{Title: "throughput", XLabel: "nodes", YLabel: "GiB/s", Kind: "lines", Series: lines}},
		{"logx", Spec{Title: "throughput", XLabel: "nodes", YLabel: "GiB/s", Kind: "lines", Series: lines, LogX: true,
			HLines: []RefLine{{Name: "qperf", Y: 11.2}}}},
		{"bars", Spec{Title: "patterns", YLabel: "GiB/s", Kind: "bars", Series: bars, HLines: []RefLine{{Name: "qperf", Y: 11.2}}}},
		{"logy bytes", Spec{Title: "memory", XLabel: "message size", YLabel: "registered memory per node [MiB]", Kind: "lines", LogX: true, LogY: true, XBytes: true,
			Series: []Series{{Name: "a", Points: []XY{{X: 4096, Y: 1}, {X: 65536, Y: 16}, {X: 1 << 20, Y: 256}}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := filepath.Join(dir, tc.name)
			if err := Write(base, tc.spec); err != nil {
				t.Fatal(err)
			}
			for _, ext := range []string{".png", ".svg"} {
				fi, err := os.Stat(base + ext)
				if err != nil || fi.Size() == 0 {
					t.Errorf("%s%s: %v", tc.name, ext, err)
				}
			}
		})
	}
	for _, tc := range []struct {
		spec Spec
		want string
	}{
		{Spec{Title: "empty", Kind: "lines"}, `plot "empty": no series to draw`},
		{Spec{Title: "t", Kind: "lines", Series: []Series{{Name: "a"}}}, `series "a" has no points`},
		{Spec{Title: "t", Kind: "pie", Series: lines}, `kind "pie": want lines or bars`},
		{Spec{Title: "t", Kind: "lines", LogX: true, Series: []Series{{Name: "a", Points: []XY{{X: 0, Y: 1}}}}}, "x = 0 on a log scale"},
		{Spec{Title: "t", Kind: "bars", LogX: true, Series: bars}, "LogX applies to lines"},
		{Spec{Title: "t", Kind: "lines", LogY: true, Series: []Series{{Name: "a", Points: []XY{{X: 1, Y: 0}}}}}, "y = 0 on a log scale"},
		{Spec{Title: "t", Kind: "bars", LogY: true, Series: bars}, "LogY applies to lines"},
	} {
		if err := Write(filepath.Join(dir, "bad"), tc.spec); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
}

func TestSeriesOfAndCSV(t *testing.T) {
	rec := func(p int, key string, v float64) results.Result {
		return results.Result{Point: p, Key: key, Record: &results.Record{Design: "X", ThroughputGiBs: v, Integrity: "ok"}}
	}
	rs := []results.Result{
		rec(0, "design=A nodes=2 seed=1", 1), rec(1, "design=A nodes=2 seed=2", 3),
		rec(2, "design=A nodes=4 seed=1", 2), rec(3, "design=B nodes=2 seed=1", 4),
		{Point: 4, Key: "design=B nodes=4 seed=1", Error: "boom, \"quoted\""},
	}
	ss, err := SeriesOf(rs, "design", "nodes", func(r results.Result) float64 { return r.ThroughputGiBs })
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 2 || ss[0].Name != "A" || len(ss[0].Points) != 2 || ss[0].Points[0].Y != 2 || ss[0].Points[0].Err <= 0 ||
		ss[0].Points[1].X != 4 || ss[0].Points[1].Err != 0 || ss[1].Name != "B" || len(ss[1].Points) != 1 {
		t.Fatalf("%+v", ss)
	}
	if _, err := SeriesOf(rs, "design", "threads", nil); err == nil || !strings.Contains(err.Error(), `no parameter "threads"`) {
		t.Errorf("got %v", err)
	}
	for i := range rs {
		rs[i].Sweep = []string{"one", "two"}[i/3]
	}
	path := filepath.Join(t.TempDir(), "r.csv")
	if err := results.WriteCSV(path, rs); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(path)
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	h := rows[0]
	if len(rows) != 6 || h[0] != "sweep" || h[1] != "point" || h[2] != "key" || h[3] != "experiment" || h[len(h)-1] != "error" || !strings.Contains(strings.Join(h, ","), ",throughput_gibps,") {
		t.Fatalf("header %v, %d rows", h, len(rows))
	}
	if rows[1][0] != "one" || rows[4][0] != "two" || rows[1][2] != "design=A nodes=2 seed=1" || rows[5][len(h)-1] != `boom, "quoted"` || rows[5][3] != "" {
		t.Errorf("rows %q", rows)
	}
}

// TestSeriesStyles: no two series of a figure share both colour and
// marker, a design keeps its style across figures, and every figure is
// written as PNG and SVG.
func TestSeriesStyles(t *testing.T) {
	order := experiments.DesignNames(nil)
	names := append(slices.Clone(order), "qperf ceiling", "fixed depth", "adaptive", "BDP")
	st := seriesStyles(names, order)
	seen := map[string]string{}
	for i, s := range st {
		k := fmt.Sprintf("%v/%T", s.color, s.shape)
		if other, dup := seen[k]; dup {
			t.Errorf("%s and %s share colour and marker", names[i], other)
		}
		seen[k] = names[i]
	}
	// Figure 19's eleven series, as bars, have eleven colours.
	fig19 := []string{"SESQ/SR", "MESQ/SR", "SEMQ/SR", "MEMQ/SR", "SEMQ/RD", "MEMQ/RD", "SEMQ/WR", "MEMQ/WR", "MEMQ/WR+cw", "MPI", "IPoIB"}
	colours := map[color.Color]string{}
	for i, s := range seriesStyles(fig19, order) {
		if other, dup := colours[s.color]; dup {
			t.Errorf("%s and %s share a colour in one figure", fig19[i], other)
		}
		colours[s.color] = fig19[i]
	}
	// MPI alone in a figure keeps MPI's style.
	if a, b := seriesStyles([]string{"MPI"}, order)[0], st[slices.Index(names, "MPI")]; a != b {
		t.Errorf("MPI's style depends on the figure: %v vs %v", a, b)
	}
	base := filepath.Join(t.TempDir(), "f")
	spec := Spec{Title: "t", XLabel: "x", YLabel: "y", Kind: "bars", Series: []Series{{Name: "MESQ/SR", Points: []XY{{Label: "a", Y: 1}}}, {Name: "MPI", Points: []XY{{Label: "a", Y: 2}}}}}
	if err := Write(base, spec); err != nil {
		t.Fatal(err)
	}
	for _, ext := range []string{".png", ".svg"} {
		if st, err := os.Stat(base + ext); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", ext, err)
		}
	}
	// Every font the SVG names has metric-compatible fallbacks, so that
	// a viewer without the Liberation fonts keeps the labels' widths.
	svg, err := os.ReadFile(base + ".svg")
	if err != nil {
		t.Fatal(err)
	}
	fams := regexp.MustCompile(`font-family:([^;"]*)`).FindAllSubmatch(svg, -1)
	if len(fams) == 0 {
		t.Fatal("the SVG names no font")
	}
	for _, m := range fams {
		if f := string(m[1]); !strings.Contains(f, "Times New Roman") && !strings.Contains(f, "Arial") && !strings.Contains(f, "Courier New") {
			t.Errorf("SVG font-family %q has no metric-compatible fallback", f)
		}
	}
}

func TestLogTicksThinned(t *testing.T) {
	tests := []struct {
		xs     []float64
		labels []string
	}{
		{[]float64{1, 2, 4, 8, 16}, []string{"1", "2", "4", "8", "16"}},
		{[]float64{8, 9.563, 16, 32, 10000}, []string{"8", "", "", "32", "10000"}},
		{[]float64{0.25, 0.5, 1}, []string{"0.25", "0.5", "1"}},
		{nil, nil},
	}
	for _, tt := range tests {
		var got []string
		for _, tk := range logTicks(tt.xs) {
			got = append(got, tk.Label)
		}
		if !slices.Equal(got, tt.labels) {
			t.Errorf("logTicks(%v) labels = %q, want %q", tt.xs, got, tt.labels)
		}
	}
}

func TestNiceTicks(t *testing.T) {
	tests := []struct {
		lo, hi float64
		labels []string
	}{
		{0, 3.4, []string{"0.0", "0.5", "1.0", "1.5", "2.0", "2.5", "3.0"}},
		{0, 26.5, []string{"0", "5", "10", "15", "20", "25"}},
		{0, 1.3, []string{"0.0", "0.2", "0.4", "0.6", "0.8", "1.0", "1.2"}},
		{0, 1.6, []string{"0.00", "0.25", "0.50", "0.75", "1.00", "1.25", "1.50"}},
		{0, 11.5, []string{"0", "2", "4", "6", "8", "10"}},
	}
	for _, tt := range tests {
		var got []string
		for _, tk := range (niceTicks{}).Ticks(tt.lo, tt.hi) {
			if tk.Label != "" {
				got = append(got, tk.Label)
			}
		}
		if !slices.Equal(got, tt.labels) {
			t.Errorf("niceTicks(%v, %v) labels = %q, want %q", tt.lo, tt.hi, got, tt.labels)
		}
	}
}

func TestGeometricChoosesLogX(t *testing.T) {
	tests := []struct {
		xs   []float64
		want bool
	}{
		{[]float64{1, 2, 4, 8, 16}, true},
		{[]float64{1.7, 3.4, 6.9, 13.7, 27.5, 55, 110}, true},
		{[]float64{2, 4, 8}, false},    // spans only 4x
		{[]float64{1, 3, 9, 27}, true}, // tripling
		{[]float64{1, 2, 3, 4, 16}, false},
		{[]float64{0, 1, 2, 4, 8}, false},
	}
	for _, tt := range tests {
		var s Series
		for _, x := range tt.xs {
			s.Points = append(s.Points, XY{X: x, Y: 1})
		}
		if got := geometric([]Series{s}); got != tt.want {
			t.Errorf("geometric(%v) = %v, want %v", tt.xs, got, tt.want)
		}
	}
}

// TestAxisTicks: sizes are labelled in IEC units, decades of a log axis
// are labelled (at log10 of the value, which the axis holds) with the
// values between unlabelled, and a few whole x values get a tick each.
func TestAxisTicks(t *testing.T) {
	for x, want := range map[float64]string{4096: "4 KiB", 1 << 20: "1 MiB", 512: "512 B", 1536: "1.5 KiB", 3 << 30: "3 GiB"} {
		if got := sizeLabel(x); got != want {
			t.Errorf("sizeLabel(%v) = %q, want %q", x, got, want)
		}
	}
	var labels []string
	for _, tk := range decadeTicks(0.9, 300) {
		if tk.Label != "" {
			labels = append(labels, fmt.Sprintf("%s@%.0f", tk.Label, tk.Value))
		}
	}
	if got := strings.Join(labels, " "); got != "1@0 10@1 100@2" {
		t.Errorf("decade labels %q", got)
	}
	if n := len(decadeTicks(0.9, 300)); n != 1+9+9+3 {
		t.Errorf("%d decade ticks, want 22 (0.9, 1-9, 10-90, 100-300)", n)
	}
	labels = nil
	for _, tk := range decadeTicks(2, 64) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if got := strings.Join(labels, " "); got != "2 5 10 20 50" {
		t.Errorf("labels over less than two decades %q, want 2 5 10 20 50", got)
	}
	plt, _, err := buildPlot(Spec{Title: "t", Kind: "lines", Series: []Series{{Name: "a", Points: []XY{{X: 1, Y: 1}, {X: 2, Y: 2}, {X: 4, Y: 3}}}}})
	if err != nil {
		t.Fatal(err)
	}
	var xs []string
	for _, tk := range plt.X.Tick.Marker.Ticks(plt.X.Min, plt.X.Max) {
		xs = append(xs, tk.Label)
	}
	if got := strings.Join(xs, ","); got != "1,2,4" {
		t.Errorf("x ticks %q, want 1,2,4", got)
	}
}

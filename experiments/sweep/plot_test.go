package sweep

import (
	"encoding/csv"
	"github.com/rdmashuffle/rdmashuffle/experiments"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWritePlot(t *testing.T) {
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
		spec PlotSpec
	}{
		{"lines", PlotSpec{Title: "throughput", XLabel: "nodes", YLabel: "GiB/s", Kind: "lines", Series: lines}},
		{"logx", PlotSpec{Title: "throughput", XLabel: "nodes", YLabel: "GiB/s", Kind: "lines", Series: lines, LogX: true,
			HLines: []RefLine{{Name: "qperf", Y: 11.2}}}},
		{"bars", PlotSpec{Title: "patterns", YLabel: "GiB/s", Kind: "bars", Series: bars, HLines: []RefLine{{Name: "qperf", Y: 11.2}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := filepath.Join(dir, tc.name)
			if err := WritePlot(base, tc.spec); err != nil {
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
		spec PlotSpec
		want string
	}{
		{PlotSpec{Title: "empty", Kind: "lines"}, `plot "empty": no series to draw`},
		{PlotSpec{Title: "t", Kind: "lines", Series: []Series{{Name: "a"}}}, `series "a" has no points`},
		{PlotSpec{Title: "t", Kind: "pie", Series: lines}, `kind "pie": want lines or bars`},
		{PlotSpec{Title: "t", Kind: "lines", LogX: true, Series: []Series{{Name: "a", Points: []XY{{X: 0, Y: 1}}}}}, "x = 0 on a log scale"},
		{PlotSpec{Title: "t", Kind: "bars", LogX: true, Series: bars}, "LogX applies to lines"},
	} {
		if err := WritePlot(filepath.Join(dir, "bad"), tc.spec); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
}

func TestSeriesOfAndCSV(t *testing.T) {
	rec := func(p int, key string, v float64) Result {
		return Result{Point: p, Key: key, Record: &experiments.Record{Design: "X", ThroughputGiBs: v, Integrity: "ok"}}
	}
	rs := []Result{
		rec(0, "design=A nodes=2 seed=1", 1), rec(1, "design=A nodes=2 seed=2", 3),
		rec(2, "design=A nodes=4 seed=1", 2), rec(3, "design=B nodes=2 seed=1", 4),
		{Point: 4, Key: "design=B nodes=4 seed=1", Error: "boom, \"quoted\""},
	}
	ss, err := SeriesOf(rs, "design", "nodes", func(r Result) float64 { return r.ThroughputGiBs })
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
	path := filepath.Join(t.TempDir(), "r.csv")
	if err := WriteCSV(path, rs); err != nil {
		t.Fatal(err)
	}
	f, _ := os.Open(path)
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	h := rows[0]
	if len(rows) != 6 || h[0] != "point" || h[1] != "key" || h[2] != "experiment" || h[len(h)-1] != "error" || !strings.Contains(strings.Join(h, ","), ",throughput_gibps,") {
		t.Fatalf("header %v, %d rows", h, len(rows))
	}
	if rows[1][1] != "design=A nodes=2 seed=1" || rows[5][len(h)-1] != `boom, "quoted"` || rows[5][2] != "" {
		t.Errorf("rows %q", rows)
	}
}

package chart

import (
	"errors"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteMap draws a two-by-two map: the SVG names each winner, the
// hatching's meaning, the empty cell's note and the title, and the PNG
// decodes at print size; malformed maps are refused.
func TestWriteMap(t *testing.T) {
	base := filepath.Join(t.TempDir(), "map")
	m := MapSpec{Title: "who wins", XLabel: "nodes", YLabel: "bytes", XTicks: []string{"2", "4"}, YTicks: []string{"1 MiB", "1 GiB"},
		Cells: [][]MapCell{
			{{Name: "A", Note: "1 ms"}, {Name: "B", Note: "2 ms", Hatched: true}},
			{{Name: "A"}, {Note: "no advice"}},
		}, HatchNote: "not clear", StyleOrder: []string{"B", "A"}}
	if err := WriteMap(base, m); err != nil {
		t.Fatal(err)
	}
	svg, err := os.ReadFile(base + ".svg")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{">A<", ">B<", ">not clear<", ">no advice<", ">who wins<"} {
		if !strings.Contains(string(svg), want) {
			t.Errorf("the SVG lacks %s", want)
		}
	}
	f, err := os.Open(base + ".png")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() < 1000 || b.Dy() < 500 {
		t.Errorf("PNG of %v: too small for 300 dpi", b)
	}
	for _, tc := range []struct {
		spec MapSpec
		want string
	}{
		{MapSpec{Title: "t", XTicks: []string{"2"}, YTicks: []string{"a", "b"}, Cells: [][]MapCell{{{}}}}, "1 rows of cells for 2 y values"},
		{MapSpec{Title: "t", XTicks: []string{"2", "4"}, YTicks: []string{"a"}, Cells: [][]MapCell{{{}}}}, "row 0 has 1 cells for 2 x values"},
		{MapSpec{Title: "t"}, "0 x values"},
	} {
		if err := WriteMap(filepath.Join(t.TempDir(), "bad"), tc.spec); !errors.Is(err, ErrMap) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
}

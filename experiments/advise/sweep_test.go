package advise

import (
	"errors"
	"reflect"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/experiments"
)

// TestCrossoversInWords: the crossovers name each run of points with one
// winner along each axis, say where a winner is not clear, and shorten a
// plane with one winner to a sentence.
func TestCrossoversInWords(t *testing.T) {
	nodes := Axis{Param: ParamNodes, Values: []int64{2, 4, 8}}
	bytes := Axis{Param: ParamBytesPerNode, Values: []int64{1 << 20, 1 << 30}}
	cell := func(w string, clear bool) Cell { return Cell{Winner: w, Clear: clear} }
	for _, tc := range []struct {
		name  string
		axes  []Axis
		cells []Cell
		want  []string
	}{
		{"one winner", []Axis{nodes, bytes}, []Cell{cell("A", true), cell("A", true), cell("A", false), cell("A", true), cell("A", true), cell("A", true)},
			[]string{"A wins at every point (at 1 of the 6 not clear of the runner-up)."}},
		{"a line", []Axis{nodes}, []Cell{cell("A", true), cell("B", false), cell("B", false)},
			[]string{"Along nodes: A at 2, B at 4-8 (not clear of the runner-up)."}},
		{"a plane", []Axis{nodes, bytes}, []Cell{cell("A", true), cell("A", true), cell("B", true), cell("A", true), cell("B", true), {Error: "refused"}},
			[]string{
				"At bytes-per-node 1.0 MiB, along nodes: A at 2-4, B at 8.",
				"At bytes-per-node 1.0 GiB, along nodes: A at 2, B at 4, no advice at 8.",
				"At nodes 2, along bytes-per-node: A throughout.",
				"At nodes 4, along bytes-per-node: A at 1.0 MiB, B at 1.0 GiB.",
				"At nodes 8, along bytes-per-node: B at 1.0 MiB, no advice at 1.0 GiB.",
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := crossovers(&Map{Axes: tc.axes, Cells: tc.cells})
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

// TestSweepSharesRuns maps two inputs of one cluster: the larger input's
// screening is the smaller's growth, so the second point reuses runs of
// the first; every point has a winner, and the figure has a cell per
// point.
func TestSweepSharesRuns(t *testing.T) {
	base := experiments.DefaultConfig()
	base.Nodes, base.Threads = 2, 1
	q := Question{Base: base, Designs: []string{"MESQ/SR", "SEMQ/SR"}, ScreenBytes: 1 << 20, Band: BandNone, MaxGrowth: 4}
	axes := []Axis{{Param: ParamBytesPerNode, Values: []int64{4 << 20, 64 << 20}}}
	m, err := Sweep(q, axes, Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m.Reused == 0 || len(m.Cells) != 2 || m.Cells[0].Winner == "" || m.Cells[1].Winner == "" {
		t.Errorf("map: %d runs, %d reused, cells %+v", m.Runs, m.Reused, m.Cells)
	}
	if f := m.Figure("t"); len(f.Cells) != 1 || len(f.Cells[0]) != 2 || f.Cells[0][0].Name != m.Cells[0].Winner {
		t.Errorf("figure %+v", f)
	}
	if _, err := Sweep(q, nil, Options{}, nil); !errors.Is(err, ErrAxis) {
		t.Errorf("no axis: %v", err)
	}
}

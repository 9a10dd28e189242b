package advise

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/dustin/go-humanize"

	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/experiments/chart"
)

// Param is a parameter of the question a map sweeps.
type Param string

const (
	ParamNodes        Param = "nodes"
	ParamThreads      Param = "threads"
	ParamBytesPerNode Param = "bytes-per-node"
	ParamCycles       Param = "cycles-per-tuple"
	ParamMemoryBudget Param = "memory-budget"
)

// Params lists the parameters a map can sweep.
var Params = []Param{ParamNodes, ParamThreads, ParamBytesPerNode, ParamCycles, ParamMemoryBudget}

// bytesValued reports whether p's values are sizes in bytes.
func (p Param) bytesValued() bool { return p == ParamBytesPerNode || p == ParamMemoryBudget }

// set gives q the value v of p.
func (p Param) set(q *Question, v int64) {
	switch p {
	case ParamNodes:
		q.Base.Nodes = int(v)
	case ParamThreads:
		q.Base.Threads = int(v)
	case ParamBytesPerNode:
		q.Base.BytesPerNode = v
	case ParamCycles:
		q.Base.CyclesPerTuple, q.Base.NodeCycles = v, nil
	case ParamMemoryBudget:
		q.MemoryBudget = v
	}
}

// Format prints v as the parameter's flag takes it.
func (p Param) Format(v int64) string {
	if p.bytesValued() {
		return humanize.IBytes(uint64(v))
	}
	return strconv.FormatInt(v, 10)
}

// Axis is one swept parameter and its values, in the order given.
type Axis struct {
	Param  Param   `json:"param"`
	Values []int64 `json:"values"`
}

// ErrAxis reports a sweep that cannot be made.
var ErrAxis = errors.New("advise: sweep")

// ParseAxis reads "param=v1,v2,...", such as nodes=16,64,256 or
// bytes-per-node=64MiB,1GiB.
func ParseAxis(s string) (Axis, error) {
	name, list, ok := strings.Cut(s, "=")
	p := Param(strings.TrimSpace(name))
	if !ok || !slices.Contains(Params, p) {
		return Axis{}, fmt.Errorf("%w %q: want PARAM=V1,V2,... with PARAM one of %s", ErrAxis, s, joinParams())
	}
	a := Axis{Param: p}
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		var v int64
		var err error
		if p.bytesValued() {
			var u uint64
			u, err = humanize.ParseBytes(f)
			if err == nil && u > 1<<50 {
				err = errors.New("too large")
			}
			v = int64(u)
		} else {
			v, err = strconv.ParseInt(f, 10, 64)
		}
		if err != nil || v < 1 {
			kind := "a whole number of at least 1"
			if p.bytesValued() {
				kind = "a size such as 64MiB or 1GiB"
			}
			return Axis{}, fmt.Errorf("%w %s: value %q: want %s", ErrAxis, p, f, kind)
		}
		if slices.Contains(a.Values, v) {
			return Axis{}, fmt.Errorf("%w %s: %s is given twice", ErrAxis, p, f)
		}
		a.Values = append(a.Values, v)
	}
	return a, nil
}

func joinParams() string {
	s := make([]string, len(Params))
	for i, p := range Params {
		s[i] = string(p)
	}
	return strings.Join(s, ", ")
}

// Cell is the advice at one point of the swept plane.
type Cell struct {
	Values   []int64 `json:"values"` // one per axis
	Winner   string  `json:"winner,omitempty"`
	TimeS    float64 `json:"time_s,omitempty"`
	RunnerUp string  `json:"runner_up,omitempty"`
	// RunnerUpS is the runner-up's expected time.
	RunnerUpS float64 `json:"runner_up_s,omitempty"`
	// Clear: no design is tied with the winner and the runner-up's band
	// does not reach the winner's.
	Clear bool     `json:"clear"`
	Tied  []string `json:"tied,omitempty"`
	// Error: why this point has no advice (every design refused, say).
	Error string `json:"error,omitempty"`
}

// Map is which design wins where: the advice at every point of the
// plane (or line) the axes span, and the crossovers in words.
type Map struct {
	Question string `json:"question"`
	Axes     []Axis `json:"axes"`
	// Cells in row-major order: the last axis's value changes slowest
	// (Cells[j*len(x)+i] is x value i, y value j).
	Cells      []Cell   `json:"cells"`
	Crossovers []string `json:"crossovers"`
	Runs       int      `json:"runs"`
	Reused     int      `json:"reused_runs"`
	ModelID    string   `json:"model_id"`
}

// Cell returns the cell at x value i and y value j.
func (m *Map) Cell(i, j int) Cell { return m.Cells[j*len(m.Axes[0].Values)+i] }

// Sweep answers q at every point of the axes (one or two), sharing runs
// between the points through a memory store in front of o.Store. cell,
// if set, is told as each point starts (its index, the count, the values).
func Sweep(q Question, axes []Axis, o Options, cell func(i, n int, values []int64)) (*Map, error) {
	switch {
	case len(axes) == 0 || len(axes) > 2:
		return nil, fmt.Errorf("%w: %d parameters swept: a map has one or two (nodes and bytes per node, say)", ErrAxis, len(axes))
	case len(axes) == 2 && axes[0].Param == axes[1].Param:
		return nil, fmt.Errorf("%w: %s swept twice: sweep two different parameters", ErrAxis, axes[0].Param)
	}
	for _, a := range axes {
		if len(a.Values) == 0 {
			return nil, fmt.Errorf("%w %s: no values", ErrAxis, a.Param)
		}
	}
	shared := layered{&MemoryStore{}}
	if o.Store != nil {
		shared = append(shared, o.Store)
	}
	o.Store = shared
	ys := []int64{0}
	if len(axes) == 2 {
		ys = axes[1].Values
	}
	var swept []Param
	for _, a := range axes {
		swept = append(swept, a.Param)
	}
	m := &Map{Question: q.describe(swept), Axes: axes, ModelID: modelID()}
	n := len(axes[0].Values) * len(ys)
	ok := 0
	var last error
	for j, y := range ys {
		for i, x := range axes[0].Values {
			c := q
			axes[0].Param.set(&c, x)
			values := []int64{x}
			if len(axes) == 2 {
				axes[1].Param.set(&c, y)
				values = append(values, y)
			}
			if cell != nil {
				cell(j*len(axes[0].Values)+i, n, values)
			}
			a, err := Advise(c, o)
			m.Cells = append(m.Cells, cellOf(values, a, err))
			if err != nil {
				last = err
				continue
			}
			ok++
			m.Runs += a.Runs
			m.Reused += a.Reused
		}
	}
	if ok == 0 {
		return nil, fmt.Errorf("no point of the sweep could be advised on: %w", last)
	}
	m.Crossovers = crossovers(m)
	return m, nil
}

// cellOf reads an answer into a map's cell.
func cellOf(values []int64, a *Answer, err error) Cell {
	c := Cell{Values: values}
	switch {
	case err != nil:
		c.Error = err.Error()
		return c
	case a.Winner == "":
		c.Error = "no design ran"
		if len(a.Designs) > 0 {
			c.Error += ": " + a.Designs[0].Name + " " + string(a.Designs[0].Status) + ": " + a.Designs[0].Reason
		}
		return c
	}
	w := a.Designs[0]
	c.Winner, c.TimeS, c.Tied, c.Clear = w.Name, w.TimeS, a.Tied, len(a.Tied) == 0
	if len(a.Designs) > 1 && a.Designs[1].Status == Ranked {
		r := a.Designs[1]
		c.RunnerUp, c.RunnerUpS = r.Name, r.TimeS
		if r.Overlaps {
			c.Clear = false
		}
	}
	return c
}

// crossovers says where the winner changes: along the first axis at
// each value of the second, and along the second at each value of the
// first.
func crossovers(m *Map) []string {
	x := m.Axes[0]
	if w, unclear, same := oneWinner(m); same {
		s := w + " wins at every point"
		if unclear > 0 {
			s += fmt.Sprintf(" (at %d of the %d not clear of the runner-up)", unclear, len(m.Cells))
		}
		return []string{s + "."}
	}
	if len(m.Axes) == 1 {
		return []string{"Along " + string(x.Param) + ": " + segments(x, func(i int) Cell { return m.Cell(i, 0) }) + "."}
	}
	y := m.Axes[1]
	var out []string
	for j, v := range y.Values {
		out = append(out, fmt.Sprintf("At %s %s, along %s: %s.", y.Param, y.Param.Format(v), x.Param,
			segments(x, func(i int) Cell { return m.Cell(i, j) })))
	}
	for i, v := range x.Values {
		out = append(out, fmt.Sprintf("At %s %s, along %s: %s.", x.Param, x.Param.Format(v), y.Param,
			segments(y, func(j int) Cell { return m.Cell(i, j) })))
	}
	return out
}

// oneWinner reports whether one design wins every point of m, and at how
// many it is not clear of the runner-up.
func oneWinner(m *Map) (string, int, bool) {
	w, unclear := m.Cells[0].Winner, 0
	for _, c := range m.Cells {
		if c.Winner != w || w == "" {
			return "", 0, false
		}
		if !c.Clear {
			unclear++
		}
	}
	return w, unclear, true
}

// segments describes the winners along a: each run of cells with the
// same winner as "W at v1-v2", a point without advice as "no advice",
// and "not clear" after a run whose cells are all tied or overlapping.
func segments(a Axis, at func(int) Cell) string {
	name := func(c Cell) string {
		if c.Winner == "" {
			return "no advice"
		}
		return c.Winner
	}
	var parts []string
	for i := 0; i < len(a.Values); {
		k := i
		allUnclear := true
		for ; k < len(a.Values) && name(at(k)) == name(at(i)); k++ {
			allUnclear = allUnclear && !at(k).Clear
		}
		where := a.Param.Format(a.Values[i])
		if k-1 > i {
			where += "-" + a.Param.Format(a.Values[k-1])
		}
		part := name(at(i)) + " at " + where
		if allUnclear && at(i).Winner != "" {
			part += " (not clear of the runner-up)"
		}
		parts = append(parts, part)
		i = k
	}
	if len(parts) == 1 {
		w := name(at(0))
		if at(0).Winner != "" {
			w += " throughout"
		}
		if strings.HasSuffix(parts[0], ")") {
			w += " (not clear of the runner-up)"
		}
		return w
	}
	return strings.Join(parts, ", ")
}

// Figure is m drawn as a map: a cell per point coloured by its winner,
// with the winner's time and the runner-up's margin, hatched where the
// winner is not clear of the runner-up's band. A map of one axis is one
// row.
func (m *Map) Figure(title string) chart.MapSpec {
	x := m.Axes[0]
	s := chart.MapSpec{Title: title, XLabel: string(x.Param), HatchNote: "not clear of the runner-up's band",
		StyleOrder: experiments.DesignNames(nil)}
	for _, v := range x.Values {
		s.XTicks = append(s.XTicks, x.Param.Format(v))
	}
	rows := 1
	if len(m.Axes) == 2 {
		y := m.Axes[1]
		s.YLabel, rows = string(y.Param), len(y.Values)
		for _, v := range y.Values {
			s.YTicks = append(s.YTicks, y.Param.Format(v))
		}
	} else {
		s.YTicks = []string{""}
	}
	for j := range rows {
		var row []chart.MapCell
		for i := range x.Values {
			c := m.Cell(i, j)
			mc := chart.MapCell{Name: c.Winner, Hatched: c.Winner != "" && !c.Clear}
			switch {
			case c.Winner == "":
				mc.Note = "no advice"
			case c.RunnerUp != "":
				mc.Note = fmt.Sprintf("%s, next +%.0f%%", msText(c.TimeS), 100*(c.RunnerUpS/c.TimeS-1))
			default:
				mc.Note = msText(c.TimeS)
			}
			row = append(row, mc)
		}
		s.Cells = append(s.Cells, row)
	}
	return s
}

// msText prints seconds as milliseconds, to about three significant
// digits (whole milliseconds from 100 ms).
func msText(s float64) string {
	ms := s * 1e3
	prec := 2
	switch {
	case ms >= 100:
		prec = 0
	case ms >= 10:
		prec = 1
	}
	return strconv.FormatFloat(ms, 'f', prec, 64) + " ms"
}

// Table is m's winners as a table: a row per value of the second axis
// (one row for a map of one axis), a column per value of the first, "~"
// marking a winner not clear of the runner-up.
func (m *Map) Table() (head []string, rows [][]string) {
	x := m.Axes[0]
	head = []string{string(x.Param)}
	n := 1
	if len(m.Axes) == 2 {
		head[0] = string(m.Axes[1].Param) + " \\ " + string(x.Param)
		n = len(m.Axes[1].Values)
	}
	for _, v := range x.Values {
		head = append(head, x.Param.Format(v))
	}
	for j := range n {
		row := []string{"winner"}
		if len(m.Axes) == 2 {
			row[0] = m.Axes[1].Param.Format(m.Axes[1].Values[j])
		}
		for i := range x.Values {
			c := m.Cell(i, j)
			switch {
			case c.Winner == "":
				row = append(row, "no advice")
			case !c.Clear:
				row = append(row, c.Winner+" ~")
			default:
				row = append(row, c.Winner)
			}
		}
		rows = append(rows, row)
	}
	return head, rows
}

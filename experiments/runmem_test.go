package experiments

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// runMeasure is one line of testdata/runmem.txt: a design run's size and
// its peak resident size.
type runMeasure struct {
	design  string
	n, t, b int64
	bytes   int64 // --bytes-per-node
	payload bool
	kib     int64
}

// reach is what the measured run's input reaches on each connection, as
// MemoryEstimate counts it.
func (m runMeasure) reach() (pages, steady float64) {
	cfg := RunConfig{Design: m.design, BytesPerNode: m.bytes, Payload: m.payload}
	return runReach(cfg, m.n, m.t, m.b, int64(DesignOf(m.design).MsgBytes))
}

func readRunMem(t *testing.T) []runMeasure {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "runmem.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []runMeasure
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		var m runMeasure
		var mode string
		if _, err := fmt.Sscan(s, &m.design, &m.n, &m.t, &m.b, &m.bytes, &mode, &m.kib); err != nil {
			t.Fatalf("runmem.txt line %d: %q: %v", line, s, err)
		}
		switch mode {
		case "size":
		case "payload":
			m.payload = true
		default:
			t.Fatalf("runmem.txt line %d: mode %q (size or payload)", line, mode)
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRunMemoryNearMeasured: explore run's estimate is within 25% of
// every size-only peak measured in testdata/runmem.txt (64 to 1024
// nodes) of one short message per connection, and below none of them by
// more than 5% (a run's peak moves by a few percent with the collector's
// timing). Where the input reaches further buffers (inputReach), the fit
// is looser, -20% to +30%: HyPer's multiplexer buffers, kept per pair of
// nodes, fill at other inputs than the per-connection terms assume
// (-17% and +26% on its two runs of that kind). In payload mode it may
// err higher, by up to 40%: it counts every receive buffer that the data
// could reach as written, and a UD design's rotation leaves some of them
// untouched (MESQ/SR at 64 nodes, +35%).
func TestRunMemoryNearMeasured(t *testing.T) {
	ms := readRunMem(t)
	if len(ms) == 0 {
		t.Fatal("no measurements")
	}
	for _, m := range ms {
		cfg := RunConfig{Design: m.design, Nodes: int(m.n), Threads: int(m.t), Buffers: int(m.b), BytesPerNode: m.bytes, Payload: m.payload}
		est, measured := MemoryEstimate(cfg), m.kib<<10
		low, high := 0.95, 1.25
		if m.payload {
			high = 1.40
		}
		if pages, steady := m.reach(); pages+steady > 0 {
			low, high = 0.80, 1.30 // what the input reaches: fewer runs, and a layout per design the weights approximate
		}
		r := float64(est) / float64(measured)
		t.Logf("%-13s %5d nodes x %2d threads, %d buffers, %9d bytes/node, payload %-5v: estimate %6d MiB, measured %6d MiB (%+.0f%%)",
			m.design, m.n, m.t, m.b, m.bytes, m.payload, est>>20, measured>>20, 100*(r-1))
		if r < low || r > high {
			t.Errorf("%s, %d nodes x %d threads, %d buffers, %d bytes per node, payload %v: estimate %d MiB, measured %d MiB (%+.0f%%)",
				m.design, m.n, m.t, m.b, m.bytes, m.payload, est>>20, measured>>20, 100*(r-1))
		}
	}
}

// TestRunMemoryFits: the weights in runMemoryFits are the fit that
// runMemoryFits' comment describes, made again from testdata/runmem.txt;
// after new measurements the failure prints the table to paste.
func TestRunMemoryFits(t *testing.T) {
	byDesign := map[string][]runMeasure{}
	for _, m := range readRunMem(t) {
		if !m.payload && m.n <= runMemoryFitNodes {
			byDesign[m.design] = append(byDesign[m.design], m)
		}
	}
	var names []string
	for d := range byDesign {
		names = append(names, d)
	}
	slices.Sort(names)
	var b strings.Builder
	same := len(names) == len(runMemoryFits)
	for _, d := range names {
		w, ok := fitRunMemory(byDesign[d])
		if !ok {
			t.Errorf("%s: %d measurements of up to %d nodes do not determine its weights", d, len(byDesign[d]), runMemoryFitNodes)
			continue
		}
		fmt.Fprintf(&b, "\t%q: {%d, %d, %d, %d, %d, %d, %d},\n", d, w[0], w[1], w[2], w[3], w[4], w[5], w[6])
		got, ok := runMemoryFits[d]
		if !ok || [7]int64{got.perPeer, got.perThread, got.perBuffer, got.perTwo, got.perPage, got.perSteady, got.perTwoPage} != w {
			same = false
		}
	}
	if !same {
		t.Errorf("runMemoryFits is not the fit of testdata/runmem.txt; the fit is\n%s", b.String())
	}
}

// fitRunMemory fits the weights per peer, per thread, per buffer, per
// pair of threads, and for what the input reaches (inputReach: extra
// pages per connection, the connection filled, extra pages per pair of
// threads) to measurements of one design: least squares on the relative
// error, the fixed part at runMemoryBase, and a weight that comes out negative left
// out (0) and the rest fitted again. It needs three thread counts and two
// buffer counts among them; without a measurement that reaches them the
// input's weights are 0.
func fitRunMemory(ms []runMeasure) ([7]int64, bool) {
	ts, bs := map[int64]bool{}, map[int64]bool{}
	for _, m := range ms {
		ts[m.t], bs[m.b] = true, true
	}
	if len(ts) < 3 || len(bs) < 2 {
		return [7]int64{}, false
	}
	cols := func(m runMeasure) [7]float64 {
		nn := float64(m.n * m.n)
		pages, steady := m.reach()
		return [7]float64{nn, nn * float64(m.t), nn * float64(m.t*m.b), nn * float64(m.t*m.t), nn * float64(m.t) * pages, nn * float64(m.t) * steady, nn * float64(m.t*m.t) * pages}
	}
	active := []int{0, 1, 2, 3}
	for k := 4; k < 7; k++ { // the input's weights, where a measurement reaches them
		for _, m := range ms {
			if cols(m)[k] > 0 {
				active = append(active, k)
				break
			}
		}
	}
	for len(active) > 0 {
		if len(ms) < len(active) {
			return [7]int64{}, false
		}
		// Rows scaled by 1/measured: least squares on the relative error.
		a := mat.NewDense(len(ms), len(active), nil)
		y := mat.NewVecDense(len(ms), nil)
		for r, m := range ms {
			peak := float64(m.kib << 10)
			c := cols(m)
			for j, cj := range active {
				a.Set(r, j, c[cj]/peak)
			}
			y.SetVec(r, (peak-runMemoryBase)/peak)
		}
		var sol mat.VecDense
		if err := sol.SolveVec(a, y); err != nil {
			return [7]int64{}, false
		}
		x := sol.RawVector().Data
		worst := -1
		for i := range x {
			if x[i] < 0 && (worst < 0 || x[i] < x[worst]) {
				worst = i
			}
		}
		if worst < 0 {
			var w [7]int64
			for i, ci := range active {
				w[ci] = int64(math.Round(x[i]))
			}
			return w, true
		}
		active = slices.Delete(active, worst, worst+1)
	}
	return [7]int64{}, true
}

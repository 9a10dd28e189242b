package tpch

import (
	"fmt"
	"math"
	"testing"
)

func TestDates(t *testing.T) {
	for _, c := range []struct {
		y, m, d, day int
		s            string
	}{{1992, 1, 1, 0, "1992-01-01"}, {1995, 6, 17, CurrentDate, "1995-06-17"}, {1998, 12, 31, EndDate, "1998-12-31"}, {1998, 8, 2, EndDate - 151, "1998-08-02"}} {
		if got := Day(c.y, c.m, c.d); got != c.day || DateString(c.day) != c.s {
			t.Errorf("%s: day %d (want %d), back %s", c.s, got, c.day, DateString(c.day))
		}
	}
}

func TestOrderKeys(t *testing.T) {
	for i := int64(0); i < 100; i++ {
		k := OrderKey(i)
		if j, ok := OrderIndex(k); !ok || j != i {
			t.Fatalf("order %d: key %d back to %d %v", i, k, j, ok)
		}
	}
	// The reference generator's keys: 1-7, 32-39, 64-71, ...
	var first []int64
	for i := int64(0); i < 16; i++ {
		first = append(first, OrderKey(i))
	}
	if fmt.Sprint(first) != "[1 2 3 4 5 6 7 32 33 34 35 36 37 38 39 64]" {
		t.Fatalf("first order keys %v, want the reference generator's 1-7, 32-39, 64", first)
	}
	for _, k := range []int64{0, 8, 9, 31, 40, 63} {
		if _, ok := OrderIndex(k); ok {
			t.Errorf("key %d is not an order key (only 8 of every 32)", k)
		}
	}
	if Nations[16] != "MOZAMBIQUE" || Nations[24] != "UNITED STATES" {
		t.Errorf("NATION keys 16 and 24 are %s and %s, want MOZAMBIQUE and UNITED STATES (clause 4.2.3)", Nations[16], Nations[24])
	}
}

// TestFragmentsPartition: the nodes' fragments hold every row once.
func TestFragmentsPartition(t *testing.T) {
	g := Gen{Seed: 5, SF: 0.003}
	for _, nodes := range []int{1, 3, 4} {
		cust, ord := map[int64]int{}, map[int64]int{}
		lines := map[[2]int64]bool{}
		var nl int
		for k := range nodes {
			fr := Fragment{G: g, Node: k, Nodes: nodes}
			fr.Customers(func(c Customer) { cust[c.Key]++ })
			fr.Orders(func(_ int64, o Order) { ord[o.Key]++ })
			fr.Lines(func(l Line) { nl++; lines[[2]int64{l.Order, int64(l.Ship)<<32 | l.Price}] = true })
		}
		if len(cust) != int(g.Customers()) || len(ord) != int(g.Orders()) {
			t.Fatalf("%d nodes: %d customers, %d orders; want %d, %d", nodes, len(cust), len(ord), g.Customers(), g.Orders())
		}
		for _, m := range []map[int64]int{cust, ord} {
			for k, v := range m {
				if v != 1 {
					t.Fatalf("%d nodes: row %d on %d nodes", nodes, k, v)
				}
			}
		}
		var want int
		for i := range g.Orders() {
			want += g.LineCount(i)
		}
		if nl != want || len(lines) < want*99/100 {
			t.Fatalf("%d nodes: %d lineitems (%d distinct), want %d", nodes, nl, len(lines), want)
		}
	}
}

// TestDistributions checks the generator against the spec's
// distributions: means and the selectivities the plans estimate.
func TestDistributions(t *testing.T) {
	g := Gen{Seed: 1, SF: 0.05}
	near := func(what string, got, want, tol float64) {
		if math.Abs(got/want-1) > tol {
			t.Errorf("%s: %.4g, want about %.4g", what, got, want)
		}
	}
	var lines, commitBefore, returned, shipAfter, q3orders, qtr float64
	var custDiv3 int
	for i := range g.Orders() {
		o := g.Order(i)
		if o.Cust%3 == 0 || o.Cust < 1 || o.Cust > g.Customers() {
			custDiv3++
		}
		if o.Date < q3Date {
			q3orders++
		}
		if o.Date >= q4From && o.Date < q4To {
			qtr++
		}
		for ln := range g.LineCount(i) {
			l := g.Line(i, ln, o)
			lines++
			if l.Commit < l.Receipt {
				commitBefore++
			}
			if l.ReturnFlag == 'R' {
				returned++
			}
			if l.Ship > q3Date {
				shipAfter++
			}
			if l.Discount < 0 || l.Discount > 10 || l.Ship <= o.Date || l.Receipt <= l.Ship {
				t.Fatalf("bad lineitem %+v of %+v", l, o)
			}
		}
	}
	if custDiv3 > 0 {
		t.Errorf("%d orders with a custkey divisible by 3 or out of range", custDiv3)
	}
	sf := g.SF
	near("lineitems per order", lines/float64(g.Orders()), 4, 0.02)
	near("orders before 1995-03-15", q3orders/sf, estOrdersQ3, 0.03)
	near("orders in a quarter", qtr/sf, estOrdersQtr, 0.05)
	near("lineitems committed before received", commitBefore/sf, estLinesQ4, 0.05)
	near("returned lineitems", returned/sf, estLinesR, 0.05)
	near("lineitems shipped after 1995-03-15", shipAfter/sf, estLinesQ3, 0.03)
	var building float64
	for i := range g.Customers() {
		if g.Customer(i).Segment == q3Segment {
			building++
		}
	}
	near("customers of a segment", building/sf, estCustBuilding, 0.05)
}

// TestPlanChoices: the byte rule's choices on 2 to 16 nodes.
func TestPlanChoices(t *testing.T) {
	for _, n := range []int{2, 4, 8, 16} {
		for _, q := range Queries {
			p, err := NewPlan(q, n, false)
			if err != nil {
				t.Fatalf("%s on %d nodes: %v", q, n, err)
			}
			if q == Q10 && p.q10Bcast != (n == 2) {
				t.Errorf("Q10 on %d nodes: broadcast partial sums %v (partials %.0f per SF)", n, p.q10Bcast, q10Partials(n))
			}
		}
	}
	if _, err := NewPlan(Q3, 32, false); err == nil {
		t.Error("Q3 on 32 nodes: want an error (repartition variant not built)")
	}
}

// BenchmarkFragmentScan: one node's share of a 16-node database at SF 1.6
// (what a TPC-H point's node generates), every table scanned once as Q3's
// plan reads them (lineitems: the ship date, and the revenue of those
// shipped after Q3's date); ns/row is per lineitem, orders and customer
// row.
func BenchmarkFragmentScan(b *testing.B) {
	fr := Fragment{G: Gen{Seed: 1, SF: 1.6}, Node: 5, Nodes: 16}
	var rows int64
	var sink int64
	for b.Loop() {
		fr.Customers(func(c Customer) { rows++; sink += c.AcctBal })
		fr.Orders(func(_ int64, o Order) { rows++; sink += o.Cust })
		fr.LineRows(func(l LineRow) {
			rows++
			if l.Ship() > q3Date {
				sink += l.Revenue()
			}
		})
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(rows), "ns/row")
	_ = sink
}

// TestPermFastPaths: the batched evaluation (fill, scan) and the round
// tables (tabulate) give the permutation that at computes one position at
// a time with hashed rounds, whatever the size (cycle walking included,
// halves too wide to tabulate too).
func TestPermFastPaths(t *testing.T) {
	for _, n := range []int64{1, 2, 3, 7, 64, 65, 1000, 4097, 1 << 20, 1<<20 + 1, 3 << 20, 1 << 33} {
		p := newPerm(9, tLine, n)
		tab := p.tabulate(n)
		if want := p.half <= maxTabHalf && n >= 1<<p.half; (tab.tab != nil) != want {
			t.Errorf("n %d: tabulated %v with a half of %d bits, want %v", n, tab.tab != nil, p.half, want)
		}
		// Positions spread over the range, in runs that cross batches.
		count := min(n, 3000)
		for _, lo := range []int64{0, (n - count) / 2, n - count} {
			got := make([]int64, count)
			tab.fill(lo, got)
			var scanned []int64
			p.scan(lo, lo+count, func(x int64) { scanned = append(scanned, x) })
			for i := range count {
				want := p.at(lo + i)
				if got[i] != want || scanned[i] != want || tab.at(lo+i) != want {
					t.Fatalf("n %d, position %d: fill %d, scan %d, tabulated at %d; want %d", n, lo+i, got[i], scanned[i], tab.at(lo+i), want)
				}
			}
		}
	}
}

// TestLineRowsAreLines: a lineitem read column by column (LineRows) is the
// row Line generates, and Lines gives the same rows in the same order.
func TestLineRowsAreLines(t *testing.T) {
	g := Gen{Seed: 3, SF: 0.002}
	fr := Fragment{G: g, Node: 1, Nodes: 3}
	var rows []LineRow
	fr.LineRows(func(r LineRow) { rows = append(rows, r) })
	var lines []Line
	fr.Lines(func(l Line) { lines = append(lines, l) })
	if len(rows) == 0 || len(rows) != len(lines) {
		t.Fatalf("%d rows, %d lines", len(rows), len(lines))
	}
	for k, r := range rows {
		i, _ := OrderIndex(r.Order)
		want := g.Line(i, int(r.row-8*i), g.Order(i))
		got := Line{Order: r.Order, Ship: r.Ship(), Commit: r.Commit(), Receipt: r.Receipt(), ReturnFlag: r.ReturnFlag(), Price: r.Price(), Discount: r.Discount()}
		if got != want || lines[k] != want || r.Revenue() != want.Revenue() {
			t.Fatalf("row %d: columns %+v, Lines %+v; want %+v", k, got, lines[k], want)
		}
	}
}

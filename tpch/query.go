package tpch

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
)

// Query names a supported query.
type Query string

// The queries, with the specification's validation parameters.
const (
	Q3  Query = "Q3"
	Q4  Query = "Q4"
	Q10 Query = "Q10"
)

// Queries lists the supported queries.
var Queries = []Query{Q3, Q4, Q10}

// ParseQuery accepts "Q4", "q4" or "4".
func ParseQuery(s string) (Query, error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	if !strings.HasPrefix(u, "Q") {
		u = "Q" + u
	}
	for _, q := range Queries {
		if string(q) == u {
			return q, nil
		}
	}
	return "", fmt.Errorf("query %q: choose Q3, Q4 or Q10", s)
}

// Substitution parameters (the specification's validation values).
var (
	q3Segment = 1 // BUILDING
	q3Date    = Day(1995, 3, 15)
	q4From    = Day(1993, 7, 1)
	q4To      = Day(1993, 10, 1)
	q10From   = Day(1993, 10, 1)
	q10To     = Day(1994, 1, 1)
)

// Q3Row, Q4Row and Q10Row are answer rows. Revenues are in 1/10,000 of a
// dollar (exact); Q10's c_name is "Customer#" and the key, and c_phone,
// c_address and c_comment are not generated.
type Q3Row struct {
	OrderKey  int64
	Revenue   int64
	OrderDate int
}

type Q4Row struct {
	Priority int
	Count    int64
}

type Q10Row struct {
	CustKey int64
	Revenue int64
	AcctBal int64
	Nation  int
}

// Answer is a query's result.
type Answer struct {
	Query Query
	Q3    []Q3Row
	Q4    []Q4Row
	Q10   []Q10Row
}

func money(v int64, scale int64) string {
	sign := ""
	if v < 0 {
		sign, v = "-", -v
	}
	return fmt.Sprintf("%s%d.%0*d", sign, v/scale, len(fmt.Sprint(scale))-1, v%scale)
}

// Lines formats the answer, one line per row, as the query's SELECT
// lists it.
func (a *Answer) Lines() []string {
	var out []string
	switch a.Query {
	case Q3:
		out = append(out, "l_orderkey | revenue | o_orderdate | o_shippriority")
		for _, r := range a.Q3 {
			out = append(out, fmt.Sprintf("%d | %s | %s | 0", r.OrderKey, money(r.Revenue, 10000), DateString(r.OrderDate)))
		}
	case Q4:
		out = append(out, "o_orderpriority | order_count")
		for _, r := range a.Q4 {
			out = append(out, fmt.Sprintf("%s | %d", Priorities[r.Priority], r.Count))
		}
	case Q10:
		out = append(out, "c_custkey | c_name | revenue | c_acctbal | n_name")
		for _, r := range a.Q10 {
			out = append(out, fmt.Sprintf("%d | Customer#%09d | %s | %s | %s", r.CustKey, r.CustKey, money(r.Revenue, 10000), money(r.AcctBal, 100), Nations[r.Nation]))
		}
	}
	return out
}

func top3(rows []Q3Row) []Q3Row {
	slices.SortFunc(rows, func(a, b Q3Row) int {
		return cmp.Or(cmp.Compare(b.Revenue, a.Revenue), cmp.Compare(a.OrderDate, b.OrderDate), cmp.Compare(a.OrderKey, b.OrderKey))
	})
	return rows[:min(10, len(rows))]
}

func top10(rows []Q10Row) []Q10Row {
	slices.SortFunc(rows, func(a, b Q10Row) int {
		return cmp.Or(cmp.Compare(b.Revenue, a.Revenue), cmp.Compare(a.CustKey, b.CustKey))
	})
	return rows[:min(20, len(rows))]
}

func q4Rows(counts [5]int64) []Q4Row {
	var out []Q4Row
	for p, c := range counts {
		if c > 0 {
			out = append(out, Q4Row{p, c})
		}
	}
	return out
}

// Reference evaluates q on one node over the whole generated database, as
// the SQL text says, with no placement, shuffle or cost: the answer every
// distributed plan must give.
func Reference(g Gen, q Query) *Answer {
	a := &Answer{Query: q}
	n := g.Orders()
	switch q {
	case Q3:
		rev := map[int64]*Q3Row{}
		for i := range n {
			o := g.Order(i)
			if o.Date >= q3Date || g.Customer(o.Cust-1).Segment != q3Segment {
				continue
			}
			for ln := range g.LineCount(i) {
				if l := g.Line(i, ln, o); l.Ship > q3Date {
					r := rev[o.Key]
					if r == nil {
						r = &Q3Row{OrderKey: o.Key, OrderDate: o.Date}
						rev[o.Key] = r
					}
					r.Revenue += l.Revenue()
				}
			}
		}
		var rows []Q3Row
		for _, r := range rev {
			rows = append(rows, *r)
		}
		a.Q3 = top3(rows)
	case Q4:
		var counts [5]int64
		for i := range n {
			o := g.Order(i)
			if o.Date < q4From || o.Date >= q4To {
				continue
			}
			for ln := range g.LineCount(i) {
				if l := g.Line(i, ln, o); l.Commit < l.Receipt {
					counts[o.Priority]++
					break
				}
			}
		}
		a.Q4 = q4Rows(counts)
	case Q10:
		rev := map[int64]int64{}
		for i := range n {
			o := g.Order(i)
			if o.Date < q10From || o.Date >= q10To {
				continue
			}
			for ln := range g.LineCount(i) {
				if l := g.Line(i, ln, o); l.ReturnFlag == 'R' {
					rev[o.Cust] += l.Revenue()
				}
			}
		}
		var rows []Q10Row
		for ck, r := range rev {
			c := g.Customer(ck - 1)
			rows = append(rows, Q10Row{CustKey: ck, Revenue: r, AcctBal: c.AcctBal, Nation: c.Nation})
		}
		a.Q10 = top10(rows)
	}
	return a
}

// Equal reports whether two answers are the same, row for row.
func (a *Answer) Equal(b *Answer) bool {
	return a != nil && b != nil && a.Query == b.Query && slices.Equal(a.Q3, b.Q3) && slices.Equal(a.Q4, b.Q4) && slices.Equal(a.Q10, b.Q10)
}

// tuple packing helpers.
func put(buf []byte, a, b uint64) []byte {
	return binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(buf, a), b)
}

func eachTuple(buf []byte, f func(a, b uint64)) {
	for i := 0; i+16 <= len(buf); i += 16 {
		f(binary.LittleEndian.Uint64(buf[i:]), binary.LittleEndian.Uint64(buf[i+8:]))
	}
}

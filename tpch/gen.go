// Package tpch runs TPC-H queries 3, 4 and 10 over the shuffle designs: a
// deterministic generator of the columns those queries touch (customer,
// orders, lineitem; nation is replicated), each row placed on a
// pseudo-random node; the distributed plans of Liu19 (broadcast where
// it moves fewer bytes, repartition by modulo elsewhere, a non-partitioned
// hash join on the receiving side); a local-data plan for Q4; and a
// single-node reference evaluation. docs/tpch.md describes what follows
// the specification and what is simplified.
//
// Code here that runs inside a simulation takes time and work only from
// fabric.Thread and randomness only from seeded hashes.
package tpch

import "math"

// Dates are days since 1992-01-01 (day 0).
const (
	// StartDate is 1992-01-01 and EndDate 1998-12-31 (the spec's
	// STARTDATE and ENDDATE); orders fall in [StartDate, EndDate-151].
	StartDate = 0
	EndDate   = 2556
	// CurrentDate (1995-06-17) decides l_returnflag.
	CurrentDate = 1263
)

// Day returns the day number of a calendar date (1992..2099).
func Day(y, m, d int) int {
	days := 0
	for yy := 1992; yy < y; yy++ {
		days += 365
		if leap(yy) {
			days++
		}
	}
	mdays := [12]int{31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}
	for mm := 1; mm < m; mm++ {
		days += mdays[mm-1]
		if mm == 2 && leap(y) {
			days++
		}
	}
	return days + d - 1
}

// DateString formats a day number as YYYY-MM-DD.
func DateString(day int) string {
	y := 1992
	for {
		n := 365
		if leap(y) {
			n = 366
		}
		if day < n {
			break
		}
		day -= n
		y++
	}
	mdays := [12]int{31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}
	m := 0
	for ; m < 11; m++ {
		n := mdays[m]
		if m == 1 && leap(y) {
			n++
		}
		if day < n {
			break
		}
		day -= n
	}
	return itoa4(y) + "-" + itoa2(m+1) + "-" + itoa2(day+1)
}

func leap(y int) bool { return y%4 == 0 && (y%100 != 0 || y%400 == 0) }

func itoa2(v int) string { return string([]byte{byte('0' + v/10), byte('0' + v%10)}) }
func itoa4(v int) string { return itoa2(v/100) + itoa2(v%100) }

// Segments are the five market segments, Priorities the five order
// priorities (index 0 is "1-URGENT"), Nations the 25 nations (replicated
// on every node).
var (
	Segments   = [5]string{"AUTOMOBILE", "BUILDING", "FURNITURE", "HOUSEHOLD", "MACHINERY"}
	Priorities = [5]string{"1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"}
	// Nations in n_nationkey order, as the specification's NATION table
	// lists them (clause 4.2.3).
	Nations = [25]string{"ALGERIA", "ARGENTINA", "BRAZIL", "CANADA", "EGYPT", "ETHIOPIA", "FRANCE", "GERMANY", "INDIA",
		"INDONESIA", "IRAN", "IRAQ", "JAPAN", "JORDAN", "KENYA", "MOROCCO", "MOZAMBIQUE", "PERU", "CHINA", "ROMANIA",
		"SAUDI ARABIA", "VIETNAM", "RUSSIA", "UNITED KINGDOM", "UNITED STATES"}
)

// Gen generates the database of one scale factor and seed. Every value is
// a pure function of (Seed, table, row, column), so any node can generate
// any row, and a node generates its fragment without the others.
type Gen struct {
	Seed uint64
	SF   float64
}

// Customer is a pre-projected customer row (c_name is "Customer#" and the
// key; phone, address and comment are not generated).
type Customer struct {
	Key     int64
	Nation  int   // 0..24
	AcctBal int64 // cents, -99999..999999
	Segment int   // index into Segments
}

// Order is a pre-projected orders row (o_shippriority is always 0).
type Order struct {
	Key      int64
	Cust     int64
	Date     int // day number
	Priority int // index into Priorities
}

// Line is a pre-projected lineitem row.
type Line struct {
	Order                 int64 // l_orderkey
	Ship, Commit, Receipt int   // day numbers
	ReturnFlag            byte  // 'R', 'A' or 'N'
	Price                 int64 // l_extendedprice in cents
	Discount              int64 // l_discount in hundredths (0..10)
}

// Revenue is l_extendedprice * (1 - l_discount) in 1/10,000 of a dollar
// (exact).
func (l Line) Revenue() int64 { return l.Price * (100 - l.Discount) }

func (g Gen) rows(base float64) int64 { return max(1, int64(math.Round(g.SF*base))) }

// Customers, Orders and Parts are the tables' cardinalities.
func (g Gen) Customers() int64 { return g.rows(150_000) }
func (g Gen) Orders() int64    { return g.rows(1_500_000) }
func (g Gen) Parts() int64     { return g.rows(200_000) }

// OrderKey returns the key of order i (from 0): keys are sparse, as the
// reference generator makes them (clause 4.2.3: only 8 of every 32 keys
// are used): row j = i+1 gets (j/8)*32 + j%8, so the keys are 1-7,
// 32-39, 64-71, ...
func OrderKey(i int64) int64 { j := i + 1; return (j>>3)<<5 | j&7 }

// OrderIndex inverts OrderKey.
func OrderIndex(key int64) (int64, bool) {
	if key < 1 || key>>3&3 != 0 {
		return 0, false
	}
	return ((key>>5)<<3 | key&7) - 1, true
}

// Table and column tags of the random streams.
const (
	tCustomer = iota + 1
	tOrders
	tLine
)

// draw returns a uniform integer in [lo, hi] from the stream of (table,
// column, row).
func (g Gen) draw(table, col int, row int64, lo, hi int64) int64 {
	x := mix(g.Seed ^ mix(uint64(table)<<56^uint64(col)<<48^uint64(row)))
	span := uint64(hi - lo + 1)
	h, _ := mul64(x, span)
	return lo + int64(h)
}

// Customer returns customer row i (key i+1).
func (g Gen) Customer(i int64) Customer {
	return Customer{Key: i + 1, Nation: int(g.draw(tCustomer, 1, i, 0, 24)),
		AcctBal: g.draw(tCustomer, 2, i, -99999, 999999), Segment: g.customerSegment(i)}
}

// customerSegment is c_mktsegment of customer row i (Customer's Segment
// alone).
func (g Gen) customerSegment(i int64) int { return int(g.draw(tCustomer, 3, i, 0, 4)) }

// Order returns order row i. o_custkey is uniform over the customer keys
// not divisible by 3 (a third of the customers have no orders).
func (g Gen) Order(i int64) Order {
	return Order{Key: OrderKey(i), Cust: g.orderCust(i), Date: g.orderDate(i), Priority: g.orderPriority(i)}
}

// orderCust, orderDate and orderPriority are the columns of order i, one
// at a time, for plans that read only some of them.
func (g Gen) orderCust(i int64) int64 {
	c := g.Customers()
	valid := c - c/3
	j := g.draw(tOrders, 1, i, 0, valid-1)
	return 3*(j/2) + j%2 + 1
}
func (g Gen) orderDate(i int64) int     { return int(g.draw(tOrders, 2, i, StartDate, EndDate-151)) }
func (g Gen) orderPriority(i int64) int { return int(g.draw(tOrders, 3, i, 0, 4)) }

// LineCount is the number of lineitems of order i, uniform in 1..7.
func (g Gen) LineCount(i int64) int { return int(g.draw(tOrders, 4, i, 1, 7)) }

// Line returns lineitem ln (0-based) of order i, whose row is o.
func (g Gen) Line(i int64, ln int, o Order) Line {
	return LineRow{g: g, row: i*8 + int64(ln), Order: o.Key, date: o.Date, parts: g.Parts()}.Line()
}

// LineRow is a lineitem whose columns are generated as they are read
// (Fragment.LineRows), so that a scan whose predicate rejects a row does
// not generate the columns it would have output. Each read generates its
// column again: read one once. A value, valid anywhere.
type LineRow struct {
	g     Gen
	row   int64 // the lineitem's stream row: 8 x order index + line number
	Order int64 // l_orderkey
	date  int   // o_orderdate
	parts int64 // the part table's cardinality
}

// Ship, Commit and Receipt are the row's dates (day numbers).
func (r LineRow) Ship() int    { return r.date + int(r.g.draw(tLine, 4, r.row, 1, 121)) }
func (r LineRow) Commit() int  { return r.date + int(r.g.draw(tLine, 5, r.row, 30, 90)) }
func (r LineRow) Receipt() int { return r.receipt(r.Ship()) }

func (r LineRow) receipt(ship int) int { return ship + int(r.g.draw(tLine, 6, r.row, 1, 30)) }

// ReturnFlag is l_returnflag: 'R' or 'A' for a line received by
// CurrentDate, else 'N'.
func (r LineRow) ReturnFlag() byte { return r.returnFlag(r.Receipt()) }

func (r LineRow) returnFlag(receipt int) byte {
	if receipt <= CurrentDate {
		return "RA"[r.g.draw(tLine, 7, r.row, 0, 1)]
	}
	return 'N'
}

// Price is l_extendedprice in cents, Discount l_discount in hundredths.
func (r LineRow) Price() int64 {
	part := r.g.draw(tLine, 1, r.row, 1, r.parts)
	qty := r.g.draw(tLine, 2, r.row, 1, 50)
	return qty * (90000 + part/10%20001 + 100*(part%1000)) // cents (spec 4.2.3, P_RETAILPRICE)
}
func (r LineRow) Discount() int64 { return r.g.draw(tLine, 3, r.row, 0, 10) }

// Revenue is Line's Revenue.
func (r LineRow) Revenue() int64 { return r.Price() * (100 - r.Discount()) }

// Line generates every column.
func (r LineRow) Line() Line {
	l := Line{Order: r.Order, Price: r.Price(), Discount: r.Discount(), Ship: r.Ship(), Commit: r.Commit()}
	l.Receipt = r.receipt(l.Ship)
	l.ReturnFlag = r.returnFlag(l.Receipt)
	return l
}

// mix is SplitMix64's finalizer.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

package tpch

import (
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// CPU cost of the operators, in cycles per row, charged through the
// thread (fabric.Thread.Compute) where the work happens. The SHUFFLE and
// RECEIVE operators charge their own hashing and copying on top
// (fabric.WorkHashTuple, fabric.WorkCopy). Estimates (docs/tpch.md): a
// column scan with a predicate on pre-projected columns costs a few cycles
// per row; a non-partitioned hash table larger than the caches costs about
// one cache miss per insert, probe or group update.
const (
	CyclesScan  = 3  // read a row's pre-projected columns and test the predicate
	CyclesBuild = 30 // insert a received tuple into the join's hash table
	CyclesProbe = 25 // probe the hash table with a qualifying row
	CyclesAgg   = 30 // update a hash aggregate (group by, distinct)
	CyclesTopK  = 10 // offer a group to the top-k heap
)

// Step is one exchange of a plan: a stream of tuples moved between all
// nodes by repartition (modulo on the key) or broadcast.
type Step struct {
	Name    string
	Pattern algos.Pattern
}

// Plan is a query's distributed plan on a cluster size.
type Plan struct {
	Query Query
	Nodes int
	Local bool // Q4's local-data plan: tables partitioned by orderkey, no exchange
	Steps []Step
	// q10Bcast: Q10 broadcasts its partial aggregates (and joins the
	// customers where they lie) instead of repartitioning both by custkey.
	q10Bcast bool
}

// Estimated rows per scale factor (the spec's cardinalities times its
// selectivities), as an optimizer would know them.
const (
	estCustBuilding = 30_000    // customers of one segment
	estOrdersQ3     = 729_000   // orders before 1995-03-15
	estOrdersQ3Cust = 146_000   // ... whose customer is of the segment
	estLinesQ3      = 3_240_000 // lineitems shipped after 1995-03-15
	estOrdersQtr    = 57_400    // orders in a 3-month window
	estLinesQ4      = 3_800_000 // lineitems committed before received
	estLinesR       = 1_480_000 // lineitems returned (flag R)
	estCustomers    = 150_000
)

// broadcastCheaper is the rule of Liu19's plans: broadcast the small
// input s when that moves fewer bytes than repartitioning both inputs
// (s and l): s(n-1) <= (s+l)(n-1)/n.
func broadcastCheaper(s, l float64, n int) bool { return s*float64(n-1) <= l }

// NewPlan builds q's plan for nodes nodes (local: Q4's local-data plan).
// It fails where the byte rule would choose a variant not built (joins
// beyond about 22 nodes broadcast their smaller input more expensively
// than repartitioning both; docs/tpch.md).
func NewPlan(q Query, nodes int, local bool) (Plan, error) {
	p := Plan{Query: q, Nodes: nodes, Local: local}
	if nodes < 1 {
		return p, fmt.Errorf("%d nodes: need at least 1", nodes)
	}
	if local {
		if q != Q4 {
			return p, fmt.Errorf("the local-data plan exists for Q4 only (its tables co-partition on orderkey)")
		}
		return p, nil
	}
	need := func(ok bool, join string) error {
		if !ok {
			return fmt.Errorf("%s on %d nodes: repartitioning both inputs moves fewer bytes than the broadcast this plan implements", join, nodes)
		}
		return nil
	}
	var err error
	switch q {
	case Q3:
		err = need(broadcastCheaper(estCustBuilding, estOrdersQ3, nodes) && broadcastCheaper(estOrdersQ3Cust, estLinesQ3, nodes), "Q3's joins")
		p.Steps = []Step{{"customer", algos.Broadcast}, {"orders", algos.Broadcast}, {"partial-revenue", algos.Repartition}}
	case Q4:
		err = need(broadcastCheaper(estOrdersQtr, estLinesQ4, nodes), "Q4's semi-join")
		p.Steps = []Step{{"orders", algos.Broadcast}, {"matched-orders", algos.Repartition}}
	case Q10:
		err = need(broadcastCheaper(estOrdersQtr, estLinesR, nodes), "Q10's orders-lineitem join")
		p.q10Bcast = broadcastCheaper(q10Partials(nodes), estCustomers, nodes)
		if p.q10Bcast {
			p.Steps = []Step{{"orders", algos.Broadcast}, {"partial-revenue", algos.Broadcast}}
		} else {
			p.Steps = []Step{{"orders", algos.Broadcast}, {"partial-revenue", algos.Repartition}, {"customer", algos.Repartition}}
		}
	default:
		return p, fmt.Errorf("query %q: choose Q3, Q4 or Q10", q)
	}
	return p, err
}

// q10Partials estimates Q10's partial aggregates per scale factor: each
// order of the window has k ~ U(1..7) lineitems, each returned ('R') with
// probability 1/2, spread over the nodes at random; each node holding
// one of them emits one partial for the order's customer.
func q10Partials(nodes int) float64 {
	var e float64
	for k := 1; k <= 7; k++ {
		// E[distinct nodes among r returned lines], r ~ Bin(k, 1/2)
		pr := 1.0 / float64(int(1)<<k)
		binom := 1.0
		for r := 0; r <= k; r++ {
			if r > 0 {
				binom = binom * float64(k-r+1) / float64(r)
			}
			empty := 1.0
			for range r {
				empty *= 1 - 1/float64(nodes)
			}
			e += binom * pr * float64(nodes) * (1 - empty) / 7
		}
	}
	return estOrdersQtr * e
}

// Stream is one node's input to a step: its outgoing tuples (16 bytes
// each: key a, payload b) and the cycles of the pipeline that produced
// them. Tuples are real in both modes: their keys choose destinations.
type Stream struct {
	Tuples []byte
	Cycles int64
	// Blocking: the pipeline ends in an aggregation, so its cycles are
	// spent before the first tuple leaves; otherwise they are spent as
	// the tuples are sent, vector by vector.
	Blocking bool
}

// Exchanger moves a plan's streams between nodes over some shuffle design.
type Exchanger interface {
	// Exchange runs step x on this node: sends s (every node calls it
	// for step x with its own stream) and returns what this node received
	// (nil in size-only mode) and how many tuples. recvCycles is spent per
	// received tuple by the receiving threads.
	Exchange(th fabric.Thread, x int, s Stream, recvCycles int64) ([]byte, uint64, error)
	// Compute spends cycles of local work spread over the node's threads.
	Compute(th fabric.Thread, cycles int64)
}

// Run executes p's part on one node over its fragment. Every node returns
// the same answer in payload mode; in size-only mode (no payload moves)
// the answer is nil and the receiving side only counts, while the local
// probes evaluate the broadcast side's predicate with the generator (the
// rows it would have received) so that the streams that follow are the
// real ones.
func (p Plan) Run(th fabric.Thread, fr Fragment, x Exchanger) (*Answer, error) {
	payload := th.Node().Payload()
	switch {
	case p.Local:
		return p.q4Local(th, fr, x)
	case p.Query == Q3:
		return p.q3(th, fr, x, payload)
	case p.Query == Q4:
		return p.q4(th, fr, x, payload)
	default:
		return p.q10(th, fr, x, payload)
	}
}

// rank is the join key shipped for an orderkey: its dense rank (the
// row index). The spec's orderkeys are sparse (the first 8 of every 32),
// so orderkey modulo 16 would reach only 8 of 16 nodes; the rank is an
// equivalent join key whose modulo spreads evenly.
func rank(orderkey int64) uint64 {
	i, _ := OrderIndex(orderkey)
	return uint64(i)
}

func (p Plan) q4(th fabric.Thread, fr Fragment, x Exchanger, payload bool) (*Answer, error) {
	g := fr.G
	// Step 0: broadcast the orders of the quarter (orderkey, priority).
	var s Stream
	fr.Orders(func(_ int64, o Order) {
		s.Cycles += CyclesScan
		if o.Date >= q4From && o.Date < q4To {
			s.Tuples = put(s.Tuples, rank(o.Key), uint64(o.Priority))
		}
	})
	got, _, err := x.Exchange(th, 0, s, CyclesBuild)
	if err != nil {
		return nil, err
	}
	table := map[int64]uint64{}
	eachTuple(got, func(a, b uint64) { table[int64(a)] = b })
	lookup := func(key int64) (uint64, bool) {
		if payload {
			b, ok := table[int64(rank(key))]
			return b, ok
		}
		i, _ := OrderIndex(key)
		if d := g.orderDate(i); d < q4From || d >= q4To {
			return 0, false
		}
		return uint64(g.orderPriority(i)), true
	}
	// Step 1: semi-join with the local lineitems; repartition each matched
	// order once per node.
	s = Stream{}
	seen := map[int64]bool{}
	fr.LineRows(func(l LineRow) {
		s.Cycles += CyclesScan
		if l.Commit() >= l.Receipt() {
			return
		}
		s.Cycles += CyclesProbe
		if pr, ok := lookup(l.Order); ok && !seen[l.Order] {
			s.Cycles += CyclesAgg
			seen[l.Order] = true
			s.Tuples = put(s.Tuples, rank(l.Order), pr)
		}
	})
	got, _, err = x.Exchange(th, 1, s, CyclesAgg)
	if err != nil {
		return nil, err
	}
	var counts [5]int64
	distinct := map[uint64]bool{}
	eachTuple(got, func(a, b uint64) {
		if !distinct[a] {
			distinct[a] = true
			counts[b]++
		}
	})
	return p.finishQ4(th, counts, payload)
}

func (p Plan) finishQ4(th fabric.Thread, counts [5]int64, payload bool) (*Answer, error) {
	all, err := algos.GatherInts(th, "tpch-q4", counts[:])
	if err != nil || !payload {
		return nil, err
	}
	var sum [5]int64
	for _, c := range all {
		for i := range min(5, len(c)) {
			sum[i] += c[i]
		}
	}
	return &Answer{Query: Q4, Q4: q4Rows(sum)}, nil
}

// q4Local is the local-data plan: orders and lineitem partitioned by
// orderkey, so each node joins and counts its own orders.
func (p Plan) q4Local(th fabric.Thread, fr Fragment, x Exchanger) (*Answer, error) {
	var counts [5]int64
	var cycles int64
	fr.LocalOrders(func(o Order, lines []Line) {
		// The same operators as the shuffle plan, without the exchange:
		// scan orders, build on the quarter's; scan lineitem, probe with
		// the rows committed before received; count each order once.
		cycles += CyclesScan
		in := o.Date >= q4From && o.Date < q4To
		if in {
			cycles += CyclesBuild
		}
		matched := false
		for _, l := range lines {
			cycles += CyclesScan
			if l.Commit < l.Receipt {
				cycles += CyclesProbe
				matched = matched || in
			}
		}
		if matched {
			cycles += CyclesAgg
			counts[o.Priority]++
		}
	})
	x.Compute(th, cycles)
	return p.finishQ4(th, counts, th.Node().Payload())
}

func (p Plan) q3(th fabric.Thread, fr Fragment, x Exchanger, payload bool) (*Answer, error) {
	g := fr.G
	// Step 0: broadcast the customers of the segment (custkey).
	var s Stream
	fr.Customers(func(c Customer) {
		s.Cycles += CyclesScan
		if c.Segment == q3Segment {
			s.Tuples = put(s.Tuples, uint64(c.Key), 0)
		}
	})
	got, _, err := x.Exchange(th, 0, s, CyclesBuild)
	if err != nil {
		return nil, err
	}
	cust := map[int64]bool{}
	eachTuple(got, func(a, _ uint64) { cust[int64(a)] = true })
	// Step 1: orders before the date joined with those customers,
	// broadcast (orderkey, orderdate).
	s = Stream{}
	fr.Orders(func(_ int64, o Order) {
		s.Cycles += CyclesScan
		if o.Date >= q3Date {
			return
		}
		s.Cycles += CyclesProbe
		if payload && cust[o.Cust] || !payload && g.customerSegment(o.Cust-1) == q3Segment {
			s.Tuples = put(s.Tuples, rank(o.Key), uint64(o.Date))
		}
	})
	got, _, err = x.Exchange(th, 1, s, CyclesBuild)
	if err != nil {
		return nil, err
	}
	orders := map[int64]int{}
	eachTuple(got, func(a, b uint64) { orders[int64(a)] = int(b) })
	lookup := func(key int64) (int, bool) {
		if payload {
			d, ok := orders[int64(rank(key))]
			return d, ok
		}
		i, _ := OrderIndex(key)
		d := g.orderDate(i)
		return d, d < q3Date && g.customerSegment(g.orderCust(i)-1) == q3Segment
	}
	// Step 2: lineitems shipped after the date joined with those orders,
	// aggregated per order here, then repartitioned by orderkey.
	s = Stream{Blocking: true}
	type part struct {
		key, rev int64
		date     int
	}
	index := map[int64]int{} // orderkey -> its place in parts
	var parts []part         // in the order first seen
	fr.LineRows(func(l LineRow) {
		s.Cycles += CyclesScan
		if l.Ship() <= q3Date {
			return
		}
		s.Cycles += CyclesProbe
		d, ok := lookup(l.Order)
		if !ok {
			return
		}
		s.Cycles += CyclesAgg
		k, had := index[l.Order]
		if !had {
			k = len(parts)
			index[l.Order] = k
			parts = append(parts, part{key: l.Order, date: d})
		}
		parts[k].rev += l.Revenue()
	})
	s.Tuples = make([]byte, 0, algos.TupleBytes*len(parts))
	for _, pt := range parts {
		s.Tuples = put(s.Tuples, rank(pt.key), uint64(pt.rev)|uint64(pt.date)<<44)
	}
	got, n, err := x.Exchange(th, 2, s, CyclesAgg)
	if err != nil {
		return nil, err
	}
	final := map[int64]*Q3Row{}
	eachTuple(got, func(a, b uint64) {
		r := final[int64(a)]
		if r == nil {
			r = &Q3Row{OrderKey: OrderKey(int64(a)), OrderDate: int(b >> 44)}
			final[int64(a)] = r
		}
		r.Revenue += int64(b & (1<<44 - 1))
	})
	x.Compute(th, CyclesTopK*int64(n))
	rows := make([]Q3Row, 0, len(final))
	for _, r := range final {
		rows = append(rows, *r)
	}
	rows = top3(rows)
	var flat []int64
	for _, r := range rows {
		flat = append(flat, r.OrderKey, r.Revenue, int64(r.OrderDate))
	}
	all, err := algos.GatherInts(th, "tpch-q3", flat)
	if err != nil || !payload {
		return nil, err
	}
	rows = rows[:0]
	for _, v := range all {
		for i := 0; i+3 <= len(v); i += 3 {
			rows = append(rows, Q3Row{v[i], v[i+1], int(v[i+2])})
		}
	}
	return &Answer{Query: Q3, Q3: top3(rows)}, nil
}

func (p Plan) q10(th fabric.Thread, fr Fragment, x Exchanger, payload bool) (*Answer, error) {
	g := fr.G
	// Step 0: broadcast the orders of the quarter (orderkey, custkey).
	var s Stream
	fr.Orders(func(_ int64, o Order) {
		s.Cycles += CyclesScan
		if o.Date >= q10From && o.Date < q10To {
			s.Tuples = put(s.Tuples, rank(o.Key), uint64(o.Cust))
		}
	})
	got, _, err := x.Exchange(th, 0, s, CyclesBuild)
	if err != nil {
		return nil, err
	}
	orders := map[int64]int64{}
	eachTuple(got, func(a, b uint64) { orders[int64(a)] = int64(b) })
	lookup := func(key int64) (int64, bool) {
		if payload {
			c, ok := orders[int64(rank(key))]
			return c, ok
		}
		i, _ := OrderIndex(key)
		d := g.orderDate(i)
		if d < q10From || d >= q10To {
			return 0, false
		}
		return g.orderCust(i), true
	}
	// Step 1: returned lineitems joined with those orders, aggregated per
	// customer here, then repartitioned (or broadcast) by custkey.
	s = Stream{Blocking: true}
	rev := map[int64]int64{}
	var keys []int64
	fr.LineRows(func(l LineRow) {
		s.Cycles += CyclesScan
		if l.ReturnFlag() != 'R' {
			return
		}
		s.Cycles += CyclesProbe
		c, ok := lookup(l.Order)
		if !ok {
			return
		}
		s.Cycles += CyclesAgg
		if _, had := rev[c]; !had {
			keys = append(keys, c)
		}
		rev[c] += l.Revenue()
	})
	s.Tuples = make([]byte, 0, algos.TupleBytes*len(keys))
	for _, k := range keys {
		s.Tuples = put(s.Tuples, uint64(k), uint64(rev[k]))
	}
	got, _, err = x.Exchange(th, 1, s, CyclesAgg)
	if err != nil {
		return nil, err
	}
	total := map[int64]int64{}
	eachTuple(got, func(a, b uint64) { total[int64(a)] += int64(b) })
	var rows []Q10Row
	if p.q10Bcast {
		// Join the partial sums with the customers where they lie.
		var cycles int64
		fr.Customers(func(c Customer) {
			cycles += CyclesScan + CyclesProbe
			if r, ok := total[c.Key]; ok {
				cycles += CyclesTopK
				rows = append(rows, Q10Row{CustKey: c.Key, Revenue: r, AcctBal: c.AcctBal, Nation: c.Nation})
			}
		})
		x.Compute(th, cycles)
	} else {
		// Step 2: repartition the customers by custkey (nation, balance)
		// and join them with the sums as they arrive.
		s = Stream{}
		fr.Customers(func(c Customer) {
			s.Cycles += CyclesScan
			s.Tuples = put(s.Tuples, uint64(c.Key), uint64(c.Nation)|uint64(c.AcctBal+100000)<<8)
		})
		got, n, err := x.Exchange(th, 2, s, CyclesProbe)
		if err != nil {
			return nil, err
		}
		eachTuple(got, func(a, b uint64) {
			if r, ok := total[int64(a)]; ok {
				rows = append(rows, Q10Row{CustKey: int64(a), Revenue: r, AcctBal: int64(b>>8) - 100000, Nation: int(b & 0xff)})
			}
		})
		x.Compute(th, CyclesTopK*int64(min(n, uint64(len(total)))))
	}
	rows = top10(rows)
	var flat []int64
	for _, r := range rows {
		flat = append(flat, r.CustKey, r.Revenue, r.AcctBal, int64(r.Nation))
	}
	all, err := algos.GatherInts(th, "tpch-q10", flat)
	if err != nil || !payload {
		return nil, err
	}
	rows = rows[:0]
	for _, v := range all {
		for i := 0; i+4 <= len(v); i += 4 {
			rows = append(rows, Q10Row{v[i], v[i+1], v[i+2], int(v[i+3])})
		}
	}
	return &Answer{Query: Q10, Q10: top10(rows)}, nil
}

package tpch

import "math/bits"

func mul64(a, b uint64) (hi, lo uint64) { return bits.Mul64(a, b) }

// perm is a pseudo-random permutation of [0, n): a balanced Feistel
// network on the smallest even number of bits covering n, with cycle
// walking back into range. Placing the rows whose permuted position falls
// in node k's share of [0, n) on node k puts every row on a pseudo-random
// node with equal fragments, and lets a node enumerate its fragment
// without touching the others' rows.
//
// Its four round functions, mix(r ^ key) & mask, take a half-width r: when
// a scan will evaluate the permutation at least as often as a half has
// values, tabulate fills a table of each round's values first, so that a
// round is a lookup instead of a hash (the same permutation, faster).
type perm struct {
	n    uint64
	half uint
	mask uint64
	keys [4]uint64
	tab  *[4][]uint16 // tabulate's round values, or nil
}

// maxTabHalf is the widest half tabulate fills a table for: 4 x 2^16
// entries of 2 bytes (512 KiB), a table of up to 2^32 rows.
const maxTabHalf = 16

func newPerm(seed uint64, table int, n int64) perm {
	b := uint(bits.Len64(uint64(max(n-1, 1))))
	b += b & 1
	p := perm{n: uint64(n), half: b / 2, mask: 1<<(b/2) - 1}
	for r := range p.keys {
		p.keys[r] = mix(seed ^ uint64(table)<<40 ^ uint64(r)<<32 ^ 0x5eed)
	}
	return p
}

// tabulate returns p with its round tables filled when a scan of count
// positions pays for them (count at least the 2^half values of a half),
// else p itself.
func (p perm) tabulate(count int64) perm {
	size := int64(1) << p.half
	if p.half > maxTabHalf || count < size {
		return p
	}
	var tab [4][]uint16
	for k, key := range p.keys {
		t := make([]uint16, size)
		for r := range t {
			t[r] = uint16(mix(uint64(r)^key) & p.mask)
		}
		tab[k] = t
	}
	p.tab = &tab
	return p
}

// at returns the row at position j of the permutation.
func (p perm) at(j int64) int64 {
	x := uint64(j)
	if t := p.tab; t != nil {
		for {
			l, r := uint16(x>>p.half), uint16(x&p.mask)
			l, r = r, l^t[0][r]
			l, r = r, l^t[1][r]
			l, r = r, l^t[2][r]
			l, r = r, l^t[3][r]
			x = uint64(l)<<p.half | uint64(r)
			if x < p.n {
				return int64(x)
			}
		}
	}
	for {
		l, r := x>>p.half, x&p.mask
		for _, k := range p.keys {
			l, r = r, l^(mix(r^k)&p.mask)
		}
		x = l<<p.half | r
		if x < p.n {
			return int64(x)
		}
	}
}

// permBatch is how many positions fill evaluates side by side.
const permBatch = 64

// fill sets out[i] to p.at(j+i) for every i. The positions' Feistel rounds
// are evaluated side by side, so that the processor overlaps their hashes
// (or table lookups) instead of waiting for one chain at a time; the
// positions whose value falls outside [0, n) walk on together, as at walks.
func (p perm) fill(j int64, out []int64) {
	for len(out) > 0 {
		m := min(len(out), permBatch)
		var x [permBatch]uint64 // the pending lanes' values
		var at [permBatch]int   // the pending lanes' places in out
		for i := range m {
			x[i], at[i] = uint64(j)+uint64(i), i
		}
		for pending := m; pending > 0; {
			p.rounds(x[:pending])
			// Without branches (half the values walk on, at random): every
			// lane writes its value, which a later pass overwrites if it
			// walks on, and the walking lanes move to the front.
			left := 0
			for i := range pending {
				v, a := x[i], at[i]
				out[a] = int64(v)
				x[left], at[left] = v, a
				if v >= p.n {
					left++
				}
			}
			pending = left
		}
		j += int64(m)
		out = out[m:]
	}
}

// rounds applies the Feistel network once to every value of xs, side by
// side.
func (p perm) rounds(xs []uint64) {
	var l, r [permBatch]uint64
	n := len(xs)
	for i, x := range xs {
		l[i], r[i] = x>>p.half, x&p.mask
	}
	if t := p.tab; t != nil {
		for k := range t {
			tk := t[k]
			for i := range n {
				l[i], r[i] = r[i], l[i]^uint64(tk[r[i]])
			}
		}
	} else {
		for _, key := range p.keys {
			for i := range n {
				l[i], r[i] = r[i], l[i]^(mix(r[i]^key)&p.mask)
			}
		}
	}
	for i := range n {
		xs[i] = l[i]<<p.half | r[i]
	}
}

// scan calls f with p.at(j) for j from lo to hi, in that order.
func (p perm) scan(lo, hi int64, f func(int64)) {
	var buf [permBatch]int64
	for j := lo; j < hi; j += permBatch {
		b := buf[:min(permBatch, hi-j)]
		p.fill(j, b)
		for _, x := range b {
			f(x)
		}
	}
}

// share is node k's range of positions [lo, hi) of n rows over nodes.
func share(n int64, k, nodes int) (lo, hi int64) {
	return n * int64(k) / int64(nodes), n * int64(k+1) / int64(nodes)
}

// Fragment is one node's share of the database under random placement
// (Liu19): customers, orders and lineitems each on a pseudo-random
// node, independently of one another.
type Fragment struct {
	G           Gen
	Node, Nodes int
}

// Customers calls f for every customer row of the fragment.
func (fr Fragment) Customers(f func(c Customer)) {
	n := fr.G.Customers()
	lo, hi := share(n, fr.Node, fr.Nodes)
	p := newPerm(fr.G.Seed, tCustomer, n).tabulate(hi - lo)
	p.scan(lo, hi, func(i int64) { f(fr.G.Customer(i)) })
}

// Orders calls f for every orders row of the fragment (with its index).
func (fr Fragment) Orders(f func(i int64, o Order)) {
	n := fr.G.Orders()
	lo, hi := share(n, fr.Node, fr.Nodes)
	p := newPerm(fr.G.Seed, tOrders, n).tabulate(hi - lo)
	p.scan(lo, hi, func(i int64) { f(i, fr.G.Order(i)) })
}

// Lines calls f for every lineitem of the fragment. Lineitems are placed
// by slot: order i owns slots 7i..7i+6, of which the first LineCount(i)
// hold rows; the slots are permuted and shared out like the other tables
// (each node scans 7/4 slots per row it holds).
func (fr Fragment) Lines(f func(l Line)) { fr.LineRows(func(r LineRow) { f(r.Line()) }) }

// LineRows is Lines with rows whose columns are generated as they are
// read: a plan reads its predicate's columns first.
func (fr Fragment) LineRows(f func(r LineRow)) {
	n := 7 * fr.G.Orders()
	lo, hi := share(n, fr.Node, fr.Nodes)
	p := newPerm(fr.G.Seed, tLine, n).tabulate(hi - lo)
	g, parts := fr.G, fr.G.Parts()
	// A batch of slots at a time: the slots' line counts, then the rows'
	// order dates, each in a loop of independent hashes that the
	// processor overlaps; the empty slots are dropped without a branch.
	var slots [permBatch]int64
	var rows [permBatch]LineRow
	for j := lo; j < hi; j += permBatch {
		b := slots[:min(permBatch, hi-j)]
		p.fill(j, b)
		k := 0
		for _, s := range b {
			i, ln := s/7, s%7
			rows[k] = LineRow{g: g, row: i*8 + ln, Order: i, parts: parts}
			if ln < int64(g.LineCount(i)) {
				k++
			}
		}
		for x := range rows[:k] {
			r := &rows[x]
			i := r.Order // the order's index until here
			r.Order, r.date = OrderKey(i), g.orderDate(i)
		}
		for _, r := range rows[:k] {
			f(r)
		}
	}
}

// LocalOrders calls f for the orders whose rank (dense index; see rank)
// modulo Nodes is Node, with all their lineitems: the local-data layout,
// orders and lineitem partitioned by orderkey.
func (fr Fragment) LocalOrders(f func(o Order, lines []Line)) {
	var ls []Line
	n := fr.G.Orders()
	for i := int64(fr.Node); i < n; i += int64(fr.Nodes) {
		o := fr.G.Order(i)
		ls = ls[:0]
		for ln := range fr.G.LineCount(i) {
			ls = append(ls, fr.G.Line(i, ln, o))
		}
		f(o, ls)
	}
}

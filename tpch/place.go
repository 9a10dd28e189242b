package tpch

import "math/bits"

func mul64(a, b uint64) (hi, lo uint64) { return bits.Mul64(a, b) }

// perm is a pseudo-random permutation of [0, n): a balanced Feistel
// network on the smallest even number of bits covering n, with cycle
// walking back into range. Placing the rows whose permuted position falls
// in node k's share of [0, n) on node k puts every row on a pseudo-random
// node with equal fragments, and lets a node enumerate its fragment
// without touching the others' rows.
type perm struct {
	n    uint64
	half uint
	mask uint64
	keys [4]uint64
}

func newPerm(seed uint64, table int, n int64) perm {
	b := uint(bits.Len64(uint64(max(n-1, 1))))
	b += b & 1
	p := perm{n: uint64(n), half: b / 2, mask: 1<<(b/2) - 1}
	for r := range p.keys {
		p.keys[r] = mix(seed ^ uint64(table)<<40 ^ uint64(r)<<32 ^ 0x5eed)
	}
	return p
}

// at returns the row at position j of the permutation.
func (p perm) at(j int64) int64 {
	x := uint64(j)
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
	p := newPerm(fr.G.Seed, tCustomer, n)
	lo, hi := share(n, fr.Node, fr.Nodes)
	for j := lo; j < hi; j++ {
		f(fr.G.Customer(p.at(j)))
	}
}

// Orders calls f for every orders row of the fragment (with its index).
func (fr Fragment) Orders(f func(i int64, o Order)) {
	n := fr.G.Orders()
	p := newPerm(fr.G.Seed, tOrders, n)
	lo, hi := share(n, fr.Node, fr.Nodes)
	for j := lo; j < hi; j++ {
		i := p.at(j)
		f(i, fr.G.Order(i))
	}
}

// Lines calls f for every lineitem of the fragment. Lineitems are placed
// by slot: order i owns slots 7i..7i+6, of which the first LineCount(i)
// hold rows; the slots are permuted and shared out like the other tables
// (each node scans 7/4 slots per row it holds). The order row o passed
// along is the generator's (a scan of lineitem does not see it; plans use
// only the lineitem's own columns).
func (fr Fragment) Lines(f func(l Line)) {
	n := 7 * fr.G.Orders()
	p := newPerm(fr.G.Seed, tLine, n)
	lo, hi := share(n, fr.Node, fr.Nodes)
	for j := lo; j < hi; j++ {
		s := p.at(j)
		i, ln := s/7, int(s%7)
		if ln >= fr.G.LineCount(i) {
			continue
		}
		f(fr.G.Line(i, ln, fr.G.Order(i)))
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

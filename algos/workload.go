package algos

// TupleBytes is the size of a tuple of the synthetic relation R(a, b): two
// 8-byte integers (Liu19 §7.1).
const TupleBytes = 16

// Relation is one node's fragment of the synthetic table R(a, b): Tuples
// tuples whose key a is uniform over 64-bit integers and whose b identifies
// the tuple (node and index). Tuple j is a pure function of (Seed, Node,
// j), so any node can regenerate any fragment, and the fragment is in
// effect a random permutation.
type Relation struct {
	Seed   uint64
	Node   int
	Tuples int64
}

// Tuple returns tuple j of the fragment.
func (r Relation) Tuple(j int64) (a, b uint64) {
	return mix(r.Seed ^ uint64(r.Node)<<48 ^ uint64(j)), uint64(r.Node)<<40 | uint64(j)
}

// mix is SplitMix64's finalizer: a fast bijective hash.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// TupleSum is a tuple's contribution to a multiset checksum: sums of
// TupleSum over two multisets of tuples are equal when the multisets are
// (and differ, with overwhelming probability, when a tuple is lost,
// duplicated or altered), whatever the order.
func TupleSum(a, b uint64) uint64 { return mix(a ^ mix(b)) }

// Tally counts tuples and their checksum.
type Tally struct {
	Tuples uint64
	Sum    uint64
}

// Add adds another tally.
func (t *Tally) Add(o Tally) { t.Tuples += o.Tuples; t.Sum += o.Sum }

// ScatterRelation is Scatter for tuples [from, from+n) of r, in size-only
// mode (Payload false) without the input vector: each tuple's key is
// computed, its group counted and its checksum added in one step, so that
// a size-only run does not write each tuple to memory and read it back.
// It stops, returns and leaves Out exactly as Scatter does after
// r.FillVector(vec[:n*TupleBytes], from) (TestScatterRelationMatchesScatter);
// the simulated CPU work of generating and partitioning the tuples is the
// caller's to charge, the same in both modes. Where Scatter's fast path
// does not apply (see Scatter) it fills a vector of its own and calls
// Scatter; so it does in payload mode (Payload set), which needs the bytes.
func (p *Partitioner) ScatterRelation(r Relation, from int64, n, i int) (next, full int) {
	if i >= n {
		return n, -1
	}
	ng := p.Groups.Len()
	if p.Payload || i < 0 || from < 0 || !p.loadLanes(ng) {
		if len(p.vec) < n*TupleBytes {
			p.vec = make([]byte, n*TupleBytes)
		}
		vec := p.vec[:n*TupleBytes]
		r.FillVector(vec, from)
		return p.Scatter(vec, i)
	}
	base, nb := r.Seed^uint64(r.Node)<<48, uint64(r.Node)<<40
	dv := newDivider(ng)
	if p.Checksum {
		next, full = relationSum(p.lanes, base, nb, uint64(from), i, n, dv)
	} else {
		next, full = relationCount(p.lanes, base, uint64(from), i, n, dv)
	}
	p.storeLanes(ng)
	return next, full
}

// relationSum is scatterSum over tuples from+i ... from+n-1 of a relation
// whose key is mix(base ^ j) and whose b is nb | j (Relation.Tuple).
func relationSum(l *lanes, base, nb, from uint64, i, n int, dv divider) (int, int) {
	off, sum := &l.off, &l.sum
	for ; i < n; i++ {
		j := from + uint64(i)
		a := mix(base ^ j)
		g := dv.of(uint32(a))
		if off[g] > 0 {
			return i, int(g)
		}
		off[g] += TupleBytes
		sum[g] += mix(a ^ mix(nb|j))
	}
	return n, -1
}

// relationCount is relationSum without the checksum.
func relationCount(l *lanes, base, from uint64, i, n int, dv divider) (int, int) {
	off := &l.off
	for ; i < n; i++ {
		g := dv.of(uint32(mix(base ^ (from + uint64(i)))))
		if off[g] > 0 {
			return i, int(g)
		}
		off[g] += TupleBytes
	}
	return n, -1
}

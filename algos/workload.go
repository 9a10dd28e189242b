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

// KeySum is a tuple's contribution to the multiset checksum of a
// size-only run of the synthetic relation (ScatterRelation): its key a.
// Keys identify their tuples (Relation.Tuple's key is a bijection of
// Seed ^ Node<<48 ^ j, distinct for every node below 2^16 and index below
// 2^48), and they are uniform, so sums of KeySum over two multisets of a
// run's tuples are equal when the multisets are and differ, with
// overwhelming probability, when a tuple or a buffer is lost or
// duplicated. Nothing can alter a tuple in size-only mode (no bytes move),
// so TupleSum's second and third hash per tuple buy nothing there; the
// key's hash is needed anyway, for the tuple's destination. Payload mode
// keeps TupleSum, which the receiver recomputes from the bytes.
func KeySum(a, _ uint64) uint64 { return a }

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
// a size-only run does not write each tuple to memory and read it back. It
// stops and returns as Scatter does after r.FillVector(vec[:n*TupleBytes],
// from), and leaves the same fill levels and tuple counts in Out
// (TestScatterRelationMatchesScatter); the simulated CPU work of generating
// and partitioning the tuples is the caller's to charge, the same in both
// modes. In size-only mode a buffer's checksum is KeySum's, not
// TupleSum's. Where Scatter's fast path does not apply (see Scatter) it
// fills a vector of its own and calls Scatter; so it does in payload mode,
// which needs the bytes (and keeps TupleSum, which the receiver checks
// against them).
func (p *Partitioner) ScatterRelation(r Relation, from int64, n, i int) (next, full int) {
	if i >= n {
		return n, -1
	}
	ng := p.Groups.Len()
	if p.Payload {
		if len(p.vec) < n*TupleBytes {
			p.vec = make([]byte, n*TupleBytes)
		}
		vec := p.vec[:n*TupleBytes]
		r.FillVector(vec, from)
		return p.Scatter(vec, i)
	}
	if i < 0 || from < 0 || !p.loadLanes(ng) {
		return p.relationSlow(r, from, n, max(i, 0))
	}
	base := r.Seed ^ uint64(r.Node)<<48
	dv := newDivider(ng)
	switch {
	case p.Checksum && dv.pow2:
		next, full = relationSumMask(p.lanes, base, uint64(from), i, n, dv.mask)
	case p.Checksum:
		next, full = relationSum(p.lanes, base, uint64(from), i, n, dv)
	default:
		next, full = relationCount(p.lanes, base, uint64(from), i, n, dv)
	}
	p.storeLanes(ng)
	return next, full
}

// relationSum is scatterSum over tuples from+i ... from+n-1 of a relation
// whose key is mix(base ^ j) (Relation.Tuple), with KeySum's checksum.
func relationSum(l *lanes, base, from uint64, i, n int, dv divider) (int, int) {
	off, sum := &l.off, &l.sum
	for ; i < n; i++ {
		a := mix(base ^ (from + uint64(i)))
		g := dv.of(uint32(a))
		if off[g] > 0 {
			return i, int(g)
		}
		off[g] += TupleBytes
		sum[g] += a
	}
	return n, -1
}

// relationSumMask is relationSum for a power-of-two number of groups,
// whose group is the key's low bits (mask = groups-1).
func relationSumMask(l *lanes, base, from uint64, i, n int, mask uint64) (int, int) {
	off, sum := &l.off, &l.sum
	for ; i < n; i++ {
		a := mix(base ^ (from + uint64(i)))
		g := uint8(a & mask)
		if off[g] > 0 {
			return i, int(g)
		}
		off[g] += TupleBytes
		sum[g] += a
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

// relationSlow is ScatterRelation's per-tuple loop in size-only mode, for
// what the fast path does not handle (as scatterSlow is Scatter's).
func (p *Partitioner) relationSlow(r Relation, from int64, n, i int) (next, full int) {
	ng := uint32(p.Groups.Len())
	for ; i < n; i++ {
		a, _ := r.Tuple(from + int64(i))
		g := int(uint32(a) % ng)
		b := p.Out[g]
		if b.N+TupleBytes > len(b.Data) {
			return i, g
		}
		b.N += TupleBytes
		b.Tuples++
		if p.Checksum {
			b.Sum += KeySum(a, 0)
		}
	}
	return n, -1
}

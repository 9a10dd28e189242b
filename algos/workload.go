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

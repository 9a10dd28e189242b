package algos

import "encoding/binary"

// Partitioner is the SHUFFLE operator's hot path: it appends 16-byte tuples
// from an input vector to the output buffer of each tuple's transmission
// group (the group of key a). It is plain Go on plain memory, the same on
// every backend; docs/performance.md compares its speed with memcpy.
//
// A Partitioner belongs to one thread.
type Partitioner struct {
	Groups   Groups
	Out      []*Buffer // one per group; each has room for whole tuples
	Payload  bool      // copy tuple bytes (payload mode) or only count them
	Checksum bool      // keep each buffer's multiset checksum (integrity)
}

// Scatter appends the tuples of vec (16 bytes each: a, then b, little-
// endian) from tuple i on. It stops before a tuple whose group's buffer is
// full and returns that tuple's index and the group; when every tuple was
// appended it returns len(vec)/16 and -1.
func (p *Partitioner) Scatter(vec []byte, i int) (next, full int) {
	n := len(vec) / TupleBytes
	ngroups := uint32(p.Groups.Len())
	for ; i < n; i++ {
		t := vec[i*TupleBytes : i*TupleBytes+TupleBytes : i*TupleBytes+TupleBytes]
		a := binary.LittleEndian.Uint64(t)
		bv := binary.LittleEndian.Uint64(t[8:])
		g := int(uint32(a) % ngroups) // Groups.Of, inlined: it runs once per tuple
		b := p.Out[g]
		if b.N+TupleBytes > len(b.Data) {
			return i, g
		}
		if p.Payload {
			d := b.Data[b.N : b.N+TupleBytes : b.N+TupleBytes]
			binary.LittleEndian.PutUint64(d, a)
			binary.LittleEndian.PutUint64(d[8:], bv)
		}
		b.N += TupleBytes
		b.Tuples++
		if p.Checksum {
			b.Sum += TupleSum(a, bv)
		}
	}
	return n, -1
}

// FillVector writes tuples [from, from+k) of r into vec (k*16 bytes), as a
// scan of the fragment would produce them.
func (r Relation) FillVector(vec []byte, from int64) {
	for i := 0; i+TupleBytes <= len(vec); i += TupleBytes {
		a, b := r.Tuple(from + int64(i/TupleBytes))
		binary.LittleEndian.PutUint64(vec[i:], a)
		binary.LittleEndian.PutUint64(vec[i+8:], b)
	}
}

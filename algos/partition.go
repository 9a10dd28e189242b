package algos

import (
	"encoding/binary"
	"math/bits"
	"unsafe"
)

// Partitioner is the SHUFFLE operator's hot path: it appends 16-byte tuples
// from an input vector to the output buffer of each tuple's transmission
// group (the group of key a). It is plain Go on plain memory, the same on
// every backend; docs/performance.md compares its speed with memcpy.
//
// The buffers in Out must not overlap one another or the input vector
// (the same *Buffer twice is allowed, and slower).
//
// A Partitioner belongs to one thread.
type Partitioner struct {
	Groups   Groups
	Out      []*Buffer // one per group; each has room for whole tuples
	Payload  bool      // copy tuple bytes (payload mode) or only count them
	Checksum bool      // keep each buffer's multiset checksum (integrity)

	lanes *lanes // Scatter's scratch, allocated on first use
}

// maxFastGroups is the most groups Scatter's fast path handles: a group
// index fits a uint8, so indexing the lane arrays needs no bounds check.
const maxFastGroups = 256

// lanes is Scatter's per-group state while it runs: where each group's
// buffer starts, how full it is and its checksum. Keeping them in flat
// arrays indexed by a uint8 avoids the *Buffer indirection per tuple.
type lanes struct {
	base [maxFastGroups]unsafe.Pointer // &Out[g].Data[0]
	pos  [maxFastGroups]int            // Out[g].N
	lim  [maxFastGroups]int            // len(Out[g].Data) - TupleBytes: full when pos > lim
	sum  [maxFastGroups]uint64         // Out[g].Sum
	seen [maxFastGroups]*Buffer        // Out[g] already checked distinct from the others
}

// Scatter appends the tuples of vec (16 bytes each: a, then b, little-
// endian) from tuple i on. It stops before a tuple whose group's buffer is
// full and returns that tuple's index and the group; when every tuple was
// appended it returns len(vec)/16 and -1.
//
// The fast path (at most 256 groups, distinct buffers) computes the group
// with a multiply-based remainder that equals Groups.Of for every key,
// and copies tuples without per-tuple bounds or fullness checks: before
// each run of k tuples it checks that every buffer has room for k more.
func (p *Partitioner) Scatter(vec []byte, i int) (next, full int) {
	ng := p.Groups.Len()
	n := len(vec) / TupleBytes
	if i >= n {
		return n, -1
	}
	if ng == 0 || ng > maxFastGroups || i < 0 || len(p.Out) < ng || !p.distinct(ng) {
		return p.scatterSlow(vec, i)
	}
	out := p.Out[:ng]
	for _, b := range out {
		if b.N < 0 || b.N > len(b.Data) {
			return p.scatterSlow(vec, i) // let the reference loop report it
		}
	}
	l := p.lanes
	for g, b := range out {
		l.base[g] = unsafe.Pointer(unsafe.SliceData(b.Data))
		l.pos[g] = b.N
		l.lim[g] = len(b.Data) - TupleBytes
		l.sum[g] = b.Sum
	}
	// Lemire, Kaser and Kurz's fastmod: for 32-bit x and d < 2^32,
	// x % d == hi64((m*x mod 2^64) * d) with m = 2^64/d rounded up.
	d := uint64(ng)
	m := ^uint64(0)/d + 1
	src := unsafe.Pointer(unsafe.SliceData(vec))
	next, full = n, -1
	for i < n {
		// Every buffer has room for k more tuples: they need no checks.
		k := n - i
		for g := range ng {
			r := l.lim[g] - l.pos[g]
			if r < 0 {
				k = 0
				break
			}
			k = min(k, r/TupleBytes+1)
		}
		if k == 0 {
			// Some buffer is full: go on one tuple at a time until a
			// tuple of a full group.
			a := binary.LittleEndian.Uint32((*[4]byte)(unsafe.Add(src, i*TupleBytes))[:])
			hi, _ := bits.Mul64(m*uint64(a), d)
			if g := uint8(hi); l.pos[g] > l.lim[g] {
				next, full = i, int(g)
				break
			}
			k = 1
		}
		switch {
		case p.Payload && p.Checksum:
			scatterCopySum(l, src, i, i+k, m, d)
		case p.Payload:
			scatterCopy(l, src, i, i+k, m, d)
		case p.Checksum:
			scatterSum(l, src, i, i+k, m, d)
		default:
			scatterCount(l, src, i, i+k, m, d)
		}
		i += k
	}
	for g, b := range out {
		b.Tuples += uint64((l.pos[g] - b.N) / TupleBytes)
		b.N = l.pos[g]
		if p.Checksum {
			b.Sum = l.sum[g]
		}
		l.base[g] = nil
	}
	return next, full
}

// distinct reports whether Out[:ng] holds ng distinct non-nil buffers,
// which the fast path needs (it keeps one fill level per group). It
// remembers what it checked, so a call that finds one buffer replaced
// costs O(ng).
func (p *Partitioner) distinct(ng int) bool {
	if p.lanes == nil {
		p.lanes = new(lanes)
	}
	l := p.lanes
	for g, b := range p.Out[:ng] {
		if b == l.seen[g] {
			continue
		}
		if b == nil {
			return false
		}
		for h, o := range p.Out[:ng] {
			if o == b && h != g {
				l.seen[g] = nil
				return false
			}
		}
		l.seen[g] = b
	}
	return true
}

// The four loops below are Scatter's fast path, one per mode, for tuples
// [i, n) of src, whose groups' buffers all have room for them. They use
// unsafe pointer arithmetic so that the loop carries no bounds checks; it
// stays in bounds because src holds at least n tuples and Scatter checked
// that pos[g]+TupleBytes <= len(Data) for every tuple appended to group g.
// A tuple is copied as one 16-byte move. The payload loop, the hottest,
// is unrolled four times (computing four groups before the copies lets
// their multiplies overlap); appends to a group still happen in input
// order.

func scatterCopy(l *lanes, src unsafe.Pointer, i, n int, m, d uint64) {
	pos, base := &l.pos, &l.base
	for ; i+4 <= n; i += 4 {
		t := unsafe.Add(src, i*TupleBytes)
		h0, _ := bits.Mul64(m*uint64(key32(t, 0)), d)
		h1, _ := bits.Mul64(m*uint64(key32(t, 1)), d)
		h2, _ := bits.Mul64(m*uint64(key32(t, 2)), d)
		h3, _ := bits.Mul64(m*uint64(key32(t, 3)), d)
		g := uint8(h0)
		o := pos[g]
		*(*[TupleBytes]byte)(unsafe.Add(base[g], o)) = *(*[TupleBytes]byte)(t)
		pos[g] = o + TupleBytes
		g = uint8(h1)
		o = pos[g]
		*(*[TupleBytes]byte)(unsafe.Add(base[g], o)) = *(*[TupleBytes]byte)(unsafe.Add(t, TupleBytes))
		pos[g] = o + TupleBytes
		g = uint8(h2)
		o = pos[g]
		*(*[TupleBytes]byte)(unsafe.Add(base[g], o)) = *(*[TupleBytes]byte)(unsafe.Add(t, 2*TupleBytes))
		pos[g] = o + TupleBytes
		g = uint8(h3)
		o = pos[g]
		*(*[TupleBytes]byte)(unsafe.Add(base[g], o)) = *(*[TupleBytes]byte)(unsafe.Add(t, 3*TupleBytes))
		pos[g] = o + TupleBytes
	}
	for ; i < n; i++ {
		t := unsafe.Add(src, i*TupleBytes)
		h, _ := bits.Mul64(m*uint64(key32(t, 0)), d)
		g := uint8(h)
		o := pos[g]
		*(*[TupleBytes]byte)(unsafe.Add(base[g], o)) = *(*[TupleBytes]byte)(t)
		pos[g] = o + TupleBytes
	}
}

func scatterCopySum(l *lanes, src unsafe.Pointer, i, n int, m, d uint64) {
	pos, base, sum := &l.pos, &l.base, &l.sum
	for ; i < n; i++ {
		t := unsafe.Add(src, i*TupleBytes)
		a := binary.LittleEndian.Uint64((*[8]byte)(t)[:])
		b := binary.LittleEndian.Uint64((*[8]byte)(unsafe.Add(t, 8))[:])
		h, _ := bits.Mul64(m*uint64(uint32(a)), d)
		g := uint8(h)
		o := pos[g]
		*(*[TupleBytes]byte)(unsafe.Add(base[g], o)) = *(*[TupleBytes]byte)(t)
		pos[g] = o + TupleBytes
		sum[g] += TupleSum(a, b)
	}
}

func scatterSum(l *lanes, src unsafe.Pointer, i, n int, m, d uint64) {
	pos, sum := &l.pos, &l.sum
	for ; i < n; i++ {
		t := unsafe.Add(src, i*TupleBytes)
		a := binary.LittleEndian.Uint64((*[8]byte)(t)[:])
		b := binary.LittleEndian.Uint64((*[8]byte)(unsafe.Add(t, 8))[:])
		h, _ := bits.Mul64(m*uint64(uint32(a)), d)
		g := uint8(h)
		pos[g] += TupleBytes
		sum[g] += TupleSum(a, b)
	}
}

func scatterCount(l *lanes, src unsafe.Pointer, i, n int, m, d uint64) {
	pos := &l.pos
	for ; i < n; i++ {
		h, _ := bits.Mul64(m*uint64(key32(unsafe.Add(src, i*TupleBytes), 0)), d)
		pos[uint8(h)] += TupleBytes
	}
}

// key32 returns the low 32 bits of key a of tuple j after t.
func key32(t unsafe.Pointer, j int) uint32 {
	return binary.LittleEndian.Uint32((*[4]byte)(unsafe.Add(t, j*TupleBytes))[:])
}

// scatterSlow is Scatter's reference loop, for what the fast path does not
// handle (more than 256 groups, a buffer in two groups, bad arguments).
func (p *Partitioner) scatterSlow(vec []byte, i int) (next, full int) {
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

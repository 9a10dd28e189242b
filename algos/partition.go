package algos

import (
	"encoding/binary"
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
	vec   []byte // ScatterRelation's input vector when it needs one
}

// maxFastGroups is the most groups Scatter's fast path handles: a group
// index fits a uint8, so indexing the lane arrays needs no bounds check.
const maxFastGroups = 256

// lanes is Scatter's per-group state while it runs, in flat arrays indexed
// by a uint8 group (no *Buffer indirection per tuple). Group g's next tuple
// goes to last[g]+off[g], where last[g] is the buffer's last whole-tuple
// slot, &Data[len(Data)-16], and off[g] = N - (len(Data)-16) is at most 0
// while the buffer has room for one more tuple. So the fullness check is a
// sign test on the offset the append loads anyway, and the pointer formed
// always lies inside the buffer.
type lanes struct {
	last [maxFastGroups]unsafe.Pointer // &Out[g].Data[len-16]; nil when len < 16 (never written)
	off  [maxFastGroups]int            // Out[g].N - (len(Out[g].Data) - 16), bytes
	sum  [maxFastGroups]uint64         // Out[g].Sum
	seen [maxFastGroups]*Buffer        // Out[g] already checked distinct from the others
}

// Scatter appends the tuples of vec (16 bytes each: a, then b, little-
// endian) from tuple i on. It stops before a tuple whose group's buffer is
// full and returns that tuple's index and the group; when every tuple was
// appended it returns len(vec)/16 and -1.
//
// The fast path (at most 256 groups, distinct buffers) computes the group
// with a multiply-based remainder that equals Groups.Of for every key (in
// payload mode without checksum, a mask when the number of groups is a
// power of two), and copies each tuple as one 16-byte move without bounds
// checks; the only per-tuple check is the sign of the group's offset (see
// lanes), so there is no separate room check per run of tuples.
func (p *Partitioner) Scatter(vec []byte, i int) (next, full int) {
	ng := p.Groups.Len()
	n := len(vec) / TupleBytes
	if i >= n {
		return n, -1
	}
	if i < 0 || !p.loadLanes(ng) {
		return p.scatterSlow(vec, i)
	}
	l := p.lanes
	src := unsafe.Pointer(unsafe.SliceData(vec))
	dv := newDivider(ng)
	switch {
	case p.Payload && p.Checksum:
		next, full = scatterCopySum(l, src, i, n, dv)
	case p.Payload && dv.pow2:
		next, full = scatterCopyMask(l, src, i, n, dv.mask)
	case p.Payload:
		next, full = scatterCopy(l, src, i, n, dv)
	case p.Checksum:
		next, full = scatterSum(l, src, i, n, dv)
	default:
		next, full = scatterCount(l, src, i, n, dv)
	}
	p.storeLanes(ng)
	return next, full
}

// loadLanes readies the fast path's lanes from Out[:ng] and reports
// whether the fast path applies: 1 to 256 groups, ng distinct buffers,
// each fill level within its buffer.
func (p *Partitioner) loadLanes(ng int) bool {
	if ng == 0 || ng > maxFastGroups || len(p.Out) < ng || !p.distinct(ng) {
		return false
	}
	l := p.lanes
	for g, b := range p.Out[:ng] {
		if b.N < 0 || b.N > len(b.Data) {
			clear(l.last[:g])
			return false // let the reference loop report it
		}
		l.off[g] = b.N - (len(b.Data) - TupleBytes)
		if len(b.Data) >= TupleBytes {
			l.last[g] = unsafe.Pointer(&b.Data[len(b.Data)-TupleBytes])
		}
		l.sum[g] = b.Sum
	}
	return true
}

// storeLanes writes the lanes' fill levels and sums back to Out[:ng].
func (p *Partitioner) storeLanes(ng int) {
	l := p.lanes
	for g, b := range p.Out[:ng] {
		nb := l.off[g] + len(b.Data) - TupleBytes
		b.Tuples += uint64((nb - b.N) / TupleBytes)
		b.N = nb
		if p.Checksum {
			b.Sum = l.sum[g]
		}
		l.last[g] = nil
	}
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

// divider computes the group of a key, uint32(a) % d for 1 <= d <= 256,
// without a divide. It is Lemire, Kaser and Kurz's direct remainder with
// F = 40 fraction bits: with c = ceil(2^40/d) = (2^40+e)/d, 0 <= e < d,
// and x = q*d + r < 2^32, (c*x) mod 2^40 = r*2^40/d + x*e/d (as x*e < 2^40),
// so ((c*x) mod 2^40) * d / 2^40 = r + x*e/2^40, whose floor is r; the
// product stays below 2^48. Every step is a 64-bit multiply or mask, free
// of the register constraints of a 128-bit multiply.
type divider struct {
	c    uint64 // ceil(2^40/d)
	d    uint64
	pow2 bool   // d is a power of two: the group is x & mask
	mask uint64 // d-1
}

// divBits is the divider's fraction bits, F above.
const divBits = 40

// newDivider returns the divider for ng groups, 1 <= ng <= 256.
func newDivider(ng int) divider {
	d := uint64(ng)
	return divider{c: (1<<divBits-1)/d + 1, d: d, pow2: d&(d-1) == 0, mask: d - 1}
}

// of returns x % d.
func (v divider) of(x uint32) uint8 {
	return uint8(((v.c * uint64(x)) & (1<<divBits - 1)) * v.d >> divBits)
}

// The loops below are Scatter's fast path, one per mode, for tuples [i, n)
// of src. Each returns where it stopped as Scatter does. They use unsafe
// pointer arithmetic so that they carry no bounds checks; they stay in
// bounds because src holds at least n tuples and a tuple goes to group g
// only when off[g] <= 0, i.e. last[g]+off[g] is a whole slot of the buffer.
// A tuple is copied as one 16-byte move. The payload loops without
// checksum, the hottest, are unrolled four times (computing four groups
// before the copies lets their multiplies overlap); appends still happen
// in input order, and a stop leaves the tuples before it appended and none
// after. scatterCopyMask and scatterCopy differ only in how they compute a
// group; they are written out twice on purpose: with the append as a
// shared inlined helper the loops took 5% more instructions (callgrind,
// BenchmarkScatterInCache), and a type parameter's method would not be
// inlined at all.

func scatterCopyMask(l *lanes, src unsafe.Pointer, i, n int, mask uint64) (int, int) {
	off, last := &l.off, &l.last
	for ; i+4 <= n; i += 4 {
		t := unsafe.Add(src, i*TupleBytes)
		g0 := uint8(uint64(key32(t, 0)) & mask)
		g1 := uint8(uint64(key32(t, 1)) & mask)
		g2 := uint8(uint64(key32(t, 2)) & mask)
		g3 := uint8(uint64(key32(t, 3)) & mask)
		o := off[g0]
		if o > 0 {
			return i, int(g0)
		}
		*(*[TupleBytes]byte)(unsafe.Add(last[g0], o)) = *(*[TupleBytes]byte)(t)
		off[g0] = o + TupleBytes
		o = off[g1]
		if o > 0 {
			return i + 1, int(g1)
		}
		*(*[TupleBytes]byte)(unsafe.Add(last[g1], o)) = *(*[TupleBytes]byte)(unsafe.Add(t, TupleBytes))
		off[g1] = o + TupleBytes
		o = off[g2]
		if o > 0 {
			return i + 2, int(g2)
		}
		*(*[TupleBytes]byte)(unsafe.Add(last[g2], o)) = *(*[TupleBytes]byte)(unsafe.Add(t, 2*TupleBytes))
		off[g2] = o + TupleBytes
		o = off[g3]
		if o > 0 {
			return i + 3, int(g3)
		}
		*(*[TupleBytes]byte)(unsafe.Add(last[g3], o)) = *(*[TupleBytes]byte)(unsafe.Add(t, 3*TupleBytes))
		off[g3] = o + TupleBytes
	}
	for ; i < n; i++ {
		t := unsafe.Add(src, i*TupleBytes)
		g := uint8(uint64(key32(t, 0)) & mask)
		o := off[g]
		if o > 0 {
			return i, int(g)
		}
		*(*[TupleBytes]byte)(unsafe.Add(last[g], o)) = *(*[TupleBytes]byte)(t)
		off[g] = o + TupleBytes
	}
	return n, -1
}

func scatterCopy(l *lanes, src unsafe.Pointer, i, n int, dv divider) (int, int) {
	off, last := &l.off, &l.last
	for ; i+4 <= n; i += 4 {
		t := unsafe.Add(src, i*TupleBytes)
		g0 := dv.of(key32(t, 0))
		g1 := dv.of(key32(t, 1))
		g2 := dv.of(key32(t, 2))
		g3 := dv.of(key32(t, 3))
		o := off[g0]
		if o > 0 {
			return i, int(g0)
		}
		*(*[TupleBytes]byte)(unsafe.Add(last[g0], o)) = *(*[TupleBytes]byte)(t)
		off[g0] = o + TupleBytes
		o = off[g1]
		if o > 0 {
			return i + 1, int(g1)
		}
		*(*[TupleBytes]byte)(unsafe.Add(last[g1], o)) = *(*[TupleBytes]byte)(unsafe.Add(t, TupleBytes))
		off[g1] = o + TupleBytes
		o = off[g2]
		if o > 0 {
			return i + 2, int(g2)
		}
		*(*[TupleBytes]byte)(unsafe.Add(last[g2], o)) = *(*[TupleBytes]byte)(unsafe.Add(t, 2*TupleBytes))
		off[g2] = o + TupleBytes
		o = off[g3]
		if o > 0 {
			return i + 3, int(g3)
		}
		*(*[TupleBytes]byte)(unsafe.Add(last[g3], o)) = *(*[TupleBytes]byte)(unsafe.Add(t, 3*TupleBytes))
		off[g3] = o + TupleBytes
	}
	for ; i < n; i++ {
		t := unsafe.Add(src, i*TupleBytes)
		g := dv.of(key32(t, 0))
		o := off[g]
		if o > 0 {
			return i, int(g)
		}
		*(*[TupleBytes]byte)(unsafe.Add(last[g], o)) = *(*[TupleBytes]byte)(t)
		off[g] = o + TupleBytes
	}
	return n, -1
}

func scatterCopySum(l *lanes, src unsafe.Pointer, i, n int, dv divider) (int, int) {
	off, last, sum := &l.off, &l.last, &l.sum
	for ; i < n; i++ {
		t := unsafe.Add(src, i*TupleBytes)
		a := binary.LittleEndian.Uint64((*[8]byte)(t)[:])
		b := binary.LittleEndian.Uint64((*[8]byte)(unsafe.Add(t, 8))[:])
		g := dv.of(uint32(a))
		o := off[g]
		if o > 0 {
			return i, int(g)
		}
		*(*[TupleBytes]byte)(unsafe.Add(last[g], o)) = *(*[TupleBytes]byte)(t)
		off[g] = o + TupleBytes
		sum[g] += TupleSum(a, b)
	}
	return n, -1
}

func scatterSum(l *lanes, src unsafe.Pointer, i, n int, dv divider) (int, int) {
	off, sum := &l.off, &l.sum
	for ; i < n; i++ {
		t := unsafe.Add(src, i*TupleBytes)
		a := binary.LittleEndian.Uint64((*[8]byte)(t)[:])
		b := binary.LittleEndian.Uint64((*[8]byte)(unsafe.Add(t, 8))[:])
		g := dv.of(uint32(a))
		if off[g] > 0 {
			return i, int(g)
		}
		off[g] += TupleBytes
		sum[g] += TupleSum(a, b)
	}
	return n, -1
}

func scatterCount(l *lanes, src unsafe.Pointer, i, n int, dv divider) (int, int) {
	off := &l.off
	for ; i < n; i++ {
		g := dv.of(key32(unsafe.Add(src, i*TupleBytes), 0))
		if off[g] > 0 {
			return i, int(g)
		}
		off[g] += TupleBytes
	}
	return n, -1
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

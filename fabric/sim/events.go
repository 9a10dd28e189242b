package sim

import (
	"fmt"
	"math/bits"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// handler is an event target. arg and p are the event's payload; a handler
// is typically a long-lived model object (a NIC, a QP, a thread), so
// scheduling an event allocates nothing.
type handler interface {
	handle(arg uint64, p *packet)
	// kind is the handler's type as the trace hash knows it (kindOf); a
	// method rather than a type switch, since every event asks it.
	kind() uint8
}

// event is one fired (or pending) event. Events fire in (at, seq) order;
// seq is the scheduling order, so simultaneous events are FIFO.
type event struct {
	at  fabric.Time
	seq uint64
	h   handler
	arg uint64
	p   *packet
}

// Queue layout: the queue orders small keys, and the payloads (handler,
// argument, packet) wait in a slab, in a slot named by the key. Moving
// 16-byte keys instead of 48-byte events is cheaper, and the order is
// exactly that of (at, seq).
//
// An RC queue pair may hold a pending event of its own (its ACK timer),
// so the slots must outnumber the largest cluster's queue pairs: 4096
// nodes in an all-to-all have 16.8 M, which 24 bits did not hold.
const (
	slotBits = 27 // up to 134 M pending events (about 6 GB of them)
	slotMask = 1<<slotBits - 1
	maxSeq   = 1<<(64-slotBits) - 1 // about 1.4 x 10^11 scheduled events per cluster
)

// evKey is a heap entry: the event's time, and its sequence number in the
// high bits of key with its slab slot in the low bits. Sequence numbers
// are unique, so comparing key compares seq.
type evKey struct {
	at  fabric.Time
	key uint64
}

func (a evKey) before(b evKey) bool {
	return a.at < b.at || (a.at == b.at && a.key < b.key)
}

// evBody is a pending event's payload.
type evBody struct {
	h   handler
	arg uint64
	p   *packet
}

// eventQueue is a calendar queue: the near future is a ring of short
// time buckets, each kept sorted, with a bitmap of the non-empty ones;
// events beyond the ring's window wait in a 4-ary heap (far). Nearly every
// event of the network model lands a few nanoseconds to a microsecond
// ahead, so pushing is an append (or a short insertion) and popping takes
// the head of the first non-empty bucket, instead of sifting through a
// heap. The order is exactly (at, seq) either way: the earliest event is
// the smaller of the first bucket's head and the far heap's top.
//
// The ring covers buckets base .. base+len(ring)-1, where base is the
// bucket of the last popped event; time never goes back, so every event in
// the ring is in that window, and scanning the bitmap from base's position
// (wrapping around) meets them in time order.
type eventQueue struct {
	ring  []bucket // allocated on first use
	bits  []uint64 // non-empty buckets
	shift uint     // a bucket spans 2^shift ps
	mask  int64    // len(ring)-1
	base  int64    // bucket number of the last popped event
	nr    int      // events in the ring
	far   []evKey  // 4-ary min-heap of the other events
	keys  []evKey  // every bucket's first bucketCap entries (newRing)

	body []evBody
	free []uint32 // free slots of body
	seq  uint64   // last sequence number handed out (also used by timers)

	// The earliest event, once found and until the queue changes.
	minOK   bool
	minKey  evKey
	minRing int // its bucket, or -1 for the far heap's top
}

const (
	bucketBits = 13 // by default a bucket spans 2^13 ps (8.2 ns)
	ringBits   = 11 // and there are 2048 of them: a window of 16.8 us
	bucketCap  = 8  // initial room per bucket, from one shared allocation
)

// scale sizes the ring for a cluster of the given size, before the first
// push: events come about nodes times as often, so from 32 nodes on the
// buckets get narrower (keeping about as few events in each, as inserting
// into a crowded bucket costs) and more numerous (keeping the window).
func (q *eventQueue) scale(nodes int) {
	extra := uint(0)
	for n := 16; n < nodes && extra < 6; n *= 2 {
		extra++
	}
	q.shift, q.mask = bucketBits-extra, 1<<(ringBits+extra)-1
}

// newRing allocates the ring, with every bucket's first bucketCap entries
// carved from one array (pointer-free, so the GC does not scan it): a
// cluster's first events cost no allocation per bucket.
func (q *eventQueue) newRing() {
	if q.shift == 0 {
		q.scale(1)
	}
	size := int(q.mask + 1)
	q.ring = make([]bucket, size)
	q.bits = make([]uint64, size/64)
	q.keys = make([]evKey, size*bucketCap)
	for i := range q.ring {
		q.ring[i].k = q.carved(i)
	}
}

// carved is bucket i's share of keys, empty.
func (q *eventQueue) carved(i int) []evKey {
	return q.keys[i*bucketCap : i*bucketCap : (i+1)*bucketCap]
}

// bucket holds the ring's events of one time slice, sorted, from head on.
type bucket struct {
	k    []evKey
	head int
}

func (q *eventQueue) len() int { return q.nr + len(q.far) }

func (q *eventQueue) push(at fabric.Time, h handler, arg uint64, p *packet) {
	q.seq++
	if q.seq > maxSeq {
		panic("sim: event sequence numbers exhausted")
	}
	var slot uint32
	if n := len(q.free); n > 0 {
		slot = q.free[n-1]
		q.free = q.free[:n-1]
		q.body[slot] = evBody{h, arg, p}
	} else {
		if len(q.body) > slotMask {
			panic(fmt.Sprintf("sim: more than %d events pending", slotMask+1))
		}
		slot = uint32(len(q.body))
		q.body = append(q.body, evBody{h, arg, p})
	}
	k := evKey{at: at, key: q.seq<<slotBits | uint64(slot)}
	// The earliest event stays the earliest unless k comes before it: k
	// then lands behind it in its bucket, or in a later one, or in the far
	// heap below its top.
	if q.minOK && k.before(q.minKey) {
		q.minOK = false
	}
	if q.ring == nil {
		q.newRing()
	}
	b := int64(at) >> q.shift
	if at < 0 || uint64(b-q.base) > uint64(q.mask) {
		q.far = append(q.far, k)
		q.up(len(q.far) - 1)
		return
	}
	i := int(b & q.mask)
	bk := &q.ring[i]
	bk.k = append(bk.k, k)
	for j := len(bk.k) - 1; j > bk.head && k.before(bk.k[j-1]); j-- { // keep it sorted
		bk.k[j], bk.k[j-1] = bk.k[j-1], k
	}
	if len(bk.k) == 1 { // it was empty (take empties a bucket to length 0)
		q.bits[i>>6] |= 1 << (i & 63)
	}
	q.nr++
}

// findMin finds the earliest event; the queue must not be empty.
func (q *eventQueue) findMin() {
	q.minOK, q.minRing = true, -1
	if q.nr > 0 {
		i := q.nextBucket()
		b := &q.ring[i]
		if k := b.k[b.head]; len(q.far) == 0 || k.before(q.far[0]) {
			q.minKey, q.minRing = k, i
			return
		}
	}
	q.minKey = q.far[0]
}

// nextBucket is the first non-empty bucket from base on, wrapping around;
// the ring must not be empty.
func (q *eventQueue) nextBucket() int {
	start := int(q.base & q.mask)
	w := start >> 6
	if m := q.bits[w] &^ (1<<(start&63) - 1); m != 0 {
		return w<<6 | bits.TrailingZeros64(m)
	}
	for n := 1; n <= len(q.bits); n++ {
		j := (w + n) % len(q.bits)
		if m := q.bits[j]; m != 0 {
			return j<<6 | bits.TrailingZeros64(m)
		}
	}
	panic("sim: event ring inconsistent")
}

// min returns the earliest event's key; ok is false when the queue is
// empty. The event's sequence number is k.key>>slotBits.
func (q *eventQueue) min() (k evKey, ok bool) {
	if !q.minOK {
		if q.nr+len(q.far) == 0 {
			return evKey{}, false
		}
		q.findMin()
	}
	return q.minKey, true
}

// peek returns the earliest event's time; ok is false when empty.
func (q *eventQueue) peek() (fabric.Time, bool) {
	k, ok := q.min()
	return k.at, ok
}

// take removes the earliest event and returns its key and payload; the
// queue must not be empty.
func (q *eventQueue) take() (evKey, evBody) {
	if !q.minOK {
		q.findMin()
	}
	top := q.minKey
	if i := q.minRing; i >= 0 {
		b := &q.ring[i]
		b.head++
		q.nr--
		q.minOK = false
		if b.head == len(b.k) {
			b.k, b.head = b.k[:0], 0
			if cap(b.k) > bucketCap {
				// It outgrew its share of keys (a burst of events in
				// one time slice, such as a cluster's set-up): it goes
				// back to it, so that the burst's memory is not held
				// for the rest of the run (docs/performance.md,
				// "Scale").
				b.k = q.carved(i)
			}
			q.bits[i>>6] &^= 1 << (i & 63)
		} else if next := b.k[b.head]; len(q.far) == 0 || next.before(q.far[0]) {
			// Bucket i is the ring's first (it holds the event just
			// taken), so its new head is the ring's earliest event.
			q.minOK, q.minKey = true, next
		}
	} else {
		h := q.far
		n := len(h) - 1
		h[0] = h[n]
		q.far = h[:n]
		if n > 0 {
			q.down(0)
		}
		q.minOK = false
	}
	q.base = int64(top.at) >> q.shift
	slot := uint32(top.key & slotMask)
	// The slot keeps its stale payload until it is reused: clearing it
	// would cost a write barrier per event while the GC runs, and what it
	// references (a packet of the pool, a model object) belongs to this
	// cluster anyway.
	q.free = append(q.free, slot)
	return top, q.body[slot]
}

// pop removes and returns the earliest event; the queue must not be empty.
func (q *eventQueue) pop() event {
	k, b := q.take()
	return event{at: k.at, seq: k.key >> slotBits, h: b.h, arg: b.arg, p: b.p}
}

// each calls fn for every pending event, in no particular order (tests
// inspect the queue with it).
func (q *eventQueue) each(fn func(at fabric.Time, h handler, arg uint64)) {
	visit := func(k evKey) {
		b := &q.body[k.key&slotMask]
		fn(k.at, b.h, b.arg)
	}
	for _, k := range q.far {
		visit(k)
	}
	for w, m := range q.bits {
		for ; m != 0; m &= m - 1 {
			b := &q.ring[w<<6|bits.TrailingZeros64(m)]
			for _, k := range b.k[b.head:] {
				visit(k)
			}
		}
	}
}

func (q *eventQueue) up(i int) {
	h := q.far
	e := h[i]
	for i > 0 {
		p := (i - 1) / 4
		if !e.before(h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = e
}

func (q *eventQueue) down(i int) {
	h := q.far
	n := len(h)
	e := h[i]
	for {
		c := 4*i + 1
		if c >= n {
			break
		}
		m := c
		end := min(c+4, n)
		for j := c + 1; j < end; j++ {
			if h[j].before(h[m]) {
				m = j
			}
		}
		if !h[m].before(e) {
			break
		}
		h[i] = h[m]
		i = m
	}
	h[i] = e
}

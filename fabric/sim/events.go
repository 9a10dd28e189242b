package sim

import (
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// handler is an event target. arg and p are the event's payload; a handler
// is typically a long-lived model object (a NIC, a QP, a thread), so
// scheduling an event allocates nothing.
type handler interface {
	handle(arg uint64, p *packet)
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

// Queue layout: the heap orders small keys, and the payloads (handler,
// argument, packet) wait in a slab, in a slot named by the key. Moving
// 16-byte keys instead of 48-byte events makes sifting about a third
// cheaper, and the order is exactly that of (at, seq).
const (
	slotBits = 24 // up to 16 M pending events
	slotMask = 1<<slotBits - 1
	maxSeq   = 1<<(64-slotBits) - 1 // about 10^12 scheduled events per cluster
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

// eventQueue is a 4-ary min-heap of event keys with a slab of payloads.
type eventQueue struct {
	h    []evKey
	body []evBody
	free []uint32 // free slots of body
	seq  uint64   // last sequence number handed out (also used by timers)
}

func (q *eventQueue) len() int { return len(q.h) }

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
	q.h = append(q.h, evKey{at: at, key: q.seq<<slotBits | uint64(slot)})
	q.up(len(q.h) - 1)
}

// peek returns the earliest event's time; ok is false when empty.
func (q *eventQueue) peek() (fabric.Time, bool) {
	if len(q.h) == 0 {
		return 0, false
	}
	return q.h[0].at, true
}

// peekKey returns the earliest event's time and sequence number; ok is
// false when empty.
func (q *eventQueue) peekKey() (at fabric.Time, seq uint64, ok bool) {
	if len(q.h) == 0 {
		return 0, 0, false
	}
	return q.h[0].at, q.h[0].key >> slotBits, true
}

// pop removes and returns the earliest event; the queue must not be empty.
func (q *eventQueue) pop() event {
	h := q.h
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	q.h = h[:n]
	if n > 0 {
		q.down(0)
	}
	slot := uint32(top.key & slotMask)
	b := &q.body[slot]
	ev := event{at: top.at, seq: top.key >> slotBits, h: b.h, arg: b.arg, p: b.p}
	*b = evBody{} // no lingering references
	q.free = append(q.free, slot)
	return ev
}

// each calls fn for every pending event, in no particular order (tests
// inspect the queue with it).
func (q *eventQueue) each(fn func(at fabric.Time, h handler, arg uint64)) {
	for _, k := range q.h {
		b := &q.body[k.key&slotMask]
		fn(k.at, b.h, b.arg)
	}
}

func (q *eventQueue) up(i int) {
	h := q.h
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
	h := q.h
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

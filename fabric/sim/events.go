package sim

import "github.com/rdmashuffle/rdmashuffle/fabric"

// handler is an event target. arg and p are the event's payload; a handler
// is typically a long-lived model object (a NIC, a QP, a thread), so
// scheduling an event allocates nothing.
type handler interface {
	handle(arg uint64, p *packet)
}

// event is one entry of the queue. Events fire in (at, seq) order; seq is
// the scheduling order, so simultaneous events are FIFO.
type event struct {
	at  fabric.Time
	seq uint64
	h   handler
	arg uint64
	p   *packet
}

func (a *event) before(b *event) bool {
	return a.at < b.at || (a.at == b.at && a.seq < b.seq)
}

// eventQueue is a 4-ary min-heap of events stored by value.
type eventQueue struct {
	h   []event
	seq uint64
}

func (q *eventQueue) len() int { return len(q.h) }

func (q *eventQueue) push(at fabric.Time, h handler, arg uint64, p *packet) {
	q.seq++
	q.h = append(q.h, event{at: at, seq: q.seq, h: h, arg: arg, p: p})
	q.up(len(q.h) - 1)
}

// peek returns the earliest event's time; ok is false when empty.
func (q *eventQueue) peek() (fabric.Time, bool) {
	if len(q.h) == 0 {
		return 0, false
	}
	return q.h[0].at, true
}

// peekEvent returns the earliest event, or nil.
func (q *eventQueue) peekEvent() *event {
	if len(q.h) == 0 {
		return nil
	}
	return &q.h[0]
}

func (q *eventQueue) pop() event {
	h := q.h
	top := h[0]
	n := len(h) - 1
	h[0] = h[n]
	h[n] = event{}
	q.h = h[:n]
	if n > 0 {
		q.down(0)
	}
	return top
}

func (q *eventQueue) up(i int) {
	h := q.h
	e := h[i]
	for i > 0 {
		p := (i - 1) / 4
		if !e.before(&h[p]) {
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
		end := c + 4
		if end > n {
			end = n
		}
		for j := c + 1; j < end; j++ {
			if h[j].before(&h[m]) {
				m = j
			}
		}
		if !h[m].before(&e) {
			break
		}
		h[i] = h[m]
		i = m
	}
	h[i] = e
}

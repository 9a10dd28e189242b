//go:build ibverbs

package ibv

import (
	"sync/atomic"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// wqEntry is what the backend remembers about one posted work request: the
// caller's wr_id, the opcode and the length. The hardware only ever sees the
// request's sequence number as its wr_id, so a completion (which, when it
// failed, carries no valid opcode or length: ibv_poll_cq(3)) is reported
// with the caller's values.
type wqEntry struct {
	id     uint64
	op     fabric.Opcode
	length uint32
}

// wqRing is the slot accounting of one work queue (send or receive) of a
// queue pair, enforcing the depth the caller requested (providers round
// depths up; the contract promises the requested ones).
//
// Requests get consecutive sequence numbers. A slot is free again once a
// completion with a later or equal sequence number has been handed to the
// caller by Poll (for unsignaled sends: a later signaled one), exactly as
// the contract and libibverbs providers do.
//
// Concurrency: one goroutine posts (tail), one polls (free); free is atomic
// so that the poster sees released slots, tail so that the poller can check
// that a sequence number was posted.
type wqRing struct {
	depth uint64
	tail  atomic.Uint64 // next sequence number
	free  atomic.Uint64 // every sequence number below free is released
	ents  []wqEntry
}

func newWQRing(depth int) *wqRing {
	return &wqRing{depth: uint64(depth), ents: make([]wqEntry, depth)}
}

// room is the number of requests that can be posted now.
func (r *wqRing) room() int {
	return int(r.depth - (r.tail.Load() - r.free.Load()))
}

// stage records e as the request with sequence number seq, which must be
// in tail..tail+room()-1; it becomes visible with publish.
func (r *wqRing) stage(seq uint64, e wqEntry) {
	r.ents[seq%r.depth] = e
}

// publish makes the staged requests below tail visible (before they are
// handed to the hardware) and retract takes back the ones the provider
// did not accept.
func (r *wqRing) publish(tail uint64) { r.tail.Store(tail) }
func (r *wqRing) retract(tail uint64) { r.tail.Store(tail) }

// lookup returns the entry of a completed request and false for a sequence
// number that is not outstanding (a stale completion of a queue pair that
// was reset since).
func (r *wqRing) lookup(seq uint64) (wqEntry, bool) {
	if seq < r.free.Load() || seq >= r.tail.Load() {
		return wqEntry{}, false
	}
	return r.ents[seq%r.depth], true
}

// release frees every slot before upTo.
func (r *wqRing) release(upTo uint64) {
	for {
		f := r.free.Load()
		if upTo <= f || r.free.CompareAndSwap(f, upTo) {
			return
		}
	}
}

// reset discards every outstanding request (RESET and Destroy: the queue
// is emptied without completions). Sequence numbers keep growing, so a
// stale completion can never be taken for a new request.
func (r *wqRing) reset() { r.release(r.tail.Load()) }

// staged is a completion taken from the hardware queue and not yet handed
// to the caller, with the slots that handing it over releases.
type staged struct {
	wc   fabric.WC
	ring *wqRing
	upTo uint64
}

// cqStage gives a completion queue the contract's exact depth. The
// hardware queue is created larger than the requested depth; every Poll that
// finds fewer staged completions than asked for drains the hardware queue
// completely into this ring. Between two drains the number of completions
// held (staged plus in hardware) only grows, so comparing it with the depth
// at each drain detects every overrun the contract defines: completions that
// do not fit are dropped (their slots released, as the simulator does, so
// that the queue pair is not wedged) and ErrCQOverrun is sticky.
type cqStage struct {
	buf     []staged
	head, n int
	overrun bool
	lost    int64
}

func newCQStage(depth int) *cqStage { return &cqStage{buf: make([]staged, depth)} }

// push stages a completion, or counts it lost when the queue is full.
func (s *cqStage) push(e staged) {
	if s.n == len(s.buf) {
		s.overrun = true
		s.lost++
		if e.ring != nil {
			e.ring.release(e.upTo)
		}
		return
	}
	s.buf[(s.head+s.n)%len(s.buf)] = e
	s.n++
}

// pop moves up to len(wcs) staged completions into wcs, releasing their
// slots, and returns how many.
func (s *cqStage) pop(wcs []fabric.WC) int {
	k := min(len(wcs), s.n)
	for i := 0; i < k; i++ {
		e := &s.buf[s.head]
		wcs[i] = e.wc
		if e.ring != nil {
			e.ring.release(e.upTo)
		}
		*e = staged{}
		s.head++
		if s.head == len(s.buf) {
			s.head = 0
		}
	}
	s.n -= k
	return k
}

// purge drops the staged completions of the given rings (a queue pair
// reset or destroyed: providers clean its entries from the CQ too).
func (s *cqStage) purge(rings ...*wqRing) {
	keep := 0
	for i := 0; i < s.n; i++ {
		e := s.buf[(s.head+i)%len(s.buf)]
		drop := false
		for _, r := range rings {
			if e.ring == r {
				drop = true
			}
		}
		if !drop {
			s.buf[(s.head+keep)%len(s.buf)] = e
			keep++
		}
	}
	for i := keep; i < s.n; i++ {
		s.buf[(s.head+i)%len(s.buf)] = staged{}
	}
	s.n = keep
}

// hwCQDepth is the size of the hardware queue behind a CQ of the given
// depth: room for the requested depth plus as many again (at least 64), so
// that software sees an overrun long before the hardware queue overflows
// (which would put it in an error state), capped at the device's max_cqe.
func hwCQDepth(depth, maxCQE int) int {
	hw := depth + max(depth, 64)
	if maxCQE > 0 && hw > maxCQE {
		hw = maxCQE
	}
	return hw
}

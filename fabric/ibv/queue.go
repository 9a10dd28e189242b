//go:build ibverbs

package ibv

import (
	"sync"
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

// srqBit marks the wr_id of a receive posted to a shared receive queue
// (with recvBit): its low 32 bits are the receive's slot in the queue's
// srqTable, bits 32..61 the slot's generation.
const srqBit = 1 << 62

const srqGenMask = 1<<30 - 1

// srqTable is the slot accounting of a shared receive queue. Its receives
// are taken in posting order, but by any of its queue pairs, whose
// completions may go to different completion queues polled by different
// threads: slots are released one by one, in any order, each when the
// completion of the receive it held is handed to the caller (or dropped).
// A slot's generation grows with every use, so a completion can never be
// taken for a later receive of the same slot.
//
// Concurrency: mu guards everything; posters and pollers take it.
type srqTable struct {
	mu   sync.Mutex
	ents []wqEntry
	gen  []uint32
	busy []bool
	free []uint32 // free slots, a stack
}

func newSRQTable(depth int) *srqTable {
	t := &srqTable{ents: make([]wqEntry, depth), gen: make([]uint32, depth), busy: make([]bool, depth), free: make([]uint32, depth)}
	for i := range t.free {
		t.free[i] = uint32(depth - 1 - i) // slot 0 on top
	}
	return t
}

// room is the number of receives that can be posted now (mu held).
func (t *srqTable) room() int { return len(t.free) }

// reserve takes a free slot for e and returns the receive's tag (srqBit,
// generation, slot) to post as its wr_id; mu held, room() > 0.
func (t *srqTable) reserve(e wqEntry) uint64 {
	i := t.free[len(t.free)-1]
	t.free = t.free[:len(t.free)-1]
	t.gen[i] = (t.gen[i] + 1) & srqGenMask
	t.ents[i], t.busy[i] = e, true
	return srqBit | uint64(t.gen[i])<<32 | uint64(i)
}

// slotOf returns the slot a tag names while that receive holds it (mu
// held).
func (t *srqTable) slotOf(tag uint64) (uint32, bool) {
	i := uint32(tag)
	if int64(i) >= int64(len(t.ents)) || !t.busy[i] || uint64(t.gen[i]) != tag>>32&srqGenMask {
		return 0, false
	}
	return i, true
}

// lookup returns the entry of a posted receive, false for a tag whose
// receive is no longer outstanding.
func (t *srqTable) lookup(tag uint64) (wqEntry, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	i, ok := t.slotOf(tag)
	if !ok {
		return wqEntry{}, false
	}
	return t.ents[i], true
}

// release frees the slot of the receive tag names (once: a second call
// does nothing).
func (t *srqTable) release(tag uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.releaseLocked(tag)
}

// releaseLocked is release with mu held (also for receives the provider
// did not accept).
func (t *srqTable) releaseLocked(tag uint64) {
	if i, ok := t.slotOf(tag); ok {
		t.busy[i], t.ents[i] = false, wqEntry{}
		t.free = append(t.free, i)
	}
}

// staged is a completion taken from the hardware queue and not yet handed
// to the caller, with the slots that handing it over releases: those of a
// work queue before upTo, or one slot of a shared receive queue.
type staged struct {
	wc   fabric.WC
	ring *wqRing
	upTo uint64
	srq  *srqTable
	tag  uint64
}

// release frees the slots e holds.
func (e *staged) release() {
	if e.ring != nil {
		e.ring.release(e.upTo)
	}
	if e.srq != nil {
		e.srq.release(e.tag)
	}
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
		e.release()
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
		e.release()
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
	s.purgeIf(func(e *staged) bool {
		for _, r := range rings {
			if e.ring == r {
				return true
			}
		}
		return false
	})
}

// purgeShared drops the staged receive completions of queue pair qpn that
// took their receives from a shared queue, freeing those slots (providers
// return a purged completion's receive slot to its shared queue).
func (s *cqStage) purgeShared(qpn uint32) {
	s.purgeIf(func(e *staged) bool {
		if e.srq == nil || e.wc.QPN != qpn {
			return false
		}
		e.srq.release(e.tag)
		return true
	})
}

func (s *cqStage) purgeIf(drop func(*staged) bool) {
	keep := 0
	for i := 0; i < s.n; i++ {
		e := s.buf[(s.head+i)%len(s.buf)]
		if !drop(&e) {
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

package loopback

import (
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// srq implements fabric.SRQ: a pool of receives that the queue pairs
// attached to it draw from, in the order their messages are delivered. A
// queue pair that takes a receive moves it into its own receive ring
// (give), so completion, flush and release are the queue pair's as without
// a shared queue. Every field is guarded by the NIC's mu.
type srq struct {
	n          *nic
	pd         *pd
	id         int
	maxWR      int
	ring       []rqe  // the pool: entries [head, tail)
	head, tail uint64 // counters that only grow
	out        int    // receives posted and not yet released by polling
	limit      int    // armed limit, 0 when disarmed
	fired      bool   // the limit event fired and LimitReached has not consumed it
	// Its users: attached queue pairs.
	fabric.Lifecycle
	xrcd *xrcd // an XRC SRQ's domain, or nil
	cq   *cq   // an XRC SRQ's completion queue
}

var _ fabric.SRQ = (*srq)(nil)

func (s *srq) at(i uint64) *rqe { return &s.ring[i%uint64(len(s.ring))] }
func (s *srq) String() string   { return fmt.Sprintf("SRQ %d on node %d", s.id, s.n.id) }
func (s *srq) Number() uint32   { return uint32(s.id) }
func (s *srq) MaxWR() int       { return s.maxWR }
func (s *srq) arm(limit int) error {
	if err := fabric.CheckSRQLimit(s, limit, s.maxWR); err != nil {
		return err
	}
	s.limit = limit
	return nil
}

func (p *pd) CreateSRQ(init fabric.SRQInit) (fabric.SRQ, error) {
	n := p.n
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := p.Alive(); err != nil {
		return nil, err
	}
	if err := fabric.CheckSRQInit(init, (&device{n: n}).Attr().MaxQPWR, "", "the loopback device"); err != nil {
		return nil, err
	}
	d, xcq, err := fabric.XRCSRQObjects(init, p.domain, p.localCQ)
	if err != nil {
		return nil, err
	}
	s := &srq{n: n, pd: p, id: n.nextSRQ + 1, maxWR: init.MaxWR, ring: make([]rqe, init.MaxWR), xrcd: d, cq: xcq}
	if err := s.arm(init.Limit); err != nil {
		return nil, err
	}
	n.nextSRQ++
	n.srqs[s.Number()] = s
	p.Use()
	if d != nil {
		d.Use()
		xcq.Use()
	}
	return s, nil
}

func (s *srq) ArmLimit(limit int) error {
	s.n.mu.Lock()
	defer s.n.mu.Unlock()
	if err := fabric.CheckSRQAlive(s, s.Dead()); err != nil {
		return err
	}
	return s.arm(limit)
}

func (s *srq) LimitReached() bool {
	s.n.mu.Lock()
	defer s.n.mu.Unlock()
	f := s.fired
	s.fired = false
	return f
}

func (s *srq) Destroy() error {
	s.n.mu.Lock()
	defer s.n.mu.Unlock()
	if err := s.End(fabric.CheckDestroySRQ(s, s.Dead(), s.Users()), s.used()...); err != nil {
		return err
	}
	s.head = s.tail
	delete(s.n.srqs, s.Number())
	return nil
}

func (s *srq) PostRecv(wrs []fabric.RecvWR) (int, error) {
	n := s.n
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := fabric.CheckSRQAlive(s, s.Dead()); err != nil {
		return 0, err
	}
	for i := range wrs {
		if s.out >= s.maxWR {
			return i, fmt.Errorf("%w: %v holds %d receives; a receive's slot is free again once its completion has been polled",
				fabric.ErrQueueFull, s, s.maxWR)
		}
		m, buf, ok := n.localBuf(s.pd, wrs[i].Local, fabric.AccessLocalWrite)
		*s.at(s.tail) = rqe{id: wrs[i].ID, mr: m, buf: buf, bad: !ok}
		s.tail++
		s.out++
	}
	return len(wrs), nil
}

// give moves the pool's next receive to the end of q's receive ring and
// fires the limit event when the pool falls below the armed limit. It
// returns false when the pool is empty.
func (s *srq) give(q *qp) bool {
	r, ok := s.take()
	if ok {
		*q.rqAt(q.rqTail) = *r
		q.rqTail++
	}
	return ok
}

// take removes the pool's next receive and returns it, firing the limit
// event when the pool falls below the armed limit; false when the pool is
// empty.
func (s *srq) take() (*rqe, bool) {
	if s.head == s.tail {
		return nil, false
	}
	r := *s.at(s.head)
	*s.at(s.head) = rqe{}
	s.head++
	if fabric.SRQLimitFires(s.limit, int(s.tail-s.head)) {
		s.limit, s.fired = 0, true
	}
	return &r, true
}

// attachable returns the shared receive queue a queue pair of p may attach
// to (mu held).
func (p *pd) attachable(q fabric.SRQ) (*srq, error) {
	s, ok := q.(*srq)
	mine := ok && s != nil && s.n == p.n
	if err := fabric.CheckAttachSRQ(s, mine, mine && s.Dead(), mine && s.pd == p, "this loopback device's"); err != nil {
		return nil, err
	}
	if s.xrcd != nil {
		return nil, fmt.Errorf("%w: %v is an XRC SRQ, reached by XRC target queue pairs through its number; no queue pair attaches to it", fabric.ErrInvalidArg, s)
	}
	return s, nil
}

// freeRecvs releases q's receive slots before to: for a queue pair
// attached to a shared queue they are the queue's slots.
func (q *qp) freeRecvs(to uint64) {
	if to <= q.rqFree {
		return
	}
	if q.srq != nil {
		q.srq.out -= int(to - q.rqFree)
	}
	q.rqFree = to
}

// used are the objects s uses, each of which counts it: its protection
// domain, and an XRC SRQ's domain and completion queue.
func (s *srq) used() []*fabric.Lifecycle {
	if s.xrcd == nil {
		return []*fabric.Lifecycle{&s.pd.Lifecycle}
	}
	return []*fabric.Lifecycle{&s.pd.Lifecycle, &s.xrcd.Lifecycle, &s.cq.Lifecycle}
}

package sim

import (
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// srq implements fabric.SRQ: a pool of receives on the NIC that the queue
// pairs attached to it draw from as their messages arrive. A queue pair
// that takes a receive moves the entry into its own receive ring (give),
// so that everything after the take (filling, completion, flush, release
// by polling, the checker's records) is the queue pair's as without a
// shared queue; the pool holds only the receives not yet taken.
//
// Cost: taking a receive from the pool costs what taking one from a
// queue pair's ring costs (the receive pipeline's per-packet time covers
// the WQE fetch in both cases, docs/model.md); posting costs
// host.post_recv_ns per receive and serializes the posting threads on the
// queue's own lock, as PostRecv on a queue pair does.
type srq struct {
	c     *Cluster
	nic   *nic
	pd    *pd
	maxWR int
	ring  []rqe  // the pool: entries [head, tail), grown as receives are posted
	head  uint64 // next receive to give
	tail  uint64 // next slot to post into
	seen  uint64 // receives the translation pipeline has looked up (tpt.go)
	out   int    // receives posted and not yet released by polling (the slots in use)
	limit int    // armed limit; 0 when disarmed
	fired bool   // the limit event fired and LimitReached has not consumed it
	// Its users: attached queue pairs.
	fabric.Lifecycle
	recvLk lockState // serializes PostRecv across threads
	id     int       // its index on the NIC; its number is id+1
	xrcd   *xrcd     // an XRC SRQ's domain, or nil
	cq     *cq       // an XRC SRQ's completion queue
}

var _ fabric.SRQ = (*srq)(nil)

func (s *srq) at(i uint64) *rqe { return &s.ring[i&uint64(len(s.ring)-1)] }

func (s *srq) String() string {
	if s.xrcd != nil {
		return fmt.Sprintf("XRC SRQ %d on node %d", s.id+1, s.nic.node.id)
	}
	return fmt.Sprintf("SRQ %d on node %d", s.id, s.nic.node.id)
}

// Number implements fabric.SRQ: its index on the NIC plus one.
func (s *srq) Number() uint32 { return uint32(s.id + 1) }

func (s *srq) nodeID() int { return s.nic.node.id }

func (s *srq) openDesc() (string, bool) { return s.String(), !s.Dead() }

// CreateSRQ implements fabric.PD. It costs what creating a queue pair does
// (an estimate: both are one command to the device).
func (p *pd) CreateSRQ(init fabric.SRQInit) (fabric.SRQ, error) {
	c := p.c
	c.enter(ns(c.prof.Setup.CreateQPUS * 1000))
	if err := p.Alive(); err != nil {
		return nil, err
	}
	if err := fabric.CheckSRQInit(init, c.prof.NIC.MaxQPWR, "nic.max_qp_wr", "the simulator's device"); err != nil {
		return nil, err
	}
	d, xcq, err := fabric.XRCSRQObjects(init, p.domain, p.localCQ)
	if err != nil {
		return nil, err
	}
	n := p.nic
	s := &srq{c: c, nic: n, pd: p, maxWR: init.MaxWR, id: len(n.srqs), xrcd: d, cq: xcq}
	if err := s.arm(init.Limit); err != nil {
		return nil, err
	}
	n.srqs = append(n.srqs, s)
	p.Use()
	if d != nil {
		d.Use()
		xcq.Use()
	}
	if ch := c.chk; ch != nil {
		ch.objs = append(ch.objs, s)
	}
	return s, nil
}

func (s *srq) MaxWR() int { return s.maxWR }

func (s *srq) arm(limit int) error {
	if err := fabric.CheckSRQLimit(s, limit, s.maxWR); err != nil {
		return err
	}
	s.limit = limit
	return nil
}

func (s *srq) ArmLimit(limit int) error {
	s.c.enter(ns(s.c.prof.Setup.ModifyQPUS * 1000))
	if err := fabric.CheckSRQAlive(s, s.Dead()); err != nil {
		return err
	}
	return s.arm(limit)
}

func (s *srq) LimitReached() bool {
	s.c.enter(0)
	f := s.fired
	s.fired = false
	return f
}

func (s *srq) Destroy() error {
	s.c.enter(0)
	if err := s.End(fabric.CheckDestroySRQ(s, s.Dead(), s.Users()), s.used()...); err != nil {
		return err
	}
	if ch := s.c.chk; ch != nil {
		for i := s.head; i < s.tail; i++ {
			if e := s.at(i); e.has(rqeCkHeld) {
				ch.recvForget(e, e.region(s.nic))
			}
		}
	}
	s.head = s.tail
	return nil
}

func (s *srq) PostRecv(wrs []fabric.RecvWR) (int, error) {
	c := s.c
	c.enter(0)
	if s.Dead() {
		return 0, fabric.CheckSRQAlive(s, true)
	}
	c.acquire(&s.recvLk)
	defer c.release(&s.recvLk)
	for i := range wrs {
		if s.out >= s.maxWR {
			if ch := c.chk; ch != nil {
				ch.notice(QueueFull, s.nic.node.id, "PostRecv", s.String(), fmt.Sprintf("PostRecv on %v with all %d slots taken (rejected: ErrQueueFull)", s, s.maxWR))
			}
			return i, fmt.Errorf("%w: %v holds %d receives; a receive's slot is free again once its completion has been polled",
				fabric.ErrQueueFull, s, s.maxWR)
		}
		m, _, ok := s.nic.localBuf(s.pd, wrs[i].Local, fabric.AccessLocalWrite)
		s.ring = reserved(s.ring, s.head, s.tail, min(len(wrs)-i, s.maxWR-s.out))
		e := rqe{id: wrs[i].ID}
		e.set(rqeBad, !ok)
		if m != nil {
			e.at, e.n, e.mr = e.at|(wrs[i].Local.Addr-m.Base), wrs[i].Local.Length, m.num()
		}
		*s.at(s.tail) = e
		if ch := c.chk; ch != nil {
			ch.recvPosted(s, s.at(s.tail), m)
		}
		s.tail++
		s.out++
		if th := c.cur; th != nil {
			th.Busy(ns(c.prof.Host.PostRecvNS))
		}
	}
	return len(wrs), nil
}

// give moves the pool's next receive to the end of q's receive ring, for
// the message arriving on q, and fires the limit event when the pool falls
// below the armed limit. It returns false when the pool is empty.
func (s *srq) give(q *qp) bool {
	if s.head == s.tail {
		return false
	}
	q.rq = reserved(q.rq, q.rqFree, q.rqTail, 1)
	*q.rqAt(q.rqTail) = *s.at(s.head)
	if q.typ == fabric.XRCRecv {
		q.tgt().from[q.rqTail] = s
	}
	q.rqTail++
	s.head++
	if fabric.SRQLimitFires(s.limit, int(s.tail-s.head)) {
		s.limit, s.fired = 0, true
	}
	return true
}

// peek is the pool's next receive the translation pipeline has not yet
// given to an arriving message (rxTarget), or nil.
func (s *srq) peek() *rqe {
	i := max(s.seen, s.head)
	if i >= s.tail {
		return nil
	}
	s.seen = i + 1
	return s.at(i)
}

// freeRecvs releases q's receive slots before to (a completion that covers
// them was polled, or the queue pair discarded them): for a queue pair
// attached to a shared queue, they are the queue's slots.
func (q *qp) freeRecvs(to uint64) {
	if to <= q.rqFree {
		return
	}
	if q.typ == fabric.XRCRecv {
		q.tgtDiscard(to)
		return
	}
	if q.srq != nil {
		q.srq.out -= int(to - q.rqFree)
	}
	if q.rqRep != 0 && to >= q.rqEnd() { // repeats released, or their template
		if to >= q.rqTail {
			q.rqRep = 0
		} else {
			q.rqUnfold(to)
		}
	}
	q.rqFree = to
}

// namesMR reports whether a receive in the pool names m.
func (s *srq) namesMR(m *mr) bool {
	for i := s.head; i < s.tail; i++ {
		if s.at(i).mr == m.num() {
			return true
		}
	}
	return false
}

// attachable returns the shared receive queue a queue pair of p may attach
// to: one of this simulator's, alive, of the same protection domain.
func (p *pd) attachable(q fabric.SRQ) (*srq, error) {
	s, ok := q.(*srq)
	mine := ok && s != nil
	if err := fabric.CheckAttachSRQ(s, mine, mine && s.Dead(), mine && s.pd == p, "this simulator's"); err != nil {
		return nil, err
	}
	if s.xrcd != nil {
		return nil, fmt.Errorf("%w: %v is reached by XRC target queue pairs through its number; no queue pair attaches to it", fabric.ErrInvalidArg, s)
	}
	return s, nil
}

// used are the objects s uses, each of which counts it: its protection
// domain, and an XRC SRQ's domain and completion queue.
func (s *srq) used() []*fabric.Lifecycle {
	if s.xrcd == nil {
		return []*fabric.Lifecycle{&s.pd.Lifecycle}
	}
	return []*fabric.Lifecycle{&s.pd.Lifecycle, &s.xrcd.Lifecycle, &s.cq.Lifecycle}
}

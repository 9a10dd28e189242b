package sim

import (
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// device implements fabric.Device for a node's NIC.
type device struct {
	c *Cluster
	n *node
}

func (d *device) Attr() fabric.DeviceAttr {
	p := d.c.prof
	return fabric.DeviceAttr{
		Name: fmt.Sprintf("sim%d", d.n.id), LinkLayer: "InfiniBand", LID: lidOf(d.n.id), GID: gidOf(d.n.id),
		MTU: p.Link.MTU, MaxQP: p.NIC.MaxQP, MaxQPWR: p.NIC.MaxQPWR, MaxCQE: p.NIC.MaxCQE, MaxSGE: 1,
		MaxInline: p.NIC.MaxInlineRC, MaxInlineUD: p.NIC.MaxInlineUD, MaxMRBytes: p.NIC.MaxMRBytes, RateGbps: p.DataRateBps() / 1e9,
		// The profiles' max_qp_wr counts requests: no block layout
		// (fabric.SendQueueLayout), so that designs size queues as before.
		SendQueue: fabric.SendQueueLayout{},
	}
}

func (d *device) AllocPD() (fabric.PD, error) {
	d.c.enter(0)
	p := &pd{c: d.c, nic: d.n.nic}
	if ch := d.c.chk; ch != nil {
		ch.objs = append(ch.objs, p)
	}
	return p, nil
}

func (d *device) CreateCQ(depth int) (fabric.CQ, error) {
	d.c.enter(ns(d.c.prof.Setup.CreateCQUS * 1000))
	if err := fabric.CheckCQDepth(depth, d.c.prof.NIC.MaxCQE, "nic.max_cqe"); err != nil {
		return nil, err
	}
	q := &cq{sigbase: sigbase{c: d.c, isCQ: true}, nic: d.n.nic, depth: depth}
	if ch := d.c.chk; ch != nil {
		ch.objs = append(ch.objs, q)
	}
	return q, nil
}

// pd implements fabric.PD.
type pd struct {
	fabric.Domain
	c   *Cluster
	nic *nic
}

func (p *pd) RegMR(length int, access fabric.Access) (fabric.MR, error) {
	pinned := length
	if length < 1 || int64(length) > p.c.prof.NIC.MaxMRBytes {
		pinned = 0 // rejected before any page is pinned: the fixed cost only
	}
	p.c.enter(p.c.prof.Setup.regCost(pinned))
	if err := p.Register(length, p.c.prof.NIC.MaxMRBytes, access, "nic.max_mr_bytes"); err != nil {
		return nil, err
	}
	return p.nic.newMR(p, length, access), nil
}

// TimeRegMR implements fabric.RegTimer: the simulator allocates nothing
// it charges for, so the registration's time is what RegMR charges the
// calling thread.
func (p *pd) TimeRegMR(length int, access fabric.Access) (fabric.MR, fabric.Duration, error) {
	var t0 fabric.Time
	if th := p.c.cur; th != nil {
		t0 = th.local
	}
	m, err := p.RegMR(length, access)
	var d fabric.Duration
	if th := p.c.cur; th != nil {
		d = th.local.Sub(t0)
	}
	return m, d, err
}

func (p *pd) CreateAH(dest fabric.Address) (fabric.AH, error) {
	p.c.enter(0)
	if err := p.Alive(); err != nil {
		return nil, err
	}
	n, err := p.c.resolve(dest)
	if err != nil {
		return nil, err
	}
	p.Use()
	a := &ah{pd: p, dest: dest, node: n}
	if ch := p.c.chk; ch != nil {
		ch.objs = append(ch.objs, a)
	}
	return a, nil
}

func (p *pd) Dealloc() error {
	p.c.enter(0)
	return p.Free()
}

// mr implements fabric.MR. Its memory is an ordinary Go slice; untouched
// pages of a large region cost no resident memory. In size-only mode it
// starts unbacked, a view of a shared zero mapping (zeromem.go).
type mr struct {
	sigbase
	fabric.Region
	nic   *nic
	pd    *pd
	buf   []byte
	freed []byte // once deregistered (buf nil): the bytes it had, which posted receives still name
	zero  bool   // buf is a view of the zero mapping (zeromem.go)
	busy  int    // outstanding work requests naming this region (counted by the checker)
	// Byte ranges posted as receives, sorted, and the longest (checker);
	// a range none of whose receives is posted any more stays, with n 0
	// (removeRecv), and live counts the others.
	recvs   []recvRange
	recvMax uint64
	live    int
	shared  int // ranges in recvs marked shared
	recvAt  int // the index in recvs last found or added (findRecv's first guess)
}

// Bytes gives an unbacked region bytes of its own: its program may write
// them.
func (m *mr) Bytes() []byte {
	m.materialize()
	return m.buf
}

// num is m's number on its NIC: its index in nic.mrs plus one (a
// receive entry's name for it, rqe.mr).
func (m *mr) num() uint32 { return m.Key >> 8 }

func (m *mr) Len() int { return len(m.buf) }

// offset returns where [addr, addr+n) starts in the region, and false when
// the range does not lie inside it (fabric.Region.Offset).
func (m *mr) offset(addr, n uint64) (uint64, bool) { return m.Offset(addr, n, len(m.buf)) }

func (m *mr) Dereg() error {
	m.c.enter(m.c.prof.Setup.deregCost(len(m.buf)))
	if err := m.Deregister(); err != nil {
		return err
	}
	if ch := m.c.chk; ch != nil {
		ch.dereg(m)
	}
	m.nic.forget(m)
	if m.named() {
		m.freed = m.buf
	}
	m.buf, m.zero = nil, false
	return nil
}

// named reports whether a receive posted on one of the NIC's queue pairs,
// and not yet released by polling, names m.
func (m *mr) named() bool {
	for _, q := range m.nic.qps {
		if q == nil {
			continue
		}
		for i := q.rqFree; i < q.rqTail; i++ {
			if q.rqPeek(i).mr == m.num() {
				return true
			}
		}
	}
	for _, s := range m.nic.srqs {
		if s.namesMR(m) {
			return true
		}
	}
	return false
}

// cq implements fabric.CQ.
type cq struct {
	sigbase
	pollLk  lockState // serializes Poll across threads
	nic     *nic
	depth   int
	buf     []cqe // queue: buf[head:]
	head    int
	overrun bool
	lost    int64
	fabric.Lifecycle
	// Entries of the queues attached (checker), and whether their excess
	// over depth was reported.
	attached int
	warned   bool
}

func (q *cq) Depth() int { return q.depth }
func (q *cq) String() string {
	return fmt.Sprintf("CQ(node %d, %d/%d entries)", q.nic.node.id, q.len(), q.depth)
}
func (q *cq) len() int { return len(q.buf) - q.head }

// cqe is a queued completion and the work queue slots that polling it
// frees: as with libibverbs providers, a slot is free again only once its
// completion (for unsignaled sends, a later one) has been polled.
type cqe struct {
	wc   fabric.WC
	qp   *qp
	free uint64 // qp's slots before this counter value are released
	recv bool   // receive queue, else send queue
}

// push queues wc, which releases q's slots before free (of its receive
// queue when recv) once it is polled.
func (q *cq) push(wc fabric.WC, qp *qp, free uint64, recv bool) {
	if q == nil || q.Dead() { // nil: an XRC receive whose slot was discarded
		return
	}
	if q.len() >= q.depth {
		q.overrun = true
		q.lost++
		q.c.stats.CQOverruns++
		if ch := q.c.chk; ch != nil {
			ch.report(CQOverrun, q.nic.node.id, nicThread, "completion", q.String(), fmt.Sprintf("a completion of %v was lost: %v full", qp, q))
		}
		qp.release(free, recv) // the completion is lost; do not wedge the queue pair too
		q.signal()
		return
	}
	if q.head > 0 && len(q.buf) == cap(q.buf) {
		n := copy(q.buf, q.buf[q.head:])
		q.buf = q.buf[:n]
		q.head = 0
	}
	q.buf = append(q.buf, cqe{wc: wc, qp: qp, free: free, recv: recv})
	q.signal()
}

func (q *cq) Poll(wcs []fabric.WC) (int, error) {
	c := q.c
	c.enter(0)
	if q.Dead() {
		return 0, fmt.Errorf("%w: completion queue destroyed", fabric.ErrClosed)
	}
	c.acquire(&q.pollLk)
	defer c.release(&q.pollLk)
	if th := c.cur; th != nil {
		th.observedCQ(&q.sigbase)
	}
	n := min(len(wcs), q.len())
	for i, e := range q.buf[q.head : q.head+n] {
		wcs[i] = e.wc
		e.qp.release(e.free, e.recv)
	}
	q.head += n
	if q.head == len(q.buf) {
		q.buf, q.head = q.buf[:0], 0
	}
	cost := ns(c.prof.Host.PollEmptyNS)
	if n > 0 {
		cost = ns(c.prof.Host.PollPerCQENS) * fabric.Duration(n)
	}
	if th := c.cur; th != nil {
		th.Busy(cost)
	}
	if q.overrun {
		return n, fmt.Errorf("%w: %d completions lost on a CQ of depth %d; size the CQ for every outstanding request",
			fabric.ErrCQOverrun, q.lost, q.depth)
	}
	return n, nil
}

func (q *cq) Destroy() error {
	q.c.enter(0)
	return q.End(fabric.CheckDestroyCQ(q.Dead(), q.Users()))
}

// ah implements fabric.AH.
type ah struct {
	pd   *pd
	dest fabric.Address
	node int
	fabric.Lifecycle
}

func (a *ah) Dest() fabric.Address { return a.dest }

func (a *ah) Destroy() error {
	return a.End(fabric.CheckDestroyAH(a.Dead()), &a.pd.Lifecycle)
}

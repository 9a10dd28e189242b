package loopback

import (
	"fmt"
	"time"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// sqe is a send-queue entry as posted.
type sqe struct {
	wr     fabric.SendWR
	length int
	inline []byte // the payload of an inline send, copied at the post
	mr     *mr    // the local region (nil for inline or empty requests)
	buf    []byte // its bytes the request names
	ah     *ah    // UD
	bad    fabric.Status
}

// rqe is a receive-queue entry.
type rqe struct {
	id  uint64
	mr  *mr
	buf []byte
	bad bool
}

func (e *rqe) broken() bool { return e.bad || e.mr != nil && e.mr.Dead() }

// qp implements fabric.QP. Every field is guarded by the NIC's mu. The
// queues are rings indexed by counters that only grow:
// sqFree <= sqHead <= sqTail, rqFree <= rqHead <= rqTail.
type qp struct {
	n         *nic
	pd        *pd
	qpn       uint32
	typ       fabric.QPType
	state     fabric.QPState
	scq, rcq  *cq
	caps      fabric.QPCaps
	attr      fabric.QPAttr
	dest      *nic // RC, UC: the peer's NIC
	mtu       int
	nextPSN   fabric.PSN
	destroyed bool
	gen       uint64 // changes at every reset, error and destroy: a job of an older one is void
	queued    bool   // on the NIC's active list

	sq                     []sqe
	sqFree, sqHead, sqTail uint64 // sqHead: the oldest request not completed, the one the NIC executes next
	rq                     []rqe
	rqFree, rqHead, rqTail uint64
	srq                    *srq   // the shared receive queue it takes receives from, or nil
	xrcd                   *xrcd  // an XRC target's domain
	dcKey                  uint64 // a DCT's access key

	retryAt time.Time // RNR or transport retry: not before
	rnrLeft int       // RNR retries left (rnr_retry 7: infinite)
	unacked time.Time // when the request at the head first found no target (RC), or zero
}

var _ fabric.QP = (*qp)(nil)

func (q *qp) sqAt(i uint64) *sqe { return &q.sq[i%uint64(len(q.sq))] }
func (q *qp) rqAt(i uint64) *rqe { return &q.rq[i%uint64(len(q.rq))] }

func (p *pd) CreateQP(init fabric.QPInit) (fabric.QP, error) {
	n := p.n
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := p.Alive(); err != nil {
		return nil, err
	}
	if init.Type == fabric.XRCSend || init.Type == fabric.XRCRecv {
		return p.createXRCQP(init)
	}
	if init.Type.DC() {
		return p.createDCQP(init)
	}
	if init.XRCD != nil {
		return nil, fmt.Errorf("%w: only XRC_RECV queue pairs are created in an XRC domain", fabric.ErrInvalidArg)
	}
	scq, ok1 := init.SendCQ.(*cq)
	rcq, ok2 := init.RecvCQ.(*cq)
	if !ok1 || !ok2 || scq == nil || rcq == nil || scq.n != n || rcq.n != n {
		return nil, fmt.Errorf("%w: CreateQP needs a send CQ and a receive CQ of this loopback device", fabric.ErrInvalidArg)
	}
	if scq.dead || rcq.dead {
		return nil, fmt.Errorf("%w: CreateQP with a destroyed CQ", fabric.ErrClosed)
	}
	if init.Type != fabric.RC && init.Type != fabric.UC && init.Type != fabric.UD {
		return nil, fmt.Errorf("%w: unknown QP type %v", fabric.ErrInvalidArg, init.Type)
	}
	caps := init.Caps
	attr := (&device{n: n}).Attr()
	var s *srq
	if init.SRQ != nil {
		var err error
		if s, err = p.attachable(init.SRQ); err != nil {
			return nil, err
		}
		// max_recv_wr is ignored; the ring holds what the queue pair has
		// taken from the shared queue and not yet released, at most its depth.
		caps.MaxRecvWR = s.maxWR
	}
	if caps.MaxSendWR < 1 || caps.MaxRecvWR < 1 || caps.MaxRecvWR > attr.MaxQPWR {
		return nil, fmt.Errorf("%w: queue depths send %d, receive %d must be in 1..%d", fabric.ErrLimit, caps.MaxSendWR, caps.MaxRecvWR, attr.MaxQPWR)
	}
	if most := attr.MaxSendWR(init.Type, 1, caps.MaxInline); caps.MaxSendWR > most {
		return nil, fmt.Errorf("%w: send queue depth %d above %d (%s)", fabric.ErrLimit, caps.MaxSendWR, most, attr.SendLimitReason(init.Type, 1, caps.MaxInline))
	}
	inl := maxInlineRC
	if init.Type == fabric.UD {
		inl = maxInlineUD
	}
	if caps.MaxInline < 0 || caps.MaxInline > inl {
		return nil, fmt.Errorf("%w: max inline %d bytes outside 0..%d for %v", fabric.ErrLimit, caps.MaxInline, inl, init.Type)
	}
	if len(n.qps) >= maxQP {
		return nil, fmt.Errorf("%w: node %d already has %d queue pairs", fabric.ErrLimit, n.id, len(n.qps))
	}
	n.nextQPN++
	q := &qp{n: n, pd: p, qpn: qpnBase + n.nextQPN, typ: init.Type, scq: scq, rcq: rcq, caps: caps, mtu: attr.MTU,
		sq: make([]sqe, caps.MaxSendWR), rq: make([]rqe, caps.MaxRecvWR), srq: s}
	if s != nil {
		s.Use()
	}
	n.qps[q.qpn] = q
	p.Use()
	scq.Use()
	rcq.Use()
	return q, nil
}

func (q *qp) QPN() uint32         { return q.qpn }
func (q *qp) Type() fabric.QPType { return q.typ }
func (q *qp) String() string      { return fmt.Sprintf("%v QP %#x on node %d", q.typ, q.qpn, q.n.id) }

func (q *qp) State() fabric.QPState {
	q.n.mu.Lock()
	defer q.n.mu.Unlock()
	return q.state
}

func (q *qp) Info() fabric.QPInfo {
	q.n.mu.Lock()
	defer q.n.mu.Unlock()
	id := q.n.id
	return fabric.QPInfo{Node: uint32(id), LID: lidOf(id), GID: gidOf(id), QPN: q.qpn, PSN: q.nextPSN, QKey: q.attr.QKey}
}

func (q *qp) Destroy() error {
	n := q.n
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := fabric.CheckDestroyQP(q, q.destroyed); err != nil {
		return err
	}
	q.destroyed = true
	if q.srq != nil {
		q.freeRecvs(q.rqTail) // the receives it had taken are discarded
		q.srq.Release()
	}
	q.state = fabric.StateReset
	q.gen++
	q.pd.Release()
	if q.scq != nil {
		q.scq.Release()
	}
	if q.rcq != nil {
		q.rcq.Release()
	}
	if q.xrcd != nil {
		q.xrcd.Release()
	}
	delete(n.qps, q.qpn)
	return nil
}

func (q *qp) Modify(to fabric.QPState, a fabric.QPAttr) error {
	n := q.n
	var dest *nic
	if to == fabric.StateRTR && q.typ != fabric.UD && !q.typ.DC() {
		d, err := n.net.resolve(a.Dest)
		if err != nil {
			return fmt.Errorf("%w: %v to RTR: %v", fabric.ErrBadTransition, q, err)
		}
		dest = d
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if q.destroyed {
		return fmt.Errorf("%w: %v", fabric.ErrClosed, q)
	}
	from := q.state
	bad := func(why string) error {
		return fmt.Errorf("%w: %v from %v to %v: %s", fabric.ErrBadTransition, q, from, to, why)
	}
	if why := a.Transition(q.typ, from, to, n.net.lim.MTU, maxRdAtomic); why != "" {
		return bad(why)
	}
	switch to {
	case fabric.StateReset:
		q.reset()
		return nil
	case fabric.StateError:
		q.enterError()
		return nil
	case fabric.StateInit:
		q.attr.Access, q.attr.QKey = a.Access, a.QKey
	case fabric.StateRTR:
		if q.typ != fabric.UD {
			m := a.PathMTU
			if m == 0 {
				m = n.net.lim.MTU
			}
			q.dest, q.mtu = dest, m
			q.attr.Dest, q.attr.MinRNRTimer, q.attr.MaxDestRdAtomic = a.Dest, a.MinRNRTimer, a.MaxDestRdAtomic
			q.attr.RemotePSN = a.RemotePSN & fabric.MaxPSN
		}
	case fabric.StateRTS:
		q.attr.SendPSN, q.attr.Timeout, q.attr.RetryCnt, q.attr.RNRRetry = a.SendPSN, a.Timeout, a.RetryCnt, a.RNRRetry
		q.attr.MaxRdAtomic = a.MaxRdAtomic
		q.nextPSN = a.SendPSN & fabric.MaxPSN
		q.rnrLeft, q.unacked = int(a.RNRRetry), time.Time{}
	default:
		return fmt.Errorf("%w: unknown state %v", fabric.ErrInvalidArg, to)
	}
	q.state = to
	n.activate(q)
	return nil
}

// reset discards every request without completions.
func (q *qp) reset() {
	q.state = fabric.StateReset
	q.gen++
	q.sqFree, q.sqHead = q.sqTail, q.sqTail
	q.freeRecvs(q.rqTail)
	q.rqHead = q.rqTail
	q.retryAt, q.unacked = time.Time{}, time.Time{}
}

// release frees the send (or receive) slots before free: a completion
// that covers them was polled, or lost to an overrun.
func (q *qp) release(free uint64, recv bool) {
	if recv {
		q.freeRecvs(free)
	} else {
		q.sqFree = max(q.sqFree, free)
	}
}

// complete retires send entry i: errors always produce a completion,
// successes when signaled.
func (q *qp) complete(i uint64, st fabric.Status) {
	e := q.sqAt(i)
	if st != fabric.StatusSuccess || e.wr.Flags&fabric.Signaled != 0 {
		k := e.length
		if st != fabric.StatusSuccess {
			k = 0
		}
		q.scq.push(cqe{wc: fabric.WC{ID: e.wr.ID, Status: st, Op: e.wr.Op, Bytes: k, QPN: q.qpn}, qp: q, free: i + 1})
	}
	e.buf, e.mr, e.inline, e.ah = nil, nil, nil, nil
}

// fail completes the request at the head with st and moves q to ERROR.
func (q *qp) fail(st fabric.Status) {
	q.complete(q.sqHead, st)
	q.sqHead++
	q.enterError()
}

func (q *qp) enterError() {
	q.state = fabric.StateError
	q.gen++
	q.flushSends()
	q.flushRecvs()
}

func (q *qp) flushSends() {
	for ; q.sqHead < q.sqTail; q.sqHead++ {
		q.complete(q.sqHead, fabric.StatusFlushed)
	}
}

func (q *qp) flushRecvs() {
	for ; q.rqHead < q.rqTail; q.rqHead++ {
		e := q.rqAt(q.rqHead)
		q.rcq.push(cqe{wc: fabric.WC{ID: e.id, Status: fabric.StatusFlushed, Op: fabric.OpRecv, QPN: q.qpn}, qp: q, free: q.rqHead + 1, recv: true})
		*e = rqe{}
	}
}

// recvDone completes receive entry i with wc.
func (q *qp) recvDone(i uint64, wc fabric.WC) {
	wc.QPN = q.qpn
	q.rcq.push(cqe{wc: wc, qp: q, free: i + 1, recv: true})
	*q.rqAt(i) = rqe{}
}

func (q *qp) PostSend(wrs []fabric.SendWR) (int, error) {
	n := q.n
	n.mu.Lock()
	defer n.mu.Unlock()
	if q.destroyed {
		return 0, fmt.Errorf("%w: %v", fabric.ErrClosed, q)
	}
	if q.typ == fabric.XRCRecv || q.typ == fabric.DCT {
		return 0, fmt.Errorf("%w: %v has no send queue", fabric.ErrInvalidArg, q)
	}
	if q.state != fabric.StateRTS && q.state != fabric.StateError {
		return 0, fmt.Errorf("%w: %v is in %v; PostSend needs RTS", fabric.ErrBadState, q, q.state)
	}
	k := 0
	var err error
	for ; k < len(wrs); k++ {
		if err = q.postOne(&wrs[k]); err != nil {
			break
		}
	}
	if q.state == fabric.StateError {
		q.flushSends()
	} else if k > 0 {
		n.activate(q)
	}
	return k, err
}

func (q *qp) postOne(wr *fabric.SendWR) error {
	if err := fabric.CheckSendSlot(q, q.sqTail-q.sqFree, q.caps.MaxSendWR); err != nil {
		return err
	}
	e := sqe{wr: *wr, length: int(wr.Local.Length)}
	if err := wr.CheckOp(q.typ); err != nil {
		return err
	}
	if q.typ == fabric.UD {
		a, ok := wr.AH.(*ah)
		live := ok && a != nil && !a.Dead()
		if err := fabric.CheckUDSend(live, live && a.pd == q.pd, e.length, q.n.net.lim.MTU, "loopback device"); err != nil {
			return err
		}
		e.ah = a
	} else if q.typ == fabric.DCI {
		a, err := q.dcAH(wr.AH)
		if err != nil {
			return err
		}
		e.ah = a
	}
	if err := wr.CheckSize(q.typ, q.caps.MaxInline); err != nil {
		return err
	}
	if wr.Flags&fabric.Inline != 0 {
		// The caller owns the bytes and holds the gate: copy them now.
		if src, ok := q.n.findByAddr(wr.Local.Addr, e.length); ok {
			e.inline = append([]byte(nil), src...)
		} else {
			e.bad = fabric.StatusLocalProtection
		}
	} else {
		need := fabric.Access(0)
		if wr.Op == fabric.OpRead {
			need = fabric.AccessLocalWrite
		}
		m, buf, ok := q.n.localBuf(q.pd, wr.Local, need)
		if !ok {
			e.bad = fabric.StatusLocalProtection
		}
		e.mr, e.buf = m, buf
	}
	npkts := max(1, (e.length+q.mtu-1)/q.mtu)
	if wr.Op == fabric.OpRead {
		npkts = 1
	}
	q.nextPSN = q.nextPSN.Add(npkts)
	*q.sqAt(q.sqTail) = e
	q.sqTail++
	return nil
}

func (q *qp) PostRecv(wrs []fabric.RecvWR) (int, error) {
	n := q.n
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := fabric.CheckPostRecv(q, q.typ, q.state, q.destroyed, q.srq, q.srq != nil); err != nil {
		return 0, err
	}
	for i := range wrs {
		if q.rqTail-q.rqFree >= uint64(q.caps.MaxRecvWR) {
			return i, fmt.Errorf("%w: %v receive queue holds %d buffers; a receive's slot is free again once its completion has been polled",
				fabric.ErrQueueFull, q, q.caps.MaxRecvWR)
		}
		m, buf, ok := n.localBuf(q.pd, wrs[i].Local, fabric.AccessLocalWrite)
		*q.rqAt(q.rqTail) = rqe{id: wrs[i].ID, mr: m, buf: buf, bad: !ok}
		q.rqTail++
	}
	if q.state == fabric.StateError {
		q.flushRecvs()
	}
	return len(wrs), nil
}

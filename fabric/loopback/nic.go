package loopback

import (
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// nic is one node's device: its verbs objects, guarded by mu, and the
// goroutine that executes their send queues (run).
//
// Locks: a thread holds its node's gate while it calls a verb, which takes
// mu; the NIC takes a gate (shared or exclusive) and then a node's mu, and
// never a gate while it holds a mu, nor two mus at once. So no cycle can
// form between threads queueing for a mu and a NIC queueing for a gate.
type nic struct {
	net  *network
	id   int
	gate gate

	mu       sync.Mutex
	mrs      map[uint32]*mr
	qps      map[uint32]*qp
	active   []*qp // queue pairs that may have requests to execute
	nextQPN  uint32
	nextSRQ  int
	nextXRCD int
	srqs     map[uint32]*srq // by number (SRQ.Number)
	nextKey  uint32
	nextAddr uint64

	kick       chan struct{}
	stop, done chan struct{}
}

func newNIC(w *network, id int) *nic {
	return &nic{net: w, id: id, mrs: map[uint32]*mr{}, qps: map[uint32]*qp{}, srqs: map[uint32]*srq{}, nextAddr: 0x7f0000000000 + uint64(id)<<36,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// alive fails once the cluster is closed (mu held).
func (n *nic) alive() error {
	if n.net.closed.Load() {
		return fmt.Errorf("%w: %v", fabric.ErrClosed, errStopped)
	}
	return nil
}

// activate puts q on the active list and wakes the NIC (mu held).
func (n *nic) activate(q *qp) {
	if !q.queued && q.state == fabric.StateRTS && q.sqHead < q.sqTail {
		q.queued = true
		n.active = append(n.active, q)
	}
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

// findByAddr returns bytes [addr, addr+length) of any region of the node
// (inline sends need no key), mu held.
func (n *nic) findByAddr(addr uint64, length int) ([]byte, bool) {
	if length == 0 {
		return nil, true
	}
	for _, m := range n.mrs {
		if b, ok := m.slice(addr, uint64(length)); ok {
			return b, true
		}
	}
	return nil, false
}

// localBuf checks a local SGE: its key names a live region of the PD with
// the access needed, and the bytes lie inside it (mu held).
func (n *nic) localBuf(p *pd, s fabric.SGE, need fabric.Access) (*mr, []byte, bool) {
	if s.Length == 0 {
		return nil, nil, true
	}
	m := n.mrs[s.LKey]
	if m == nil || m.Dead() || m.pd != p || m.Access&need != need {
		return nil, nil, false
	}
	b, ok := m.slice(s.Addr, uint64(s.Length))
	return m, b, ok
}

// remoteBuf checks an incoming RDMA request against the target queue pair
// and region (mu held).
func (n *nic) remoteBuf(q *qp, rkey uint32, addr uint64, length int, need fabric.Access) ([]byte, bool) {
	if q.attr.Access&need != need {
		return nil, false
	}
	if length == 0 {
		return nil, true
	}
	m := n.mrs[rkey]
	if m == nil || m.Dead() || m.pd != q.pd || m.Access&need != need {
		return nil, false
	}
	return m.slice(addr, uint64(length))
}

// run is the NIC: it executes the send queues' requests one at a time,
// round robin over the queue pairs, until the cluster closes.
func (n *nic) run() {
	defer close(n.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		for {
			select {
			case <-n.stop:
				return
			default:
			}
			j, ok, wake := n.pick(time.Now())
			if !ok {
				if !wake.IsZero() {
					timer.Reset(time.Until(wake))
				}
				break
			}
			n.execute(j)
		}
		select {
		case <-n.stop:
			return
		case <-n.kick:
		case <-timer.C:
		}
	}
}

// job is the request at the head of a send queue, taken for execution.
type job struct {
	q   *qp
	gen uint64
	e   sqe
}

// pick takes the next request to execute. When every queue pair with work
// waits for a retry, it returns the earliest retry time.
func (n *nic) pick(now time.Time) (job, bool, time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	var wake time.Time
	for tries := len(n.active); tries > 0; tries-- {
		q := n.active[0]
		n.active = n.active[1:]
		if q.destroyed || q.state != fabric.StateRTS || q.sqHead >= q.sqTail {
			q.queued = false
			continue
		}
		n.active = append(n.active, q)
		if now.Before(q.retryAt) {
			if wake.IsZero() || q.retryAt.Before(wake) {
				wake = q.retryAt
			}
			continue
		}
		e := *q.sqAt(q.sqHead)
		if e.bad == fabric.StatusSuccess && e.mr != nil && e.mr.Dead() {
			e.bad = fabric.StatusLocalProtection // deregistered since the post
		}
		return job{q: q, gen: q.gen, e: e}, true, wake
	}
	return job{}, false, wake
}

// outcome is what became of an executed request at the sender.
type outcome struct {
	st       fabric.Status
	rnr      bool   // RC: the receiver had no receive posted
	notReady bool   // RC: the target queue pair does not accept (no ACK)
	rnrTimer uint8  // the receiver's min RNR timer
	read     []byte // RDMA Read: the data to place locally
}

// execute carries out one request end to end and completes it.
func (n *nic) execute(j job) {
	e := &j.e
	var out outcome
	switch {
	case e.bad != fabric.StatusSuccess:
		out.st = e.bad
	case j.q.typ == fabric.UD:
		out = n.sendUD(j.q, e, n.payload(e))
	case e.wr.Op == fabric.OpRead:
		out = j.q.destFor(e).read(j.q, e)
	case e.wr.Op == fabric.OpWrite || e.wr.Op == fabric.OpWriteImm:
		out = j.q.destFor(e).write(j.q, e, n.payload(e))
	default:
		out = j.q.destFor(e).send(j.q, e, n.payload(e))
	}
	if out.read != nil && out.st == fabric.StatusSuccess {
		copy(e.buf, out.read) // the destination belongs to the NIC until the completion
	}
	n.finish(j, out)
}

// payload copies the bytes a send or write carries: the inline copy, or
// the source region's bytes, read under the gate shared (they may have
// been placed there by an earlier RDMA Write).
func (n *nic) payload(e *sqe) []byte {
	if e.inline != nil || e.length == 0 {
		return e.inline
	}
	n.gate.mu.RLock()
	b := append([]byte(nil), e.buf...)
	n.gate.mu.RUnlock()
	return b
}

// finish applies the outcome at the sender.
func (n *nic) finish(j job, out outcome) {
	n.mu.Lock()
	defer n.mu.Unlock()
	q := j.q
	if q.gen != j.gen || q.destroyed {
		return // flushed, reset or destroyed meanwhile
	}
	now := time.Now()
	switch {
	case out.rnr:
		if q.attr.RNRRetry < 7 {
			if q.rnrLeft == 0 {
				q.fail(fabric.StatusRNRRetryExceeded)
				return
			}
			q.rnrLeft--
		}
		q.retryAt = now.Add(fabric.RNRTimerDuration(out.rnrTimer).Std())
	case out.notReady:
		// No ACK comes: fail once the ACK timeout has run out retry_cnt+1
		// times (never with timeout 0), trying again meanwhile so that a
		// peer that reaches RTR a little late is found.
		if q.unacked.IsZero() {
			q.unacked = now
		}
		if d := fabric.AckTimeout(q.attr.Timeout); d > 0 && now.Sub(q.unacked) >= d.Std()*time.Duration(int(q.attr.RetryCnt)+1) {
			q.fail(fabric.StatusRetryExceeded)
			return
		}
		q.retryAt = now.Add(100 * time.Microsecond)
	case out.st != fabric.StatusSuccess:
		q.fail(out.st)
	default:
		q.rnrLeft, q.unacked = int(q.attr.RNRRetry), time.Time{}
		q.complete(q.sqHead, fabric.StatusSuccess)
		q.sqHead++
	}
}

// target finds the queue pair a connected request e from q is for, in a
// state to accept it (mu of the target held): nil when there is none,
// and then the outcome, which for a DCI whose request carries another key
// than the DCT's is a remote access error (dcDenied).
func (t *nic) target(q *qp, e *sqe) (*qp, outcome) {
	qpn := q.attr.Dest.QPN
	if q.typ == fabric.DCI {
		qpn = e.wr.RemoteQPN
	}
	d := t.qps[qpn]
	if d == nil || !peers(q.typ, d.typ) || d.state != fabric.StateRTR && d.state != fabric.StateRTS {
		return nil, unreachable(q)
	}
	if q.typ == fabric.DCI && e.wr.DCKey != d.dcKey {
		return nil, outcome{st: fabric.StatusRemoteAccess}
	}
	return d, outcome{}
}

// takeRecv takes d's next receive (from its shared receive queue when it
// is attached to one), or reports there is none.
func (d *qp) takeRecv() (uint64, *rqe, bool) {
	if d.rqHead >= d.rqTail && (d.srq == nil || !d.srq.give(d)) {
		return 0, nil, false
	}
	i := d.rqHead
	d.rqHead++
	return i, d.rqAt(i), true
}

// send delivers a send (with or without immediate) on t.
func (t *nic) send(q *qp, e *sqe, data []byte) outcome {
	t.mu.Lock()
	defer t.mu.Unlock()
	d, out := t.target(q, e)
	if d == nil {
		return out
	}
	sl, ok, bad := d.takeRecvFor(e)
	switch {
	case bad:
		d.nakError() // NAK-Invalid Request
		return outcome{st: fabric.StatusRemoteInvalid}
	case !ok && q.typ == fabric.UC:
		return outcome{} // dropped
	case !ok:
		return outcome{rnr: true, rnrTimer: d.attr.MinRNRTimer}
	}
	r := sl.r
	wc := fabric.WC{ID: r.id, Op: fabric.OpRecv}
	switch {
	case r.broken():
		wc.Status = fabric.StatusLocalProtection
		sl.done(wc)
		d.nakError()
		if q.typ == fabric.UC {
			return outcome{}
		}
		return outcome{st: fabric.StatusRemoteInvalid}
	case len(data) > len(r.buf):
		wc.Status = fabric.StatusLocalLength
		sl.done(wc)
		if q.typ == fabric.UC {
			return outcome{}
		}
		d.nakError()
		return outcome{st: fabric.StatusRemoteInvalid}
	}
	copy(r.buf, data) // a posted receive belongs to the NIC: no gate
	wc.Bytes, wc.SrcQP = len(data), q.qpn
	if e.wr.Op == fabric.OpSendImm {
		wc.Imm, wc.HasImm = e.wr.Imm, true
	}
	sl.done(wc)
	return outcome{}
}

// unreachable is the outcome of a connected request whose target does not
// accept it: RC waits for an ACK that never comes; UC loses it.
func unreachable(q *qp) outcome {
	if q.typ == fabric.UC {
		return outcome{}
	}
	return outcome{notReady: true}
}

// write places an RDMA Write (with or without immediate) on t, under t's
// gate exclusively: no thread of t is between two synchronizing points.
func (t *nic) write(q *qp, e *sqe, data []byte) outcome {
	t.gate.mu.Lock()
	defer t.gate.mu.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	d, out := t.target(q, e)
	if d == nil {
		return out
	}
	dst, ok := t.remoteBuf(d, e.wr.RKey, e.wr.RemoteAddr, len(data), fabric.AccessRemoteWrite)
	if !ok {
		if q.typ == fabric.UC {
			return outcome{}
		}
		d.nakError()
		return outcome{st: fabric.StatusRemoteAccess}
	}
	var sl slot
	if e.wr.Op == fabric.OpWriteImm {
		var bad bool
		sl, ok, bad = d.takeRecvFor(e)
		switch {
		case bad:
			d.nakError()
			return outcome{st: fabric.StatusRemoteInvalid}
		case !ok && q.typ == fabric.UC:
			return outcome{}
		case !ok:
			return outcome{rnr: true, rnrTimer: d.attr.MinRNRTimer}
		}
		if sl.r.broken() {
			sl.done(fabric.WC{ID: sl.r.id, Op: fabric.OpRecv, Status: fabric.StatusLocalProtection})
			d.nakError()
			if q.typ == fabric.UC {
				return outcome{}
			}
			return outcome{st: fabric.StatusRemoteInvalid}
		}
	}
	copy(dst, data)
	if sl.r != nil {
		sl.done(fabric.WC{ID: sl.r.id, Op: fabric.OpRecvWriteImm, Bytes: len(data), Imm: e.wr.Imm, HasImm: true, SrcQP: q.qpn})
	}
	return outcome{}
}

// read answers an RDMA Read from t's memory, under t's gate shared.
func (t *nic) read(q *qp, e *sqe) outcome {
	t.gate.mu.RLock()
	defer t.gate.mu.RUnlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	d, out := t.target(q, e)
	if d == nil {
		return out
	}
	if d.attr.MaxDestRdAtomic == 0 {
		d.nakError() // reads not enabled: NAK-Invalid Request
		return outcome{st: fabric.StatusRemoteInvalid}
	}
	src, ok := t.remoteBuf(d, e.wr.RKey, e.wr.RemoteAddr, e.length, fabric.AccessRemoteRead)
	if !ok {
		d.nakError()
		return outcome{st: fabric.StatusRemoteAccess}
	}
	return outcome{read: append(make([]byte, 0, len(src)), src...)}
}

// sendUD delivers a datagram: dropped silently when the target does not
// exist, has another Q_Key, or has no receive posted.
func (n *nic) sendUD(q *qp, e *sqe, data []byte) outcome {
	t := e.ah.to
	qkey := e.wr.QKey
	if qkey&0x80000000 != 0 { // a controlled Q_Key: the QP's own (IBA 10.2.5)
		n.mu.Lock()
		qkey = q.attr.QKey
		n.mu.Unlock()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	d := t.qps[e.wr.RemoteQPN]
	if d == nil || d.typ != fabric.UD || d.state != fabric.StateRTR && d.state != fabric.StateRTS || d.attr.QKey != qkey {
		return outcome{}
	}
	i, r, ok := d.takeRecv()
	if !ok {
		return outcome{}
	}
	wc := fabric.WC{ID: r.id, Op: fabric.OpRecv, SrcQP: q.qpn, SrcLID: lidOf(n.id)}
	switch {
	case r.broken():
		wc.Status = fabric.StatusLocalProtection
		d.recvDone(i, wc)
		d.nakError()
		return outcome{}
	case len(r.buf) < fabric.GRHBytes+len(data):
		wc.Status = fabric.StatusLocalLength
	default:
		writeGRH(r.buf[:fabric.GRHBytes], n.id, t.id, len(data))
		copy(r.buf[fabric.GRHBytes:], data)
		wc.Bytes = fabric.GRHBytes + len(data)
		if e.wr.Op == fabric.OpSendImm {
			wc.Imm, wc.HasImm = e.wr.Imm, true
		}
	}
	d.recvDone(i, wc)
	return outcome{}
}

// writeGRH fills the 40-byte global route header of a UD receive.
func writeGRH(b []byte, src, dst, n int) {
	binary.BigEndian.PutUint32(b[0:], 6<<28) // IP version 6, class 0, flow 0
	binary.BigEndian.PutUint16(b[4:], uint16(n))
	b[6], b[7] = 0x1b, 1 // next header: IBA transport; hop limit
	s, d := gidOf(src), gidOf(dst)
	copy(b[8:24], s[:])
	copy(b[24:40], d[:])
}

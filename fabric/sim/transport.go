package sim

import (
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// Event kinds of a qp, in the top byte of an event's argument.
const (
	qpDoorbell uint64 = 1 << 56
	qpTxDone   uint64 = 2 << 56
	qpTimer    uint64 = 3 << 56
	qpRNR      uint64 = 4 << 56
	qpReady    uint64 = 5 << 56 // a work request has been processed by the NIC
	valMask    uint64 = 1<<56 - 1
)

func (q *qp) handle(arg uint64, _ *packet) {
	if q.destroyed {
		return
	}
	kind, v := arg&^valMask, arg&valMask
	switch kind {
	case qpReady:
		if q.readyEv <= q.c.now {
			q.readyEv = 0
		}
	case qpDoorbell:
		if q.typ == fabric.DCI {
			q.dcDoorbell(v)
		} else if q.state == fabric.StateRTS && v > q.sqVisible && v <= q.sqTail {
			q.process(q.sqVisible, v)
			q.sqVisible = v
		}
	case qpTxDone:
		for q.sqHead < v && q.sqHead < q.sqTx {
			q.complete(q.sqHead, fabric.StatusSuccess)
			q.sqHead++
		}
	case qpTimer:
		if !q.timerEv || q.c.now != q.timerEvAt {
			break // superseded by an earlier timer event (see armTimer)
		}
		q.timerEv = false
		switch {
		case !q.timerOn:
		case q.c.now < q.timerAt: // re-armed since: sleep on
			q.timerEv, q.timerEvAt = true, q.timerAt
			q.c.schedule(q.timerAt, q, qpTimer, nil)
		default:
			q.timeout()
		}
	}
	q.nic.activate(q)
}

// gate returns when the packet q sends next may leave: at once for ACKs,
// read responses and later packets of a message; for the first packet of a
// work request, once the NIC has processed the request (see process).
func (q *qp) gate(now fabric.Time) fabric.Time {
	if q.ackOn || q.readsPending() || q.txPkt > 0 || q.state != fabric.StateRTS || q.sqTx >= q.sqVisible {
		return now
	}
	return q.sqAt(q.sqTx).procAt
}

// process runs newly visible work requests through the NIC: each takes a
// processing unit (units are shared by the QPs mapped to them) for the
// profile's per-request time, after the QP's context is on the NIC (see
// nic.contextAt) and, for a request whose payload the NIC will read from
// host memory, after the translations of its gather list are (see
// nic.translate). Processing runs ahead of the wire, so it only limits the
// rate of small messages.
func (q *qp) process(from, to uint64) {
	n := q.nic
	u := int(q.qpn) % len(n.puFree)
	pu := &n.puFree[u]
	for i := from; i < to; i++ {
		e := q.sqAt(i)
		free := max(*pu, n.c.now)
		at := n.contextAt(q, free)
		fetch := e.wr.Op != fabric.OpRead && e.wr.Flags&fabric.Inline == 0 && e.bad == fabric.StatusSuccess
		if fetch {
			at = n.translate(e.mr, e.wr.Local.Addr, e.length, at)
		}
		*pu = at.Add(n.wqeCost)
		n.use.units[u] += n.wqeCost
		n.use.unitsWait[u] += at.Sub(free)
		e.procAt = *pu
		e.rdHeld = false
		if q.typ.Reliable() && n.wrc.on() {
			q.holdWR(i, e)
		}
		if fetch && e.length > 0 {
			// The payload is in host memory: its first byte reaches the
			// NIC a PCIe read round trip after the request is processed
			// (an inline request carries its data in the WQE). The
			// processing unit does not wait for it: reads overlap.
			e.procAt = e.procAt.Add(n.c.net.pcieRTT)
		}
	}
}

// readyAt re-activates q at t, when its work request has been processed.
func (q *qp) readyAt(t fabric.Time) {
	if q.readyEv != 0 && q.readyEv <= t {
		return
	}
	q.readyEv = t
	q.c.schedule(t, q, qpReady, nil)
}

func (q *qp) outstanding() bool { return q.sqHead < q.sqTx || q.txPkt > 0 }

// hasOutput reports whether the transmit engine can take a packet from q now.
func (q *qp) hasOutput() bool {
	if q.destroyed || q.state < fabric.StateRTR || q.state == fabric.StateError {
		return false
	}
	if q.ackOn || q.readsPending() {
		return true
	}
	if q.state != fabric.StateRTS || q.sqTx >= q.sqVisible || q.c.now < q.rnrUntil {
		return false
	}
	e := q.sqAt(q.sqTx)
	if e.status() != fabric.StatusSuccess {
		// Fail it only once every earlier request has completed, so that
		// completions stay in order and none is lost to the flush.
		return q.sqHead == q.sqTx
	}
	return !(e.wr.Op == fabric.OpRead && q.rdOut >= q.attr.MaxRdAtomic)
}

// nextPacket builds the next packet q sends: queued RDMA Read responses
// first, then a pending ACK/NAK, then the send queue. Responses leave in
// PSN order, as on hardware: an ACK (or NAK) is generated for a request
// that came after every queued read, so it must not overtake their
// responses, or the requester would take it as an implicit NAK of the read
// and ask for it again, forever if reads and sends keep alternating.
func (q *qp) nextPacket() *packet {
	if !q.hasOutput() {
		return nil
	}
	if q.readsPending() {
		return q.readResponse()
	}
	if q.ackOn {
		q.ackOn = false
		if q.nakCode == nakDCConnect {
			q.nakCode = 0
			return q.dcConnectPacket(q.sqAt(q.sqTx))
		}
		p := q.newPacket(int(q.destNode), q.attr.DestQPN)
		p.op, p.psn, p.nak = pAck, q.ackPSN, q.nakCode
		fatal := q.nakCode == nakInvalid
		if q.nakCode != 0 {
			p.op = pNak
			p.rnrCode = q.attr.MinRNRTimer
		}
		q.nakCode = 0
		p.setWire()
		if fatal {
			q.enterError(fmt.Sprintf("it answered node %d with a NAK (invalid request)", q.destNode)) // a NAK-Invalid Request ends the responder's connection
		}
		return p
	}
	e := q.sqAt(q.sqTx)
	if st := e.status(); st != fabric.StatusSuccess {
		q.fail(q.sqTx, st)
		return nil
	}
	var p *packet
	if q.typ == fabric.UD {
		p = q.newPacket(e.destN, e.destQPN)
		p.vl = q.c.net.vlOf(ahSL(e.wr.AH))
		p.qkey = e.wr.QKey
		if p.qkey&0x80000000 != 0 { // a controlled Q_Key: use the QP's own (IBA 10.2.5)
			p.qkey = q.attr.QKey
		}
	} else {
		p = q.newPacket(int(q.destNode), q.attr.DestQPN)
		p.qkey = e.wr.RemoteSRQN // XRCETH (XRC_SEND only; 0 otherwise)
	}
	p.psn = e.psn.Add(q.txPkt)
	p.first, p.last = q.txPkt == 0, q.txPkt == e.npkts-1
	switch e.wr.Op {
	case fabric.OpSend, fabric.OpSendImm:
		p.op = pSend
	case fabric.OpWrite, fabric.OpWriteImm:
		p.op = pWrite
		if p.first {
			p.raddr, p.rkey, p.dmaLen = e.wr.RemoteAddr, e.wr.RKey, uint32(e.length)
		}
	case fabric.OpRead:
		p.op, p.first, p.last = pReadReq, true, true
		p.raddr, p.rkey, p.dmaLen = e.wr.RemoteAddr, e.wr.RKey, uint32(e.length)
	}
	if p.op != pReadReq {
		off := q.txPkt * q.mtu
		p.n = min(q.mtu, e.length-off)
		if ch := q.c.chk; ch != nil && (q.txPkt == 0 || ch.payload) {
			ch.sendRead(q, e, q.txPkt)
		}
		p.loadPayload(e.buf, off, e.length, !q.c.cfg.SizeOnly)
		p.noDMA, p.dataAt = e.wr.Flags&fabric.Inline != 0, e.procAt
		if !p.noDMA && p.n > 0 {
			// After the first packet only this reads e.procAt (gate does
			// not): it becomes the completion of a read request that
			// covers later packets too.
			p.dataAt = q.nic.fetchPayload(off, p.n, e.length, e.resent, &e.procAt)
		}
		e.resent = false
		if p.last && e.wr.Op.HasImm() {
			p.hasImm, p.imm = true, e.wr.Imm
		}
	}
	p.setWire()
	q.txPkt++
	if p.op == pReadReq || q.txPkt == e.npkts {
		if q.typ.Reliable() && p.op != pReadReq && e.wr.Flags&fabric.Signaled == 0 {
			// On the wire, an unsignaled request needs no more state on
			// the NIC: its ACK writes no completion (wrCache).
			q.nic.wrc.drop(wrKey(q.qpn, q.sqTx))
		}
		q.sqTx++
		q.txPkt = 0
		if p.op == pReadReq {
			q.rdOut++
		}
	}
	if q.typ.Reliable() && !q.timerOn {
		q.armTimer()
	}
	return p
}

func (q *qp) newPacket(dst int, dstQPN uint32) *packet {
	p := q.c.newPacket()
	p.src, p.dst, p.srcQPN, p.dstQPN, p.qpType = q.nic.node.id, dst, q.qpn, dstQPN, q.typ
	p.srcLID = lidOf(q.nic.node.id)
	p.vl = q.c.net.vlOf(q.attr.SL)
	return p
}

// ahSL is the service level of a UD send's address handle.
func ahSL(a fabric.AH) uint8 {
	if h, ok := a.(*ah); ok {
		return h.dest.SL
	}
	return 0
}

// nextVL is the virtual lane of the packet nextPacket would build.
func (q *qp) nextVL() uint8 {
	if q.typ == fabric.UD && !q.readsPending() && !q.ackOn && q.sqTx < q.sqVisible {
		return q.c.net.vlOf(ahSL(q.sqAt(q.sqTx).wr.AH))
	}
	return q.c.net.vlOf(q.attr.SL)
}

// sent is called once a packet from q is on the wire; free is when its
// last bit has left. Unreliable sends complete then.
func (q *qp) sent(free fabric.Time) {
	if !q.typ.Reliable() && q.sqHead < q.sqTx {
		q.c.schedule(free, q, qpTxDone|q.sqTx, nil)
	}
}

func (q *qp) readResponse() *packet {
	r := &q.rd.reads[q.rd.head]
	if r.mr != nil && r.mr.Dead() {
		// Deregistered while its responses were leaving: the NIC finds
		// no translation for the rest and answers with a remote access
		// error, as for a bad rkey.
		q.responderError(nakRemoteAccess, r.psn.Add(r.idx))
		return nil
	}
	p := q.newPacket(int(q.destNode), q.attr.DestQPN)
	p.op, p.psn = pReadResp, r.psn.Add(r.idx)
	p.first, p.last = r.idx == 0, r.idx == r.npkts-1
	off := r.idx * q.mtu
	p.n = min(q.mtu, len(r.buf)-off)
	p.loadPayload(r.buf, off, len(r.buf), !q.c.cfg.SizeOnly)
	p.dataAt = r.at
	if p.n > 0 {
		p.dataAt = q.nic.fetchPayload(off, p.n, len(r.buf), false, &r.at) // a repeated read is answered from its start
	}
	p.setWire()
	r.idx++
	if r.idx == r.npkts {
		if !r.dup {
			q.rd.in-- // the responder resource is free again
		}
		q.rd.head++
		if q.rd.head == len(q.rd.reads) {
			q.rd.reads, q.rd.head = q.rd.reads[:0], 0
		}
	}
	return p
}

// complete retires send entry i with status st. Errors always produce a
// completion; successes only when signaled. Polling the completion releases
// every slot up to i.
func (q *qp) complete(i uint64, st fabric.Status) {
	e := q.sqAt(i)
	if e.done {
		return
	}
	e.done = true
	if st != fabric.StatusSuccess || e.wr.Flags&fabric.Signaled != 0 {
		n := e.length
		if st != fabric.StatusSuccess {
			n = 0
		}
		q.scq.push(fabric.WC{ID: e.wr.ID, Status: st, Op: e.wr.Op, Bytes: n, QPN: q.qpn}, q, i+1, false)
	}
	e.buf, e.mr = nil, nil
}

// fail completes entry i with an error and moves q to the error state.
func (q *qp) fail(i uint64, st fabric.Status) {
	op := q.sqAt(i).wr.Op
	q.complete(i, st)
	if q.sqHead <= i {
		q.sqHead = i + 1
	}
	to := ""
	if q.typ != fabric.UD {
		to = fmt.Sprintf(" to node %d", q.destNode)
	}
	q.enterError(fmt.Sprintf("its %s%s ended in %s", op, to, st))
}

// enterError moves q to the error state, flushing every request; cause
// says why it failed ("" when the application moved it), and is kept if
// it is the first since the last reset.
func (q *qp) enterError(cause string) {
	if _, ok := q.c.qpFailures[q]; !ok && cause != "" {
		if q.c.qpFailures == nil {
			q.c.qpFailures = map[*qp]string{}
		}
		q.c.qpFailures[q] = cause
	}
	q.state = fabric.StateError
	q.stopTimer()
	q.flushSends()
	q.flushRecvs()
	q.ackOn, q.inMsg, q.rdOut, q.rdHeld = false, false, 0, 0
	q.nic.wrc.forget(q.qpn) // flushed: none of its requests needs the NIC now
	q.resetReads()
}

func (q *qp) flushSends() {
	for i := q.sqHead; i < q.sqTail; i++ {
		q.complete(i, fabric.StatusFlushed)
	}
	q.sqHead, q.sqTx, q.sqVisible, q.txPkt = q.sqTail, q.sqTail, q.sqTail, 0
}

func (q *qp) flushRecvs() {
	if q.msgRecv { // taken by a message that will never complete now
		q.recvDone(fabric.WC{ID: q.taken().id, Status: fabric.StatusFlushed, Op: fabric.OpRecv})
	}
	for ; q.rqHead < q.rqTail; q.rqHead++ {
		e := q.rqAt(q.rqHead)
		q.recvCQ(q.rqHead).push(fabric.WC{ID: e.id, Status: fabric.StatusFlushed, Op: fabric.OpRecv, QPN: q.qpn}, q, q.rqHead+1, true)
	}
}

// recvDone completes taken(), the receive taken for the current message.
func (q *qp) recvDone(wc fabric.WC) {
	if ch := q.c.chk; ch != nil {
		ch.recvFilled(q, q.msgIdx)
	}
	wc.QPN = q.qpn
	q.recvCQ(q.msgIdx).push(wc, q, q.msgIdx+1, true)
	q.msgRecv = false
}

// armTimer (re)starts the local ACK timer. Re-arming only moves the
// deadline; at most one timer event per queue pair is ever queued.
func (q *qp) armTimer() {
	if q.attr.Timeout == 0 {
		q.timerOn = false
		return
	}
	q.timerOn = true
	q.timerAt = q.c.now.Add(fabric.AckTimeout(q.attr.Timeout))
	// A queued event later than the new deadline (left by a connection
	// with a longer timeout) would fire late: queue an earlier one, and
	// the old one becomes stale.
	if !q.timerEv || q.timerAt < q.timerEvAt {
		q.timerEv, q.timerEvAt = true, q.timerAt
		q.c.schedule(q.timerAt, q, qpTimer, nil)
	}
}

func (q *qp) stopTimer() { q.timerOn = false }

// timeout handles the local ACK timer: retransmit from the oldest
// unacknowledged packet, or fail after retry_cnt attempts.
func (q *qp) timeout() {
	q.timerOn = false
	if q.typ == fabric.DCI && q.dcConnectTimeout() {
		return
	}
	if !q.outstanding() {
		return
	}
	if q.retries == 0 {
		q.fail(q.sqHead, fabric.StatusRetryExceeded)
		return
	}
	q.retries--
	e := q.sqAt(q.sqHead)
	q.goBack(e.psn)
	q.armTimer()
}

// goBack rewinds transmission to the entry holding psn (go-back-N).
func (q *qp) goBack(psn fabric.PSN) {
	for i := q.sqHead; i < q.sqTx || (i == q.sqTx && q.txPkt > 0); i++ {
		e := q.sqAt(i)
		d := psn.Sub(e.psn)
		if d < 0 || d >= int32(e.npkts) {
			continue
		}
		for j := i; j < q.sqTx; j++ {
			if f := q.sqAt(j); f.wr.Op == fabric.OpRead {
				q.rdOut--
				f.rdGot, f.rdGap = 0, false
			}
		}
		q.sqTx, q.txPkt = i, int(d)
		e.resent = true // its payload is read again from the packet sent first
		if e.wr.Op == fabric.OpRead {
			q.txPkt = 0
		}
		if q.rd != nil && len(q.rd.ooo.resp) > 0 {
			q.dropResps(e.psn) // those reads are asked for again
		}
		q.c.stats.RCRetransmits++
		return
	}
}

// progress resets the retry counters and the timer after the peer
// acknowledged something.
func (q *qp) progress() {
	q.retries, q.rnrRetries = int8(q.attr.RetryCnt), int8(q.attr.RNRRetry)
	if q.outstanding() {
		q.armTimer()
	} else {
		q.stopTimer()
	}
}

// ackThrough completes every entry whose last PSN is at or before a.
func (q *qp) ackThrough(a fabric.PSN) {
	moved := false
	for q.sqHead < q.sqTx {
		e := q.sqAt(q.sqHead)
		if e.psn.Add(e.npkts-1).Sub(a) > 0 {
			break
		}
		if e.wr.Op == fabric.OpRead && e.rdGot < e.npkts {
			// ACK beyond a read whose data did not all arrive: implicit
			// NAK, unless the responses may still come (ooo.go).
			if !q.ackPastRead(e, a) {
				q.readGap(e)
			}
			break
		}
		q.complete(q.sqHead, fabric.StatusSuccess)
		q.sqHead++
		moved = true
	}
	if moved {
		q.progress()
	}
}

// readGap asks again for the read e, the oldest outstanding request, whose
// responses did not all arrive. Only once per loss: the rest of the
// original responses, still arriving out of sequence, are ignored, or each
// would ask for the whole read again. If the repeated request is lost too,
// the ACK timer recovers.
func (q *qp) readGap(e *sqe) {
	if e.rdGap {
		return
	}
	q.goBack(e.psn)
	e.rdGap = true
}

// requesterRecv handles ACKs, NAKs and read responses on an RC requester.
func (q *qp) requesterRecv(p *packet) {
	switch p.op {
	case pAck:
		q.ackThrough(p.psn)
	case pNak:
		q.ackThrough(p.psn.Add(-1))
		if q.state == fabric.StateError || !q.outstanding() {
			return
		}
		switch p.nak {
		case nakSeq:
			q.goBack(p.psn)
		case nakRNR:
			q.c.stats.RNRNaks++
			if q.attr.RNRRetry < 7 {
				if q.rnrRetries == 0 {
					q.fail(q.sqHead, fabric.StatusRNRRetryExceeded)
					return
				}
				q.rnrRetries--
			}
			q.rnrUntil = q.c.now.Add(fabric.RNRTimerDuration(p.rnrCode))
			q.c.schedule(q.rnrUntil, q, qpRNR, nil)
			q.goBack(p.psn)
			q.armTimer()
		case nakRemoteAccess:
			q.fail(q.sqHead, fabric.StatusRemoteAccess)
		case nakInvalid:
			q.fail(q.sqHead, fabric.StatusRemoteInvalid)
		}
	case pReadResp:
		if q.readResp(p) == respAhead && !q.holdResp(p, p.psn.Sub(q.respWant())) {
			q.readGap(q.sqAt(q.sqHead)) // past the window: taken as lost
		}
		if q.rd != nil && len(q.rd.ooo.resp) > 0 {
			q.drainResps()
		}
	}
}

// respResult is what readResp did with a read response.
type respResult uint8

const (
	respDone  respResult = iota // placed, or dropped (a duplicate, a stray, a failure)
	respAhead                   // past a missing one, with out-of-order placement on: not handled
)

// respWant is the PSN of the read response q expects next: the head
// request is a read still waiting for data (readResp says so).
func (q *qp) respWant() fabric.PSN {
	e := q.sqAt(q.sqHead)
	return e.psn.Add(e.rdGot)
}

// readResp handles a read response on an RC requester. A response past
// a missing one asks for the read again (go-back-N), or, with
// out-of-order placement on, is left to the caller to hold (respAhead).
func (q *qp) readResp(p *packet) respResult {
	q.ackThrough(p.psn.Add(-1))
	if q.sqHead >= q.sqTx {
		return respDone
	}
	e := q.sqAt(q.sqHead)
	if e.wr.Op != fabric.OpRead {
		return respDone
	}
	want := e.psn.Add(e.rdGot)
	if d := p.psn.Sub(want); d != 0 {
		if d > 0 {
			if q.nic.oooWindow > 0 {
				return respAhead
			}
			q.readGap(e) // a response was lost
		}
		return respDone
	}
	e.rdGap = false
	if e.mr != nil && e.mr.Dead() {
		// The destination was deregistered since the post: the NIC
		// cannot place the data (a local protection error).
		q.fail(q.sqHead, fabric.StatusLocalProtection)
		return respDone
	}
	if e.buf != nil {
		ch := q.c.chk
		if ch != nil && p.nseg > 0 {
			ch.readLanding(q, e, e.rdGot)
		}
		storeInto(e.mr, e.buf[e.rdGot*q.mtu:], p)
		if ch != nil && p.nseg > 0 {
			ch.readLanded(q, e, e.rdGot)
		}
		e.mr.signal()
	}
	e.rdGot++
	if e.rdGot == e.npkts {
		q.rdOut--
		q.complete(q.sqHead, fabric.StatusSuccess)
		q.sqHead++
		if q.rd != nil && q.rd.ooo.ackAhead {
			q.ackAgain()
		}
	}
	q.progress()
	return respDone
}

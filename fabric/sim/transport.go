package sim

import (
	"encoding/binary"
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

const psnMask = 1<<24 - 1

// psnDiff is a-b in 24-bit sequence space, wraparound-safe.
func psnDiff(a, b uint32) int32 { return int32((a-b)<<8) >> 8 }

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
		if q.state == fabric.StateRTS && v > q.sqVisible && v <= q.sqTail {
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
	if q.ackOn || q.readHead < len(q.reads) || q.txPkt > 0 || q.state != fabric.StateRTS || q.sqTx >= q.sqVisible {
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
	pu := &n.puFree[int(q.qpn)%len(n.puFree)]
	for i := from; i < to; i++ {
		e := q.sqAt(i)
		at := n.contextAt(q, max(*pu, n.c.now))
		if e.wr.Op != fabric.OpRead && e.wr.Flags&fabric.Inline == 0 && e.bad == fabric.StatusSuccess {
			at = n.translate(e.mr, e.wr.Local.Addr, e.length, at)
		}
		*pu = at.Add(n.wqeCost)
		e.procAt = *pu
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
	if q.ackOn || q.readHead < len(q.reads) {
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
	if q.readHead < len(q.reads) {
		return q.readResponse()
	}
	if q.ackOn {
		q.ackOn = false
		p := q.newPacket(q.destNode, q.attr.Dest.QPN)
		p.op, p.psn, p.nak = pAck, q.ackPSN, q.nakCode
		fatal := q.nakCode == nakInvalid
		if q.nakCode != 0 {
			p.op = pNak
			p.rnrCode = q.attr.MinRNRTimer
		}
		q.nakCode = 0
		p.setWire()
		if fatal {
			q.enterError() // a NAK-Invalid Request ends the responder's connection
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
		p.qkey = e.wr.QKey
		if p.qkey&0x80000000 != 0 { // a controlled Q_Key: use the QP's own (IBA 10.2.5)
			p.qkey = q.attr.QKey
		}
	} else {
		p = q.newPacket(q.destNode, q.attr.Dest.QPN)
	}
	p.psn = (e.psn + uint32(q.txPkt)) & psnMask
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
		if p.last && e.wr.Op.HasImm() {
			p.hasImm, p.imm = true, e.wr.Imm
		}
	}
	p.setWire()
	q.txPkt++
	if p.op == pReadReq || q.txPkt == e.npkts {
		q.sqTx++
		q.txPkt = 0
		if p.op == pReadReq {
			q.rdOut++
		}
	}
	if q.typ == fabric.RC && !q.timerOn {
		q.armTimer()
	}
	return p
}

func (q *qp) newPacket(dst int, dstQPN uint32) *packet {
	p := q.c.newPacket()
	p.src, p.dst, p.srcQPN, p.dstQPN, p.qpType = q.nic.node.id, dst, q.qpn, dstQPN, q.typ
	p.srcLID = lidOf(q.nic.node.id)
	return p
}

// sent is called once a packet from q is on the wire; free is when its
// last bit has left. Unreliable sends complete then.
func (q *qp) sent(free fabric.Time) {
	if q.typ != fabric.RC && q.sqHead < q.sqTx {
		q.c.schedule(free, q, qpTxDone|q.sqTx, nil)
	}
}

func (q *qp) readResponse() *packet {
	r := &q.reads[q.readHead]
	if r.mr != nil && r.mr.dead {
		// Deregistered while its responses were leaving: the NIC finds
		// no translation for the rest and answers with a remote access
		// error, as for a bad rkey.
		q.responderError(nakRemoteAccess, r.psn+uint32(r.idx))
		return nil
	}
	p := q.newPacket(q.destNode, q.attr.Dest.QPN)
	p.op, p.psn = pReadResp, (r.psn+uint32(r.idx))&psnMask
	p.first, p.last = r.idx == 0, r.idx == r.npkts-1
	off := r.idx * q.mtu
	p.n = min(q.mtu, len(r.buf)-off)
	p.loadPayload(r.buf, off, len(r.buf), !q.c.cfg.SizeOnly)
	p.dataAt = r.at
	p.setWire()
	r.idx++
	if r.idx == r.npkts {
		if !r.dup {
			q.rdIn-- // the responder resource is free again
		}
		q.readHead++
		if q.readHead == len(q.reads) {
			q.reads, q.readHead = q.reads[:0], 0
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
	q.complete(i, st)
	if q.sqHead <= i {
		q.sqHead = i + 1
	}
	q.enterError()
}

func (q *qp) enterError() {
	q.state = fabric.StateError
	q.stopTimer()
	q.flushSends()
	q.flushRecvs()
	q.reads, q.readHead, q.ackOn, q.inMsg, q.rdOut, q.rdIn = q.reads[:0], 0, false, false, 0, 0
}

func (q *qp) flushSends() {
	for i := q.sqHead; i < q.sqTail; i++ {
		q.complete(i, fabric.StatusFlushed)
	}
	q.sqHead, q.sqTx, q.sqVisible, q.txPkt = q.sqTail, q.sqTail, q.sqTail, 0
}

func (q *qp) flushRecvs() {
	if q.msgRecv { // taken by a message that will never complete now
		q.recvDone(fabric.WC{ID: q.msgRQE.id, Status: fabric.StatusFlushed, Op: fabric.OpRecv})
	}
	for ; q.rqHead < q.rqTail; q.rqHead++ {
		e := q.rqAt(q.rqHead)
		q.rcq.push(fabric.WC{ID: e.id, Status: fabric.StatusFlushed, Op: fabric.OpRecv, QPN: q.qpn}, q, q.rqHead+1, true)
	}
}

// recvDone completes msgRQE, the receive taken for the current message.
func (q *qp) recvDone(wc fabric.WC) {
	if ch := q.c.chk; ch != nil {
		ch.recvFilled(q, q.msgIdx)
	}
	wc.QPN = q.qpn
	q.rcq.push(wc, q, q.msgIdx+1, true)
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
func (q *qp) goBack(psn uint32) {
	for i := q.sqHead; i < q.sqTx || (i == q.sqTx && q.txPkt > 0); i++ {
		e := q.sqAt(i)
		d := psnDiff(psn, e.psn)
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
		if e.wr.Op == fabric.OpRead {
			q.txPkt = 0
		}
		q.c.stats.RCRetransmits++
		return
	}
}

// progress resets the retry counters and the timer after the peer
// acknowledged something.
func (q *qp) progress() {
	q.retries, q.rnrRetries = int(q.attr.RetryCnt), int(q.attr.RNRRetry)
	if q.outstanding() {
		q.armTimer()
	} else {
		q.stopTimer()
	}
}

// ackThrough completes every entry whose last PSN is at or before a.
func (q *qp) ackThrough(a uint32) {
	moved := false
	for q.sqHead < q.sqTx {
		e := q.sqAt(q.sqHead)
		if psnDiff(e.psn+uint32(e.npkts)-1, a) > 0 {
			break
		}
		if e.wr.Op == fabric.OpRead && e.rdGot < e.npkts {
			// ACK beyond a read whose data did not all arrive: implicit NAK.
			q.readGap(e)
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
		q.ackThrough((p.psn - 1) & psnMask)
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
		q.ackThrough((p.psn - 1) & psnMask)
		if q.sqHead >= q.sqTx {
			return
		}
		e := q.sqAt(q.sqHead)
		if e.wr.Op != fabric.OpRead {
			return
		}
		want := (e.psn + uint32(e.rdGot)) & psnMask
		if d := psnDiff(p.psn, want); d != 0 {
			if d > 0 {
				q.readGap(e) // a response was lost
			}
			return
		}
		e.rdGap = false
		if e.mr != nil && e.mr.dead {
			// The destination was deregistered since the post: the NIC
			// cannot place the data (a local protection error).
			q.fail(q.sqHead, fabric.StatusLocalProtection)
			return
		}
		if e.buf != nil {
			ch := q.c.chk
			if ch != nil && p.nseg > 0 {
				ch.readLanding(q, e, e.rdGot)
			}
			p.storePayload(e.buf[e.rdGot*q.mtu:])
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
		}
		q.progress()
	}
}

// receive handles a packet addressed to q.
func (q *qp) receive(p *packet) {
	switch {
	case q.typ == fabric.UD:
		q.udReceive(p)
	case p.op == pAck || p.op == pNak || p.op == pReadResp:
		if q.typ == fabric.RC && q.state == fabric.StateRTS {
			q.requesterRecv(p)
		}
	case q.typ == fabric.UC:
		q.ucReceive(p)
	default:
		q.rcReceive(p)
	}
}

func (q *qp) ack(psn uint32) {
	if q.ackOn && q.nakCode != 0 {
		return // a pending NAK already acknowledges everything before it
	}
	q.ackOn, q.ackPSN, q.nakCode = true, psn&psnMask, 0
	q.nic.activate(q)
}

func (q *qp) nak(code nakCode, psn uint32) {
	q.ackOn, q.ackPSN, q.nakCode = true, psn&psnMask, code
	q.nic.activate(q)
}

// takeRecv consumes the next receive for an incoming message. It returns
// false (and, on RC, has answered the requester) when there is none or it
// is bad.
func (q *qp) takeRecv(p *packet) bool {
	if q.msgRecv && q.typ == fabric.UC {
		return true // the receive of a message lost in transit, used again
	}
	if q.noRecv() {
		// Like a sequence NAK, one per episode: the packets behind this
		// one are dropped silently until it is retried, so that no
		// sequence NAK replaces this one before it leaves.
		q.nakSent = true
		q.nak(nakRNR, p.psn)
		if ch := q.c.chk; ch != nil {
			ch.report(RNRNak, q.nic.node.id, nicThread, "receive", q.String(), fmt.Sprintf("a %v message from node %d found no receive posted on %v (RNR NAK)", p.op, p.src, q))
		}
		return false
	}
	q.msgRQE, q.msgIdx, q.msgRecv = *q.rqAt(q.rqHead), q.rqHead, true
	if ch := q.c.chk; ch != nil {
		ch.recvFilling(q, q.rqAt(q.rqHead))
	}
	q.rqHead++
	if q.msgRQE.broken() {
		q.recvDone(fabric.WC{ID: q.msgRQE.id, Status: fabric.StatusLocalProtection, Op: fabric.OpRecv})
		if q.typ == fabric.RC {
			q.responderError(nakInvalid, p.psn)
		} else {
			q.enterError() // UC has no NAKs
		}
		return false
	}
	return true
}

// responderError answers with a NAK and moves the responder to error.
func (q *qp) responderError(code nakCode, psn uint32) {
	p := q.newPacket(q.destNode, q.attr.Dest.QPN)
	p.op, p.psn, p.nak = pNak, psn&psnMask, code
	p.setWire()
	q.c.schedule(q.c.now, q.c.net, evDirect, p)
	q.enterError()
}

func (q *qp) rcReceive(p *packet) {
	d := psnDiff(p.psn, q.ePSN)
	if d < 0 { // duplicate: answer again, never deliver twice
		if p.op == pReadReq {
			q.respondRead(p, true)
		} else {
			q.ack(q.ePSN - 1)
		}
		return
	}
	if d > 0 { // a gap: one NAK (sequence or RNR) until the sequence recovers
		if !q.nakSent {
			q.nakSent = true
			q.nak(nakSeq, q.ePSN)
		}
		return
	}
	q.nakSent = false
	switch p.op {
	case pSend:
		if !q.deliverSend(p, true) {
			return
		}
	case pWrite:
		if !q.deliverWrite(p, true) {
			return
		}
	case pReadReq:
		if q.rdIn >= q.attr.MaxDestRdAtomic {
			// More new reads in flight than the responder has resources
			// for (max_dest_rd_atomic): the requester broke the limit it
			// was given, or reads are not enabled (0). The responder
			// answers with a NAK-Invalid Request (rxe does so for
			// max_dest_rd_atomic 0), after the responses it owes for the
			// reads before it (responses leave in PSN order), and then
			// goes to the error state; later packets are dropped.
			q.c.stats.ReadResourceNaks++
			q.nakSent = true
			q.nak(nakInvalid, p.psn)
			return
		}
		if !q.respondRead(p, false) {
			return
		}
		npk := (int(p.dmaLen) + q.mtu - 1) / q.mtu
		q.ePSN = (q.ePSN + uint32(max(npk, 1))) & psnMask
		return
	}
	q.ePSN = (q.ePSN + 1) & psnMask
	if p.last {
		q.ack(p.psn)
	}
}

// deliverSend places one send packet into the current receive buffer.
// reliable selects RC behaviour (NAKs) over UC (silent drops).
func (q *qp) deliverSend(p *packet, reliable bool) bool {
	if p.first {
		if !reliable && !q.msgRecv && q.noRecv() {
			q.c.stats.UCDrops++
			q.dropMsg = true
			return false
		}
		if !q.takeRecv(p) {
			return false
		}
		q.inMsg, q.msgOff = true, 0
	} else if !q.inMsg {
		return false
	} else if q.msgRQE.broken() {
		// The receive's region was deregistered while the message arrived.
		q.recvDone(fabric.WC{ID: q.msgRQE.id, Status: fabric.StatusLocalProtection, Op: fabric.OpRecv})
		q.inMsg = false
		if reliable {
			q.responderError(nakInvalid, p.psn)
		} else {
			q.enterError()
		}
		return false
	}
	if q.msgOff+p.n > len(q.msgRQE.buf) {
		q.recvDone(fabric.WC{ID: q.msgRQE.id, Status: fabric.StatusLocalLength, Op: fabric.OpRecv})
		q.inMsg = false
		if reliable {
			q.responderError(nakInvalid, p.psn)
		} else {
			q.dropMsg = true
		}
		return false
	}
	if p.n > 0 {
		p.storePayload(q.msgRQE.buf[q.msgOff:])
		q.msgRQE.mr.signal()
	}
	q.msgOff += p.n
	if p.last {
		q.recvDone(fabric.WC{ID: q.msgRQE.id, Status: fabric.StatusSuccess, Op: fabric.OpRecv, Bytes: q.msgOff,
			Imm: p.imm, HasImm: p.hasImm, SrcQP: p.srcQPN})
		q.inMsg = false
	}
	return true
}

// deliverWrite places one RDMA Write packet.
func (q *qp) deliverWrite(p *packet, reliable bool) bool {
	if p.first {
		m, buf := q.nic.remoteBuf(q, p.rkey, p.raddr, p.dmaLen, fabric.AccessRemoteWrite)
		if buf == nil && p.dmaLen > 0 || m == nil && p.dmaLen > 0 {
			if reliable {
				q.responderError(nakRemoteAccess, p.psn)
			} else {
				q.c.stats.UCDrops++
				q.dropMsg = true
			}
			return false
		}
		if ch := q.c.chk; ch != nil && m != nil {
			ch.remoteWrite(q, m, buf, p)
		}
		q.msgMR, q.msgBuf, q.msgOff, q.inMsg = m, buf, 0, true
	} else if !q.inMsg {
		return false
	} else if q.msgMR != nil && q.msgMR.dead {
		// The target region was deregistered while the Write arrived:
		// the rest finds no translation, a remote access error.
		q.inMsg = false
		if reliable {
			q.responderError(nakRemoteAccess, p.psn)
		} else {
			q.c.stats.UCDrops++
			q.dropMsg = true
		}
		return false
	}
	if q.msgOff+p.n > len(q.msgBuf) {
		if reliable {
			q.responderError(nakInvalid, p.psn)
		}
		return false
	}
	if p.last && p.hasImm {
		if !reliable && !q.msgRecv && q.noRecv() {
			q.c.stats.UCDrops++
			q.inMsg = false
			return false
		}
		if !q.takeRecv(p) {
			return false
		}
	}
	if p.n > 0 {
		p.storePayload(q.msgBuf[q.msgOff:])
		q.msgMR.signal()
	}
	q.msgOff += p.n
	if p.last {
		if p.hasImm {
			q.recvDone(fabric.WC{ID: q.msgRQE.id, Status: fabric.StatusSuccess, Op: fabric.OpRecvWriteImm, Bytes: q.msgOff,
				Imm: p.imm, HasImm: true, SrcQP: p.srcQPN})
		}
		q.inMsg = false
	}
	return true
}

// respondRead queues the responses to an RDMA Read request. A new request
// (not dup) takes one of the responder's max_dest_rd_atomic resources until
// its last response has left; a duplicate is answered again without one,
// as the requester counts it against the read it repeats. The data can be
// read once the region's translations are on the NIC.
func (q *qp) respondRead(p *packet, dup bool) bool {
	m, buf := q.nic.remoteBuf(q, p.rkey, p.raddr, p.dmaLen, fabric.AccessRemoteRead)
	if m == nil && p.dmaLen > 0 {
		q.responderError(nakRemoteAccess, p.psn)
		return false
	}
	npk := max((int(p.dmaLen)+q.mtu-1)/q.mtu, 1)
	at := q.nic.translate(m, p.raddr, int(p.dmaLen), q.c.now)
	if !dup {
		q.rdIn++
	}
	q.reads = append(q.reads, readCtx{mr: m, buf: buf, psn: p.psn, npkts: npk, at: at, dup: dup})
	q.nic.activate(q)
	return true
}

func (q *qp) ucReceive(p *packet) {
	if d := psnDiff(p.psn, q.ePSN); d != 0 {
		// Packets were lost. The message in progress is gone, and so is
		// this packet's message unless the packet starts it; a gap inside
		// a message already being dropped adds nothing, and a message lost
		// whole leaves no trace to count.
		if q.inMsg || !p.first && !q.ucMid {
			q.c.stats.UCDrops++
		}
		// A receive the lost message took (msgRecv) stays taken and
		// receives the next message, as hardware reuses the WQE.
		q.inMsg = false
		if !p.first {
			q.dropMsg, q.ucMid = true, !p.last
			q.ePSN = (p.psn + 1) & psnMask
			return
		}
	}
	q.ePSN = (p.psn + 1) & psnMask
	q.ucMid = !p.last
	if p.first {
		q.dropMsg = false
	} else if q.dropMsg {
		return
	}
	switch p.op {
	case pSend:
		q.deliverSend(p, false)
	case pWrite:
		q.deliverWrite(p, false)
	}
}

func (q *qp) udReceive(p *packet) {
	if p.qkey != q.attr.QKey {
		q.c.stats.UDDropsQKey++
		return
	}
	if q.state != fabric.StateRTR && q.state != fabric.StateRTS {
		return
	}
	if q.noRecv() {
		q.c.stats.UDDropsNoRecv++
		if ch := q.c.chk; ch != nil {
			ch.report(NoRecvDrop, q.nic.node.id, nicThread, "receive", q.String(), fmt.Sprintf("a UD message from node %d QP %#x found no receive posted on %v and was dropped", p.src, p.srcQPN, q))
		}
		return
	}
	idx := q.rqHead
	e := *q.rqAt(idx)
	q.rqHead++
	wc := fabric.WC{ID: e.id, Op: fabric.OpRecv, QPN: q.qpn, SrcQP: p.srcQPN, SrcLID: p.srcLID}
	bad := e.broken()
	switch {
	case bad:
		wc.Status = fabric.StatusLocalProtection
	case len(e.buf) < fabric.GRHBytes+p.n:
		wc.Status = fabric.StatusLocalLength
	default:
		if ch := q.c.chk; ch != nil {
			ch.recvFilling(q, q.rqAt(idx))
		}
		writeGRH(e.buf[:fabric.GRHBytes], p)
		p.storePayload(e.buf[fabric.GRHBytes:])
		if ch := q.c.chk; ch != nil {
			ch.recvFilled(q, idx)
		}
		e.mr.signal()
		wc.Bytes = fabric.GRHBytes + p.n
		wc.Imm, wc.HasImm = p.imm, p.hasImm
	}
	q.rcq.push(wc, q, q.rqHead, true)
	if bad { // unlike a short buffer (documented choice), a bad one is a QP error
		q.enterError()
	}
}

// writeGRH fills the 40-byte global route header of a UD receive.
func writeGRH(b []byte, p *packet) {
	binary.BigEndian.PutUint32(b[0:], 6<<28) // IP version 6, class 0, flow 0
	// Payload length: the bytes after the GRH up to and including the ICRC.
	binary.BigEndian.PutUint16(b[4:], uint16(p.wire-hdrLRH-hdrVCRC))
	b[6], b[7] = 0x1b, 1 // next header: IBA transport; hop limit
	s, d := gidOf(p.src), gidOf(p.dst)
	copy(b[8:24], s[:])
	copy(b[24:40], d[:])
}

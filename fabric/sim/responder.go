package sim

import (
	"encoding/binary"
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// The receiving side of the transports: RC responder (ACKs and NAKs,
// receives, writes, read responses, duplicates), UC and UD receive.

// receive handles a packet addressed to q.
func (q *qp) receive(p *packet) {
	switch {
	case q.typ == fabric.UD:
		q.udReceive(p)
	case p.op == pAck || p.op == pNak || p.op == pReadResp:
		if q.typ.Reliable() && q.state == fabric.StateRTS {
			q.requesterRecv(p)
		}
	case q.typ == fabric.UC:
		q.ucReceive(p)
	default:
		q.rcReceive(p)
	}
}

func (q *qp) ack(psn fabric.PSN) {
	if q.ackOn && q.nakCode != 0 {
		return // a pending NAK already acknowledges everything before it
	}
	q.ackOn, q.ackPSN, q.nakCode = true, psn, 0
	q.nic.activate(q)
}

func (q *qp) nak(code nakCode, psn fabric.PSN) {
	q.ackOn, q.ackPSN, q.nakCode = true, psn, code
	q.nic.activate(q)
}

// takeRecv consumes the next receive for an incoming message. It returns
// false (and, on RC, has answered the requester) when there is none or it
// is bad.
func (q *qp) takeRecv(p *packet) bool {
	if q.msgRecv && q.typ == fabric.UC {
		return true // the receive of a message lost in transit, used again
	}
	if q.typ == fabric.XRCRecv && !q.xrcTake(p) {
		return false
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
	q.msgIdx, q.msgRecv = q.rqHead, true
	e := q.rqAt(q.rqHead) // an entry of its own before it is taken
	if ch := q.c.chk; ch != nil {
		ch.recvFilling(q, e)
	}
	q.rqHead++
	if e.broken(e.region(q.nic)) { // e is taken(): nothing moved the ring since
		q.recvDone(fabric.WC{ID: e.id, Status: fabric.StatusLocalProtection, Op: fabric.OpRecv})
		if q.typ.Reliable() {
			q.responderError(nakInvalid, p.psn)
		} else {
			q.enterError("a message arrived for a receive whose buffer failed its protection check") // UC has no NAKs
		}
		return false
	}
	return true
}

// responderError answers with a NAK and moves the responder to error.
func (q *qp) responderError(code nakCode, psn fabric.PSN) {
	p := q.newPacket(int(q.destNode), q.attr.DestQPN)
	p.op, p.psn, p.nak = pNak, psn, code
	p.setWire()
	q.c.schedule(q.c.now, q.c.net, evDirect, p)
	q.enterError(fmt.Sprintf("it answered node %d's request with a NAK (%s)", q.destNode, code))
}

func (q *qp) rcReceive(p *packet) {
	d := p.psn.Sub(q.ePSN)
	if d < 0 { // duplicate: answer again, never deliver twice
		if p.op == pReadReq {
			q.respondRead(p, true)
		} else {
			q.ack(q.ePSN.Add(-1))
		}
		return
	}
	if d > 0 { // a gap: one NAK (sequence or RNR) until the sequence recovers
		if q.nic.oooWindow > 0 && q.holdAhead(p, d) {
			return // placed when the gap fills (ooo.go)
		}
		if !q.nakSent {
			q.nakSent = true
			q.c.stats.RCSeqNaks++
			q.nak(nakSeq, q.ePSN)
		}
		return
	}
	q.rcInOrder(p)
	if q.rd != nil && len(q.rd.ooo.req) > 0 {
		q.drainAhead()
	}
}

// rcInOrder takes the request q expects next (p.psn is ePSN).
func (q *qp) rcInOrder(p *packet) {
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
		if q.readsInUse() >= int(q.attr.MaxDestRdAtomic) {
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
		q.ePSN = q.ePSN.Add(max(npk, 1))
		return
	}
	q.ePSN = q.ePSN.Add(1)
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
	}
	e := q.taken()
	m := e.region(q.nic)
	if !p.first && e.broken(m) { // (takeRecv checked the first)
		// The receive's region was deregistered while the message arrived.
		q.recvDone(fabric.WC{ID: e.id, Status: fabric.StatusLocalProtection, Op: fabric.OpRecv})
		q.inMsg = false
		if reliable {
			q.responderError(nakInvalid, p.psn)
		} else {
			q.enterError("a receive's region was deregistered while a message arrived into it")
		}
		return false
	}
	if int(q.msgOff)+p.n > int(e.n) {
		q.recvDone(fabric.WC{ID: e.id, Status: fabric.StatusLocalLength, Op: fabric.OpRecv})
		q.inMsg = false
		if reliable {
			q.responderError(nakInvalid, p.psn)
		} else {
			q.dropMsg = true
		}
		return false
	}
	if p.n > 0 {
		storeInto(m, e.bytes(m)[q.msgOff:], p)
		m.signal()
	}
	q.msgOff += uint32(p.n)
	if p.last {
		q.recvDone(fabric.WC{ID: e.id, Status: fabric.StatusSuccess, Op: fabric.OpRecv, Bytes: int(q.msgOff),
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
		q.msgMR, q.msgAt, q.msgLen, q.msgOff, q.inMsg = m, 0, 0, 0, true
		if m != nil {
			q.msgAt, q.msgLen = p.raddr-m.Base, p.dmaLen // buf is bytes [msgAt, msgAt+msgLen) of m
		}
	} else if !q.inMsg {
		return false
	} else if q.msgMR != nil && q.msgMR.Dead() {
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
	if int(q.msgOff)+p.n > int(q.msgLen) {
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
	if p.n > 0 && !p.placed {
		m := q.msgMR
		storeInto(m, m.buf[q.msgAt+uint64(q.msgOff):q.msgAt+uint64(q.msgLen)], p)
		m.signal()
	}
	q.msgOff += uint32(p.n)
	if p.last {
		if p.hasImm {
			q.recvDone(fabric.WC{ID: q.taken().id, Status: fabric.StatusSuccess, Op: fabric.OpRecvWriteImm, Bytes: int(q.msgOff),
				Imm: p.imm, HasImm: true, SrcQP: p.srcQPN})
		}
		q.inMsg = false
	}
	return true
}

// respondRead queues the responses to an RDMA Read request. A new request
// (not dup) takes one of the responder's max_dest_rd_atomic resources until
// its last response has left; a duplicate is answered again without one,
// as the requester counts it against the read it repeats. The responses
// are built by the transmit side, which looks the queue pair's context up
// again (a READ holds responder state that a WRITE, answered by an ACK
// from the receive pipeline, does not; docs/model.md), and the data can
// be read once the region's translations are on the NIC.
func (q *qp) respondRead(p *packet, dup bool) bool {
	m, buf := q.nic.remoteBuf(q, p.rkey, p.raddr, p.dmaLen, fabric.AccessRemoteRead)
	if m == nil && p.dmaLen > 0 {
		q.responderError(nakRemoteAccess, p.psn)
		return false
	}
	npk := max((int(p.dmaLen)+q.mtu-1)/q.mtu, 1)
	at := q.nic.translate(m, p.raddr, int(p.dmaLen), q.nic.respondAt(q))
	if p.dmaLen > 0 {
		// The data is fetched from host memory: its first byte is on the
		// NIC a PCIe read round trip later (as a send's payload, process).
		at = at.Add(q.c.net.pcieRTT)
	}
	if q.rd == nil {
		q.rd = &readState{}
	}
	if !dup {
		q.rd.in++
	}
	q.rd.reads = append(q.rd.reads, readCtx{mr: m, buf: buf, psn: p.psn, npkts: npk, at: at, dup: dup})
	q.nic.activate(q)
	return true
}

func (q *qp) ucReceive(p *packet) {
	if d := p.psn.Sub(q.ePSN); d != 0 {
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
			q.ePSN = p.psn.Add(1)
			return
		}
	}
	q.ePSN = p.psn.Add(1)
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
	m := e.region(q.nic)
	bad := e.broken(m)
	switch {
	case bad:
		wc.Status = fabric.StatusLocalProtection
	case int(e.n) < fabric.GRHBytes+p.n:
		wc.Status = fabric.StatusLocalLength
	default:
		if ch := q.c.chk; ch != nil {
			ch.recvFilling(q, q.rqAt(idx))
		}
		if m.unbacked() { // the GRH is not zero
			m.materialize()
		}
		buf := e.bytes(m)
		writeGRH(buf[:fabric.GRHBytes], p)
		p.storePayload(buf[fabric.GRHBytes:])
		if ch := q.c.chk; ch != nil {
			ch.recvFilled(q, idx)
		}
		m.signal()
		wc.Bytes = fabric.GRHBytes + p.n
		wc.Imm, wc.HasImm = p.imm, p.hasImm
	}
	q.rcq.push(wc, q, q.rqHead, true)
	if bad { // unlike a short buffer (documented choice), a bad one is a QP error
		q.enterError("a message arrived for a receive whose buffer failed its protection check")
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

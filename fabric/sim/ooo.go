package sim

import (
	"slices"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// Out-of-order placement of RC packets (profile nic.ooo_window,
// docs/model.md [F3]). With adaptive routing, packets of one queue pair
// take different paths and one may overtake another. A NIC without
// out-of-order placement treats the overtaking packet as a gap in the
// PSNs: a sequence NAK and go-back-N. A NIC with it (ConnectX-5 on)
// accepts the packet. The model holds such a packet, up to ooo_window
// PSNs past the expected one, and places it when the gap before it
// fills; the queue pair then goes on through every packet it holds, in
// PSN order, so receives are consumed, messages complete and ACKs leave
// in order, as with packets that came in order. Hardware places the
// data on arrival; the model does not, so a design that polls memory
// for a message's last byte never sees it before the bytes ahead of it
// (docs/model.md, "Out-of-order placement"). A loss still shows as a
// gap that never fills: the requester's ACK timer recovers it, and the
// retransmitted packets the queue pair already holds are dropped.

// oooState is what a queue pair holds ahead of a gap. It lives in the
// queue pair's readState, allocated at the first such packet, so a
// queue pair whose packets arrive in order does not carry it.
type oooState struct {
	req  []*packet // responder: requests past ePSN, in PSN order
	resp []*packet // requester: read responses past the one expected, in PSN order
	// ackTo is the latest PSN an ACK (or a held response's implicit
	// ACK) acknowledged past a read still waiting for responses
	// (ackAhead): applied again once that read completes.
	ackTo    fabric.PSN
	ackAhead bool
}

// ooo returns q's out-of-order state, allocating it.
func (q *qp) ooo() *oooState {
	if q.rd == nil {
		q.rd = &readState{}
	}
	return &q.rd.ooo
}

// holdAhead takes a request d PSNs past the expected one (d > 0) when
// out-of-order placement is on and d is within its window: a copy is
// held until the gap fills (a packet already held is dropped). It
// returns false when the packet is not taken.
func (q *qp) holdAhead(p *packet, d int32) bool {
	if d > q.nic.oooWindow {
		return false
	}
	o := q.ooo()
	var taken *packet
	o.req, taken = q.c.insertHeld(o.req, p)
	if taken != nil && taken.op == pWrite {
		taken.placed = q.placeAhead(taken, d)
	}
	return true
}

// placeAhead writes the payload of an RDMA Write packet held d PSNs past
// the expected one into memory on arrival, as the hardware's out-of-order
// placement does: only its completion (and the ACK) waits for the gap.
// So a thread polling memory can see it before the bytes ahead of it,
// which are still on their way. Its target is known when it is the first
// packet of its message (its RETH gives the address), or a packet of the
// message in progress (every packet but a message's last carries a whole
// MTU); a packet of a later message whose first packet has not arrived is
// placed when the gap fills, with the rest. When the gap fills, a packet
// placed ahead is not written again (its bytes may have been overwritten
// since, by a sender that reused the buffer after the receiver saw a
// message's last bytes); it is checked as every write is. It reports
// whether it placed p.
func (q *qp) placeAhead(p *packet, d int32) bool {
	if p.n == 0 || p.data == nil {
		return false
	}
	var m *mr
	var dst []byte
	switch {
	case p.first:
		mm, buf := q.nic.remoteBuf(q, p.rkey, p.raddr, p.dmaLen, fabric.AccessRemoteWrite)
		if mm == nil || len(buf) < p.n {
			return false // refused when the gap fills, in order
		}
		m, dst = mm, buf[:p.n]
	case q.inMsg && q.msgMR != nil && !q.msgMR.Dead():
		off := uint64(q.msgOff) + uint64(d)*uint64(q.mtu)
		if off+uint64(p.n) > uint64(q.msgLen) {
			return false // a later message's
		}
		m = q.msgMR
		dst = m.buf[q.msgAt+off : q.msgAt+off+uint64(p.n)]
	default:
		return false
	}
	q.c.stats.RCPlacedAhead++
	storeInto(m, dst, p)
	m.signal()
	return true
}

// insertHeld adds a copy of p to held, kept in PSN order, unless a packet
// of its PSN is there already (a duplicate); it returns the copy, nil for
// a duplicate.
func (c *Cluster) insertHeld(held []*packet, p *packet) ([]*packet, *packet) {
	i, found := slices.BinarySearchFunc(held, p.psn, func(h *packet, psn fabric.PSN) int { return int(h.psn.Sub(psn)) })
	if found {
		return held, nil
	}
	c.stats.RCHeldAhead++
	cp := c.clonePacket(p)
	return slices.Insert(held, i, cp), cp
}

// drainAhead takes, after a packet in sequence, the held requests that
// are in sequence now, in PSN order. One that does not advance the
// expected PSN (an RNR NAK, an error) ends it: the requester sends it
// again, and the held packets past it wait.
func (q *qp) drainAhead() {
	o := &q.rd.ooo
	for len(o.req) > 0 && q.state != fabric.StateError {
		p := o.req[0]
		d := p.psn.Sub(q.ePSN)
		if d > 0 {
			return
		}
		o.req[0] = nil
		o.req = o.req[1:]
		if d == 0 {
			q.rcInOrder(p)
		}
		q.c.freePacket(p)
	}
	if len(o.req) == 0 {
		o.req = o.req[:0:0]
	}
}

// holdResp takes a read response d PSNs past the one the requester
// expects (d > 0), as holdAhead does; false when d is beyond the window.
func (q *qp) holdResp(p *packet, d int32) bool {
	if d > q.nic.oooWindow {
		return false
	}
	o := q.ooo()
	o.resp, _ = q.c.insertHeld(o.resp, p)
	return true
}

// drainResps places the held read responses that are in sequence now.
func (q *qp) drainResps() {
	o := &q.rd.ooo
	for len(o.resp) > 0 && q.state == fabric.StateRTS {
		p := o.resp[0]
		if q.readResp(p) == respAhead {
			return
		}
		o.resp[0] = nil
		o.resp = o.resp[1:]
		q.c.freePacket(p)
	}
	if len(o.resp) == 0 {
		o.resp = o.resp[:0:0]
	}
}

// ackPastRead notes an acknowledgement up to a that reached past the read
// e, which still waits for responses, when out-of-order placement lets
// the responses come late: it is applied again once e completes. It
// returns false when the window does not reach a (the responses are
// taken as lost).
func (q *qp) ackPastRead(e *sqe, a fabric.PSN) bool {
	if q.nic.oooWindow == 0 || a.Sub(e.psn.Add(e.rdGot)) > q.nic.oooWindow {
		return false
	}
	o := q.ooo()
	if !o.ackAhead || a.Sub(o.ackTo) > 0 {
		o.ackTo = a
	}
	o.ackAhead = true
	return true
}

// ackAgain applies a noted acknowledgement after the read it waited for
// completed.
func (q *qp) ackAgain() {
	o := &q.rd.ooo
	o.ackAhead = false
	q.ackThrough(o.ackTo)
}

// dropResps forgets the held read responses from psn on: go-back-N asks
// for those reads again.
func (q *qp) dropResps(psn fabric.PSN) {
	o := &q.rd.ooo
	for i, p := range o.resp {
		if p.psn.Sub(psn) >= 0 {
			for _, r := range o.resp[i:] {
				q.c.freePacket(r)
			}
			clear(o.resp[i:])
			o.resp = o.resp[:i]
			return
		}
	}
}

// reset forgets everything held (the queue pair failed or was reset).
func (o *oooState) reset(c *Cluster) {
	for _, p := range o.req {
		c.freePacket(p)
	}
	for _, p := range o.resp {
		c.freePacket(p)
	}
	*o = oooState{}
}

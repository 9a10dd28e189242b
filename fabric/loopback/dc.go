package loopback

import (
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// Dynamically Connected transport. A DCI executes each request as RC
// does, against the DCT the request names (SendWR.AH's node,
// SendWR.RemoteQPN): the loopback NIC delivers a request whole and in
// order, so the implicit connect and disconnect of a DCI that changes
// targets costs nothing here. A DCT is a responder attached to an
// ordinary SRQ, completing its receives in its CQ; a request whose
// SendWR.DCKey is not the DCT's key fails with a remote access error at
// the initiator and leaves the DCT as it was (a DCT serves every
// initiator: no one initiator's error moves it to ERROR).

// createDCQP creates a DCI or DCT (mu held).
func (p *pd) createDCQP(init fabric.QPInit) (*qp, error) {
	if err := fabric.CheckDCQPInit(init); err != nil {
		return nil, err
	}
	n := p.n
	attr := (&device{n: n}).Attr()
	q := &qp{n: n, pd: p, typ: init.Type, mtu: attr.MTU}
	if init.Type == fabric.DCT {
		s, err := p.attachable(init.SRQ)
		if err != nil {
			return nil, err
		}
		rcq, mine, dead := p.localCQ(init.RecvCQ)
		if err := fabric.CheckSendCQ(mine, dead, "this loopback device"); err != nil {
			return nil, err
		}
		q.srq, q.rcq, q.dcKey = s, rcq, init.DCKey
		q.caps.MaxRecvWR = s.maxWR
		q.rq = make([]rqe, s.maxWR)
	} else {
		scq, mine, dead := p.localCQ(init.SendCQ)
		if err := fabric.CheckSendCQ(mine, dead, "this loopback device"); err != nil {
			return nil, err
		}
		caps := init.Caps
		caps.MaxRecvWR = 0
		if most := attr.MaxSendWR(fabric.RC, 1, caps.MaxInline); caps.MaxSendWR < 1 || caps.MaxSendWR > most {
			return nil, fmt.Errorf("%w: send queue depth %d outside 1..%d", fabric.ErrLimit, caps.MaxSendWR, most)
		}
		if caps.MaxInline < 0 || caps.MaxInline > maxInlineRC {
			return nil, fmt.Errorf("%w: max inline %d bytes outside 0..%d for %v", fabric.ErrLimit, caps.MaxInline, maxInlineRC, init.Type)
		}
		q.scq, q.caps, q.sq = scq, caps, make([]sqe, caps.MaxSendWR)
	}
	if len(n.qps) >= maxQP {
		return nil, fmt.Errorf("%w: node %d already has %d queue pairs", fabric.ErrLimit, n.id, len(n.qps))
	}
	n.nextQPN++
	q.qpn = qpnBase + n.nextQPN
	n.qps[q.qpn] = q
	p.Use()
	if q.srq != nil {
		q.srq.Use()
	}
	for _, c := range []*cq{q.scq, q.rcq} {
		if c != nil {
			c.Use()
		}
	}
	return q, nil
}

// dcAH is the address handle of a DCI's request: live, of q's protection
// domain (mu held).
func (q *qp) dcAH(x fabric.AH) (*ah, error) {
	a, ok := x.(*ah)
	if !ok || a == nil || a.Dead() {
		return nil, fmt.Errorf("%w: a DCI request needs a live address handle of this loopback device", fabric.ErrInvalidWR)
	}
	if a.pd != q.pd {
		return nil, fmt.Errorf("%w: address handle from another protection domain", fabric.ErrInvalidWR)
	}
	return a, nil
}

// destFor is the NIC request e of q goes to: the connected peer's, or for
// a DCI the one its address handle names (fixed at the handle's creation).
func (q *qp) destFor(e *sqe) *nic {
	if q.typ == fabric.DCI {
		return e.ah.to
	}
	return q.dest
}

// nakError moves responder d to ERROR after it answered a request with a
// fatal NAK, unless d is a DCT, which serves every initiator.
func (d *qp) nakError() {
	if d.typ != fabric.DCT {
		d.enterError()
	}
}

package loopback

import (
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// XRC. An XRCSend queue pair executes its requests as RC does; the
// XRCRecv queue pair it is connected to takes each message that needs a
// receive out of the XRC SRQ the request names (SendWR.RemoteSRQN), which
// must be of the target's domain (else the request fails with a remote
// invalid request and the target enters ERROR), and completes it in that
// SRQ's CQ at once: the loopback NIC delivers a message whole, so the
// receive never sits in a queue pair's ring, and its slot is the SRQ's
// until the completion is polled (cqe.xs).

// xrcd implements fabric.XRCD; guarded by the NIC's mu.
type xrcd struct {
	n  *nic
	pd *pd
	id int
	// Its users: XRC SRQs and target queue pairs.
	fabric.Lifecycle
}

var _ fabric.XRCD = (*xrcd)(nil)

func (d *xrcd) String() string { return fmt.Sprintf("XRCD %d on node %d", d.id, d.n.id) }

func (p *pd) OpenXRCD() (fabric.XRCD, error) {
	n := p.n
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := p.Alive(); err != nil {
		return nil, err
	}
	n.nextXRCD++
	p.Use()
	return &xrcd{n: n, pd: p, id: n.nextXRCD}, nil
}

func (d *xrcd) Close() error {
	d.n.mu.Lock()
	defer d.n.mu.Unlock()
	return d.End(fabric.CheckCloseXRCD(d, d.Dead(), d.Users()), &d.pd.Lifecycle)
}

// domain returns the XRC domain x of p's NIC, alive (mu held).
func (p *pd) domain(x fabric.XRCD, what string) (*xrcd, error) {
	d, ok := x.(*xrcd)
	mine := ok && d != nil && d.n == p.n
	if err := fabric.CheckXRCD(what, mine, mine && d.Dead()); err != nil {
		return nil, err
	}
	return d, nil
}

// localCQ is x as a completion queue of p's NIC: mine when it is one,
// dead when it was destroyed (mu held).
func (p *pd) localCQ(x fabric.CQ) (q *cq, mine, dead bool) {
	q, ok := x.(*cq)
	mine = ok && q != nil && q.n == p.n
	return q, mine, mine && q.dead
}

// xrcQP checks the arguments of an XRC queue pair and returns its send
// CQ (nil for a target), capabilities and domain (targets) (mu held).
func (p *pd) xrcQP(init fabric.QPInit) (*cq, fabric.QPCaps, *xrcd, error) {
	var caps fabric.QPCaps
	if err := fabric.CheckXRCQPInit(init); err != nil {
		return nil, caps, nil, err
	}
	if init.Type == fabric.XRCRecv {
		d, err := p.domain(init.XRCD, "CreateQP")
		return nil, caps, d, err
	}
	scq, mine, dead := p.localCQ(init.SendCQ)
	if err := fabric.CheckSendCQ(mine, dead, "this loopback device"); err != nil {
		return nil, caps, nil, err
	}
	caps = init.Caps
	caps.MaxRecvWR = 0
	attr := (&device{n: p.n}).Attr()
	if caps.MaxSendWR < 1 || caps.MaxSendWR > attr.MaxSendWR(init.Type, 1, caps.MaxInline) {
		return nil, caps, nil, fmt.Errorf("%w: send queue depth %d outside 1..%d", fabric.ErrLimit, caps.MaxSendWR, attr.MaxSendWR(init.Type, 1, caps.MaxInline))
	}
	if caps.MaxInline < 0 || caps.MaxInline > maxInlineRC {
		return nil, caps, nil, fmt.Errorf("%w: max inline %d bytes outside 0..%d for %v", fabric.ErrLimit, caps.MaxInline, maxInlineRC, init.Type)
	}
	return scq, caps, nil, nil
}

// createXRCQP creates an XRC queue pair (mu held).
func (p *pd) createXRCQP(init fabric.QPInit) (*qp, error) {
	scq, caps, d, err := p.xrcQP(init)
	if err != nil {
		return nil, err
	}
	n := p.n
	if len(n.qps) >= maxQP {
		return nil, fmt.Errorf("%w: node %d already has %d queue pairs", fabric.ErrLimit, n.id, len(n.qps))
	}
	n.nextQPN++
	q := &qp{n: n, pd: p, qpn: qpnBase + n.nextQPN, typ: init.Type, scq: scq, caps: caps, mtu: (&device{n: n}).Attr().MTU,
		sq: make([]sqe, caps.MaxSendWR), xrcd: d}
	n.qps[q.qpn] = q
	p.Use()
	if scq != nil {
		scq.Use()
	}
	if d != nil {
		d.Use()
	}
	return q, nil
}

// slot is a receive taken for a message: entry i of d's ring, or an entry
// taken out of an XRC SRQ (xs) for target d.
type slot struct {
	d  *qp
	i  uint64
	r  *rqe
	xs *srq
}

// done completes the receive with wc.
func (s slot) done(wc fabric.WC) {
	if s.xs == nil {
		s.d.recvDone(s.i, wc)
		return
	}
	wc.QPN = s.d.qpn
	s.xs.cq.push(cqe{wc: wc, xs: s.xs, recv: true})
}

// takeRecvFor takes the receive for a message of request e arriving at d:
// ok false when there is none (RNR), bad when an XRC request names no
// XRC SRQ of d's domain (mu of d's NIC held).
func (d *qp) takeRecvFor(e *sqe) (s slot, ok, bad bool) {
	if d.typ != fabric.XRCRecv {
		i, r, ok := d.takeRecv()
		return slot{d: d, i: i, r: r}, ok, false
	}
	x := d.n.srqs[e.wr.RemoteSRQN]
	if x == nil || x.Dead() || x.xrcd != d.xrcd {
		return slot{}, false, true
	}
	r, ok := x.take()
	return slot{d: d, r: r, xs: x}, ok, false
}

// peers reports whether a request of a queue pair of type from may reach
// one of type to: the same type (not DC), or XRC's or DC's initiator its
// target.
func peers(from, to fabric.QPType) bool {
	return from == to && !from.DC() || from == fabric.XRCSend && to == fabric.XRCRecv || from == fabric.DCI && to == fabric.DCT
}

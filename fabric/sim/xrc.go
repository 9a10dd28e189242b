package sim

import (
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// XRC (extended reliable connections). An XRCSend queue pair is an RC
// requester whose request packets carry an XRCETH (4 bytes: the number of
// the XRC SRQ the message is for, kept in the packet's qkey field, which
// only UD uses otherwise). An XRCRecv queue pair is an RC responder (PSNs,
// ACKs, NAKs, duplicates, reads, a context in the NIC's cache like any
// queue pair) without queues of its own: each message that needs a
// receive takes it from the SRQ it names, which must be an XRC SRQ of the
// target's domain (else an invalid-request NAK); an empty SRQ is answered
// with an RNR NAK, as an empty receive queue is.
//
// The taken receive moves into the target's own ring, as with an ordinary
// SRQ (srq.give), so delivery, the checker's records and flushing are the
// queue pair's. What differs: the receive completes in its SRQ's CQ, and
// as the receives of one target go to several SRQs (and CQs, polled in
// any order), a slot is released when its own completion is polled, not
// with every slot before it (xrcTarget.from).
//
// Cost: the SRQ is found by its number in a table on the NIC; the lookup
// is charged nothing beyond the receive pipeline's per-packet time, as
// the WQE fetch of an ordinary SRQ is not (an estimate, docs/model.md).

// hdrXRCETH is the XRC extended transport header of every XRC request
// packet (IBA vol. 1, 9.3.1: the XRC SRQ number).
const hdrXRCETH = 4

// xrcd implements fabric.XRCD.
type xrcd struct {
	nic *nic
	pd  *pd
	id  int
	// Its users: XRC SRQs and target queue pairs open in it.
	fabric.Lifecycle
}

var _ fabric.XRCD = (*xrcd)(nil)

// xrcTarget is what an XRCRecv queue pair keeps beside the queue pair
// (which stays 384 bytes, TestQPSizes): its domain, and for each receive
// it has taken and whose completion has not been polled, the SRQ it came
// from.
type xrcTarget struct {
	d    *xrcd
	from map[uint64]*srq // ring index -> the SRQ of the receive in that slot
}

func (d *xrcd) String() string { return fmt.Sprintf("XRCD %d on node %d", d.id, d.nic.node.id) }

func (d *xrcd) nodeID() int { return d.nic.node.id }

func (d *xrcd) openDesc() (string, bool) { return d.String(), !d.Dead() }

// OpenXRCD implements fabric.PD. It costs what creating a queue pair does
// (an estimate: one command to the device).
func (p *pd) OpenXRCD() (fabric.XRCD, error) {
	c := p.c
	c.enter(ns(c.prof.Setup.CreateQPUS * 1000))
	if err := p.Alive(); err != nil {
		return nil, err
	}
	p.nic.nextXRCD++
	d := &xrcd{nic: p.nic, pd: p, id: p.nic.nextXRCD}
	p.Use()
	if ch := c.chk; ch != nil {
		ch.objs = append(ch.objs, d)
	}
	return d, nil
}

func (d *xrcd) Close() error {
	d.pd.c.enter(0)
	return d.End(fabric.CheckCloseXRCD(d, d.Dead(), d.Users()), &d.pd.Lifecycle)
}

// domain returns the XRC domain x of p's NIC, alive, for what.
func (p *pd) domain(x fabric.XRCD, what string) (*xrcd, error) {
	d, ok := x.(*xrcd)
	mine := ok && d != nil && d.nic == p.nic
	if err := fabric.CheckXRCD(what, mine, mine && d.Dead()); err != nil {
		return nil, err
	}
	return d, nil
}

// localCQ is x as a completion queue of p's NIC: mine when it is one,
// dead when it was destroyed.
func (p *pd) localCQ(x fabric.CQ) (q *cq, mine, dead bool) {
	q, ok := x.(*cq)
	mine = ok && q != nil && q.nic == p.nic
	return q, mine, mine && q.Dead()
}

// xrcQueues checks the arguments of an XRC queue pair: an XRCSend one has
// a send CQ and no receive queue; an XRCRecv one has a domain and nothing
// else. It returns the completion queues and capabilities to create it
// with.
func (p *pd) xrcQueues(init fabric.QPInit) (scq *cq, caps fabric.QPCaps, d *xrcd, err error) {
	if err = fabric.CheckXRCQPInit(init); err != nil {
		return nil, caps, nil, err
	}
	if init.Type == fabric.XRCRecv {
		d, err = p.domain(init.XRCD, "CreateQP")
		return nil, caps, d, err
	}
	scq, ok := init.SendCQ.(*cq)
	mine := ok && scq != nil
	if err = fabric.CheckSendCQ(mine, mine && scq.Dead(), "this simulator"); err != nil {
		return nil, caps, nil, err
	}
	caps = init.Caps
	caps.MaxRecvWR = 0
	return scq, caps, nil, nil
}

// tgt is q's XRC target state (q is an XRCRecv queue pair).
func (q *qp) tgt() *xrcTarget { return q.nic.tgts[q] }

// xrcTake selects the SRQ an XRC message arriving at target q names, for
// takeRecv: false when it names none of q's domain (q has answered with an
// invalid-request NAK).
func (q *qp) xrcTake(p *packet) bool {
	s := q.nic.srqNumbered(p.qkey)
	if s == nil || s.Dead() || s.xrcd != q.tgt().d {
		q.nakSent = true
		q.responderError(nakInvalid, p.psn)
		return false
	}
	q.srq = s
	return true
}

// srqNumbered is the SRQ numbered n on the NIC (SRQ.Number), or nil.
func (n *nic) srqNumbered(num uint32) *srq {
	if num == 0 || int(num) > len(n.srqs) {
		return nil
	}
	return n.srqs[num-1]
}

// recvCQ is the completion queue of the receive in q's slot i: the
// queue pair's receive CQ, or for an XRC target the CQ of the SRQ the
// receive came from (nil once released).
func (q *qp) recvCQ(i uint64) *cq {
	if q.typ != fabric.XRCRecv {
		return q.rcq
	}
	if s := q.tgt().from[i]; s != nil {
		return s.cq
	}
	return nil
}

// tgtRelease releases the slot of target q's receive i, whose completion
// was polled (or lost): its SRQ's slot is free again, and q's ring moves
// past every slot released so far.
func (q *qp) tgtRelease(i uint64) {
	t := q.tgt()
	s := t.from[i]
	if s == nil {
		return
	}
	if ch := q.c.chk; ch != nil {
		ch.release(q, i, i+1, true)
	}
	s.out--
	delete(t.from, i)
	for q.rqFree < q.rqHead && t.from[q.rqFree] == nil {
		q.rqFree++
	}
}

// tgtDiscard releases target q's slots before to (reset or destroy).
func (q *qp) tgtDiscard(to uint64) {
	t := q.tgt()
	for i := q.rqFree; i < to; i++ {
		if s := t.from[i]; s != nil {
			s.out--
			delete(t.from, i)
		}
	}
	q.rqFree = max(q.rqFree, to)
}

// peers reports whether a packet of type pt may reach a queue pair of
// type qt: the same type, or the two ends of XRC or of DC.
func peers(qt, pt fabric.QPType) bool {
	return qt == pt && !qt.DC() || qt == fabric.XRCSend && pt == fabric.XRCRecv || qt == fabric.XRCRecv && pt == fabric.XRCSend ||
		qt == fabric.DCI && pt == fabric.DCT || qt == fabric.DCT && pt == fabric.DCI
}

// used counts one more user of q and unused one fewer; q may be nil (an
// XRC queue pair has no receive CQ, a target no send CQ either).
func (q *cq) used() {
	if q != nil {
		q.Use()
	}
}

func (q *cq) unused() {
	if q != nil {
		q.Release()
	}
}

// detach takes entries of a queue no longer served off q's count (checker),
// q may be nil.
func (q *cq) detach(entries int) {
	if q != nil {
		q.attached -= entries
	}
}

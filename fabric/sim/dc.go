package sim

import (
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// Dynamically Connected transport. A DCI is an RC requester whose
// destination is named by each work request (SendWR.AH's node, the DCT's
// number SendWR.RemoteQPN, the key SendWR.DCKey; kept in the entry's
// destN and destQPN as for UD). It is connected to one target at a time
// (dcInit.cur). When the request at the head of transmission names
// another target, the DCI waits until every earlier request is
// acknowledged (the old connection drained: the disconnect), then sends
// a connect request, a small packet carrying the key, and sends the
// request's data only once the target's connect response is back: a
// change of target costs the drain and a round trip of two small
// packets, plus the NIC's per-request processing time at the target for
// the connect (an estimate, docs/model.md). Requests to the connected
// target stream as on RC; every request packet carries a DCETH.
//
// A DCT is the queue pair initiators name. Each DCI connected to it gets
// a responder of its own (dcTarget.conns): an RC responder with the DCT's
// number, SRQ, CQ and attributes, its expected PSN set by the connect
// request (the PSN of the first request to come), kept for the next
// connect of the same DCI. A connect request with another key than the
// DCT's is answered with a remote access NAK, which fails the request at
// the DCI (StatusRemoteAccess); the DCT itself is not affected.
//
// A connect request runs the DCI's local ACK timer: when neither the
// response nor a NAK is back in time (the request or the response was
// lost), the DCI sends the connect request again, up to retry_cnt times,
// and then fails the request that needed the connection with a retry
// exceeded error, as an RC requester does with its data. A response
// counts only if it answers the connect request in flight (its PSN); a
// late or duplicated one is ignored, and a duplicated connect request
// that reaches a DCT after data of the connection does not rewind the
// connection's expected PSN.
//
// Not modelled: the number of connections a DCT's NIC can hold is not
// bounded.

// hdrDCETH is the DC extended transport header of every DCI request
// packet (the 8-byte DC access key).
const hdrDCETH = 8

// dcEnd names a DC connection's target: node, DCT number, key.
type dcEnd struct {
	node int
	dctn uint32
	key  uint64
}

// dcSrc names a DC connection's initiator at a DCT.
type dcSrc struct {
	node int
	qpn  uint32
}

// dcInit is a DCI's connection state.
type dcInit struct {
	cur        dcEnd      // the connected target (valid when connected)
	want       dcEnd      // the target a connect request was sent to
	wantPSN    fabric.PSN // the PSN the connect request in flight carries
	connected  bool
	connecting bool
	connects   int // connect handshakes completed
	// door is the requests whose doorbell the NIC has processed; the
	// queue pair's sqVisible, what the transmit engine may send, stops
	// before the first of them whose target is not the connected one,
	// so that the engine asks nothing DC-specific of other queue pairs.
	door uint64
}

// dcTarget is a DCT's state beside the queue pair.
type dcTarget struct {
	key   uint64
	conns map[dcSrc]*qp        // one responder per connected DCI
	by    map[dcSrc]fabric.PSN // the PSN of the connect request each connection was made by
}

// dcQueues checks the arguments of a DC queue pair and returns its
// completion queues, capabilities and SRQ.
func (p *pd) dcQueues(init fabric.QPInit) (scq, rcq *cq, caps fabric.QPCaps, s *srq, d *xrcd, err error) {
	if err = fabric.CheckDCQPInit(init); err != nil {
		return nil, nil, caps, nil, nil, err
	}
	if init.Type == fabric.DCI {
		q, mine, dead := p.localCQ(init.SendCQ)
		if err = fabric.CheckSendCQ(mine, dead, "this simulator"); err != nil {
			return nil, nil, caps, nil, nil, err
		}
		caps = init.Caps
		caps.MaxRecvWR = 0
		return q, nil, caps, nil, nil, nil
	}
	if s, err = p.attachable(init.SRQ); err != nil {
		return nil, nil, caps, nil, nil, err
	}
	q, mine, dead := p.localCQ(init.RecvCQ)
	if err = fabric.CheckSendCQ(mine, dead, "this simulator"); err != nil {
		return nil, nil, caps, nil, nil, err
	}
	return nil, q, caps, s, nil, nil
}

// dcCreated records the DC state of q, just created.
func (n *nic) dcCreated(q *qp, init fabric.QPInit) {
	if n.dcs == nil {
		n.dcs = map[*qp]any{}
	}
	if q.typ == fabric.DCI {
		n.dcs[q] = &dcInit{}
	} else {
		n.dcs[q] = &dcTarget{key: init.DCKey, conns: map[dcSrc]*qp{}, by: map[dcSrc]fabric.PSN{}}
	}
}

func (q *qp) dci() *dcInit   { return q.nic.dcs[q].(*dcInit) }
func (q *qp) dct() *dcTarget { return q.nic.dcs[q].(*dcTarget) }

// dcForget drops DC queue pair q's state and, for a DCT, its
// connections' responders (reset or destroy); destroy also drops q's.
func (q *qp) dcForget(destroy bool) {
	if q.typ == fabric.DCT {
		t := q.dct()
		for k, r := range t.conns {
			r.freeRecvs(r.rqTail) // the receives it had taken are discarded
			r.destroyed = true
			q.nic.cache.evict(r)
			delete(t.conns, k)
			delete(t.by, k)
		}
	} else {
		*q.dci() = dcInit{}
	}
	if destroy {
		delete(q.nic.dcs, q)
	}
}

// dcAH is the address handle of a DCI's request.
func (q *qp) dcAH(x fabric.AH) (*ah, error) {
	a, ok := x.(*ah)
	if !ok || a == nil || a.Dead() {
		return nil, fmt.Errorf("%w: a DCI request needs a live address handle of this simulator", fabric.ErrInvalidWR)
	}
	if a.pd != q.pd {
		return nil, fmt.Errorf("%w: address handle from another protection domain", fabric.ErrInvalidWR)
	}
	return a, nil
}

// dcDoorbell is the doorbell of DCI q up to request v: the NIC
// processes the new requests, and the transmit engine sees those it may
// send now (dcOpen).
func (q *qp) dcDoorbell(v uint64) {
	s := q.dci()
	s.door = max(s.door, q.sqVisible)
	if q.state != fabric.StateRTS || v <= s.door || v > q.sqTail {
		return
	}
	q.process(s.door, v)
	s.door = v
	q.dcOpen()
}

// dcOpen shows the transmit engine DCI q's processed requests up to the
// first whose target is not the connected one. When every request before
// that one is acknowledged (the old connection drained) and no connect
// is in flight, the engine's next packet from q is the connect request
// for its target. A request that failed before transmission is shown at
// once: it fails in order without a connection.
func (q *qp) dcOpen() {
	s := q.dci()
	s.door = max(s.door, q.sqVisible)
	for q.sqVisible < s.door {
		e := q.sqAt(q.sqVisible)
		if e.status() != fabric.StatusSuccess || s.connected && s.cur == (dcEnd{e.destN, e.destQPN, e.wr.DCKey}) {
			q.sqVisible++
			continue
		}
		if !s.connecting && !q.ackOn && q.sqHead == q.sqVisible && q.sqTx == q.sqVisible && q.txPkt == 0 {
			q.ackOn, q.nakCode = true, nakDCConnect
		}
		break
	}
	q.nic.activate(q)
}

// dcConnectPacket is DCI q's connect request for e's target.
func (q *qp) dcConnectPacket(e *sqe) *packet {
	s := q.dci()
	s.connected, s.connecting = false, true
	s.want, s.wantPSN = dcEnd{e.destN, e.destQPN, e.wr.DCKey}, e.psn
	p := q.newPacket(e.destN, e.destQPN)
	p.op, p.psn, p.raddr, p.first, p.last = pDCConnect, e.psn, e.wr.DCKey, true, true
	p.setWire()
	q.armTimer() // the connect's own ACK timer: dcConnectTimeout
	return p
}

// dcConnectTimeout handles DCI q's ACK timer while a connect request is
// in flight, and reports whether it did: the request goes again (the
// next packet of q), or, with no retries left, the request that needed
// the connection fails with a retry exceeded error.
func (q *qp) dcConnectTimeout() bool {
	s := q.dci()
	if !s.connecting {
		return false
	}
	s.connecting = false
	if q.retries == 0 {
		q.fail(q.sqHead, fabric.StatusRetryExceeded)
		return true
	}
	q.retries--
	q.c.stats.DCConnectRetries++
	q.dcOpen()
	return true
}

// dcReceive hands a packet arriving at DC queue pair q to it, or for a
// DCT to the responder of the connection it belongs to.
func (n *nic) dcReceive(q *qp, p *packet) {
	if q.typ == fabric.DCI {
		s := q.dci()
		switch {
		case s.connecting && p.src == s.want.node && p.srcQPN == s.want.dctn && p.psn == s.wantPSN && (p.op == pDCConnAck || p.op == pNak):
			s.connecting = false
			if p.op == pNak {
				q.fail(q.sqHead, fabric.StatusRemoteAccess)
				return
			}
			s.connected, s.cur, s.connects = true, s.want, s.connects+1
			q.destNode, q.attr.DestQPN = int32(s.cur.node), s.cur.dctn
			q.progress() // the timer stops: nothing is outstanding
		case p.op == pDCConnAck:
			// a late or duplicated answer to a connect: ignored
		case s.connected && p.src == int(q.destNode) && p.srcQPN == q.attr.DestQPN:
			q.receive(p)
		}
		if q.state == fabric.StateRTS {
			q.dcOpen()
		}
		n.activate(q)
		return
	}
	t := q.dct()
	src := dcSrc{p.src, p.srcQPN}
	if p.op == pDCConnect {
		q.dcAccept(t, src, p)
		return
	}
	if r := t.conns[src]; r != nil && r.state == fabric.StateRTR {
		r.receive(p)
		n.activate(r)
	}
}

// dcAccept answers a connect request from src at DCT q: a remote access
// NAK for another key; else the connection's responder expects the
// request's PSN next, and the answer leaves after the NIC's per-request
// processing time.
func (q *qp) dcAccept(t *dcTarget, src dcSrc, p *packet) {
	ans := q.newPacket(src.node, src.qpn)
	ans.op, ans.psn = pDCConnAck, p.psn
	if p.raddr != t.key {
		ans.op, ans.nak = pNak, nakRemoteAccess
	} else {
		r := t.conns[src]
		fresh := r == nil || r.state != fabric.StateRTR
		if fresh {
			r = &qp{c: q.c, nic: q.nic, pd: q.pd, qpn: q.qpn, typ: fabric.DCT, rcq: q.rcq, srq: q.srq,
				mtu: q.mtu, attr: q.attr, state: fabric.StateRTR}
			t.conns[src] = r
		}
		// A connect request the connection was made by, again (a retry
		// whose first answer was lost, or a duplicate), is answered but
		// must not rewind the connection: data may have followed it.
		if by, ok := t.by[src]; fresh || !ok || by != p.psn {
			t.by[src] = p.psn
			r.destNode, r.attr.DestQPN = int32(src.node), src.qpn
			r.ePSN, r.nakSent = p.psn, false
		}
	}
	ans.setWire()
	q.c.schedule(q.c.now.Add(q.nic.wqeCost), q.c.net, evDirect, ans)
}

// DCConnects is the number of connect handshakes DCI x has completed
// (for tests and measurements); 0 for any other queue pair.
func DCConnects(x fabric.QP) int {
	q, ok := x.(*qp)
	if !ok || q.typ != fabric.DCI {
		return 0
	}
	q.c.enter(0)
	return q.dci().connects
}

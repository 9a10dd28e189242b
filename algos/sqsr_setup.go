package algos

import (
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/adaptive"
	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/flowctl"
	"github.com/rdmashuffle/rdmashuffle/internal/setting"
)

// Setting an SQ/SR endpoint up: memory, queue pairs, flow-control state and the exchange.

func (e *sqsr) setup(th fabric.Thread) error {
	e.cfg.Buffers *= e.cfg.Threads
	maxR, sendWR, err := e.memory()
	if err != nil {
		return err
	}
	if err := e.queuePairs(sendWR, maxR); err != nil {
		return err
	}
	if err := e.flowState(); err != nil {
		return err
	}
	return e.connect()
}

// memory creates the protection domain (unless an adaptive pool owns it),
// the completion queues and the registered region, and lays the buffers
// out; it returns the receive buffers per source at most and the data
// queue pair's send depth.
func (e *sqsr) memory() (maxR, sendWR int, err error) {
	n, b, msg := e.n, e.cfg.Buffers, e.cfg.MsgBytes
	dev := e.node.Device()
	attr := dev.Attr()
	ad := e.cfg.Adaptive
	maxR, maxS := b, b // receive buffers per source, send buffers per destination, at most
	if ad != nil {     // the pool owns the protection domain
		maxR, maxS = ad.MaxRecv*e.cfg.Threads, ad.MaxSend*e.cfg.Threads
		e.pd = ad.Pool.PD()
	} else {
		if e.pd, err = dev.AllocPD(); err != nil {
			return 0, 0, err
		}
		e.own.pd(e.pd)
	}
	lev := lever{name: "Buffers", value: b / e.cfg.Threads}
	if ad != nil {
		lev = lever{name: "MaxBuffers", value: max(ad.MaxRecv, ad.MaxSend)}
	}
	depths, err := fitQueues(attr, n, sqsrLever(n, e.cfg.Threads, maxS, maxR, lev))
	if err != nil {
		return 0, 0, err
	}
	sendWR = depths[0]
	e.creditSlots = n*(maxR+2) + 8
	if e.scq, err = dev.CreateCQ(min(sendWR+64, attr.MaxCQE)); err != nil {
		return 0, 0, err
	}
	e.own.cq(e.scq)
	if e.rcq, err = dev.CreateCQ(min(n*maxR+16, attr.MaxCQE)); err != nil {
		return 0, 0, err
	}
	e.own.cq(e.rcq)
	if e.ccq, err = dev.CreateCQ(e.creditSlots + 16); err != nil {
		return 0, 0, err
	}
	e.own.cq(e.ccq)
	e.recvBytes = fabric.GRHBytes + msg
	e.sendOff = 0
	e.recvOff = n * b * msg
	if ad != nil { // send and receive buffers come from the pool
		e.recvOff = 0
	}
	e.crecvOff = e.recvOff + n*b*e.recvBytes
	if ad != nil {
		e.crecvOff = 0
	}
	e.csendOff = e.crecvOff + e.creditSlots*(fabric.GRHBytes+creditAckBytes)
	size := e.csendOff + creditAckBytes
	if e.mr, err = e.pd.RegMR(size, fabric.AccessLocalWrite); err != nil {
		return 0, 0, err
	}
	e.own.mr(e.mr)
	e.info.RegisteredBytes = int64(size)
	if ad == nil {
		e.info.RecvPoolBytes = int64(n * b * e.recvBytes)
	}
	e.rwcs = make([]fabric.WC, len(e.wcs))
	if e.cfg.Recover {
		e.holds = make([]int, 0, n*b)
		e.unacked = make([][]retained, n)
		e.ended = make([]bool, n)
		e.ackSent = make([]uint64, n)
		e.tick, e.tickOn = e.senderTick, []fabric.Waitable{e.ccq}
	}
	if ad == nil {
		e.initPool(e.mr, e.sendOff, n*b, msg)
		if e.holds != nil {
			e.holds = make([]int, n*b)
		}
		return maxR, sendWR, nil
	}
	// Buffers go back to the pool once the queue pairs, which may still
	// name them, are gone.
	e.own.lent(e.returnSendBuffers)
	e.own.lent(e.returnRecvBuffers)
	if err := e.initAdaptiveSend(n*b, msg); err != nil {
		return 0, 0, err
	}
	for s := 0; s < n; s++ {
		lane, err := adaptive.NewLane(b, min(b, e.cfg.CreditEvery), maxR)
		if err != nil {
			return 0, 0, err
		}
		e.rlanes = append(e.rlanes, lane)
	}
	for i := n*b - 1; i >= 0; i-- {
		e.rfree = append(e.rfree, i)
	}
	e.rbufs = make([]*adaptive.Buf, n*b)
	return maxR, sendWR, nil
}

// sqsrLever is what an SQ/SR endpoint on n nodes asks of its queue pairs
// as the setting of l moves: at l.value maxS send buffers per destination
// and maxR receive buffers per source, at another value threads times it
// of each. (The setting is Buffers, or MaxBuffers with adaptive buffers:
// experiments.RunConfig's name for the adaptive maxima.)
func sqsrLever(n, threads, maxS, maxR int, l lever) lever {
	value := l.value
	l.ask = func(v int) []queueAsk {
		s, r := maxS, maxR
		if v != value {
			s, r = v*threads, v*threads
		}
		signals := 2*creditSignalEvery + 8
		return []queueAsk{
			// A send per send buffer and destination at most (a broadcast
			// buffer goes to every node). With fewer slots a send waits
			// for one (sendTo).
			{what: "SQ/SR's data queue pair", typ: fabric.UD, inline: creditAckBytes,
				send: n*n*max(s, r) + signals, least: signals, recv: n * r},
			// Credit messages, a receive for each that can be on its way.
			{what: "SQ/SR's credit queue pair", typ: fabric.UD, inline: creditAckBytes,
				send: signals, least: signals, recv: n*(r+2) + 8},
		}
	}
	return l
}

// queuePairs creates the data and credit UD queue pairs, brings them to
// RTS and posts every receive.
func (e *sqsr) queuePairs(sendWR, maxR int) error {
	n, b := e.n, e.cfg.Buffers
	mk := func(sendWR, recvWR int, rcq fabric.CQ) (fabric.QP, error) {
		qp, err := e.pd.CreateQP(fabric.QPInit{Type: fabric.UD, SendCQ: e.scq, RecvCQ: rcq,
			Caps: fabric.QPCaps{MaxSendWR: sendWR, MaxRecvWR: recvWR, MaxInline: creditAckBytes}})
		if err != nil {
			return nil, err
		}
		e.own.qp(qp)
		if err := qp.Modify(fabric.StateInit, fabric.QPAttr{QKey: udQKey}); err != nil {
			return nil, err
		}
		if err := qp.Modify(fabric.StateRTR, fabric.QPAttr{}); err != nil {
			return nil, err
		}
		return qp, qp.Modify(fabric.StateRTS, fabric.QPAttr{})
	}
	var err error
	if e.qp, err = mk(sendWR, n*maxR, e.rcq); err != nil {
		return err
	}
	if e.cqp, err = mk(2*creditSignalEvery+8, e.creditSlots, e.ccq); err != nil {
		return err
	}
	e.info.QPs = 2
	for i := 0; i < n*b; i++ {
		if e.cfg.Adaptive != nil {
			if _, err := e.newRecvSlot(); err != nil {
				return err
			}
			continue
		}
		if err := e.postData(i); err != nil {
			return err
		}
	}
	for i := 0; i < e.creditSlots; i++ {
		if err := e.postCredit(i); err != nil {
			return err
		}
	}
	return nil
}

// flowState sets up the credit and end-of-stream accounting per node.
func (e *sqsr) flowState() error {
	n, b := e.n, e.cfg.Buffers
	e.seq = make([]uint64, n)
	e.doneSrc = make([]bool, n)
	e.heard, e.backoff, e.nextRepeat = make([]fabric.Time, n), make([]uint8, n), fabric.Forever
	for j := 0; j < n; j++ {
		cr, err := flowctl.NewCreditReceiver(e.cfg.CreditEvery)
		if err != nil {
			return err
		}
		e.cr = append(e.cr, cr)
		// Sequence numbers are tracked even without loss recovery: a
		// message the network duplicated must be an error, or together
		// with a lost one it completes the count and a wrong multiset is
		// delivered silently.
		e.counts = append(e.counts, flowctl.NewCount(true))
	}
	// Every source starts with b credits: the receives posted above, b per
	// source (the receive queue is shared, the accounting is per source).
	for j := 0; j < n; j++ {
		e.cs[j].Update(uint64(b))
		e.cr[j].Posted(b)
	}
	return nil
}

// connect exchanges the queue pairs' addresses with every node, creates an
// address handle per node and meets the others at a barrier.
func (e *sqsr) connect() error {
	n := e.n
	data := e.qp.Info()
	// Every node must send messages of one size, which every receive
	// buffer holds: sized from each node's MTU, they differ when the
	// ports' MTUs do.
	data.Bytes = uint64(e.cfg.MsgBytes)
	d, _ := data.MarshalBinary()
	c, _ := e.cqp.Info().MarshalBinary()
	all, err := e.node.OOB().AllGather(fmt.Sprintf("sqsr/%d", e.cfg.Tag), append(d, c...))
	if err != nil {
		return err
	}
	e.peers = make([]udPeer, n)
	for j := 0; j < n; j++ {
		if len(all[j]) != 2*fabric.QPInfoWireBytes {
			return fmt.Errorf("node %d sent %d bytes of queue-pair information, want %d (same design everywhere?)", j, len(all[j]), 2*fabric.QPInfoWireBytes)
		}
		if err := e.peers[j].data.UnmarshalBinary(all[j][:fabric.QPInfoWireBytes]); err != nil {
			return fmt.Errorf("from node %d: %w", j, err)
		}
		if err := e.peers[j].credit.UnmarshalBinary(all[j][fabric.QPInfoWireBytes:]); err != nil {
			return fmt.Errorf("from node %d: %w", j, err)
		}
		if m := e.peers[j].data.Bytes; m != uint64(e.cfg.MsgBytes) {
			return setting.New("MsgBytes", e.cfg.MsgBytes, "node %d sends messages of %d bytes, this node %d: every node needs the same message size (sized from the active MTU, every port needs the same MTU)",
				j, m, e.cfg.MsgBytes).Sentinel(ErrConfig)
		}
		ah, err := e.addressHandle(e.peers[j].data, e.cfg.SL)
		if err != nil {
			return err
		}
		e.ahs = append(e.ahs, ah)
	}
	e.cahs = e.ahs
	if e.cfg.ControlSL != e.cfg.SL {
		// Credit travels on a service level of its own: address handles
		// of their own (an address handle carries one level).
		e.cahs = make([]fabric.AH, n)
		for j := range e.cahs {
			var err error
			if e.cahs[j], err = e.addressHandle(e.peers[j].credit, e.cfg.ControlSL); err != nil {
				return err
			}
		}
	}
	return e.node.OOB().Barrier(fmt.Sprintf("sqsr/%d/up", e.cfg.Tag))
}

// addressHandle creates an address handle for the queue pair of peer on
// service level sl, owned by the endpoint.
func (e *sqsr) addressHandle(peer fabric.QPInfo, sl uint8) (fabric.AH, error) {
	a := peer.Address()
	a.SL = sl
	ah, err := e.pd.CreateAH(a)
	if err != nil {
		return nil, err
	}
	e.own.ah(ah)
	return ah, nil
}

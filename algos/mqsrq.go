package algos

import (
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/flowctl"
)

// OpenMQSRQ opens an MQ/SR+srq endpoint, our variant of MQ/SR: the n RC
// queue pairs of the endpoint are attached to one shared receive queue
// (fabric.SRQ), so the receive buffers are one pool of
// srqPool(n, Buffers) messages instead of Buffers per source: the receive
// memory of a node is O(threads x pool), not O(threads x n x Buffers).
//
// Flow control: MQ/SR's per-connection credit assumes receives that belong
// to the connection. Here each source's credit is carved out of the pool:
// source i starts with share(i) credits (the pool divided among the n
// sources, at least one each; known to the sender by configuration), and a
// receive reposted at Release is credited to the source of the message it
// held, or, once that source has ended its stream, to the next source
// still sending (round robin), which also inherits the credits an ending
// source left unused. No source holds more than max(share, Buffers)
// credits not yet used (its queue pair's send queue is sized for Buffers
// messages in flight, as MQ/SR's): credit no source may take waits as
// spare and goes to the first source below its cap. The credits the receiver has issued and not yet seen
// used never exceed the receives in the queue, so no message finds the
// queue empty (no RNR NAK, whatever rnr_retry says), and a source always
// holds, has in flight or has delivered at least one of its credits, so no
// stream stalls. A share below CreditEvery writes credit back every
// share(i) receives instead. There is no parity step: receives left in the
// queue at the end are discarded with it. The SRQ limit event is not used:
// the pool is sized for the credit it backs, and running it empty is the
// protocol working, not a shortage.
func OpenMQSRQ(th fabric.Thread, cfg Config) (Endpoint, error) {
	return openMQ(th, cfg, false, false, &srqShare{})
}

// srqShare is MQ/SR+srq's receive side: the shared queue, its pool and
// how its credit is divided.
type srqShare struct {
	srq   fabric.SRQ
	pool  int            // receives (message buffers) in the shared queue
	srcOf map[uint32]int // local queue pair number -> source node
	recvd []uint64       // per source: messages received, its Depleted one included
	next  int            // the next source in round robin for credit an ended source leaves
	spare int            // receives in the queue credited to no source: every source still sending is at its cap

	xrc  bool        // MEMQ/SR+xrc (mqxrc.go): an XRC SRQ, reached through XRC target queue pairs
	xrcd fabric.XRCD // its domain
	tgts []fabric.QP // per source: the XRC target queue pair its initiator is connected to
}

// srqPool is the pool of an MQ/SR+srq endpoint of n nodes and b buffers
// per destination: at least one receive per source, and at least 2b.
func srqPool(n, b int) int { return max(n, 2*b) }

// srqShareOf is how many of the pool's receives source i is credited at
// the start.
func srqShareOf(i, n, pool int) int {
	s := pool / n
	if i < pool%n {
		s++
	}
	return s
}

// openSRQ creates the endpoint's shared receive queue.
func (e *mqsr) openSRQ() error {
	init := fabric.SRQInit{MaxWR: e.sh.pool, MaxSGE: 1}
	if e.sh.xrc {
		x, err := e.pd.OpenXRCD()
		if err != nil {
			return err
		}
		e.own.xrcd(x)
		e.sh.xrcd = x
		init.XRCD, init.CQ = x, e.rcq // its receives complete where MQ/SR's do
	}
	s, err := e.pd.CreateSRQ(init)
	if err != nil {
		return err
	}
	e.own.srq(s)
	e.sh.srq = s
	e.sh.srcOf = make(map[uint32]int, e.n)
	e.sh.recvd = make([]uint64, e.n)
	return nil
}

// openSharedPeer creates the queue pair to node j, attached to the shared
// queue, and sets up both directions' credit.
func (e *mqsr) openSharedPeer(j, sqDepth int) ([]byte, error) {
	var blob []byte
	if e.sh.xrc {
		var err error
		if blob, err = e.openXRCPeer(j, sqDepth); err != nil {
			return nil, err
		}
	} else {
		qp, err := e.pd.CreateQP(fabric.QPInit{Type: fabric.RC, SendCQ: e.scq, RecvCQ: e.rcq, SRQ: e.sh.srq,
			Caps: fabric.QPCaps{MaxSendWR: sqDepth, MaxRecvWR: 1, MaxInline: HeaderBytes}})
		if err != nil {
			return nil, err
		}
		e.own.qp(qp)
		if err := qp.Modify(fabric.StateInit, fabric.QPAttr{Access: fabric.AccessRemoteWrite | fabric.AccessLocalWrite}); err != nil {
			return nil, err
		}
		e.qps = append(e.qps, qp)
		e.sh.srcOf[qp.QPN()] = j
		if blob, err = e.peerInfo(j, e.cfg.Buffers, e.cfg.MsgBytes, qp); err != nil {
			return nil, err
		}
	}
	return blob, e.shareCredit(j)
}

// shareCredit sets up both directions' credit with node j: the share of
// the pool each credits the other with.
func (e *mqsr) shareCredit(j int) error {
	mine := srqShareOf(j, e.n, e.sh.pool)
	cr, err := flowctl.NewCreditReceiver(min(e.cfg.CreditEvery, mine))
	if err != nil {
		return err
	}
	cr.Posted(mine) // known to the sender by configuration
	e.cr = append(e.cr, cr)
	e.cs[j].Update(uint64(srqShareOf(e.me, e.n, e.sh.pool)))
	return nil
}

// postPool posts every receive of the pool.
func (e *mqsr) postPool() error {
	for k := 0; k < e.sh.pool; k++ {
		if err := e.postShared(k); err != nil {
			return err
		}
	}
	return nil
}

// postShared posts pool slot k to the shared queue.
func (e *mqsr) postShared(k int) error {
	e.rwr[0] = fabric.RecvWR{ID: uint64(k), Local: e.mr.SGE(e.recvOff+k*e.cfg.MsgBytes, e.cfg.MsgBytes)}
	_, err := e.sh.srq.PostRecv(e.rwr[:])
	e.rwr[0] = fabric.RecvWR{}
	return err
}

// receivedShared handles one receive completion: the queue pair it names
// says the source, its wr_id the pool slot.
func (e *mqsr) receivedShared(wc fabric.WC) error {
	src, ok := e.sh.srcOf[wc.QPN]
	if !ok || wc.ID >= uint64(e.sh.pool) {
		return fmt.Errorf("%w: receive completion on queue pair %#x, slot %d: not one of this endpoint's", ErrBadMessage, wc.QPN, wc.ID)
	}
	e.sh.recvd[src]++
	return e.deliver(src, int(wc.ID), wc.Bytes)
}

// deliverShared queues the message in pool slot slot from src for GetData;
// a source's Depleted message hands the credits it left unused to the
// sources still sending.
func (e *mqsr) deliverShared(src, slot int, buf []byte, h header) error {
	d, err := e.delivery(src, slot, buf, h)
	if err != nil {
		return err
	}
	if d.State == Depleted {
		unused := e.cr[src].PostedCount() - e.sh.recvd[src]
		for ; unused > 0; unused-- {
			if err := e.grant(-1); err != nil {
				return err
			}
		}
	}
	e.ready.push(d)
	return nil
}

// releaseShared reposts the delivery's slot to the shared queue and
// credits it.
func (e *mqsr) releaseShared(th fabric.Thread, d Delivery) error {
	if d.id < 0 || d.id >= e.sh.pool || d.Src < 0 || d.Src >= e.n {
		return errForeignDelivery
	}
	if _, err := e.reap(); err != nil { // frees send-queue slots of credit writes
		return err
	}
	if err := e.postShared(d.id); err != nil {
		return err
	}
	t0 := th.Now()
	defer func() { e.info.CreditNS += th.Now().Sub(t0).Seconds() * 1e9 }()
	if err := e.grant(d.Src); err != nil {
		return err
	}
	for spare := e.sh.spare; spare > 0; spare-- { // a source may be below its cap now
		e.sh.spare--
		if err := e.grant(-1); err != nil {
			return err
		}
		if e.sh.spare == spare { // nobody took it
			break
		}
	}
	return nil
}

// creditable reports whether source i may be credited one more receive: it
// still sends, and holds fewer unused credits than its cap.
func (e *mqsr) creditable(i int) bool {
	cap := uint64(max(e.cfg.Buffers, srqShareOf(i, e.n, e.sh.pool)))
	return !e.closedSrc[i] && e.cr[i].PostedCount()-e.sh.recvd[i] < cap
}

// grant credits one receive of the pool to source src, or, when src is -1
// or may take no more, to the next source that may (round robin); when
// none may, the receive is kept as spare.
func (e *mqsr) grant(src int) error {
	if src < 0 || !e.creditable(src) {
		src = -1
		for k := 0; k < e.n; k++ {
			i := (e.sh.next + k) % e.n
			if e.creditable(i) {
				src, e.sh.next = i, (i+1)%e.n
				break
			}
		}
		if src < 0 {
			e.sh.spare++
			return nil
		}
	}
	if v, ok := e.cr[src].Posted(1); ok {
		return e.writeCredit(src, v)
	}
	return nil
}

package fabrictest

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// The shared receive queue cases (ibv_create_srq(3), ibv_post_srq_recv(3),
// ibv_modify_srq(3)): node 1's queue pairs take their receives from one
// shared receive queue; node 0's send to them.

// SRQCases lists the shared receive queue checks (part of Cases).
func SRQCases() []Case {
	return []Case{
		{Name: "SRQSharedByTwoQPs", Body: srqShared},
		{Name: "SRQPostRecvOnQPRefused", Body: srqPostOnQP},
		{Name: "SRQLimitEventOnce", Body: srqLimit},
		{Name: "SRQEmptyRNR", Body: srqEmptyRNR},
		{Name: "SRQEmptyUDDropped", Body: srqEmptyUD},
		{Name: "SRQDestroyBusy", Body: srqDestroyBusy},
	}
}

// srqConn is one node's side of nqp connections to the other node, its
// queue pairs attached to one shared receive queue (SRQ).
type srqConn struct {
	Node     fabric.Node
	PD       fabric.PD
	SCQ, RCQ fabric.CQ
	MR       fabric.MR
	SRQ      fabric.SRQ
	QPs      []fabric.QP
	Peer     []fabric.QPInfo
	AH       fabric.AH // UD
}

const srqSlot = 4096 + fabric.GRHBytes

// srqConnect sets up nqp queue pairs of type typ on the calling node,
// attached to a new shared receive queue of depth srqWR, and connects
// queue pair i to the peer's queue pair i. Both nodes call it.
func srqConnect(th fabric.Thread, typ fabric.QPType, nqp, srqWR int, o Options) (*srqConn, error) {
	o.Type = typ
	o.defaults()
	n := th.Node()
	c := &srqConn{Node: n}
	var err error
	if c.PD, err = n.Device().AllocPD(); err != nil {
		return nil, err
	}
	if c.SCQ, err = n.Device().CreateCQ(o.CQDepth); err != nil {
		return nil, err
	}
	if c.RCQ, err = n.Device().CreateCQ(o.CQDepth); err != nil {
		return nil, err
	}
	if c.MR, err = c.PD.RegMR(srqWR*srqSlot, fabric.AccessLocalWrite); err != nil {
		return nil, err
	}
	if c.SRQ, err = c.PD.CreateSRQ(fabric.SRQInit{MaxWR: srqWR, MaxSGE: 1}); err != nil {
		return nil, err
	}
	infos := make([]byte, 0, nqp*64)
	for range nqp {
		qp, err := c.PD.CreateQP(fabric.QPInit{Type: typ, SendCQ: c.SCQ, RecvCQ: c.RCQ, SRQ: c.SRQ,
			Caps: fabric.QPCaps{MaxSendWR: o.SendWR, MaxRecvWR: 1}})
		if err != nil {
			return nil, err
		}
		if err := qp.Modify(fabric.StateInit, fabric.QPAttr{Access: fabric.AccessLocalWrite, QKey: o.QKey}); err != nil {
			return nil, err
		}
		c.QPs = append(c.QPs, qp)
		info := qp.Info()
		info.PSN = initialPSN(n.ID())
		b, _ := info.MarshalBinary()
		infos = append(infos, byte(len(b)))
		infos = append(infos, b...)
	}
	all, err := n.OOB().AllGather(fmt.Sprintf("srq-connect-%v", typ), infos)
	if err != nil {
		return nil, err
	}
	for b := all[1-n.ID()]; len(b) > 0; b = b[1+int(b[0]):] {
		var info fabric.QPInfo
		if err := info.UnmarshalBinary(b[1 : 1+int(b[0])]); err != nil {
			return nil, err
		}
		c.Peer = append(c.Peer, info)
	}
	for i, qp := range c.QPs {
		if err := srqReady(c, qp, c.Peer[i], o); err != nil {
			return nil, err
		}
	}
	return c, n.OOB().Barrier("srq-connected")
}

// srqReady moves qp to RTS, connected to peer (RC, UC).
func srqReady(c *srqConn, qp fabric.QP, peer fabric.QPInfo, o Options) error {
	psn := initialPSN(c.Node.ID())
	if o.Type == fabric.UD {
		if c.AH == nil {
			var err error
			if c.AH, err = c.PD.CreateAH(peer.Address()); err != nil {
				return err
			}
		}
		if err := qp.Modify(fabric.StateRTR, fabric.QPAttr{}); err != nil {
			return err
		}
		return qp.Modify(fabric.StateRTS, fabric.QPAttr{SendPSN: psn})
	}
	if err := qp.Modify(fabric.StateRTR, fabric.QPAttr{Dest: peer.Address(), RemotePSN: peer.PSN, MinRNRTimer: o.MinRNRTimer}); err != nil {
		return err
	}
	return qp.Modify(fabric.StateRTS, fabric.QPAttr{SendPSN: psn, Timeout: o.Timeout, RetryCnt: o.RetryCnt, RNRRetry: o.RNRRetry})
}

// srqPost posts n receives of srqSlot bytes, ids 100.., to c's shared queue.
func srqPost(c *srqConn, first, n int) error {
	wrs := make([]fabric.RecvWR, n)
	for i := range wrs {
		wrs[i] = fabric.RecvWR{ID: uint64(100 + first + i), Local: c.MR.SGE((first+i)*srqSlot, srqSlot)}
	}
	k, err := c.SRQ.PostRecv(wrs)
	if err == nil && k != n {
		err = fmt.Errorf("SRQ PostRecv posted %d of %d", k, n)
	}
	return err
}

// srqSend sends 64 bytes (pattern seed) on c's queue pair i and waits for
// its completion.
func srqSend(th fabric.Thread, c *srqConn, i, seed int, want fabric.Status) error {
	fill(c.MR.Bytes()[:64], seed)
	wr := fabric.SendWR{ID: uint64(seed), Op: fabric.OpSend, Local: c.MR.SGE(0, 64), Flags: fabric.Signaled}
	if c.AH != nil {
		wr.AH, wr.RemoteQPN, wr.QKey = c.AH, c.Peer[i].QPN, c.Peer[i].QKey
	}
	if _, err := c.QPs[i].PostSend([]fabric.SendWR{wr}); err != nil {
		return err
	}
	wcs, err := Await(th, c.SCQ, 1, wait)
	if err != nil {
		return err
	}
	return Expect(wcs[0], uint64(seed), want, fabric.OpSend)
}

// srqShared: four messages arrive alternately on two queue pairs; they
// take the shared queue's receives in posting order, and each completion
// names the queue pair the message arrived on.
func srqShared(th fabric.Thread) error {
	c, err := srqConnect(th, fabric.RC, 2, 8, Options{})
	if err != nil {
		return err
	}
	if c.Node.ID() == 1 {
		if err := srqPost(c, 0, 4); err != nil {
			return err
		}
	}
	if err := c.Node.OOB().Barrier("posted"); err != nil {
		return err
	}
	if c.Node.ID() == 0 {
		for m := range 4 {
			if err := srqSend(th, c, m%2, m+1, fabric.StatusSuccess); err != nil {
				return err
			}
		}
		return nil
	}
	wcs, err := Await(th, c.RCQ, 4, wait)
	if err != nil {
		return err
	}
	th.Sync()
	for m, wc := range wcs {
		if err := Expect(wc, uint64(100+m), fabric.StatusSuccess, fabric.OpRecv); err != nil {
			return fmt.Errorf("message %d: %v", m, err)
		}
		if want := c.QPs[m%2].QPN(); wc.QPN != want || wc.Bytes != 64 {
			return fmt.Errorf("message %d: %d bytes on QPN %#x, want 64 on %#x (the queue pair it arrived on)", m, wc.Bytes, wc.QPN, want)
		}
		if got := c.MR.Bytes()[m*srqSlot : m*srqSlot+64]; !bytes.Equal(got, pattern(64, m+1)) {
			return fmt.Errorf("message %d: payload differs from what was sent", m)
		}
	}
	return nil
}

// srqPostOnQP: a queue pair attached to a shared queue has no receive
// queue of its own: PostRecv on it fails with ErrInvalidArg (EINVAL).
func srqPostOnQP(th fabric.Thread) error {
	c, err := srqConnect(th, fabric.RC, 1, 4, Options{})
	if err != nil {
		return err
	}
	n, err := c.QPs[0].PostRecv([]fabric.RecvWR{{ID: 1, Local: c.MR.SGE(0, 64)}})
	if n != 0 || !errors.Is(err, fabric.ErrInvalidArg) {
		return fmt.Errorf("PostRecv on a queue pair attached to a shared receive queue: %d posted, %v; want 0, ErrInvalidArg", n, err)
	}
	// The shared queue holds MaxWR receives, no more.
	if err := srqPost(c, 0, 4); err != nil {
		return err
	}
	if n, err := c.SRQ.PostRecv([]fabric.RecvWR{{ID: 9, Local: c.MR.SGE(0, 64)}}); n != 0 || !errors.Is(err, fabric.ErrQueueFull) {
		return fmt.Errorf("PostRecv on a full shared receive queue: %d posted, %v; want 0, ErrQueueFull", n, err)
	}
	return c.Node.OOB().Barrier("done")
}

// srqLimitSeen polls the limit event for up to d (an event is asynchronous
// on hardware).
func srqLimitSeen(th fabric.Thread, s fabric.SRQ, d fabric.Duration) bool {
	deadline := th.Now().Add(d)
	for {
		if s.LimitReached() {
			return true
		}
		if th.Now() >= deadline {
			return false
		}
		th.Busy(10 * fabric.Microsecond)
	}
}

// srqLimit: armed at 3 with 4 receives posted, the limit event does not
// fire after the first message (3 left), fires once after the second (2
// left, below the limit), and not again after the third: it disarmed
// itself. A limit not below the depth is refused.
func srqLimit(th fabric.Thread) error {
	c, err := srqConnect(th, fabric.RC, 1, 8, Options{})
	if err != nil {
		return err
	}
	me := c.Node.ID()
	if me == 1 {
		if err := c.SRQ.ArmLimit(8); !errors.Is(err, fabric.ErrInvalidArg) {
			return fmt.Errorf("ArmLimit(8) on a queue of 8: %v, want ErrInvalidArg", err)
		}
		if err := srqPost(c, 0, 4); err != nil {
			return err
		}
		if err := c.SRQ.ArmLimit(3); err != nil {
			return err
		}
	}
	want := []bool{false, true, false}
	for m, fires := range want {
		if err := c.Node.OOB().Barrier(fmt.Sprintf("send-%d", m)); err != nil {
			return err
		}
		if me == 0 {
			if err := srqSend(th, c, 0, m+1, fabric.StatusSuccess); err != nil {
				return err
			}
			continue
		}
		if _, err := Await(th, c.RCQ, 1, wait); err != nil {
			return err
		}
		d := fabric.Millisecond
		if fires {
			d = wait
		}
		if got := srqLimitSeen(th, c.SRQ, d); got != fires {
			return fmt.Errorf("after message %d (%d receives left, limit 3): limit event %v, want %v", m+1, 3-m, got, fires)
		}
	}
	return nil
}

// srqEmptyRNR: an RC message that finds the shared queue empty is answered
// with RNR NAKs until the sender's RNR retries run out.
func srqEmptyRNR(th fabric.Thread) error {
	c, err := srqConnect(th, fabric.RC, 1, 4, Options{RNRRetry: 2, MinRNRTimer: 1})
	if err != nil {
		return err
	}
	if c.Node.ID() == 0 {
		if err := srqSend(th, c, 0, 1, fabric.StatusRNRRetryExceeded); err != nil {
			return err
		}
	}
	return c.Node.OOB().Barrier("done")
}

// srqEmptyUD: a datagram that finds the shared queue empty is dropped; the
// next one, after a receive is posted, arrives.
func srqEmptyUD(th fabric.Thread) error {
	c, err := srqConnect(th, fabric.UD, 1, 4, Options{})
	if err != nil {
		return err
	}
	if c.Node.ID() == 0 {
		if err := srqSend(th, c, 0, 1, fabric.StatusSuccess); err != nil {
			return err
		}
		if err := c.Node.OOB().Barrier("first"); err != nil {
			return err
		}
		if err := c.Node.OOB().Barrier("posted"); err != nil {
			return err
		}
		return srqSend(th, c, 0, 2, fabric.StatusSuccess)
	}
	if err := c.Node.OOB().Barrier("first"); err != nil {
		return err
	}
	if err := Quiet(th, c.RCQ, fabric.Millisecond); err != nil {
		return fmt.Errorf("a datagram that found the shared queue empty: %v", err)
	}
	if err := srqPost(c, 0, 1); err != nil {
		return err
	}
	if err := c.Node.OOB().Barrier("posted"); err != nil {
		return err
	}
	wcs, err := Await(th, c.RCQ, 1, wait)
	if err != nil {
		return err
	}
	if err := Expect(wcs[0], 100, fabric.StatusSuccess, fabric.OpRecv); err != nil {
		return err
	}
	if wcs[0].QPN != c.QPs[0].QPN() || wcs[0].Bytes != fabric.GRHBytes+64 {
		return fmt.Errorf("datagram: %v, want %d bytes on QPN %#x", wcs[0], fabric.GRHBytes+64, c.QPs[0].QPN())
	}
	return nil
}

// srqDestroyBusy: a shared queue with queue pairs attached cannot be
// destroyed (ErrBusy: the kernel's EBUSY); once the queue pairs are gone,
// it can, once.
func srqDestroyBusy(th fabric.Thread) error {
	c, err := srqConnect(th, fabric.RC, 2, 4, Options{})
	if err != nil {
		return err
	}
	if err := c.Node.OOB().Barrier("done"); err != nil {
		return err
	}
	if err := srqPost(c, 0, 2); err != nil {
		return err
	}
	if err := c.SRQ.Destroy(); !errors.Is(err, fabric.ErrBusy) {
		return fmt.Errorf("Destroy of a shared receive queue with 2 queue pairs attached: %v, want ErrBusy", err)
	}
	if err := c.QPs[0].Destroy(); err != nil {
		return err
	}
	if err := c.SRQ.Destroy(); !errors.Is(err, fabric.ErrBusy) {
		return fmt.Errorf("Destroy of a shared receive queue with 1 queue pair attached: %v, want ErrBusy", err)
	}
	if err := c.QPs[1].Destroy(); err != nil {
		return err
	}
	if c.AH != nil {
		if err := c.AH.Destroy(); err != nil {
			return err
		}
	}
	if err := c.SRQ.Destroy(); err != nil {
		return fmt.Errorf("Destroy of a shared receive queue with no queue pair attached: %v", err)
	}
	if err := c.SRQ.Destroy(); !errors.Is(err, fabric.ErrClosed) {
		return fmt.Errorf("second Destroy: %v, want ErrClosed", err)
	}
	return nil
}

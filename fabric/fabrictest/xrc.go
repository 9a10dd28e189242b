package fabrictest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// The XRC cases (ibv_open_xrcd(3), ibv_create_srq_ex(3) with IBV_SRQT_XRC,
// ibv_create_qp_ex(3) with IBV_QPT_XRC_SEND and IBV_QPT_XRC_RECV,
// ibv_get_srq_num(3)): each node opens an XRC domain with two XRC SRQs,
// each with a CQ of its own, one XRC_SEND queue pair connected to the
// other node's XRC_RECV queue pair, and that XRC_RECV queue pair.

// XRCCases lists the XRC checks (part of Cases).
func XRCCases() []Case {
	return []Case{
		{Name: "XRCOneConnectionTwoSRQs", Body: xrcTwoSRQs},
		{Name: "XRCEmptySRQRNR", Body: xrcEmptyRNR},
		{Name: "XRCUnknownSRQ", Body: xrcUnknownSRQ},
		{Name: "XRCRefusals", Body: xrcRefusals},
	}
}

// xrcConn is one node's XRC set-up.
type xrcConn struct {
	Node  fabric.Node
	PD    fabric.PD
	SCQ   fabric.CQ
	MR    fabric.MR
	XRCD  fabric.XRCD
	SRQ   [2]fabric.SRQ
	CQ    [2]fabric.CQ // SRQ[i]'s completion queue
	Plain fabric.SRQ   // an ordinary SRQ of the node (no XRC)
	INI   fabric.QP    // XRC_SEND, connected to the peer's TGT
	TGT   fabric.QP    // XRC_RECV, connected to the peer's INI
	// The peer's numbers: its XRC SRQs and its ordinary SRQ.
	PeerSRQN  [2]uint32
	PeerPlain uint32
}

// xrcConnect sets up the calling node's side; both nodes call it.
func xrcConnect(th fabric.Thread, o Options) (*xrcConn, error) {
	o.defaults()
	n := th.Node()
	dev := n.Device()
	c := &xrcConn{Node: n}
	var err error
	if c.PD, err = dev.AllocPD(); err != nil {
		return nil, err
	}
	if c.XRCD, err = c.PD.OpenXRCD(); err != nil {
		return nil, err
	}
	if c.SCQ, err = dev.CreateCQ(o.CQDepth); err != nil {
		return nil, err
	}
	if c.MR, err = c.PD.RegMR(8*srqSlot, fabric.AccessLocalWrite); err != nil {
		return nil, err
	}
	for i := range c.SRQ {
		if c.CQ[i], err = dev.CreateCQ(o.CQDepth); err != nil {
			return nil, err
		}
		if c.SRQ[i], err = c.PD.CreateSRQ(fabric.SRQInit{MaxWR: 4, MaxSGE: 1, XRCD: c.XRCD, CQ: c.CQ[i]}); err != nil {
			return nil, err
		}
	}
	if c.Plain, err = c.PD.CreateSRQ(fabric.SRQInit{MaxWR: 4, MaxSGE: 1}); err != nil {
		return nil, err
	}
	if c.INI, err = c.PD.CreateQP(fabric.QPInit{Type: fabric.XRCSend, SendCQ: c.SCQ, Caps: fabric.QPCaps{MaxSendWR: o.SendWR}}); err != nil {
		return nil, err
	}
	if c.TGT, err = c.PD.CreateQP(fabric.QPInit{Type: fabric.XRCRecv, XRCD: c.XRCD}); err != nil {
		return nil, err
	}
	var b []byte
	for _, qp := range []fabric.QP{c.INI, c.TGT} {
		if err := qp.Modify(fabric.StateInit, fabric.QPAttr{Access: fabric.AccessLocalWrite}); err != nil {
			return nil, err
		}
		info := qp.Info()
		info.PSN = initialPSN(n.ID())
		ib, _ := info.MarshalBinary()
		b = append(append(b, byte(len(ib))), ib...)
	}
	b = binary.BigEndian.AppendUint32(b, c.SRQ[0].Number())
	b = binary.BigEndian.AppendUint32(b, c.SRQ[1].Number())
	b = binary.BigEndian.AppendUint32(b, c.Plain.Number())
	all, err := n.OOB().AllGather("xrc-connect", b)
	if err != nil {
		return nil, err
	}
	var peer [2]fabric.QPInfo // its INI, its TGT
	p := all[1-n.ID()]
	for i := range peer {
		if err := peer[i].UnmarshalBinary(p[1 : 1+int(p[0])]); err != nil {
			return nil, err
		}
		p = p[1+int(p[0]):]
	}
	c.PeerSRQN = [2]uint32{binary.BigEndian.Uint32(p), binary.BigEndian.Uint32(p[4:])}
	c.PeerPlain = binary.BigEndian.Uint32(p[8:])
	if err := xrcReady(c, peer, o); err != nil {
		return nil, err
	}
	return c, n.OOB().Barrier("xrc-connected")
}

// xrcReady connects c's INI to the peer's TGT (to RTS) and c's TGT to the
// peer's INI (to RTR: a target sends nothing but responses).
func xrcReady(c *xrcConn, peer [2]fabric.QPInfo, o Options) error {
	if err := c.INI.Modify(fabric.StateRTR, fabric.QPAttr{Dest: peer[1].Address(), RemotePSN: peer[1].PSN}); err != nil {
		return err
	}
	if err := c.INI.Modify(fabric.StateRTS, fabric.QPAttr{SendPSN: initialPSN(c.Node.ID()), Timeout: o.Timeout,
		RetryCnt: o.RetryCnt, RNRRetry: o.RNRRetry}); err != nil {
		return err
	}
	return c.TGT.Modify(fabric.StateRTR, fabric.QPAttr{Dest: peer[0].Address(), RemotePSN: peer[0].PSN, MinRNRTimer: o.MinRNRTimer})
}

// xrcPost posts receives of srqSlot bytes, ids 100+slot, to SRQ i, into
// the slots given.
func xrcPost(c *xrcConn, i int, slots ...int) error {
	wrs := make([]fabric.RecvWR, len(slots))
	for k, s := range slots {
		wrs[k] = fabric.RecvWR{ID: uint64(100 + s), Local: c.MR.SGE(s*srqSlot, srqSlot)}
	}
	if k, err := c.SRQ[i].PostRecv(wrs); err != nil || k != len(wrs) {
		return fmt.Errorf("XRC SRQ %d PostRecv posted %d of %d: %v", i, k, len(wrs), err)
	}
	return nil
}

// xrcSend sends 64 bytes (pattern seed) on c's INI to the peer's SRQ
// numbered srqn and waits for its completion.
func xrcSend(th fabric.Thread, c *xrcConn, srqn uint32, seed int, want fabric.Status) error {
	fill(c.MR.Bytes()[:64], seed)
	wr := fabric.SendWR{ID: uint64(seed), Op: fabric.OpSend, Local: c.MR.SGE(0, 64), Flags: fabric.Signaled, RemoteSRQN: srqn}
	if _, err := c.INI.PostSend([]fabric.SendWR{wr}); err != nil {
		return err
	}
	wcs, err := Await(th, c.SCQ, 1, wait)
	if err != nil {
		return err
	}
	return Expect(wcs[0], uint64(seed), want, fabric.OpSend)
}

// xrcTwoSRQs: node 0's one XRC_SEND queue pair sends four messages,
// naming node 1's two XRC SRQs in turn; each lands in the SRQ it names, in
// that SRQ's CQ, its completion naming node 1's XRC_RECV queue pair.
func xrcTwoSRQs(th fabric.Thread) error {
	c, err := xrcConnect(th, Options{})
	if err != nil {
		return err
	}
	if c.Node.ID() == 1 {
		if err := xrcPost(c, 0, 1, 2); err != nil {
			return err
		}
		if err := xrcPost(c, 1, 3, 4); err != nil {
			return err
		}
	}
	if err := c.Node.OOB().Barrier("posted"); err != nil {
		return err
	}
	if c.Node.ID() == 0 {
		if c.PeerSRQN[0] == 0 || c.PeerSRQN[0] == c.PeerSRQN[1] {
			return fmt.Errorf("the peer's XRC SRQ numbers %d and %d: want two distinct non-zero numbers", c.PeerSRQN[0], c.PeerSRQN[1])
		}
		for m := range 4 {
			if err := xrcSend(th, c, c.PeerSRQN[m%2], m+1, fabric.StatusSuccess); err != nil {
				return fmt.Errorf("message %d to SRQ %d: %v", m, c.PeerSRQN[m%2], err)
			}
		}
		return nil
	}
	for i := range c.CQ {
		wcs, err := Await(th, c.CQ[i], 2, wait)
		if err != nil {
			return fmt.Errorf("XRC SRQ %d's CQ: %v", i, err)
		}
		th.Sync()
		for k, wc := range wcs {
			m, slot := 2*k+i, 2*i+k+1 // message m went to SRQ m%2, its k-th receive
			if err := Expect(wc, uint64(100+slot), fabric.StatusSuccess, fabric.OpRecv); err != nil {
				return fmt.Errorf("message %d: %v", m, err)
			}
			if want := c.TGT.QPN(); wc.QPN != want || wc.Bytes != 64 {
				return fmt.Errorf("message %d: %d bytes on QPN %#x, want 64 on %#x (the XRC_RECV queue pair)", m, wc.Bytes, wc.QPN, want)
			}
			if got := c.MR.Bytes()[slot*srqSlot : slot*srqSlot+64]; !bytes.Equal(got, pattern(64, m+1)) {
				return fmt.Errorf("message %d: payload differs from what was sent", m)
			}
		}
	}
	return Quiet(th, c.SCQ, fabric.Millisecond)
}

// xrcEmptyRNR: a message for an empty XRC SRQ is answered with RNR NAKs
// until the sender's RNR retries run out, as for an RC receive queue.
func xrcEmptyRNR(th fabric.Thread) error {
	c, err := xrcConnect(th, Options{RNRRetry: 2, MinRNRTimer: 1})
	if err != nil {
		return err
	}
	if c.Node.ID() == 0 {
		if err := xrcSend(th, c, c.PeerSRQN[1], 1, fabric.StatusRNRRetryExceeded); err != nil {
			return err
		}
	}
	return c.Node.OOB().Barrier("done")
}

// xrcUnknownSRQ: a message naming an SRQ that is not an XRC SRQ of the
// target's domain (here the node's ordinary SRQ) fails with a remote
// invalid request.
func xrcUnknownSRQ(th fabric.Thread) error {
	c, err := xrcConnect(th, Options{})
	if err != nil {
		return err
	}
	if c.Node.ID() == 1 {
		if k, err := c.Plain.PostRecv([]fabric.RecvWR{{ID: 7, Local: c.MR.SGE(srqSlot, srqSlot)}}); err != nil || k != 1 {
			return fmt.Errorf("PostRecv on the ordinary SRQ: %d, %v", k, err)
		}
	}
	if err := c.Node.OOB().Barrier("posted"); err != nil {
		return err
	}
	if c.Node.ID() == 0 {
		if err := xrcSend(th, c, c.PeerPlain, 1, fabric.StatusRemoteInvalid); err != nil {
			return fmt.Errorf("a send naming the peer's ordinary SRQ %d: %v", c.PeerPlain, err)
		}
	}
	return c.Node.OOB().Barrier("done")
}

// xrcRefusals: what verbs refuses with EINVAL (or EBUSY) is refused.
func xrcRefusals(th fabric.Thread) error {
	c, err := xrcConnect(th, Options{})
	if err != nil {
		return err
	}
	rwr := []fabric.RecvWR{{ID: 1, Local: c.MR.SGE(0, 64)}}
	for _, qp := range []fabric.QP{c.INI, c.TGT} {
		if n, err := qp.PostRecv(rwr); n != 0 || !errors.Is(err, fabric.ErrInvalidArg) {
			return fmt.Errorf("PostRecv on an %v queue pair: %d posted, %v; want 0, ErrInvalidArg", qp.Type(), n, err)
		}
	}
	swr := fabric.SendWR{ID: 1, Op: fabric.OpSend, Local: c.MR.SGE(0, 64), Flags: fabric.Signaled, RemoteSRQN: c.PeerSRQN[0]}
	if n, err := c.TGT.PostSend([]fabric.SendWR{swr}); n != 0 || !errors.Is(err, fabric.ErrInvalidArg) {
		return fmt.Errorf("PostSend on an XRC_RECV queue pair: %d posted, %v; want 0, ErrInvalidArg", n, err)
	}
	swr.RemoteSRQN = 0
	if n, err := c.INI.PostSend([]fabric.SendWR{swr}); n != 0 || !errors.Is(err, fabric.ErrInvalidWR) {
		return fmt.Errorf("PostSend on an XRC_SEND queue pair naming no remote SRQ: %d posted, %v; want 0, ErrInvalidWR", n, err)
	}
	if _, err := c.PD.CreateQP(fabric.QPInit{Type: fabric.XRCRecv}); !errors.Is(err, fabric.ErrInvalidArg) {
		return fmt.Errorf("CreateQP XRC_RECV without an XRC domain: %v, want ErrInvalidArg", err)
	}
	if _, err := c.PD.CreateQP(fabric.QPInit{Type: fabric.RC, SendCQ: c.SCQ, RecvCQ: c.CQ[0], SRQ: c.SRQ[0],
		Caps: fabric.QPCaps{MaxSendWR: 1, MaxRecvWR: 1}}); !errors.Is(err, fabric.ErrInvalidArg) {
		return fmt.Errorf("CreateQP RC attached to an XRC SRQ: %v, want ErrInvalidArg", err)
	}
	if _, err := c.PD.CreateSRQ(fabric.SRQInit{MaxWR: 4, MaxSGE: 1, XRCD: c.XRCD}); !errors.Is(err, fabric.ErrInvalidArg) {
		return fmt.Errorf("CreateSRQ XRC without a CQ: %v, want ErrInvalidArg", err)
	}
	if _, err := c.PD.CreateSRQ(fabric.SRQInit{MaxWR: 4, MaxSGE: 1, CQ: c.CQ[0]}); !errors.Is(err, fabric.ErrInvalidArg) {
		return fmt.Errorf("CreateSRQ with a CQ and no XRC domain: %v, want ErrInvalidArg", err)
	}
	if err := c.Node.OOB().Barrier("done"); err != nil {
		return err
	}
	return xrcClose(c)
}

// xrcClose frees c, checking that the domain stays busy until its SRQs
// and target queue pair are gone, and closes once.
func xrcClose(c *xrcConn) error {
	if err := c.XRCD.Close(); !errors.Is(err, fabric.ErrBusy) {
		return fmt.Errorf("Close of an XRC domain with SRQs and a target: %v, want ErrBusy", err)
	}
	for _, q := range []fabric.QP{c.INI, c.TGT} {
		if err := q.Destroy(); err != nil {
			return err
		}
	}
	if err := c.XRCD.Close(); !errors.Is(err, fabric.ErrBusy) {
		return fmt.Errorf("Close of an XRC domain with two SRQs: %v, want ErrBusy", err)
	}
	for _, s := range append(c.SRQ[:], c.Plain) {
		if err := s.Destroy(); err != nil {
			return err
		}
	}
	if err := c.XRCD.Close(); err != nil {
		return fmt.Errorf("Close of an empty XRC domain: %v", err)
	}
	if err := c.XRCD.Close(); !errors.Is(err, fabric.ErrClosed) {
		return fmt.Errorf("second Close: %v, want ErrClosed", err)
	}
	return nil
}

package fabrictest

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// The DC cases (mlx5dv_create_qp(3) with MLX5DV_DCTYPE_DCI and
// MLX5DV_DCTYPE_DCT, mlx5dv_wr_set_dc_addr(3)): each node has one DCT on
// an SRQ, with a CQ of its own and an access key, and one DCI, and an
// address handle to each node (itself included). A backend without DC
// refuses the first DC queue pair with an error wrapping
// errors.ErrUnsupported, and the case is skipped.

// DCCases lists the DC checks (part of Cases).
func DCCases() []Case {
	return []Case{
		{Name: "DCOneInitiatorTwoTargets", Body: dcTwoTargets},
		{Name: "DCWriteRead", Body: dcWriteRead},
		{Name: "DCWrongKey", Body: dcWrongKey},
		{Name: "DCEmptySRQRNR", Body: dcEmptyRNR},
		{Name: "DCRefusals", Body: dcRefusals},
	}
}

// DCKey is node's DCT access key.
func DCKey(node int) uint64 { return 0xdc0000000000 + uint64(node) }

// DCConn is one node's DC set-up (DCConnect).
type DCConn struct {
	Node fabric.Node
	PD   fabric.PD
	SCQ  fabric.CQ // the DCI's
	RCQ  fabric.CQ // the DCT's
	MR   fabric.MR
	SRQ  fabric.SRQ
	DCI  fabric.QP
	DCT  fabric.QP
	AH   []fabric.AH     // to node i
	DCTN []uint32        // node i's DCT number
	Peer []fabric.QPInfo // node i's DCT, with its region (Addr, RKey)
}

// DCConnect sets up the calling node's side; every node calls it. Its
// SRQ holds o.RecvWR receives (default 64), its region that many slots
// of srqSlot bytes and two more, and node i's DCT key is DCKey(i).
func DCConnect(th fabric.Thread, o Options) (*DCConn, error) {
	o.defaults()
	n := th.Node()
	dev := n.Device()
	c := &DCConn{Node: n}
	var err error
	if c.PD, c.SCQ, c.RCQ, c.MR, err = objects(dev, o.CQDepth, (o.RecvWR+2)*srqSlot); err != nil {
		return nil, err
	}
	if c.SRQ, err = c.PD.CreateSRQ(fabric.SRQInit{MaxWR: o.RecvWR, MaxSGE: 1}); err != nil {
		return nil, err
	}
	if c.DCT, err = c.PD.CreateQP(fabric.QPInit{Type: fabric.DCT, RecvCQ: c.RCQ, SRQ: c.SRQ, DCKey: DCKey(n.ID())}); err != nil {
		return nil, err
	}
	if c.DCI, err = c.PD.CreateQP(fabric.QPInit{Type: fabric.DCI, SendCQ: c.SCQ, Caps: fabric.QPCaps{MaxSendWR: o.SendWR}}); err != nil {
		return nil, err
	}
	if err := dcReady(c, o); err != nil {
		return nil, err
	}
	me := c.DCT.Info()
	me.Addr, me.RKey, me.Bytes = c.MR.Addr(), c.MR.RKey(), uint64(c.MR.Len())
	b, _ := me.MarshalBinary()
	all, err := n.OOB().AllGather("dc-connect", b)
	if err != nil {
		return nil, err
	}
	c.AH, c.DCTN, c.Peer = make([]fabric.AH, len(all)), make([]uint32, len(all)), make([]fabric.QPInfo, len(all))
	for i, p := range all {
		var info fabric.QPInfo
		if err := info.UnmarshalBinary(p); err != nil {
			return nil, err
		}
		if c.AH[i], err = c.PD.CreateAH(info.Address()); err != nil {
			return nil, err
		}
		c.DCTN[i], c.Peer[i] = info.QPN, info
	}
	return c, n.OOB().Barrier("dc-connected")
}

// dcReady moves the DCT to RTR and the DCI to RTS, neither with a
// destination.
func dcReady(c *DCConn, o Options) error {
	if err := c.DCT.Modify(fabric.StateInit, fabric.QPAttr{Access: o.Access}); err != nil {
		return err
	}
	if err := c.DCT.Modify(fabric.StateRTR, fabric.QPAttr{MinRNRTimer: o.MinRNRTimer, MaxDestRdAtomic: 1}); err != nil {
		return err
	}
	if err := c.DCI.Modify(fabric.StateInit, fabric.QPAttr{}); err != nil {
		return err
	}
	if err := c.DCI.Modify(fabric.StateRTR, fabric.QPAttr{}); err != nil {
		return err
	}
	return c.DCI.Modify(fabric.StateRTS, fabric.QPAttr{SendPSN: initialPSN(c.Node.ID()), Timeout: o.Timeout,
		RetryCnt: o.RetryCnt, RNRRetry: o.RNRRetry, MaxRdAtomic: 1})
}

// DCWR is a signaled 64-byte send, from bytes [64*id, 64*id+64) of c's region, to node's
// DCT, with key.
func DCWR(c *DCConn, id uint64, node int, key uint64) fabric.SendWR {
	return fabric.SendWR{ID: id, Op: fabric.OpSend, Local: c.MR.SGE(int(id)*64, 64), Flags: fabric.Signaled,
		AH: c.AH[node], RemoteQPN: c.DCTN[node], DCKey: key}
}

// DCPost posts receives of srqSlot bytes, ids 100+slot, to c's SRQ.
func DCPost(c *DCConn, slots ...int) error {
	wrs := make([]fabric.RecvWR, len(slots))
	for k, s := range slots {
		wrs[k] = fabric.RecvWR{ID: uint64(100 + s), Local: c.MR.SGE(s*srqSlot, srqSlot)}
	}
	if k, err := c.SRQ.PostRecv(wrs); err != nil || k != len(wrs) {
		return fmt.Errorf("SRQ PostRecv posted %d of %d: %v", k, len(wrs), err)
	}
	return nil
}

// dcTwoTargets: node 0's DCI sends four messages, posted at once, to
// node 1's DCT and its own in turn (each change of target a reconnect);
// each completes in order, and each DCT receives its two in order, in its
// CQ, naming the DCT.
func dcTwoTargets(th fabric.Thread) error {
	c, err := DCConnect(th, Options{})
	if err != nil {
		return err
	}
	if err := DCPost(c, 1, 2); err != nil {
		return err
	}
	if err := c.Node.OOB().Barrier("posted"); err != nil {
		return err
	}
	if c.Node.ID() == 0 {
		wrs := make([]fabric.SendWR, 4)
		for m := range wrs {
			fill(c.MR.Bytes()[(m+1)*64:(m+2)*64], m+1)
			to := 1 - m%2
			wrs[m] = DCWR(c, uint64(m+1), to, DCKey(to))
		}
		if k, err := c.DCI.PostSend(wrs); err != nil || k != 4 {
			return fmt.Errorf("PostSend on the DCI: %d of 4 posted, %v", k, err)
		}
		wcs, err := Await(th, c.SCQ, 4, wait)
		if err != nil {
			return fmt.Errorf("the DCI's CQ: %v", err)
		}
		for m, wc := range wcs {
			if err := Expect(wc, uint64(m+1), fabric.StatusSuccess, fabric.OpSend); err != nil {
				return fmt.Errorf("message %d: %v", m, err)
			}
		}
	}
	wcs, err := Await(th, c.RCQ, 2, wait)
	if err != nil {
		return fmt.Errorf("the DCT's CQ: %v", err)
	}
	th.Sync()
	for k, wc := range wcs {
		m := 2*k + 1 - c.Node.ID() // node 1 got messages 0 and 2, node 0 messages 1 and 3
		if err := Expect(wc, uint64(101+k), fabric.StatusSuccess, fabric.OpRecv); err != nil {
			return fmt.Errorf("message %d: %v", m, err)
		}
		if want := c.DCT.QPN(); wc.QPN != want || wc.Bytes != 64 {
			return fmt.Errorf("message %d: %d bytes on QPN %#x, want 64 on %#x (the DCT)", m, wc.Bytes, wc.QPN, want)
		}
		if got := c.MR.Bytes()[(k+1)*srqSlot : (k+1)*srqSlot+64]; !bytes.Equal(got, pattern(64, m+1)) {
			return fmt.Errorf("message %d: payload differs from what was sent", m)
		}
	}
	return c.Node.OOB().Barrier("done")
}

// dcWriteRead: node 0's DCI writes 64 bytes into node 1's region, reads
// them back, then writes into its own node's region (a change of target
// after a read) and reads that back: each read returns what the write
// placed.
func dcWriteRead(th fabric.Thread) error {
	c, err := DCConnect(th, Options{})
	if err != nil {
		return err
	}
	if c.Node.ID() == 0 {
		for k, to := range []int{1, 0} {
			seed := 10 + k
			fill(c.MR.Bytes()[64:128], seed)
			dst := c.Peer[to].Addr + 2048 + uint64(k)*64
			wrs := []fabric.SendWR{
				{ID: 1, Op: fabric.OpWrite, Local: c.MR.SGE(64, 64), Flags: fabric.Signaled, RemoteAddr: dst, RKey: c.Peer[to].RKey,
					AH: c.AH[to], RemoteQPN: c.DCTN[to], DCKey: DCKey(to)},
				{ID: 2, Op: fabric.OpRead, Local: c.MR.SGE(3072, 64), Flags: fabric.Signaled, RemoteAddr: dst, RKey: c.Peer[to].RKey,
					AH: c.AH[to], RemoteQPN: c.DCTN[to], DCKey: DCKey(to)},
			}
			if k, err := c.DCI.PostSend(wrs); err != nil || k != 2 {
				return fmt.Errorf("PostSend: %d of 2, %v", k, err)
			}
			wcs, err := Await(th, c.SCQ, 2, wait)
			if err != nil {
				return err
			}
			for i, op := range []fabric.Opcode{fabric.OpWrite, fabric.OpRead} {
				if err := Expect(wcs[i], uint64(i+1), fabric.StatusSuccess, op); err != nil {
					return fmt.Errorf("to node %d: %v", to, err)
				}
			}
			th.Sync()
			if !bytes.Equal(c.MR.Bytes()[3072:3136], pattern(64, seed)) {
				return fmt.Errorf("the read from node %d returned other bytes than the write placed", to)
			}
		}
	}
	return c.Node.OOB().Barrier("done")
}

// dcSendOne sends one message from node 0's DCI to node 1's DCT with key
// and expects want at the initiator.
func dcSendOne(th fabric.Thread, c *DCConn, key uint64, want fabric.Status) error {
	if c.Node.ID() == 0 {
		if _, err := c.DCI.PostSend([]fabric.SendWR{DCWR(c, 1, 1, key)}); err != nil {
			return err
		}
		wcs, err := Await(th, c.SCQ, 1, wait)
		if err != nil {
			return err
		}
		if err := Expect(wcs[0], 1, want, fabric.OpSend); err != nil {
			return err
		}
	}
	return c.Node.OOB().Barrier("done")
}

// dcWrongKey: a request with another key than the DCT's fails with a
// remote access error, its receive untouched.
func dcWrongKey(th fabric.Thread) error {
	c, err := DCConnect(th, Options{})
	if err != nil {
		return err
	}
	if err := DCPost(c, 1); err != nil {
		return err
	}
	if err := c.Node.OOB().Barrier("posted"); err != nil {
		return err
	}
	if err := dcSendOne(th, c, DCKey(1)+1, fabric.StatusRemoteAccess); err != nil {
		return err
	}
	return Quiet(th, c.RCQ, fabric.Millisecond)
}

// dcEmptyRNR: a message for a DCT whose SRQ is empty is answered with RNR
// NAKs until the initiator's RNR retries run out.
func dcEmptyRNR(th fabric.Thread) error {
	c, err := DCConnect(th, Options{RNRRetry: 2, MinRNRTimer: 1})
	if err != nil {
		return err
	}
	return dcSendOne(th, c, DCKey(1), fabric.StatusRNRRetryExceeded)
}

// dcRefusals: what mlx5dv and verbs refuse with EINVAL is refused.
func dcRefusals(th fabric.Thread) error {
	c, err := DCConnect(th, Options{})
	if err != nil {
		return err
	}
	rwr := []fabric.RecvWR{{ID: 1, Local: c.MR.SGE(0, 64)}}
	for _, qp := range []fabric.QP{c.DCI, c.DCT} {
		if n, err := qp.PostRecv(rwr); n != 0 || !errors.Is(err, fabric.ErrInvalidArg) {
			return fmt.Errorf("PostRecv on a %v: %d posted, %v; want 0, ErrInvalidArg", qp.Type(), n, err)
		}
	}
	swr := DCWR(c, 1, 1, DCKey(1))
	if n, err := c.DCT.PostSend([]fabric.SendWR{swr}); n != 0 || !errors.Is(err, fabric.ErrInvalidArg) {
		return fmt.Errorf("PostSend on a DCT: %d posted, %v; want 0, ErrInvalidArg", n, err)
	}
	for _, bad := range []fabric.SendWR{{ID: 1, Op: fabric.OpSend, Local: swr.Local, RemoteQPN: swr.RemoteQPN},
		{ID: 1, Op: fabric.OpSend, Local: swr.Local, AH: swr.AH}} {
		if n, err := c.DCI.PostSend([]fabric.SendWR{bad}); n != 0 || !errors.Is(err, fabric.ErrInvalidWR) {
			return fmt.Errorf("PostSend on a DCI without DC addressing: %d posted, %v; want 0, ErrInvalidWR", n, err)
		}
	}
	if _, err := c.PD.CreateQP(fabric.QPInit{Type: fabric.DCT, RecvCQ: c.RCQ}); !errors.Is(err, fabric.ErrInvalidArg) {
		return fmt.Errorf("CreateQP DCT without an SRQ: %v, want ErrInvalidArg", err)
	}
	if _, err := c.PD.CreateQP(fabric.QPInit{Type: fabric.DCI, SendCQ: c.SCQ, SRQ: c.SRQ,
		Caps: fabric.QPCaps{MaxSendWR: 1}}); !errors.Is(err, fabric.ErrInvalidArg) {
		return fmt.Errorf("CreateQP DCI with an SRQ: %v, want ErrInvalidArg", err)
	}
	if err := c.DCT.Modify(fabric.StateRTS, fabric.QPAttr{}); !errors.Is(err, fabric.ErrBadTransition) {
		return fmt.Errorf("a DCT to RTS: %v, want ErrBadTransition", err)
	}
	if err := c.SRQ.Destroy(); !errors.Is(err, fabric.ErrBusy) {
		return fmt.Errorf("Destroy of an SRQ a DCT is attached to: %v, want ErrBusy", err)
	}
	if err := c.Node.OOB().Barrier("done"); err != nil {
		return err
	}
	for _, q := range []fabric.QP{c.DCI, c.DCT} {
		if err := q.Destroy(); err != nil {
			return err
		}
	}
	return c.SRQ.Destroy()
}

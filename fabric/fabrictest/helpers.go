// Package fabrictest is the conformance suite of the fabric contract. Every
// backend runs it: the simulator in its own tests, the libibverbs backend
// when an RDMA device is present. It checks every verb and every error path
// the contract promises, through nothing but the fabric interfaces.
package fabrictest

import (
	"errors"
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// Factory builds a fresh cluster of n nodes for one test. Backends that
// cannot provide n nodes call t.Skip.
type Factory func(t TB, nodes int) fabric.Fabric

// TB is the part of testing.TB the suite needs.
type TB interface {
	Helper()
	Skip(args ...any)
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// Conn is one node's side of a two-node connection used by the tests.
type Conn struct {
	Node     fabric.Node
	PD       fabric.PD
	SCQ, RCQ fabric.CQ
	QP       fabric.QP
	MR       fabric.MR     // local buffer, registered with every access
	Peer     fabric.QPInfo // the other side, with its MR
	AH       fabric.AH     // UD only
}

// Options tune Connect.
type Options struct {
	Type        fabric.QPType
	MRBytes     int
	CQDepth     int
	SendWR      int
	RecvWR      int
	MaxInline   int
	RetryCnt    uint8
	RNRRetry    uint8
	MinRNRTimer uint8
	Timeout     uint8
	QKey        uint32
	Access      fabric.Access // QP access; default read and write
}

func (o *Options) defaults() {
	if o.Type == 0 {
		o.Type = fabric.RC
	}
	if o.MRBytes == 0 {
		o.MRBytes = 64 << 10
	}
	if o.CQDepth == 0 {
		o.CQDepth = 256
	}
	if o.SendWR == 0 {
		o.SendWR = 64
	}
	if o.RecvWR == 0 {
		o.RecvWR = 64
	}
	if o.Timeout == 0 {
		o.Timeout = 14
	}
	if o.QKey == 0 {
		o.QKey = 0x11111111
	}
	if o.Access == 0 {
		o.Access = fabric.AccessRemoteRead | fabric.AccessRemoteWrite | fabric.AccessLocalWrite
	}
}

// initialPSN gives each node a different start, near the 24-bit wrap so
// that every test crosses it.
func initialPSN(node int) fabric.PSN { return fabric.PSN(1<<24 - 3).Add(node * 1000) }

// objects makes what a test connection starts from: a protection
// domain, a send and a receive completion queue of depth cqDepth, and a
// region of mrBytes open to local and remote writes and remote reads.
func objects(dev fabric.Device, cqDepth, mrBytes int) (pd fabric.PD, scq, rcq fabric.CQ, mr fabric.MR, err error) {
	if pd, err = dev.AllocPD(); err != nil {
		return
	}
	if scq, err = dev.CreateCQ(cqDepth); err != nil {
		return
	}
	if rcq, err = dev.CreateCQ(cqDepth); err != nil {
		return
	}
	mr, err = pd.RegMR(mrBytes, fabric.AccessLocalWrite|fabric.AccessRemoteWrite|fabric.AccessRemoteRead)
	return
}

// Connect sets up one queue pair on the calling node and connects it to
// the same on node peer. Both nodes must call it (it exchanges over OOB).
func Connect(th fabric.Thread, peer int, o Options) (*Conn, error) {
	o.defaults()
	n := th.Node()
	dev := n.Device()
	c := &Conn{Node: n}
	var err error
	if c.PD, c.SCQ, c.RCQ, c.MR, err = objects(dev, o.CQDepth, o.MRBytes); err != nil {
		return nil, err
	}
	c.QP, err = c.PD.CreateQP(fabric.QPInit{Type: o.Type, SendCQ: c.SCQ, RecvCQ: c.RCQ,
		Caps: fabric.QPCaps{MaxSendWR: o.SendWR, MaxRecvWR: o.RecvWR, MaxInline: o.MaxInline}})
	if err != nil {
		return nil, err
	}
	if err := c.QP.Modify(fabric.StateInit, fabric.QPAttr{Access: o.Access, QKey: o.QKey}); err != nil {
		return nil, err
	}
	info := c.QP.Info()
	info.PSN = initialPSN(n.ID())
	info.Addr, info.RKey, info.Bytes = c.MR.Addr(), c.MR.RKey(), uint64(c.MR.Len())
	b, _ := info.MarshalBinary()
	all, err := n.OOB().AllGather(fmt.Sprintf("connect-%v", o.Type), b)
	if err != nil {
		return nil, err
	}
	if err := c.Peer.UnmarshalBinary(all[peer]); err != nil {
		return nil, err
	}
	if o.Type == fabric.UD {
		if c.AH, err = c.PD.CreateAH(c.Peer.Address()); err != nil {
			return nil, err
		}
		if err := c.QP.Modify(fabric.StateRTR, fabric.QPAttr{}); err != nil {
			return nil, err
		}
		return c, c.QP.Modify(fabric.StateRTS, fabric.QPAttr{SendPSN: info.PSN})
	}
	if err := c.QP.Modify(fabric.StateRTR, fabric.QPAttr{Dest: c.Peer.Address(), RemotePSN: c.Peer.PSN,
		MinRNRTimer: o.MinRNRTimer, MaxDestRdAtomic: 16}); err != nil {
		return nil, err
	}
	return c, c.QP.Modify(fabric.StateRTS, fabric.QPAttr{SendPSN: info.PSN, Timeout: o.Timeout,
		RetryCnt: o.RetryCnt, RNRRetry: o.RNRRetry, MaxRdAtomic: 16})
}

// errTimeout is returned by Await when completions do not arrive in time.
var errTimeout = errors.New("fabrictest: timed out waiting for completions")

// Await polls cq until n completions arrived or d passed.
func Await(th fabric.Thread, cq fabric.CQ, n int, d fabric.Duration) ([]fabric.WC, error) {
	deadline := th.Now().Add(d)
	out := make([]fabric.WC, 0, n)
	buf := make([]fabric.WC, 16)
	for len(out) < n {
		k, err := cq.Poll(buf[:min(len(buf), n-len(out))])
		out = append(out, buf[:k]...)
		if err != nil {
			return out, err
		}
		if k > 0 {
			continue
		}
		if th.Now() >= deadline {
			return out, fmt.Errorf("%w: got %d of %d after %v", errTimeout, len(out), n, d)
		}
		th.Wait(deadline, cq)
	}
	return out, nil
}

// Quiet checks that cq stays empty for d.
func Quiet(th fabric.Thread, cq fabric.CQ, d fabric.Duration) error {
	wcs, err := Await(th, cq, 1, d)
	if errors.Is(err, errTimeout) {
		return nil
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("expected no completion, got %v", wcs[0])
}

// Expect checks one completion's fields.
func Expect(wc fabric.WC, id uint64, st fabric.Status, op fabric.Opcode) error {
	if wc.ID != id || wc.Status != st || wc.Op != op {
		return fmt.Errorf("completion %v, want id=%d %v %v", wc, id, op, st)
	}
	return nil
}

package fabrictest

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// Case is one conformance check: body runs as the main thread of each of
// the two nodes. The run must succeed, or, when Want is set, fail with an
// error wrapping Want.
type Case struct {
	Name string
	Body func(th fabric.Thread) error
	Want error
}

// wait bounds the waits for completions: reached only when one is
// missing (backends on real threads may be slow on a loaded machine).
const wait = fabric.Second

// Run runs every case, of the verbs contract and of the execution contract
// (RunExec), against fresh two-node clusters from f.
func Run(t *testing.T, f Factory) {
	RunExec(t, f)
	for _, c := range Cases() {
		t.Run(c.Name, func(t *testing.T) {
			fab := f(t, 2)
			err := fab.Run(c.Body)
			if errors.Is(err, errors.ErrUnsupported) {
				t.Skip(err) // a feature the backend does not have (yet)
			}
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// Cases lists the conformance checks.
func Cases() []Case {
	return append([]Case{
		{Name: "RCSendRecv", Body: sendRecv(fabric.RC, []int{1, 100, 4096, 4097, 10000, 0})},
		{Name: "UCSendRecv", Body: sendRecv(fabric.UC, []int{1, 4096, 9000})},
		{Name: "UDSendRecvGRH", Body: udSendRecv},
		{Name: "SendImm", Body: sendImm(fabric.RC)},
		{Name: "UDSendImm", Body: sendImm(fabric.UD)},
		{Name: "RCWrite", Body: write(fabric.RC, false)},
		{Name: "UCWrite", Body: write(fabric.UC, false)},
		{Name: "WriteImm", Body: write(fabric.RC, true)},
		{Name: "Read", Body: read},
		{Name: "WriteSeenByPolling", Body: writeSeenByPolling},
		{Name: "InlineSend", Body: inlineSend},
		{Name: "UnsignaledSends", Body: unsignaled},
		{Name: "PostSendWrongState", Body: postWrongState},
		{Name: "IllegalTransition", Body: illegalTransition},
		{Name: "UnregisteredLKey", Body: badLocal(false)},
		{Name: "OutOfBoundsSGE", Body: badLocal(true)},
		{Name: "RKeyMismatch", Body: rkeyMismatch},
		{Name: "ErrorStaysWithItsQP", Body: errorStaysWithItsQP},
		{Name: "ReadNotPermitted", Body: readNotPermitted},
		{Name: "RCNoReceiveRNR", Body: rnrExceeded},
		{Name: "RCReceiveArrivesLate", Body: rnrRecovers},
		{Name: "UDNoReceiveDropped", Body: udNoRecv},
		{Name: "CQOverrun", Body: cqOverrun},
		{Name: "UDAboveMTU", Body: udAboveMTU},
		{Name: "SendQueueFull", Body: sendQueueFull},
		{Name: "SlotsFreedByPoll", Body: slotsFreedByPoll},
		{Name: "ErrorBehindOutstanding", Body: errorBehindOutstanding},
		{Name: "InlineTooLarge", Body: inlineTooLarge},
		{Name: "RecvTooSmall", Body: recvTooSmall},
		{Name: "ErrorStateFlushes", Body: errorFlush},
		{Name: "MemoryRegionLifecycle", Body: mrLifecycle},
	}, append(append(SRQCases(), XRCCases()...), DCCases()...)...)
}

// fill writes a pattern that depends on seed into b.
func fill(b []byte, seed int) {
	for i := range b {
		b[i] = byte(i*7 + seed*13 + i>>8)
	}
}

func pattern(n, seed int) []byte {
	b := make([]byte, n)
	fill(b, seed)
	return b
}

// both connects and runs sender on node 0 and receiver on node 1.
func both(o Options, sender, receiver func(th fabric.Thread, c *Conn) error) func(fabric.Thread) error {
	return func(th fabric.Thread) error {
		me := th.Node().ID()
		c, err := Connect(th, 1-me, o)
		if err != nil {
			return err
		}
		// Both queue pairs are in RTS before either side sends: a
		// request that fails at the responder moves the responder's
		// queue pair to ERROR, and must not meet it still on its way to
		// RTS (a race on real threads, seen under -race -cpu 1).
		if err := c.Node.OOB().Barrier("connected"); err != nil {
			return err
		}
		if me == 0 {
			return sender(th, c)
		}
		return receiver(th, c)
	}
}

func postRecvs(c *Conn, n, size int) error {
	wrs := make([]fabric.RecvWR, n)
	for i := range wrs {
		wrs[i] = fabric.RecvWR{ID: uint64(100 + i), Local: c.MR.SGE(i*size, size)}
	}
	_, err := c.QP.PostRecv(wrs)
	return err
}

func sendRecv(typ fabric.QPType, sizes []int) func(fabric.Thread) error {
	const slot = 16 << 10
	return both(Options{Type: typ, MRBytes: len(sizes) * slot},
		func(th fabric.Thread, c *Conn) error {
			if err := c.Node.OOB().Barrier("recvs-posted"); err != nil {
				return err
			}
			for i, n := range sizes {
				fill(c.MR.Bytes()[i*slot:i*slot+n], i)
				wr := fabric.SendWR{ID: uint64(i), Op: fabric.OpSend, Local: c.MR.SGE(i*slot, n), Flags: fabric.Signaled}
				if _, err := c.QP.PostSend([]fabric.SendWR{wr}); err != nil {
					return err
				}
			}
			wcs, err := Await(th, c.SCQ, len(sizes), wait)
			if err != nil {
				return err
			}
			for i, wc := range wcs {
				if err := Expect(wc, uint64(i), fabric.StatusSuccess, fabric.OpSend); err != nil {
					return err
				}
			}
			return nil
		},
		func(th fabric.Thread, c *Conn) error {
			if err := postRecvs(c, len(sizes), slot); err != nil {
				return err
			}
			if err := c.Node.OOB().Barrier("recvs-posted"); err != nil {
				return err
			}
			wcs, err := Await(th, c.RCQ, len(sizes), wait)
			if err != nil {
				return err
			}
			for i, wc := range wcs {
				if err := Expect(wc, uint64(100+i), fabric.StatusSuccess, fabric.OpRecv); err != nil {
					return err
				}
				if wc.Bytes != sizes[i] || wc.QPN != c.QP.QPN() {
					return fmt.Errorf("receive %d: %d bytes on QPN %#x, want %d on %#x", i, wc.Bytes, wc.QPN, sizes[i], c.QP.QPN())
				}
				th.Sync()
				if got := c.MR.Bytes()[i*slot : i*slot+sizes[i]]; !bytes.Equal(got, pattern(sizes[i], i)) {
					return fmt.Errorf("receive %d: payload differs from what was sent", i)
				}
			}
			return nil
		})
}

func udSendRecv(th fabric.Thread) error {
	const n = 1000
	return both(Options{Type: fabric.UD},
		func(th fabric.Thread, c *Conn) error {
			if err := c.Node.OOB().Barrier("posted"); err != nil {
				return err
			}
			fill(c.MR.Bytes()[:n], 5)
			wr := fabric.SendWR{ID: 7, Op: fabric.OpSend, Local: c.MR.SGE(0, n), Flags: fabric.Signaled,
				AH: c.AH, RemoteQPN: c.Peer.QPN, QKey: c.Peer.QKey}
			if _, err := c.QP.PostSend([]fabric.SendWR{wr}); err != nil {
				return err
			}
			wcs, err := Await(th, c.SCQ, 1, wait)
			if err != nil {
				return err
			}
			return Expect(wcs[0], 7, fabric.StatusSuccess, fabric.OpSend)
		},
		func(th fabric.Thread, c *Conn) error {
			if err := postRecvs(c, 1, fabric.GRHBytes+4096); err != nil {
				return err
			}
			if err := c.Node.OOB().Barrier("posted"); err != nil {
				return err
			}
			wcs, err := Await(th, c.RCQ, 1, wait)
			if err != nil {
				return err
			}
			wc := wcs[0]
			if err := Expect(wc, 100, fabric.StatusSuccess, fabric.OpRecv); err != nil {
				return err
			}
			if wc.Bytes != fabric.GRHBytes+n {
				return fmt.Errorf("UD receive of %d bytes, want %d (payload plus the 40-byte GRH)", wc.Bytes, fabric.GRHBytes+n)
			}
			if wc.SrcQP != c.Peer.QPN {
				return fmt.Errorf("UD receive from QPN %#x, want %#x", wc.SrcQP, c.Peer.QPN)
			}
			th.Sync()
			if !bytes.Equal(c.MR.Bytes()[fabric.GRHBytes:fabric.GRHBytes+n], pattern(n, 5)) {
				return errors.New("UD payload does not start right after the 40-byte GRH")
			}
			return nil
		})(th)
}

func sendImm(typ fabric.QPType) func(fabric.Thread) error {
	return both(Options{Type: typ},
		func(th fabric.Thread, c *Conn) error {
			if err := c.Node.OOB().Barrier("posted"); err != nil {
				return err
			}
			wr := fabric.SendWR{ID: 1, Op: fabric.OpSendImm, Imm: 0xdeadbeef, Local: c.MR.SGE(0, 16), Flags: fabric.Signaled,
				AH: c.AH, RemoteQPN: c.Peer.QPN, QKey: c.Peer.QKey}
			if _, err := c.QP.PostSend([]fabric.SendWR{wr}); err != nil {
				return err
			}
			_, err := Await(th, c.SCQ, 1, wait)
			return err
		},
		func(th fabric.Thread, c *Conn) error {
			if err := postRecvs(c, 1, 8192); err != nil {
				return err
			}
			if err := c.Node.OOB().Barrier("posted"); err != nil {
				return err
			}
			wcs, err := Await(th, c.RCQ, 1, wait)
			if err != nil {
				return err
			}
			if !wcs[0].HasImm || wcs[0].Imm != 0xdeadbeef {
				return fmt.Errorf("send with immediate: completion %+v lacks immediate 0xdeadbeef", wcs[0])
			}
			return nil
		})
}

func write(typ fabric.QPType, imm bool) func(fabric.Thread) error {
	const n = 10000
	return both(Options{Type: typ},
		func(th fabric.Thread, c *Conn) error {
			if err := c.Node.OOB().Barrier("posted"); err != nil {
				return err
			}
			fill(c.MR.Bytes()[:n], 9)
			wr := fabric.SendWR{ID: 3, Op: fabric.OpWrite, Local: c.MR.SGE(0, n), Flags: fabric.Signaled,
				RemoteAddr: c.Peer.Addr + 100, RKey: c.Peer.RKey}
			if imm {
				wr.Op, wr.Imm = fabric.OpWriteImm, 42
			}
			if _, err := c.QP.PostSend([]fabric.SendWR{wr}); err != nil {
				return err
			}
			wcs, err := Await(th, c.SCQ, 1, wait)
			if err != nil {
				return err
			}
			if err := Expect(wcs[0], 3, fabric.StatusSuccess, wr.Op); err != nil {
				return err
			}
			return c.Node.OOB().Barrier("written")
		},
		func(th fabric.Thread, c *Conn) error {
			if imm {
				if err := postRecvs(c, 1, 64); err != nil {
					return err
				}
			}
			if err := c.Node.OOB().Barrier("posted"); err != nil {
				return err
			}
			if imm {
				wcs, err := Await(th, c.RCQ, 1, wait)
				if err != nil {
					return err
				}
				wc := wcs[0]
				if wc.Op != fabric.OpRecvWriteImm || wc.Imm != 42 || !wc.HasImm || wc.Bytes != n {
					return fmt.Errorf("write with immediate: completion %+v, want RECV_RDMA_WITH_IMM imm 42 bytes %d", wc, n)
				}
			}
			if err := c.Node.OOB().Barrier("written"); err != nil {
				return err
			}
			if !bytes.Equal(c.MR.Bytes()[100:100+n], pattern(n, 9)) {
				return errors.New("RDMA Write: target memory differs from the source")
			}
			return nil
		})
}

func read(th fabric.Thread) error {
	const n = 20000
	return both(Options{},
		func(th fabric.Thread, c *Conn) error {
			if err := c.Node.OOB().Barrier("filled"); err != nil {
				return err
			}
			wr := fabric.SendWR{ID: 4, Op: fabric.OpRead, Local: c.MR.SGE(50, n), Flags: fabric.Signaled,
				RemoteAddr: c.Peer.Addr + 10, RKey: c.Peer.RKey}
			if _, err := c.QP.PostSend([]fabric.SendWR{wr}); err != nil {
				return err
			}
			wcs, err := Await(th, c.SCQ, 1, wait)
			if err != nil {
				return err
			}
			if err := Expect(wcs[0], 4, fabric.StatusSuccess, fabric.OpRead); err != nil {
				return err
			}
			if wcs[0].Bytes != n {
				return fmt.Errorf("RDMA Read completion reports %d bytes, want %d", wcs[0].Bytes, n)
			}
			th.Sync()
			if !bytes.Equal(c.MR.Bytes()[50:50+n], pattern(n, 11)) {
				return errors.New("RDMA Read: local memory differs from the remote source")
			}
			return c.Node.OOB().Barrier("done")
		},
		func(th fabric.Thread, c *Conn) error {
			fill(c.MR.Bytes()[10:10+n], 11)
			if err := c.Node.OOB().Barrier("filled"); err != nil {
				return err
			}
			return c.Node.OOB().Barrier("done")
		})(th)
}

func inlineSend(th fabric.Thread) error {
	return both(Options{MaxInline: 64},
		func(th fabric.Thread, c *Conn) error {
			if err := c.Node.OOB().Barrier("posted"); err != nil {
				return err
			}
			b := c.MR.Bytes()[:32]
			fill(b, 3)
			wr := fabric.SendWR{ID: 1, Op: fabric.OpSend, Local: c.MR.SGE(0, 32), Flags: fabric.Signaled | fabric.Inline}
			if _, err := c.QP.PostSend([]fabric.SendWR{wr}); err != nil {
				return err
			}
			fill(b, 4) // allowed: inline data was copied by PostSend
			_, err := Await(th, c.SCQ, 1, wait)
			return err
		},
		func(th fabric.Thread, c *Conn) error {
			if err := postRecvs(c, 1, 64); err != nil {
				return err
			}
			if err := c.Node.OOB().Barrier("posted"); err != nil {
				return err
			}
			if _, err := Await(th, c.RCQ, 1, wait); err != nil {
				return err
			}
			th.Sync()
			if !bytes.Equal(c.MR.Bytes()[:32], pattern(32, 3)) {
				return errors.New("inline send delivered bytes written after PostSend returned")
			}
			return nil
		})(th)
}

func unsignaled(th fabric.Thread) error {
	const k = 10
	return both(Options{},
		func(th fabric.Thread, c *Conn) error {
			if err := c.Node.OOB().Barrier("posted"); err != nil {
				return err
			}
			wrs := make([]fabric.SendWR, k)
			for i := range wrs {
				wrs[i] = fabric.SendWR{ID: uint64(i), Op: fabric.OpSend, Local: c.MR.SGE(0, 8)}
			}
			wrs[k-1].Flags = fabric.Signaled
			if _, err := c.QP.PostSend(wrs); err != nil {
				return err
			}
			wcs, err := Await(th, c.SCQ, 1, wait)
			if err != nil {
				return err
			}
			if wcs[0].ID != k-1 {
				return fmt.Errorf("first completion is for wr %d, want only the signaled wr %d", wcs[0].ID, k-1)
			}
			return Quiet(th, c.SCQ, fabric.Millisecond)
		},
		func(th fabric.Thread, c *Conn) error {
			if err := postRecvs(c, k, 64); err != nil {
				return err
			}
			if err := c.Node.OOB().Barrier("posted"); err != nil {
				return err
			}
			_, err := Await(th, c.RCQ, k, wait)
			return err
		})(th)
}

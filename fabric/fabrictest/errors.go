package fabrictest

import (
	"bytes"
	"errors"
	"fmt"
	"unsafe"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// Conformance cases of error handling: wrong states and transitions, bad keys and bounds, RNR, UD drops, overruns, full queues, flushes, lifecycles.

func postWrongState(th fabric.Thread) error {
	n := th.Node()
	pd, _ := n.Device().AllocPD()
	cq, _ := n.Device().CreateCQ(16)
	mr, _ := pd.RegMR(64, fabric.AccessLocalWrite)
	qp, err := pd.CreateQP(fabric.QPInit{Type: fabric.RC, SendCQ: cq, RecvCQ: cq, Caps: fabric.QPCaps{MaxSendWR: 4, MaxRecvWR: 4}})
	if err != nil {
		return err
	}
	wr := []fabric.SendWR{{Op: fabric.OpSend, Local: mr.SGE(0, 8)}}
	if _, err := qp.PostSend(wr); !errors.Is(err, fabric.ErrBadState) {
		return fmt.Errorf("PostSend in RESET: got %v, want ErrBadState", err)
	}
	if _, err := qp.PostRecv([]fabric.RecvWR{{Local: mr.SGE(0, 8)}}); !errors.Is(err, fabric.ErrBadState) {
		return fmt.Errorf("PostRecv in RESET: got %v, want ErrBadState", err)
	}
	if err := qp.Modify(fabric.StateInit, fabric.QPAttr{}); err != nil {
		return err
	}
	if _, err := qp.PostSend(wr); !errors.Is(err, fabric.ErrBadState) {
		return fmt.Errorf("PostSend in INIT: got %v, want ErrBadState", err)
	}
	if _, err := qp.PostRecv([]fabric.RecvWR{{Local: mr.SGE(0, 8)}}); err != nil {
		return fmt.Errorf("PostRecv in INIT must be allowed: %v", err)
	}
	return nil
}

func illegalTransition(th fabric.Thread) error {
	n := th.Node()
	pd, _ := n.Device().AllocPD()
	cq, _ := n.Device().CreateCQ(16)
	qp, err := pd.CreateQP(fabric.QPInit{Type: fabric.RC, SendCQ: cq, RecvCQ: cq, Caps: fabric.QPCaps{MaxSendWR: 4, MaxRecvWR: 4}})
	if err != nil {
		return err
	}
	if err := qp.Modify(fabric.StateRTS, fabric.QPAttr{}); !errors.Is(err, fabric.ErrBadTransition) {
		return fmt.Errorf("RESET->RTS: got %v, want ErrBadTransition", err)
	}
	if err := qp.Modify(fabric.StateRTR, fabric.QPAttr{}); !errors.Is(err, fabric.ErrBadTransition) {
		return fmt.Errorf("RESET->RTR: got %v, want ErrBadTransition", err)
	}
	if qp.State() != fabric.StateReset {
		return fmt.Errorf("failed transitions left the QP in %v", qp.State())
	}
	if err := qp.Modify(fabric.StateError, fabric.QPAttr{}); err != nil || qp.State() != fabric.StateError {
		return fmt.Errorf("any state -> ERROR must work: %v, state %v", err, qp.State())
	}
	if err := qp.Modify(fabric.StateReset, fabric.QPAttr{}); err != nil || qp.State() != fabric.StateReset {
		return fmt.Errorf("ERROR -> RESET must work: %v, state %v", err, qp.State())
	}
	return nil
}

// badLocal posts a send whose SGE is not registered (or out of bounds).
func badLocal(outOfBounds bool) func(fabric.Thread) error {
	return both(Options{},
		func(th fabric.Thread, c *Conn) error {
			sge := c.MR.SGE(0, 64)
			if outOfBounds {
				sge = c.MR.SGE(c.MR.Len()-10, 64)
			} else {
				sge.LKey ^= 0x5a5a00
			}
			wrs := []fabric.SendWR{{ID: 1, Op: fabric.OpSend, Local: sge, Flags: fabric.Signaled},
				{ID: 2, Op: fabric.OpSend, Local: c.MR.SGE(0, 8), Flags: fabric.Signaled}}
			if _, err := c.QP.PostSend(wrs); err != nil {
				return nil // rejecting at post time is also conformant
			}
			wcs, err := Await(th, c.SCQ, 2, wait)
			if err != nil {
				return err
			}
			if err := Expect(wcs[0], 1, fabric.StatusLocalProtection, fabric.OpSend); err != nil {
				return err
			}
			if wcs[1].Status != fabric.StatusFlushed {
				return fmt.Errorf("request after a failed one: %v, want flushed", wcs[1])
			}
			if c.QP.State() != fabric.StateError {
				return fmt.Errorf("QP in %v after a local protection error, want ERROR", c.QP.State())
			}
			return nil
		},
		func(th fabric.Thread, c *Conn) error { return nil })
}

func rkeyMismatch(th fabric.Thread) error {
	return both(Options{},
		func(th fabric.Thread, c *Conn) error {
			wr := fabric.SendWR{ID: 9, Op: fabric.OpWrite, Local: c.MR.SGE(0, 64), Flags: fabric.Signaled,
				RemoteAddr: c.Peer.Addr, RKey: c.Peer.RKey ^ 0x777700}
			if _, err := c.QP.PostSend([]fabric.SendWR{wr}); err != nil {
				return err
			}
			wcs, err := Await(th, c.SCQ, 1, wait)
			if err != nil {
				return err
			}
			if err := Expect(wcs[0], 9, fabric.StatusRemoteAccess, fabric.OpWrite); err != nil {
				return err
			}
			// Out of bounds with the right key fails the same way; the QP
			// is in error now, so use a fresh connection for it.
			return nil
		},
		func(th fabric.Thread, c *Conn) error { return nil })(th)
}

// errorStaysWithItsQP: a request that fails at the responder (a wrong
// rkey) moves the responder's queue pair to ERROR, and only that one: a
// second connection between the same two nodes (its own CQs, the same
// devices) still delivers, and its completion queues report no error.
func errorStaysWithItsQP(th fabric.Thread) error {
	me := th.Node().ID()
	bad, err := Connect(th, 1-me, Options{})
	if err != nil {
		return err
	}
	good, err := Connect(th, 1-me, Options{})
	if err != nil {
		return err
	}
	oob := th.Node().OOB()
	if err := oob.Barrier("connected"); err != nil {
		return err
	}
	if me == 1 {
		if err := postRecvs(good, 1, 64); err != nil {
			return err
		}
	}
	if err := oob.Barrier("posted"); err != nil {
		return err
	}
	if me == 0 {
		wr := fabric.SendWR{ID: 9, Op: fabric.OpWrite, Local: bad.MR.SGE(0, 64), Flags: fabric.Signaled,
			RemoteAddr: bad.Peer.Addr, RKey: bad.Peer.RKey ^ 0x777700}
		if _, err := bad.QP.PostSend([]fabric.SendWR{wr}); err != nil {
			return err
		}
		wcs, err := Await(th, bad.SCQ, 1, wait)
		if err != nil {
			return err
		}
		if err := Expect(wcs[0], 9, fabric.StatusRemoteAccess, fabric.OpWrite); err != nil {
			return err
		}
	}
	// Both sides have seen the failure (the responder's asynchronous
	// event, on hardware, has had time to arrive) before the good
	// connection is used.
	if err := oob.Barrier("failed"); err != nil {
		return err
	}
	th.Busy(fabric.Millisecond)
	if me == 0 {
		copy(good.MR.Bytes(), "after the failure")
		wr := fabric.SendWR{ID: 1, Op: fabric.OpSend, Local: good.MR.SGE(0, 17), Flags: fabric.Signaled}
		if _, err := good.QP.PostSend([]fabric.SendWR{wr}); err != nil {
			return err
		}
		wcs, err := Await(th, good.SCQ, 1, wait)
		if err != nil {
			return fmt.Errorf("the other connection's send queue after a failure on the first: %w", err)
		}
		return Expect(wcs[0], 1, fabric.StatusSuccess, fabric.OpSend)
	}
	wcs, err := Await(th, good.RCQ, 1, wait)
	if err != nil {
		return fmt.Errorf("the other connection's receive queue after a failure on the first: %w", err)
	}
	if err := Expect(wcs[0], 100, fabric.StatusSuccess, fabric.OpRecv); err != nil {
		return err
	}
	if string(good.MR.Bytes()[:17]) != "after the failure" {
		return errors.New("the other connection delivered other bytes")
	}
	return nil
}

func readNotPermitted(th fabric.Thread) error {
	return both(Options{Access: fabric.AccessRemoteWrite | fabric.AccessLocalWrite},
		func(th fabric.Thread, c *Conn) error {
			wr := fabric.SendWR{ID: 5, Op: fabric.OpRead, Local: c.MR.SGE(0, 64), Flags: fabric.Signaled,
				RemoteAddr: c.Peer.Addr, RKey: c.Peer.RKey}
			if _, err := c.QP.PostSend([]fabric.SendWR{wr}); err != nil {
				return err
			}
			wcs, err := Await(th, c.SCQ, 1, wait)
			if err != nil {
				return err
			}
			return Expect(wcs[0], 5, fabric.StatusRemoteAccess, fabric.OpRead)
		},
		func(th fabric.Thread, c *Conn) error { return nil })(th)
}

func rnrExceeded(th fabric.Thread) error {
	return both(Options{RNRRetry: 2, MinRNRTimer: 1},
		func(th fabric.Thread, c *Conn) error {
			wr := fabric.SendWR{ID: 6, Op: fabric.OpSend, Local: c.MR.SGE(0, 64), Flags: fabric.Signaled}
			if _, err := c.QP.PostSend([]fabric.SendWR{wr}); err != nil {
				return err
			}
			wcs, err := Await(th, c.SCQ, 1, wait)
			if err != nil {
				return err
			}
			if err := Expect(wcs[0], 6, fabric.StatusRNRRetryExceeded, fabric.OpSend); err != nil {
				return err
			}
			if c.QP.State() != fabric.StateError {
				return fmt.Errorf("QP in %v after RNR retries ran out, want ERROR", c.QP.State())
			}
			return c.Node.OOB().Barrier("done")
		},
		func(th fabric.Thread, c *Conn) error { return c.Node.OOB().Barrier("done") })(th)
}

func rnrRecovers(th fabric.Thread) error {
	return both(Options{RNRRetry: 7, MinRNRTimer: 1},
		func(th fabric.Thread, c *Conn) error {
			wr := fabric.SendWR{ID: 6, Op: fabric.OpSend, Local: c.MR.SGE(0, 64), Flags: fabric.Signaled}
			if _, err := c.QP.PostSend([]fabric.SendWR{wr}); err != nil {
				return err
			}
			wcs, err := Await(th, c.SCQ, 1, wait)
			if err != nil {
				return err
			}
			return Expect(wcs[0], 6, fabric.StatusSuccess, fabric.OpSend)
		},
		func(th fabric.Thread, c *Conn) error {
			th.Busy(200 * fabric.Microsecond) // the send arrives before any receive
			if err := postRecvs(c, 1, 64); err != nil {
				return err
			}
			wcs, err := Await(th, c.RCQ, 1, wait)
			if err != nil {
				return err
			}
			return Expect(wcs[0], 100, fabric.StatusSuccess, fabric.OpRecv)
		})(th)
}

func udNoRecv(th fabric.Thread) error {
	return both(Options{Type: fabric.UD},
		func(th fabric.Thread, c *Conn) error {
			wr := fabric.SendWR{ID: 1, Op: fabric.OpSend, Local: c.MR.SGE(0, 64), Flags: fabric.Signaled,
				AH: c.AH, RemoteQPN: c.Peer.QPN, QKey: c.Peer.QKey}
			if _, err := c.QP.PostSend([]fabric.SendWR{wr}); err != nil {
				return err
			}
			wcs, err := Await(th, c.SCQ, 1, wait)
			if err != nil {
				return err
			}
			if err := Expect(wcs[0], 1, fabric.StatusSuccess, fabric.OpSend); err != nil {
				return err
			}
			return c.Node.OOB().Barrier("sent")
		},
		func(th fabric.Thread, c *Conn) error {
			if err := c.Node.OOB().Barrier("sent"); err != nil {
				return err
			}
			if err := postRecvs(c, 1, 4096+fabric.GRHBytes); err != nil {
				return err
			}
			// The datagram arrived before any receive: it is gone.
			return Quiet(th, c.RCQ, fabric.Millisecond)
		})(th)
}

// cqOverrun overflows a CQ of depth 2 with four signaled RDMA Writes. The
// sender polls only once the receiver has seen the fourth write land: a
// software NIC that completes its requests in order has then queued at
// least three completions, so the overrun does not depend on how soon the
// NIC runs after the post (a fixed pause before polling did, under -race
// on a loaded machine); hardware's acknowledgements follow within the
// pause.
func cqOverrun(th fabric.Thread) error {
	const writes = 4
	return both(Options{CQDepth: 2},
		func(th fabric.Thread, c *Conn) error {
			wrs := make([]fabric.SendWR, writes)
			for i := range wrs {
				fill(c.MR.Bytes()[i*8:i*8+8], i+1)
				wrs[i] = fabric.SendWR{ID: uint64(i), Op: fabric.OpWrite, Local: c.MR.SGE(i*8, 8), Flags: fabric.Signaled,
					RemoteAddr: c.Peer.Addr + uint64(i*8), RKey: c.Peer.RKey}
			}
			if _, err := c.QP.PostSend(wrs); err != nil {
				return err
			}
			if err := c.Node.OOB().Barrier("landed"); err != nil {
				return err
			}
			th.Busy(fabric.Millisecond)
			_, err := Await(th, c.SCQ, writes, wait)
			if !errors.Is(err, fabric.ErrCQOverrun) {
				return fmt.Errorf("%d completions on a CQ of depth 2: got %v, want ErrCQOverrun", writes, err)
			}
			return nil
		},
		func(th fabric.Thread, c *Conn) error {
			deadline := th.Now().Add(wait)
			for {
				th.Sync()
				if bytes.Equal(c.MR.Bytes()[(writes-1)*8:writes*8], pattern(8, writes)) {
					break
				}
				if th.Now() >= deadline {
					return fmt.Errorf("the last of %d RDMA Writes did not land within %v", writes, wait)
				}
				th.Wait(deadline, c.MR)
			}
			return c.Node.OOB().Barrier("landed")
		})(th)
}

func udAboveMTU(th fabric.Thread) error {
	return both(Options{Type: fabric.UD, MRBytes: 16384},
		func(th fabric.Thread, c *Conn) error {
			mtu := c.Node.Device().Attr().MTU
			wr := fabric.SendWR{ID: 1, Op: fabric.OpSend, Local: c.MR.SGE(0, mtu+1), Flags: fabric.Signaled,
				AH: c.AH, RemoteQPN: c.Peer.QPN, QKey: c.Peer.QKey}
			if _, err := c.QP.PostSend([]fabric.SendWR{wr}); err != nil {
				if errors.Is(err, fabric.ErrMsgTooLarge) {
					return nil
				}
				return fmt.Errorf("UD above MTU: got %v, want ErrMsgTooLarge", err)
			}
			wcs, err := Await(th, c.SCQ, 1, wait)
			if err != nil {
				return err
			}
			if wcs[0].Status != fabric.StatusLocalLength {
				return fmt.Errorf("UD above MTU completed with %v, want a post error or local length error", wcs[0].Status)
			}
			return nil
		},
		func(th fabric.Thread, c *Conn) error { return nil })(th)
}

func sendQueueFull(th fabric.Thread) error {
	return both(Options{SendWR: 4},
		func(th fabric.Thread, c *Conn) error {
			wrs := make([]fabric.SendWR, 6)
			for i := range wrs {
				wrs[i] = fabric.SendWR{ID: uint64(i), Op: fabric.OpWrite, Local: c.MR.SGE(0, 8), Flags: fabric.Signaled,
					RemoteAddr: c.Peer.Addr, RKey: c.Peer.RKey}
			}
			n, err := c.QP.PostSend(wrs)
			if !errors.Is(err, fabric.ErrQueueFull) || n != 4 {
				return fmt.Errorf("6 requests on a queue of 4: posted %d, err %v; want 4 and ErrQueueFull", n, err)
			}
			if _, err := Await(th, c.SCQ, 4, wait); err != nil {
				return err
			}
			if _, err := c.QP.PostSend(wrs[4:]); err != nil {
				return fmt.Errorf("after completions were polled the queue must accept again: %v", err)
			}
			_, err = Await(th, c.SCQ, 2, wait)
			return err
		},
		func(th fabric.Thread, c *Conn) error { return nil })(th)
}

// slotsFreedByPoll: a work queue slot is free again once its completion
// (for an unsignaled send, a later one) has been polled, not before; this
// is what libibverbs providers do, so a design that posts before polling
// must fail in every backend.
func slotsFreedByPoll(th fabric.Thread) error {
	return both(Options{SendWR: 2, RecvWR: 2},
		func(th fabric.Thread, c *Conn) error {
			oob := c.Node.OOB()
			wrs := []fabric.SendWR{{ID: 1, Op: fabric.OpSend, Local: c.MR.SGE(0, 8)},
				{ID: 2, Op: fabric.OpSend, Local: c.MR.SGE(0, 8), Flags: fabric.Signaled}}
			if err := oob.Barrier("posted"); err != nil {
				return err
			}
			if _, err := c.QP.PostSend(wrs); err != nil {
				return err
			}
			th.Wait(th.Now().Add(wait), c.SCQ) // the completion arrives; it is not polled
			if _, err := c.QP.PostSend(wrs[:1]); !errors.Is(err, fabric.ErrQueueFull) {
				return fmt.Errorf("PostSend on a queue of 2 with 2 requests whose completion was not polled: %v, want ErrQueueFull", err)
			}
			wcs, err := Await(th, c.SCQ, 1, wait)
			if err != nil {
				return err
			}
			if err := Expect(wcs[0], 2, fabric.StatusSuccess, fabric.OpSend); err != nil {
				return err
			}
			if err := oob.Barrier("sent"); err != nil {
				return err
			}
			if err := oob.Barrier("reposted"); err != nil {
				return err
			}
			if _, err := c.QP.PostSend(wrs); err != nil {
				return fmt.Errorf("PostSend after the signaled completion was polled: %v", err)
			}
			_, err = Await(th, c.SCQ, 1, wait)
			return err
		},
		func(th fabric.Thread, c *Conn) error {
			oob := c.Node.OOB()
			if err := postRecvs(c, 2, 64); err != nil {
				return err
			}
			if err := oob.Barrier("posted"); err != nil {
				return err
			}
			if err := oob.Barrier("sent"); err != nil {
				return err
			}
			if err := postRecvs(c, 1, 64); !errors.Is(err, fabric.ErrQueueFull) {
				return fmt.Errorf("PostRecv on a queue of 2 whose receives were consumed but not polled: %v, want ErrQueueFull", err)
			}
			if _, err := Await(th, c.RCQ, 2, wait); err != nil {
				return err
			}
			if err := postRecvs(c, 2, 64); err != nil {
				return fmt.Errorf("PostRecv after the completions were polled: %v", err)
			}
			if err := oob.Barrier("reposted"); err != nil {
				return err
			}
			_, err := Await(th, c.RCQ, 2, wait)
			return err
		})(th)
}

// errorBehindOutstanding: a request that fails locally while an earlier one
// may still be waiting for its acknowledgement. Every signaled request
// completes exactly once, in order: the earlier one succeeds (or is flushed,
// if the backend fails it with the queue pair), the bad one reports the
// local protection error and the later one is flushed.
func errorBehindOutstanding(th fabric.Thread) error {
	return both(Options{},
		func(th fabric.Thread, c *Conn) error {
			bad := c.MR.SGE(0, 64)
			bad.LKey ^= 0x5a5a00
			wrs := []fabric.SendWR{
				{ID: 1, Op: fabric.OpWrite, Local: c.MR.SGE(0, 10000), Flags: fabric.Signaled, RemoteAddr: c.Peer.Addr, RKey: c.Peer.RKey},
				{ID: 2, Op: fabric.OpWrite, Local: bad, Flags: fabric.Signaled, RemoteAddr: c.Peer.Addr, RKey: c.Peer.RKey},
				{ID: 3, Op: fabric.OpWrite, Local: c.MR.SGE(0, 8), Flags: fabric.Signaled, RemoteAddr: c.Peer.Addr, RKey: c.Peer.RKey},
			}
			n, err := c.QP.PostSend(wrs)
			if err != nil && n != 1 {
				return fmt.Errorf("PostSend: posted %d, %v", n, err)
			}
			want := []fabric.Status{fabric.StatusSuccess, fabric.StatusLocalProtection, fabric.StatusFlushed}[:max(n, 1)]
			wcs, err := Await(th, c.SCQ, len(want), wait)
			if err != nil {
				return err
			}
			for i, wc := range wcs {
				ok := wc.ID == uint64(i+1) && wc.Status == want[i]
				if i == 0 && n > 1 && wc.ID == 1 && wc.Status == fabric.StatusFlushed {
					ok = true
				}
				if !ok {
					return fmt.Errorf("completion %d: %v, want id=%d %v (completions %v)", i, wc, i+1, want[i], wcs)
				}
			}
			if err := Quiet(th, c.SCQ, fabric.Millisecond); err != nil {
				return err
			}
			return c.Node.OOB().Barrier("done")
		},
		func(th fabric.Thread, c *Conn) error { return c.Node.OOB().Barrier("done") })(th)
}

func inlineTooLarge(th fabric.Thread) error {
	return both(Options{MaxInline: 64},
		func(th fabric.Thread, c *Conn) error {
			wr := fabric.SendWR{Op: fabric.OpWrite, Local: c.MR.SGE(0, 65), Flags: fabric.Inline | fabric.Signaled,
				RemoteAddr: c.Peer.Addr, RKey: c.Peer.RKey}
			if _, err := c.QP.PostSend([]fabric.SendWR{wr}); !errors.Is(err, fabric.ErrInlineTooLarge) {
				return fmt.Errorf("65 inline bytes on a QP with max inline 64: got %v, want ErrInlineTooLarge", err)
			}
			return nil
		},
		func(th fabric.Thread, c *Conn) error { return nil })(th)
}

func recvTooSmall(th fabric.Thread) error {
	return both(Options{},
		func(th fabric.Thread, c *Conn) error {
			if err := c.Node.OOB().Barrier("posted"); err != nil {
				return err
			}
			wr := fabric.SendWR{ID: 1, Op: fabric.OpSend, Local: c.MR.SGE(0, 200), Flags: fabric.Signaled}
			if _, err := c.QP.PostSend([]fabric.SendWR{wr}); err != nil {
				return err
			}
			wcs, err := Await(th, c.SCQ, 1, wait)
			if err != nil {
				return err
			}
			return Expect(wcs[0], 1, fabric.StatusRemoteInvalid, fabric.OpSend)
		},
		func(th fabric.Thread, c *Conn) error {
			if err := postRecvs(c, 1, 100); err != nil {
				return err
			}
			if err := c.Node.OOB().Barrier("posted"); err != nil {
				return err
			}
			wcs, err := Await(th, c.RCQ, 1, wait)
			if err != nil {
				return err
			}
			return Expect(wcs[0], 100, fabric.StatusLocalLength, fabric.OpRecv)
		})(th)
}

func errorFlush(th fabric.Thread) error {
	return both(Options{},
		func(th fabric.Thread, c *Conn) error { return nil },
		func(th fabric.Thread, c *Conn) error {
			if err := postRecvs(c, 3, 64); err != nil {
				return err
			}
			if err := c.QP.Modify(fabric.StateError, fabric.QPAttr{}); err != nil {
				return err
			}
			wcs, err := Await(th, c.RCQ, 3, wait)
			if err != nil {
				return err
			}
			for i, wc := range wcs {
				if err := Expect(wc, uint64(100+i), fabric.StatusFlushed, fabric.OpRecv); err != nil {
					return err
				}
			}
			// Requests posted in ERROR complete at once, flushed.
			if _, err := c.QP.PostSend([]fabric.SendWR{{ID: 8, Op: fabric.OpSend, Local: c.MR.SGE(0, 8)}}); err != nil {
				return err
			}
			wcs, err = Await(th, c.SCQ, 1, wait)
			if err != nil {
				return err
			}
			return Expect(wcs[0], 8, fabric.StatusFlushed, fabric.OpSend)
		})(th)
}

func mrLifecycle(th fabric.Thread) error {
	n := th.Node()
	pd, err := n.Device().AllocPD()
	if err != nil {
		return err
	}
	if _, err := pd.RegMR(0, fabric.AccessLocalWrite); err == nil {
		return errors.New("RegMR of 0 bytes succeeded")
	}
	mr, err := pd.RegMR(4096, fabric.AccessLocalWrite|fabric.AccessRemoteRead)
	if err != nil {
		return err
	}
	if len(mr.Bytes()) != 4096 || mr.Len() != 4096 {
		return fmt.Errorf("RegMR(4096) gave %d bytes", len(mr.Bytes()))
	}
	if s := mr.SGE(10, 20); s.Addr != mr.Addr()+10 || s.Length != 20 || s.LKey != mr.LKey() {
		return fmt.Errorf("SGE(10, 20) = %+v", s)
	}
	// Every region's memory starts on a cache line (fabric.MRAlign),
	// small ones too, which Go's allocator alone does not give.
	for _, size := range []int{1, 24, 100, 4096} {
		m, err := pd.RegMR(size, fabric.AccessLocalWrite)
		if err != nil {
			return err
		}
		if a := uintptr(unsafe.Pointer(unsafe.SliceData(m.Bytes()))); a%fabric.MRAlign != 0 {
			return fmt.Errorf("RegMR(%d): memory at %#x, not aligned to %d bytes", size, a, fabric.MRAlign)
		}
		if err := m.Dereg(); err != nil {
			return err
		}
	}
	if err := pd.Dealloc(); !errors.Is(err, fabric.ErrBusy) {
		return fmt.Errorf("Dealloc with a live MR: got %v, want ErrBusy", err)
	}
	if err := mr.Dereg(); err != nil {
		return err
	}
	if err := mr.Dereg(); !errors.Is(err, fabric.ErrClosed) {
		return fmt.Errorf("second Dereg: got %v, want ErrClosed", err)
	}
	return pd.Dealloc()
}

// writeSeenByPolling: a thread that polls memory (Sync, read, Wait on the
// region) sees an RDMA Write land without any completion on its side; once
// the writer has its completion, the whole payload is there. (Whether the
// payload is placed before the last bytes within one write is not part of
// the contract: hardware does not promise it.)
func writeSeenByPolling(th fabric.Thread) error {
	const n = 3000
	return both(Options{},
		func(th fabric.Thread, c *Conn) error {
			if err := c.Node.OOB().Barrier("ready"); err != nil {
				return err
			}
			b := c.MR.Bytes()[:n+8]
			fill(b[:n], 21)
			copy(b[n:], "flagflag")
			wr := fabric.SendWR{ID: 1, Op: fabric.OpWrite, Local: c.MR.SGE(0, n+8), Flags: fabric.Signaled,
				RemoteAddr: c.Peer.Addr + 64, RKey: c.Peer.RKey}
			if _, err := c.QP.PostSend([]fabric.SendWR{wr}); err != nil {
				return err
			}
			wcs, err := Await(th, c.SCQ, 1, wait)
			if err != nil {
				return err
			}
			if err := Expect(wcs[0], 1, fabric.StatusSuccess, fabric.OpWrite); err != nil {
				return err
			}
			return c.Node.OOB().Barrier("seen")
		},
		func(th fabric.Thread, c *Conn) error {
			if err := c.Node.OOB().Barrier("ready"); err != nil {
				return err
			}
			deadline := th.Now().Add(wait)
			for {
				th.Sync()
				mem := c.MR.Bytes()
				if string(mem[64+n:64+n+8]) == "flagflag" {
					break
				}
				if th.Now() >= deadline {
					return fmt.Errorf("an RDMA Write did not become visible to a polling thread within %v", wait)
				}
				th.Wait(deadline, c.MR)
			}
			if err := c.Node.OOB().Barrier("seen"); err != nil {
				return err
			}
			th.Sync()
			if !bytes.Equal(c.MR.Bytes()[64:64+n], pattern(n, 21)) {
				return errors.New("RDMA Write: the payload differs from the source after the writer's completion")
			}
			return nil
		})(th)
}

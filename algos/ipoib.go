package algos

import (
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// IPoIBCosts are the kernel's CPU costs of TCP over IPoIB in connected
// mode, the IPoIB baseline of Liu19 §7.1: what send() and select() plus
// recv() cost beyond moving the bytes on the wire. Cycles are spent on the
// calling thread's core (Thread.Compute); per-byte copies are charged as
// memcpy work (Thread.Charge with fabric.WorkCopy), so they follow the
// host model of the profile. docs/model.md gives the source of each
// default.
type IPoIBCosts struct {
	SyscallCycles   int64 // one system call's entry, exit and socket locking
	TxSegmentCycles int64 // TCP/IP and IPoIB transmit path, per segment
	RxSegmentCycles int64 // interrupt, NAPI poll, IP and TCP receive, wake-up, per segment
	SegmentBytes    int   // IPoIB connected-mode MTU: the largest segment
	// SendCopies is how many passes over the bytes send() makes: the copy
	// into the socket buffer, plus one for the checksum, which connected
	// mode computes in software (no stateless offloads there).
	SendCopies int
	RecvCopies int // passes recv() makes: the copy out of the socket buffer
}

// DefaultIPoIBCosts are the defaults documented in docs/model.md.
var DefaultIPoIBCosts = IPoIBCosts{
	SyscallCycles:   1200,
	TxSegmentCycles: 5000,
	RxSegmentCycles: 7000,
	SegmentBytes:    65520,
	SendCopies:      2,
	RecvCopies:      1,
}

// IPoIBMsgBytes is the IPoIB baseline's default message (send() call)
// size, 128 KB as in Liu19 §7.1.
const IPoIBMsgBytes = 128 << 10

// ipoib is the IPoIB baseline endpoint: TCP sockets over IP over
// InfiniBand in connected mode. The kernel keeps one RC connection per
// peer node, shared by every socket of the node, so the endpoint is a
// shared MQ/SR endpoint (one RC queue pair per destination, credit = the
// peer's free socket-buffer space) whose every call adds the kernel's
// costs: send() copies the buffer into the socket buffer and checksums
// it, and runs the transmit path per segment; select() plus recv() run the
// receive path per segment and copy the bytes out. The per-segment paths
// are serialized per node: an IPoIB interface in connected mode has one
// transmit queue and one receive completion context, so one core at a time
// runs each. What it does not model:
// TCP congestion control and delayed ACKs (an InfiniBand fabric is
// lossless, and the socket window is the credit), and the segmentation of
// one send() into 64 KB wire messages (the whole buffer travels as one RC
// message; only the per-segment CPU cost is charged).
type ipoib struct {
	inner  Endpoint
	costs  IPoIBCosts
	tx, rx fabric.Mutex // the interface's one transmit queue and one receive (NAPI) context
}

// OpenIPoIB opens the IPoIB baseline endpoint on the calling thread's node;
// cfg.Threads threads share it (the node's kernel). Every node must open
// endpoint cfg.Tag at the same time.
func OpenIPoIB(th fabric.Thread, cfg Config, costs IPoIBCosts) (Endpoint, error) {
	if costs.SegmentBytes < 1 || costs.SyscallCycles < 0 || costs.TxSegmentCycles < 0 || costs.RxSegmentCycles < 0 ||
		costs.SendCopies < 0 || costs.RecvCopies < 0 {
		return nil, fmt.Errorf("%w: IPoIB costs must not be negative and segments must hold a byte: %+v", ErrConfig, costs)
	}
	if cfg.Adaptive != nil {
		return nil, fmt.Errorf("%w: the IPoIB baseline does not support adaptive buffers: its socket buffers are the kernel's", ErrConfig)
	}
	inner, err := openMQ(th, cfg, false, false, nil)
	if err != nil {
		return nil, fmt.Errorf("algos: IPoIB baseline: %w", err)
	}
	return &ipoib{inner: inner, costs: costs, tx: th.Node().NewMutex(), rx: th.Node().NewMutex()}, nil
}

func (e *ipoib) segments(n int) int64 {
	return int64(max(1, (n+HeaderBytes+e.costs.SegmentBytes-1)/e.costs.SegmentBytes))
}

// Acquire hands out a socket-buffer slot as the application's buffer: the
// copy send() makes from an application buffer into it is charged in
// PutData.
func (e *ipoib) Acquire(th fabric.Thread) (*Buffer, error) { return e.inner.Acquire(th) }

// PutData is send() to each destination: one system call, the copy and
// checksum passes (in parallel, each thread on its own socket), and the
// transmit path per segment, serialized on the interface's one transmit
// queue, for every destination (TCP has no multicast).
func (e *ipoib) PutData(th fabric.Thread, b *Buffer, dests []int, st State) error {
	if b != nil && b.N >= 0 {
		for range dests {
			th.Compute(e.costs.SyscallCycles)
			th.Charge(fabric.WorkCopy, e.costs.SendCopies*(b.N+HeaderBytes))
			withLock(e.tx, func() { th.Compute(e.segments(b.N) * e.costs.TxSegmentCycles) })
		}
	}
	return e.inner.PutData(th, b, dests, st)
}

// GetData is select() and recv(): the receive path per segment, which the
// interface's one receive context (NAPI) runs for every socket in turn, so
// it is serialized per node and charged here to the thread that receives,
// then two system calls and the copy out of the socket buffer.
func (e *ipoib) GetData(th fabric.Thread) (Delivery, error) {
	d, err := e.inner.GetData(th)
	if err != nil || d.End {
		return d, err
	}
	withLock(e.rx, func() { th.Compute(e.segments(d.N) * e.costs.RxSegmentCycles) })
	th.Compute(2 * e.costs.SyscallCycles)
	th.Charge(fabric.WorkCopy, e.costs.RecvCopies*(d.N+HeaderBytes))
	return d, nil
}

func (e *ipoib) Release(th fabric.Thread, d Delivery) error { return e.inner.Release(th, d) }
func (e *ipoib) Close(th fabric.Thread) error               { return e.inner.Close(th) }
func (e *ipoib) Info() EndpointInfo                         { return e.inner.Info() }

//go:build ibverbs

package ibv

/*
#cgo LDFLAGS: -libverbs
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// Queue pairs: creation, state transitions, posting and destruction.

// qp implements fabric.QP.
//
// The send and receive request chains are built in C memory allocated at
// creation for the queue's full depth and reused by every post.
type qp struct {
	pd       *pd
	qp       *C.struct_ibv_qp
	qpn      uint32
	typ      fabric.QPType
	scq, rcq *cq
	srq      *srq  // the shared receive queue it takes receives from, or nil
	xrcd     *xrcd // an XRC_RECV queue pair's domain
	dc       *dcQP // a DCI's extended post interface (dc_ibv.go)
	caps     fabric.QPCaps
	sq, rq   *wqRing
	state    atomic.Uint32 // fabric.QPState last set by Modify (or read by State)
	psn      fabric.PSN
	qkey     uint32
	dead     bool
	event    atomic.Pointer[error] // its asynchronous error event, if one came

	sendIn  *C.rs_send
	sendWR  *C.struct_ibv_send_wr
	sendSGE *C.struct_ibv_sge
	sends   []C.rs_send
	recvIn  *C.rs_recv
	recvWR  *C.struct_ibv_recv_wr
	recvSGE *C.struct_ibv_sge
	recvs   []C.rs_recv
}

// CreateQP implements fabric.PD.
func (p *pd) CreateQP(init fabric.QPInit) (fabric.QP, error) {
	d := p.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if p.dead {
		return nil, fmt.Errorf("%w: protection domain deallocated", fabric.ErrClosed)
	}
	if init.Type == fabric.XRCSend || init.Type == fabric.XRCRecv {
		return asQP(p.createXRCQP(init))
	}
	if init.Type.DC() {
		return asQP(p.createDCQP(init))
	}
	if init.XRCD != nil {
		return nil, fmt.Errorf("%w: only XRC_RECV queue pairs are created in an XRC domain", fabric.ErrInvalidArg)
	}
	scq, ok1 := init.SendCQ.(*cq)
	rcq, ok2 := init.RecvCQ.(*cq)
	if !ok1 || !ok2 || scq == nil || rcq == nil || scq.d != d || rcq.d != d {
		return nil, fmt.Errorf("%w: CreateQP needs a send CQ and a receive CQ of this device", fabric.ErrInvalidArg)
	}
	if scq.dead || rcq.dead {
		return nil, fmt.Errorf("%w: CreateQP with a destroyed CQ", fabric.ErrClosed)
	}
	typ, ok := qpTypeOf(init.Type)
	if !ok {
		return nil, fmt.Errorf("%w: unknown QP type %v", fabric.ErrInvalidArg, init.Type)
	}
	caps := init.Caps
	var shared *srq
	var hs *C.struct_ibv_srq
	if init.SRQ != nil {
		var err error
		if shared, err = p.attachable(init.SRQ); err != nil {
			return nil, err
		}
		// MaxRecvWR is ignored; the receive ring and chain (one entry)
		// are never used.
		caps.MaxRecvWR, hs = 1, shared.srq
	}
	if caps.MaxRecvWR < 1 || caps.MaxRecvWR > d.attr.MaxQPWR {
		return nil, fmt.Errorf("%w: receive queue depth %d must be in 1..%d (max_qp_wr of %s)",
			fabric.ErrLimit, caps.MaxRecvWR, d.attr.MaxQPWR, d.name)
	}
	// The send queue's limit depends on the transport and the inline size
	// (mlx5 sizes it in 64-byte blocks): refused here, naming the limit,
	// rather than as the provider's EINVAL.
	if err := d.attr.CheckSendCaps(init.Type, caps); err != nil {
		return nil, err
	}
	var got C.struct_ibv_qp_cap
	q, err := C.rs_create_qp(p.pd, scq.cq, rcq.cq, hs, C.int(typ), C.uint32_t(caps.MaxSendWR), C.uint32_t(caps.MaxRecvWR), C.uint32_t(caps.MaxInline), &got)
	if q == nil {
		e := errnoErr(fmt.Sprintf("ibv_create_qp(%v, send %d, receive %d, inline %d)", init.Type, caps.MaxSendWR, caps.MaxRecvWR, caps.MaxInline), err, "")
		if caps.MaxInline > d.attr.MaxInline {
			e = fmt.Errorf("%w: max inline %d bytes above what %s accepts (%d): %w", fabric.ErrLimit, caps.MaxInline, d.name, d.attr.MaxInline, e)
		}
		return nil, e
	}
	x := &qp{pd: p, qp: q, qpn: uint32(q.qp_num), typ: init.Type, scq: scq, rcq: rcq, srq: shared, caps: caps,
		sq: newWQRing(caps.MaxSendWR), rq: newWQRing(caps.MaxRecvWR), psn: fabric.PSNOf(uint64(rand.Uint32()))}
	s, r := C.size_t(caps.MaxSendWR), C.size_t(caps.MaxRecvWR)
	x.sendIn = (*C.rs_send)(C.calloc(s, C.sizeof_rs_send))
	x.sendWR = (*C.struct_ibv_send_wr)(C.calloc(s, C.sizeof_struct_ibv_send_wr))
	x.sendSGE = (*C.struct_ibv_sge)(C.calloc(s, C.sizeof_struct_ibv_sge))
	x.recvIn = (*C.rs_recv)(C.calloc(r, C.sizeof_rs_recv))
	x.recvWR = (*C.struct_ibv_recv_wr)(C.calloc(r, C.sizeof_struct_ibv_recv_wr))
	x.recvSGE = (*C.struct_ibv_sge)(C.calloc(r, C.sizeof_struct_ibv_sge))
	if x.sendIn == nil || x.sendWR == nil || x.sendSGE == nil || x.recvIn == nil || x.recvWR == nil || x.recvSGE == nil {
		C.ibv_destroy_qp(q)
		x.freeChains()
		return nil, fmt.Errorf("%w: cannot allocate request chains for %d+%d requests", fabric.ErrLimit, caps.MaxSendWR, caps.MaxRecvWR)
	}
	x.sends = unsafe.Slice(x.sendIn, caps.MaxSendWR)
	x.recvs = unsafe.Slice(x.recvIn, caps.MaxRecvWR)
	for _, c := range []*cq{scq, rcq} {
		c.mu.Lock()
		c.qps[x.qpn] = x
		c.mu.Unlock()
	}
	scq.users++
	rcq.users++
	if shared != nil {
		shared.users++
	}
	p.qps[x] = true
	d.qps[x.qpn] = x
	return x, nil
}

// asQP returns q as a fabric.QP, or a nil one with err: a nil *qp in the
// interface would not compare equal to nil.
func asQP(q *qp, err error) (fabric.QP, error) {
	if err != nil {
		return nil, err
	}
	return q, nil
}

func (q *qp) freeChains() {
	for _, ptr := range []unsafe.Pointer{unsafe.Pointer(q.sendIn), unsafe.Pointer(q.sendWR), unsafe.Pointer(q.sendSGE),
		unsafe.Pointer(q.recvIn), unsafe.Pointer(q.recvWR), unsafe.Pointer(q.recvSGE)} {
		C.free(ptr) // free(NULL) is a no-op
	}
	q.sendIn, q.sendWR, q.sendSGE, q.recvIn, q.recvWR, q.recvSGE = nil, nil, nil, nil, nil, nil
	q.sends, q.recvs = nil, nil
}

// QPN implements fabric.QP.
func (q *qp) QPN() uint32 { return q.qpn }

// Type implements fabric.QP.
func (q *qp) Type() fabric.QPType { return q.typ }

func (q *qp) String() string {
	return fmt.Sprintf("%v QP %#x on node %d", q.typ, q.qpn, q.pd.d.nodeID)
}

// State implements fabric.QP. It asks the device (ibv_query_qp), because
// the hardware moves a queue pair to ERROR on its own when a request fails.
func (q *qp) State() fabric.QPState {
	if q.dead {
		return fabric.StateReset
	}
	q.pd.d.stateQueries.Add(1)
	if s := int32(C.rs_query_state(q.qp)); s >= 0 {
		st := stateOf(s)
		q.state.Store(uint32(st))
		return st
	}
	return fabric.QPState(q.state.Load())
}

// Info implements fabric.QP. PSN is a random initial PSN until RTS, then
// the SendPSN given to Modify.
func (q *qp) Info() fabric.QPInfo {
	d := q.pd.d
	return fabric.QPInfo{Node: uint32(d.nodeID), LID: d.attr.LID, GID: d.attr.GID, QPN: q.qpn, PSN: q.psn, QKey: q.qkey}
}

// Modify implements fabric.QP with the attribute mask of modifyMask.
func (q *qp) Modify(to fabric.QPState, a fabric.QPAttr) error {
	if q.dead {
		return fmt.Errorf("%w: %v", fabric.ErrClosed, q)
	}
	d := q.pd.d
	// The state this backend last set or read: asking the device
	// (ibv_query_qp, a firmware command on ConnectX) before every
	// transition would double the set-up's commands. The device may have
	// moved the queue pair to ERROR since; that only matters when the
	// transition then fails, and the error reads the state again.
	from := fabric.QPState(q.state.Load())
	bad := func(why string) error {
		return fmt.Errorf("%w: %v from %v to %v: %s", fabric.ErrBadTransition, q, from, to, why)
	}
	if ok, why := legalTransition(from, to); !ok {
		return bad(why)
	}
	if q.typ == fabric.DCT && to == fabric.StateRTS {
		return bad("a DCT stays in RTR (it sends nothing but responses)")
	}
	var args C.rs_modify_args
	args.state = C.int32_t(ibvStateOf(to))
	args.mask = C.int32_t(modifyMask(q.typ, to))
	switch to {
	case fabric.StateInit:
		args.pkey_index = C.uint16_t(d.route.PKeyIndex)
		args.port = C.uint8_t(d.port)
		args.access = C.int32_t(qpAccessFor(q.typ, a.Access))
		args.qkey = C.uint32_t(a.QKey)
	case fabric.StateRTR:
		if q.typ.DC() {
			if why := q.dcRTR(a, &args); why != "" {
				return bad(why)
			}
		} else if q.typ != fabric.UD {
			// Read depths are clamped to the device below, not refused (0).
			if why := a.Check(to, q.typ, d.attr.MTU, 0); why != "" {
				return bad(why)
			}
			mtu := d.mtuEnum
			if a.PathMTU != 0 {
				mtu, _ = mtuEnum(a.PathMTU)
			}
			if !a.Dest.UseGID && !d.ethernet() && a.Dest.LID == 0 {
				return bad("destination LID 0 (an InfiniBand port needs a LID, or UseGID)")
			}
			args.path = d.path(a.Dest)
			args.mtu = C.int32_t(mtu)
			args.dest_qpn = C.uint32_t(a.Dest.QPN)
			args.rq_psn = C.uint32_t(a.RemotePSN & fabric.MaxPSN)
			args.max_dest_rd_atomic = C.uint8_t(min(a.MaxDestRdAtomic, d.maxRd, 255))
			args.min_rnr_timer = C.uint8_t(a.MinRNRTimer)
		}
	case fabric.StateRTS:
		if why := a.Check(to, q.typ, d.attr.MTU, 0); why != "" {
			return bad(why)
		}
		args.sq_psn = C.uint32_t(a.SendPSN & fabric.MaxPSN)
		args.timeout = C.uint8_t(a.Timeout)
		args.retry_cnt = C.uint8_t(a.RetryCnt)
		args.rnr_retry = C.uint8_t(a.RNRRetry)
		// At least one outgoing Read, as the simulator; at most the device's.
		args.max_rd_atomic = C.uint8_t(max(1, min(a.MaxRdAtomic, d.maxInitR, 255)))
	}
	if rc := C.rs_modify(q.qp, &args); rc != 0 {
		from = q.State()
		return fmt.Errorf("%w: %v from %v to %v: %w", fabric.ErrBadTransition, q, from, to,
			errnoErr(fmt.Sprintf("ibv_modify_qp(mask %#x)", int32(args.mask)), syscall.Errno(rc), ""))
	}
	switch to {
	case fabric.StateInit:
		if q.typ == fabric.UD {
			q.qkey = a.QKey
		}
	case fabric.StateRTR:
		if q.typ == fabric.DCT {
			q.dctNumbered()
		}
	case fabric.StateRTS:
		q.psn = a.SendPSN & fabric.MaxPSN
	case fabric.StateReset:
		q.discard()
	}
	q.state.Store(uint32(to))
	return nil
}

// discard forgets every outstanding request and staged completion (RESET
// and Destroy: the provider discards them without completions). The
// staged receive completions of a queue pair attached to a shared queue
// free their slots there. (A completion the provider itself purges from
// its queue before Poll drained it keeps its slot: the queue then holds
// one receive fewer until it is destroyed.)
func (q *qp) discard() {
	for _, c := range []*cq{q.scq, q.rcq} {
		if c == nil { // an XRC queue pair's missing queue
			continue
		}
		c.mu.Lock()
		c.stage.purge(q.sq, q.rq)
		if q.srq != nil {
			c.stage.purgeShared(q.qpn)
		}
		c.mu.Unlock()
	}
	q.sq.reset()
	q.rq.reset()
}

// Destroy implements fabric.QP.
func (q *qp) Destroy() error {
	d := q.pd.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if q.dead {
		return fmt.Errorf("%w: %v destroyed twice", fabric.ErrClosed, q)
	}
	if rc := C.ibv_destroy_qp(q.qp); rc != 0 {
		return errnoErr("ibv_destroy_qp", syscall.Errno(rc), "")
	}
	q.dead = true
	q.discard()
	for _, c := range []*cq{q.scq, q.rcq} {
		if c == nil {
			continue
		}
		c.mu.Lock()
		if c.qps[q.qpn] == q {
			delete(c.qps, q.qpn)
		}
		c.users--
		c.mu.Unlock()
	}
	if q.srq != nil {
		q.srq.users--
	}
	if q.xrcd != nil {
		q.xrcd.users--
	}
	delete(q.pd.qps, q)
	if d.qps[q.qpn] == q {
		delete(d.qps, q.qpn)
	}
	q.freeChains()
	return nil
}

// checkSend validates one send request before it reaches the provider, so
// that errors are the contract's and name the request.
func (q *qp) checkSend(wr *fabric.SendWR) (*C.struct_ibv_ah, error) {
	if err := wr.CheckOp(q.typ); err != nil {
		return nil, err
	}
	var h *C.struct_ibv_ah
	switch q.typ {
	case fabric.UD:
		a, ok := wr.AH.(*ah)
		live := ok && a != nil && !a.dead
		if err := fabric.CheckUDSend(live, live && a.pd == q.pd, int(wr.Local.Length), q.pd.d.attr.MTU, "libibverbs device"); err != nil {
			return nil, err
		}
		h = a.ah
	case fabric.DCI:
		var err error
		if h, err = q.dcAH(wr.AH); err != nil {
			return nil, err
		}
	}
	if err := wr.CheckSize(q.typ, q.caps.MaxInline); err != nil {
		return nil, err
	}
	return h, nil
}

// PostSend implements fabric.QP: the valid prefix of wrs is posted with one
// ibv_post_send (one cgo call); a DCI's with one critical section of the
// extended post interface (dcQP.post).
func (q *qp) PostSend(wrs []fabric.SendWR) (int, error) {
	if q.dead {
		return 0, fmt.Errorf("%w: %v", fabric.ErrClosed, q)
	}
	if q.typ == fabric.XRCRecv || q.typ == fabric.DCT {
		return 0, fmt.Errorf("%w: %v has no send queue", fabric.ErrInvalidArg, q)
	}
	if st := fabric.QPState(q.state.Load()); st != fabric.StateRTS && st != fabric.StateError {
		return 0, fmt.Errorf("%w: %v is in %v; PostSend needs RTS", fabric.ErrBadState, q, st)
	}
	room := q.sq.room()
	base := q.sq.tail.Load()
	n := 0
	var verr error
	for ; n < len(wrs); n++ {
		if err := fabric.CheckSendSlot(q, uint64(q.caps.MaxSendWR-room+n), q.caps.MaxSendWR); err != nil {
			verr = err
			break
		}
		wr := &wrs[n]
		h, err := q.checkSend(wr)
		if err != nil {
			verr = err
			break
		}
		opcode, _ := wrOpcodeOf(wr.Op)
		seq := base + uint64(n)
		s := &q.sends[n]
		s.wr_id = C.uint64_t(seq)
		s.addr = C.uint64_t(wr.Local.Addr)
		s.length = C.uint32_t(wr.Local.Length)
		s.lkey = C.uint32_t(wr.Local.LKey)
		s.remote_addr = C.uint64_t(wr.RemoteAddr)
		s.rkey = C.uint32_t(wr.RKey)
		s.imm = C.uint32_t(wr.Imm)
		s.ah = h
		s.remote_qpn = C.uint32_t(wr.RemoteQPN)
		s.remote_qkey = C.uint32_t(wr.QKey)
		s.remote_srqn = C.uint32_t(wr.RemoteSRQN)
		s.dc_key = C.uint64_t(wr.DCKey)
		s.opcode = C.int32_t(opcode)
		s.send_flags = C.uint32_t(sendFlagsOf(wr.Flags))
		q.sq.stage(seq, wqEntry{id: wr.ID, op: wr.Op, length: wr.Local.Length})
	}
	if n == 0 {
		return 0, verr
	}
	q.sq.publish(base + uint64(n))
	var r int64
	op := "ibv_post_send"
	if q.dc != nil {
		r, op = q.dc.post(q.sendIn, n), "ibv_wr_complete"
	} else {
		r = int64(C.rs_post_send(q.qp, q.sendIn, C.int(n), q.sendWR, q.sendSGE))
	}
	if errno := syscall.Errno(r >> 32); errno != 0 {
		posted := int(r & 0xffffffff)
		q.sq.retract(base + uint64(posted))
		return posted, postErr(op, errno, posted)
	}
	return n, verr
}

// PostRecv implements fabric.QP with one ibv_post_recv.
func (q *qp) PostRecv(wrs []fabric.RecvWR) (int, error) {
	if q.dead {
		return 0, fmt.Errorf("%w: %v", fabric.ErrClosed, q)
	}
	if q.typ == fabric.XRCSend || q.typ == fabric.XRCRecv {
		return 0, fmt.Errorf("%w: %v has no receive queue (XRC receives are posted to an XRC SRQ)", fabric.ErrInvalidArg, q)
	}
	if err := fabric.CheckPostRecvDC(q, q.typ); err != nil {
		return 0, err
	}
	if q.srq != nil {
		return 0, fmt.Errorf("%w: %v takes its receives from %v: post them there", fabric.ErrInvalidArg, q, q.srq)
	}
	if fabric.QPState(q.state.Load()) == fabric.StateReset {
		return 0, fmt.Errorf("%w: %v is in RESET; PostRecv needs INIT or later", fabric.ErrBadState, q)
	}
	room := q.rq.room()
	base := q.rq.tail.Load()
	n := min(len(wrs), room)
	for i := 0; i < n; i++ {
		seq := base + uint64(i)
		r := &q.recvs[i]
		r.wr_id = C.uint64_t(seq | recvBit)
		r.addr = C.uint64_t(wrs[i].Local.Addr)
		r.length = C.uint32_t(wrs[i].Local.Length)
		r.lkey = C.uint32_t(wrs[i].Local.LKey)
		q.rq.stage(seq, wqEntry{id: wrs[i].ID, op: fabric.OpRecv, length: wrs[i].Local.Length})
	}
	var verr error
	if n < len(wrs) {
		verr = fmt.Errorf("%w: %v receive queue holds %d buffers; a receive's slot is free again once its completion has been polled",
			fabric.ErrQueueFull, q, q.caps.MaxRecvWR)
	}
	if n == 0 {
		return 0, verr
	}
	q.rq.publish(base + uint64(n))
	r := int64(C.rs_post_recv(q.qp, q.recvIn, C.int(n), q.recvWR, q.recvSGE))
	if errno := syscall.Errno(r >> 32); errno != 0 {
		posted := int(r & 0xffffffff)
		q.rq.retract(base + uint64(posted))
		return posted, postErr("ibv_post_recv", errno, posted)
	}
	return n, verr
}

//go:build ibverbs

package ibv

/*
#cgo LDFLAGS: -libverbs
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"syscall"
	"unsafe"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// XRC: ibv_open_xrcd, ibv_create_srq_ex (IBV_SRQT_XRC), ibv_get_srq_num,
// ibv_create_qp_ex (IBV_QPT_XRC_SEND, IBV_QPT_XRC_RECV), and the remote SRQ
// number of every XRC send (wr.qp_type.xrc.remote_srqn).
//
// An XRC SRQ's receives complete in its own CQ and name the XRC_RECV queue
// pair that delivered them, which is no queue pair of that CQ: the CQ
// finds the SRQ (its slot table) as the one XRC SRQ completing into it
// (cq.xsrq). A second XRC SRQ on one CQ is refused (ErrUnsupported).

// xrcd implements fabric.XRCD.
type xrcd struct {
	pd    *pd
	x     *C.struct_ibv_xrcd
	users int // XRC SRQs and XRC_RECV queue pairs (device mu)
	dead  bool
}

var _ fabric.XRCD = (*xrcd)(nil)

func (x *xrcd) String() string { return fmt.Sprintf("XRCD on node %d", x.pd.d.nodeID) }

// OpenXRCD implements fabric.PD with ibv_open_xrcd (a new domain: fd -1).
// A provider without XRC refuses with an error wrapping
// errors.ErrUnsupported.
func (p *pd) OpenXRCD() (fabric.XRCD, error) {
	d := p.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if p.dead {
		return nil, fmt.Errorf("%w: protection domain deallocated", fabric.ErrClosed)
	}
	h, err := C.rs_open_xrcd(d.ctx)
	if h == nil {
		e := errnoErr("ibv_open_xrcd", err, "")
		if errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS) {
			e = fmt.Errorf("%w (%w)", e, errors.ErrUnsupported)
		}
		return nil, e
	}
	x := &xrcd{pd: p, x: h}
	p.xrcds[x] = true
	return x, nil
}

// Close implements fabric.XRCD with ibv_close_xrcd.
func (x *xrcd) Close() error {
	d := x.pd.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if x.dead {
		return fmt.Errorf("%w: %v closed twice", fabric.ErrClosed, x)
	}
	if x.users > 0 {
		return fmt.Errorf("%w: %v still has %d XRC SRQs and target queue pairs", fabric.ErrBusy, x, x.users)
	}
	if rc := C.ibv_close_xrcd(x.x); rc != 0 {
		return errnoErr("ibv_close_xrcd", syscall.Errno(rc), "")
	}
	x.dead = true
	delete(x.pd.xrcds, x)
	return nil
}

// domain returns the XRC domain a of p's device, open (device mu held).
func (p *pd) domain(a fabric.XRCD, what string) (*xrcd, error) {
	x, ok := a.(*xrcd)
	switch {
	case !ok || x == nil || x.pd.d != p.d:
		return nil, fmt.Errorf("%w: %s with an XRC domain that is not this device's", fabric.ErrInvalidArg, what)
	case x.dead:
		return nil, fmt.Errorf("%w: %s with a closed XRC domain", fabric.ErrClosed, what)
	}
	return x, nil
}

// xrcSRQ checks the XRC arguments of CreateSRQ and returns the domain and
// CQ (device mu held).
func (p *pd) xrcSRQ(init fabric.SRQInit) (*xrcd, *cq, error) {
	if init.XRCD == nil {
		return nil, nil, fmt.Errorf("%w: CreateSRQ with a completion queue but no XRC domain (only XRC SRQs have a CQ)", fabric.ErrInvalidArg)
	}
	x, err := p.domain(init.XRCD, "CreateSRQ")
	if err != nil {
		return nil, nil, err
	}
	c, ok := init.CQ.(*cq)
	switch {
	case !ok || c == nil || c.d != p.d:
		return nil, nil, fmt.Errorf("%w: an XRC SRQ needs a completion queue of this device", fabric.ErrInvalidArg)
	case c.dead:
		return nil, nil, fmt.Errorf("%w: CreateSRQ with a destroyed CQ", fabric.ErrClosed)
	case c.xsrq != nil:
		return nil, nil, fmt.Errorf("%w: %v already completes the receives of an XRC SRQ; this backend gives each XRC SRQ a CQ of its own (%w)",
			fabric.ErrInvalidArg, c, errors.ErrUnsupported)
	}
	return x, c, nil
}

// createXRCSRQ is ibv_create_srq_ex for an XRC SRQ of depth init.MaxWR
// (checked by CreateSRQ; device mu held).
func (p *pd) createXRCSRQ(init fabric.SRQInit, x *xrcd, c *cq) (*C.struct_ibv_srq, uint32, error) {
	var got, num C.uint32_t
	h, err := C.rs_create_xrc_srq(p.d.ctx, p.pd, x.x, c.cq, C.uint32_t(init.MaxWR), &got, &num)
	if h == nil {
		e := errnoErr(fmt.Sprintf("ibv_create_srq_ex(IBV_SRQT_XRC, %d receives)", init.MaxWR), err, "")
		if errors.Is(err, syscall.EOPNOTSUPP) {
			e = fmt.Errorf("%w (%w)", e, errors.ErrUnsupported)
		}
		return nil, 0, e
	}
	return h, uint32(num), nil
}

// attachXRC records that s, an XRC SRQ, completes in c and belongs to x
// (device mu held).
func (s *srq) attachXRC(x *xrcd, c *cq) {
	s.xrcd, s.cq = x, c
	x.users++
	c.users++
	c.mu.Lock()
	c.xsrq = s
	c.mu.Unlock()
}

// detachXRC undoes attachXRC when s is destroyed (device mu held).
func (s *srq) detachXRC() {
	if s.xrcd == nil {
		return
	}
	s.xrcd.users--
	s.cq.users--
	s.cq.mu.Lock()
	if s.cq.xsrq == s {
		s.cq.xsrq = nil
	}
	s.cq.mu.Unlock()
}

// createXRCQP creates an XRC_SEND queue pair (send CQ, send queue) or an
// XRC_RECV one (an XRC domain, nothing else) with ibv_create_qp_ex
// (device mu held).
func (p *pd) createXRCQP(init fabric.QPInit) (*qp, error) {
	d := p.d
	if init.SRQ != nil {
		return nil, fmt.Errorf("%w: an %v queue pair takes no shared receive queue", fabric.ErrInvalidArg, init.Type)
	}
	var x *xrcd
	var scq *cq
	caps := fabric.QPCaps{}
	if init.Type == fabric.XRCRecv {
		if init.XRCD == nil {
			return nil, fmt.Errorf("%w: an XRC_RECV queue pair needs an XRC domain", fabric.ErrInvalidArg)
		}
		var err error
		if x, err = p.domain(init.XRCD, "CreateQP"); err != nil {
			return nil, err
		}
	} else {
		if init.XRCD != nil {
			return nil, fmt.Errorf("%w: only XRC_RECV queue pairs are created in an XRC domain", fabric.ErrInvalidArg)
		}
		var ok bool
		if scq, ok = init.SendCQ.(*cq); !ok || scq == nil || scq.d != d {
			return nil, fmt.Errorf("%w: CreateQP needs a send CQ of this device", fabric.ErrInvalidArg)
		}
		if scq.dead {
			return nil, fmt.Errorf("%w: CreateQP with a destroyed CQ", fabric.ErrClosed)
		}
		caps = fabric.QPCaps{MaxSendWR: init.Caps.MaxSendWR, MaxInline: init.Caps.MaxInline}
		if err := d.attr.CheckSendCaps(init.Type, caps); err != nil {
			return nil, err
		}
	}
	typ, _ := qpTypeOf(init.Type)
	var hx *C.struct_ibv_xrcd
	var hc *C.struct_ibv_cq
	if x != nil {
		hx = x.x
	}
	if scq != nil {
		hc = scq.cq
	}
	var got C.struct_ibv_qp_cap
	h, err := C.rs_create_xrc_qp(d.ctx, p.pd, hx, hc, C.int(typ), C.uint32_t(caps.MaxSendWR), C.uint32_t(caps.MaxInline), &got)
	if h == nil {
		e := errnoErr(fmt.Sprintf("ibv_create_qp_ex(%v, send %d, inline %d)", init.Type, caps.MaxSendWR, caps.MaxInline), err, "")
		if errors.Is(err, syscall.EOPNOTSUPP) {
			e = fmt.Errorf("%w (%w)", e, errors.ErrUnsupported)
		}
		return nil, e
	}
	return p.newXRCQP(h, init.Type, caps, scq, x)
}

// newXRCQP wraps an XRC queue pair the provider created (device mu held).
// Its request chains have room for its send queue (at least one entry,
// as its unused receive chain).
func (p *pd) newXRCQP(h *C.struct_ibv_qp, t fabric.QPType, caps fabric.QPCaps, scq *cq, x *xrcd) (*qp, error) {
	q := &qp{pd: p, qp: h, qpn: uint32(h.qp_num), typ: t, scq: scq, xrcd: x, caps: caps,
		sq: newWQRing(max(caps.MaxSendWR, 1)), rq: newWQRing(1), psn: fabric.PSNOf(uint64(rand.Uint32()))}
	s := C.size_t(max(caps.MaxSendWR, 1))
	q.sendIn = (*C.rs_send)(C.calloc(s, C.sizeof_rs_send))
	q.sendWR = (*C.struct_ibv_send_wr)(C.calloc(s, C.sizeof_struct_ibv_send_wr))
	q.sendSGE = (*C.struct_ibv_sge)(C.calloc(s, C.sizeof_struct_ibv_sge))
	q.recvIn = (*C.rs_recv)(C.calloc(1, C.sizeof_rs_recv))
	q.recvWR = (*C.struct_ibv_recv_wr)(C.calloc(1, C.sizeof_struct_ibv_recv_wr))
	q.recvSGE = (*C.struct_ibv_sge)(C.calloc(1, C.sizeof_struct_ibv_sge))
	if q.sendIn == nil || q.sendWR == nil || q.sendSGE == nil || q.recvIn == nil || q.recvWR == nil || q.recvSGE == nil {
		C.ibv_destroy_qp(h)
		q.freeChains()
		return nil, fmt.Errorf("%w: cannot allocate request chains for %d requests", fabric.ErrLimit, caps.MaxSendWR)
	}
	q.sends = unsafe.Slice(q.sendIn, max(caps.MaxSendWR, 1))
	q.recvs = unsafe.Slice(q.recvIn, 1)
	if scq != nil {
		scq.mu.Lock()
		scq.qps[q.qpn] = q
		scq.mu.Unlock()
		scq.users++
	}
	if x != nil {
		x.users++
	}
	p.qps[q] = true
	p.d.qps[q.qpn] = q
	return q, nil
}

// takeXRC stages a completion of s, the XRC SRQ completing into c, that
// names XRC_RECV queue pair w.qp_num (c.mu held).
func (c *cq) takeXRC(w *C.rs_wc, s *srq) {
	tag := uint64(w.wr_id) &^ recvBit
	e, ok := s.slots.lookup(tag)
	if !ok {
		return
	}
	status := uint32(w.status)
	wc := fabric.WC{ID: e.id, Status: statusOf(status), QPN: uint32(w.qp_num), VendorErr: uint32(w.vendor_err),
		Op: recvOpOf(status, uint32(w.opcode))}
	if status == ibvWCSuccess {
		wc.Bytes = int(w.byte_len)
		if uint32(w.wc_flags)&ibvWCWithImm != 0 {
			wc.HasImm, wc.Imm = true, uint32(w.imm)
		}
	}
	c.stage.push(staged{wc: wc, srq: s.slots, tag: tag})
}

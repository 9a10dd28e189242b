//go:build ibverbs

package ibv

/*
#cgo LDFLAGS: -libverbs -lmlx5
#include "shim_dc.h"
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

// Dynamically Connected queue pairs: mlx5dv_create_qp(3) with
// MLX5DV_DCTYPE_DCI and MLX5DV_DCTYPE_DCT (IBV_QPT_DRIVER), the kernel
// mlx5 driver's transitions (modifyMask), and a DCI's requests through the
// extended post interface, ibv_wr_start(3) to ibv_wr_complete, each
// addressed with mlx5dv_wr_set_dc_addr(3). C glue: shim_dc.h.
//
// Only a device the mlx5 provider drives (mlx5dv_is_supported(3), asked
// once at open: device.mlx5) has DC; on any other (the software RDMA
// device, rxe, siw, mlx4) CreateQP of a DC type fails with an error
// wrapping errors.ErrUnsupported that names the device.
//
// A DCI has a send queue and a send CQ (given to the provider as its
// receive CQ too, which verbs requires; it never receives) and goes to
// RTR and RTS with no destination: the path MTU, and an address vector
// with the port, service level and (RoCE) source GID index. A DCT is
// attached to an ordinary SRQ, completes its receives in its CQ, and is
// created in the device when it reaches RTR: its number (QPN, the
// wc.qp_num of its receive completions) exists from then on, and the
// backend files it under that number there (dctNumbered). The kernel
// takes a DCT from RESET to INIT and from INIT to RTR only: RTS is
// refused here, as the contract says, and ERROR and RESET by the
// provider (ErrBadTransition wrapping EINVAL); Destroy is the way out.

// dcQP is a DCI's extended post interface.
type dcQP struct {
	qpx  *C.struct_ibv_qp_ex
	mqpx *C.struct_mlx5dv_qp_ex
}

// isMLX5 reports whether the mlx5 provider drives dev, so that mlx5dv may
// be called for it (mlx5dv_is_supported(3)).
func isMLX5(dev *C.struct_ibv_device) bool { return C.rs_is_mlx5(dev) != 0 }

// dcUnsupported is the refusal of a DC queue pair of type t on a device
// the mlx5 provider does not drive.
func (d *device) dcUnsupported(t fabric.QPType) error {
	return fmt.Errorf("%w: %v queue pairs need an mlx5 device (ConnectX-4 or later) through mlx5dv; %s is not one (mlx5dv_is_supported is false)",
		errors.ErrUnsupported, t, d.name)
}

// dcCreateErr is the error of a failed mlx5dv_create_qp (op names the
// call): a device or kernel without DC answers EOPNOTSUPP, which also
// wraps errors.ErrUnsupported.
func dcCreateErr(op string, err error) error {
	e := errnoErr(op, err, "DC needs a ConnectX-4 or later whose firmware and kernel driver enable it")
	if errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS) {
		e = fmt.Errorf("%w (%w)", e, errors.ErrUnsupported)
	}
	return e
}

// createDCQP creates a DCI or a DCT (device mu held).
func (p *pd) createDCQP(init fabric.QPInit) (*qp, error) {
	if !p.d.mlx5 {
		return nil, p.d.dcUnsupported(init.Type)
	}
	if err := fabric.CheckDCQPInit(init); err != nil {
		return nil, err
	}
	if init.Type == fabric.DCT {
		return p.createDCT(init)
	}
	return p.createDCI(init)
}

// ownCQ is x as a live CQ of p's device, or the error CheckSendCQ gives.
func (p *pd) ownCQ(x fabric.CQ) (*cq, error) {
	c, ok := x.(*cq)
	mine := ok && c != nil && c.d == p.d
	if err := fabric.CheckSendCQ(mine, mine && c.dead, p.d.name); err != nil {
		return nil, err
	}
	return c, nil
}

// createDCT creates a DCT on init.SRQ completing in init.RecvCQ, with key
// init.DCKey (device mu held). It is filed under its number at RTR.
func (p *pd) createDCT(init fabric.QPInit) (*qp, error) {
	s, err := p.attachable(init.SRQ)
	if err != nil {
		return nil, err
	}
	c, err := p.ownCQ(init.RecvCQ)
	if err != nil {
		return nil, err
	}
	h, cerr := C.rs_create_dct(p.d.ctx, p.pd, c.cq, s.srq, C.uint64_t(init.DCKey))
	if h == nil {
		return nil, dcCreateErr(fmt.Sprintf("mlx5dv_create_qp(DCT, key %#x)", init.DCKey), cerr)
	}
	q := &qp{pd: p, qp: h, typ: fabric.DCT, rcq: c, srq: s, caps: fabric.QPCaps{MaxRecvWR: s.maxWR},
		sq: newWQRing(1), rq: newWQRing(1), psn: fabric.PSNOf(uint64(rand.Uint32()))}
	c.users++
	s.users++
	p.qps[q] = true
	return q, nil
}

// createDCI creates a DCI completing in init.SendCQ (device mu held). Its
// send queue's limit is RC's layout (fabric.DeviceAttr.MaxSendWR), which
// is conservative for mlx5: a DCI entry created for these operations has
// an 80-byte head (control, address vector, remote address) where RC's
// reserves 192.
func (p *pd) createDCI(init fabric.QPInit) (*qp, error) {
	d := p.d
	c, err := p.ownCQ(init.SendCQ)
	if err != nil {
		return nil, err
	}
	caps := fabric.QPCaps{MaxSendWR: init.Caps.MaxSendWR, MaxInline: init.Caps.MaxInline}
	if err := d.attr.CheckSendCaps(fabric.DCI, caps); err != nil {
		return nil, err
	}
	var got C.struct_ibv_qp_cap
	h, cerr := C.rs_create_dci(d.ctx, p.pd, c.cq, C.uint32_t(caps.MaxSendWR), C.uint32_t(caps.MaxInline), &got)
	if h == nil {
		e := dcCreateErr(fmt.Sprintf("mlx5dv_create_qp(DCI, send %d, inline %d)", caps.MaxSendWR, caps.MaxInline), cerr)
		if caps.MaxInline > d.attr.MaxInline {
			e = fmt.Errorf("%w: max inline %d bytes above what %s accepts (%d): %w", fabric.ErrLimit, caps.MaxInline, d.name, d.attr.MaxInline, e)
		}
		return nil, e
	}
	x := &dcQP{}
	if rc := C.rs_dc_post_handles(h, &x.qpx, &x.mqpx); rc != 0 {
		C.ibv_destroy_qp(h)
		return nil, errnoErr("ibv_qp_to_qp_ex / mlx5dv_qp_ex_from_ibv_qp_ex (DCI)", syscall.Errno(rc), "")
	}
	q := &qp{pd: p, qp: h, qpn: uint32(h.qp_num), typ: fabric.DCI, scq: c, caps: caps, dc: x,
		sq: newWQRing(caps.MaxSendWR), rq: newWQRing(1), psn: fabric.PSNOf(uint64(rand.Uint32()))}
	q.sendIn = (*C.rs_send)(C.calloc(C.size_t(caps.MaxSendWR), C.sizeof_rs_send))
	if q.sendIn == nil {
		C.ibv_destroy_qp(h)
		return nil, fmt.Errorf("%w: cannot allocate the request chain for %d requests", fabric.ErrLimit, caps.MaxSendWR)
	}
	q.sends = unsafe.Slice(q.sendIn, caps.MaxSendWR)
	c.mu.Lock()
	c.qps[q.qpn] = q
	c.mu.Unlock()
	c.users++
	p.qps[q] = true
	d.qps[q.qpn] = q
	return q, nil
}

// dcRTR fills the attributes of DC queue pair q's move to RTR: no
// destination; the path MTU, the address vector of the port (service
// level, static rate, and on RoCE the source GID index, hop limit and
// traffic class) and a DCT's min RNR timer. It returns what puts a
// outside the contract's ranges, or "".
func (q *qp) dcRTR(a fabric.QPAttr, args *C.rs_modify_args) string {
	d := q.pd.d
	if why := a.Check(fabric.StateRTR, q.typ, d.attr.MTU, 0); why != "" {
		return why
	}
	mtu := d.mtuEnum
	if a.PathMTU != 0 {
		mtu, _ = mtuEnum(a.PathMTU)
	}
	args.path = d.path(fabric.Address{})
	args.mtu = C.int32_t(mtu)
	args.min_rnr_timer = C.uint8_t(a.MinRNRTimer)
	return ""
}

// dctNumbered files DCT q, just moved to RTR, under the number the device
// gave it then, in its device (for its events) and its CQ (for its
// receive completions).
func (q *qp) dctNumbered() {
	d := q.pd.d
	n := uint32(q.qp.qp_num)
	d.mu.Lock()
	defer d.mu.Unlock()
	c := q.rcq
	c.mu.Lock()
	if q.qpn != 0 && c.qps[q.qpn] == q {
		delete(c.qps, q.qpn)
	}
	c.qps[n] = q
	c.mu.Unlock()
	if q.qpn != 0 && d.qps[q.qpn] == q {
		delete(d.qps, q.qpn)
	}
	q.qpn = n
	d.qps[n] = q
}

// dcAH is the address handle of a DCI's request: live, of q's protection
// domain.
func (q *qp) dcAH(x fabric.AH) (*C.struct_ibv_ah, error) {
	a, ok := x.(*ah)
	if !ok || a == nil || a.dead {
		return nil, fmt.Errorf("%w: a DCI request needs a live address handle of this libibverbs device", fabric.ErrInvalidWR)
	}
	if a.pd != q.pd {
		return nil, fmt.Errorf("%w: address handle from another protection domain", fabric.ErrInvalidWR)
	}
	return a.ah, nil
}

// post posts the first n requests of in with rs_post_send_dc; the result
// is rs_post_send's (errno << 32 | requests posted).
func (x *dcQP) post(in *C.rs_send, n int) int64 {
	return int64(C.rs_post_send_dc(x.qpx, x.mqpx, in, C.int(n)))
}

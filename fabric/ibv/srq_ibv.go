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
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// Shared receive queues: ibv_create_srq, ibv_post_srq_recv, ibv_modify_srq
// (the limit event) and ibv_destroy_srq.

// srq implements fabric.SRQ. Its receives carry srqBit and their slot in
// slots as their wr_id; a completion of an attached queue pair (which
// names that queue pair) finds its receive there. The receive chain lives
// in C memory allocated at creation for the queue's full depth.
type srq struct {
	pd    *pd
	srq   *C.struct_ibv_srq
	maxWR int    // the depth asked for (the provider may grant more)
	id    uint32 // the library's handle, for messages (also once destroyed)
	slots *srqTable
	fired atomic.Bool // the limit event came and LimitReached has not consumed it
	users int         // attached queue pairs (device mu)
	num   uint32      // an XRC SRQ's number (ibv_get_srq_num), else 0
	xrcd  *xrcd       // an XRC SRQ's domain and CQ (xrc_ibv.go), else nil
	cq    *cq

	post    sync.Mutex // PostRecv: the receive chain; dead
	dead    bool       // set under the device's mu and post
	recvIn  *C.rs_recv
	recvWR  *C.struct_ibv_recv_wr
	recvSGE *C.struct_ibv_sge
	recvs   []C.rs_recv
}

var _ fabric.SRQ = (*srq)(nil)

func (s *srq) String() string {
	return fmt.Sprintf("SRQ %#x on node %d", s.id, s.pd.d.nodeID)
}

// MaxWR implements fabric.SRQ.
func (s *srq) MaxWR() int { return s.maxWR }

// Number implements fabric.SRQ: an XRC SRQ's number from
// ibv_get_srq_num; an ordinary SRQ, which no request names by number,
// gives its library handle.
func (s *srq) Number() uint32 {
	if s.num != 0 {
		return s.num
	}
	return s.id
}

// CreateSRQ implements fabric.PD. A device without shared receive queues
// (max_srq 0) refuses with an error that also wraps errors.ErrUnsupported.
func (p *pd) CreateSRQ(init fabric.SRQInit) (fabric.SRQ, error) {
	d := p.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if p.dead {
		return nil, fmt.Errorf("%w: protection domain deallocated", fabric.ErrClosed)
	}
	if d.maxSRQWR == 0 {
		return nil, fmt.Errorf("%w: %s has no shared receive queues (max_srq 0) (%w)", fabric.ErrInvalidArg, d.name, errors.ErrUnsupported)
	}
	if init.MaxWR < 1 || init.MaxWR > d.maxSRQWR {
		return nil, fmt.Errorf("%w: shared receive queue depth %d outside 1..%d (max_srq_wr of %s)", fabric.ErrLimit, init.MaxWR, d.maxSRQWR, d.name)
	}
	if init.MaxSGE < 0 || init.MaxSGE > 1 {
		return nil, fmt.Errorf("%w: %d scatter/gather elements per receive; a receive of this backend has 1", fabric.ErrLimit, init.MaxSGE)
	}
	if init.Limit < 0 || init.Limit >= init.MaxWR {
		return nil, fmt.Errorf("%w: shared receive queue limit %d outside 0..%d (below its depth)", fabric.ErrInvalidArg, init.Limit, init.MaxWR-1)
	}
	var x *xrcd
	var xc *cq
	var h *C.struct_ibv_srq
	var num uint32
	if init.XRCD != nil || init.CQ != nil {
		var err error
		if x, xc, err = p.xrcSRQ(init); err != nil {
			return nil, err
		}
		if h, num, err = p.createXRCSRQ(init, x, xc); err != nil {
			return nil, err
		}
	} else {
		var got C.uint32_t
		var err error
		if h, err = C.rs_create_srq(p.pd, C.uint32_t(init.MaxWR), &got); h == nil {
			return nil, errnoErr(fmt.Sprintf("ibv_create_srq(%d receives)", init.MaxWR), err, "")
		}
	}
	s := &srq{pd: p, srq: h, maxWR: init.MaxWR, id: uint32(h.handle), num: num, slots: newSRQTable(init.MaxWR)}
	r := C.size_t(init.MaxWR)
	s.recvIn = (*C.rs_recv)(C.calloc(r, C.sizeof_rs_recv))
	s.recvWR = (*C.struct_ibv_recv_wr)(C.calloc(r, C.sizeof_struct_ibv_recv_wr))
	s.recvSGE = (*C.struct_ibv_sge)(C.calloc(r, C.sizeof_struct_ibv_sge))
	if s.recvIn == nil || s.recvWR == nil || s.recvSGE == nil {
		C.ibv_destroy_srq(h)
		s.freeChain()
		return nil, fmt.Errorf("%w: cannot allocate the receive chain of a shared receive queue (%d receives)", fabric.ErrLimit, init.MaxWR)
	}
	s.recvs = unsafe.Slice(s.recvIn, init.MaxWR)
	// ibv_create_srq ignores srq_limit: the limit is armed by a modify.
	if init.Limit > 0 {
		if err := s.arm(init.Limit); err != nil {
			C.ibv_destroy_srq(h)
			s.freeChain()
			return nil, err
		}
	}
	if x != nil {
		s.attachXRC(x, xc)
	}
	p.srqs[s] = true
	return s, nil
}

func (s *srq) freeChain() {
	C.free(unsafe.Pointer(s.recvIn))
	C.free(unsafe.Pointer(s.recvWR))
	C.free(unsafe.Pointer(s.recvSGE))
	s.recvIn, s.recvWR, s.recvSGE, s.recvs = nil, nil, nil, nil
}

// arm sets the limit with ibv_modify_srq(IBV_SRQ_LIMIT).
func (s *srq) arm(limit int) error {
	if limit < 0 || limit >= s.maxWR {
		return fmt.Errorf("%w: %v: limit %d outside 0..%d (below its depth)", fabric.ErrInvalidArg, s, limit, s.maxWR-1)
	}
	if rc := C.rs_arm_srq(s.srq, C.uint32_t(limit)); rc != 0 {
		if rc < 0 {
			rc = -rc
		}
		return errnoErr(fmt.Sprintf("ibv_modify_srq(IBV_SRQ_LIMIT %d)", limit), syscall.Errno(rc), "")
	}
	return nil
}

// ArmLimit implements fabric.SRQ.
func (s *srq) ArmLimit(limit int) error {
	d := s.pd.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if s.dead {
		return fmt.Errorf("%w: %v destroyed", fabric.ErrClosed, s)
	}
	return s.arm(limit)
}

// LimitReached implements fabric.SRQ: the device's event reader sets it
// when IBV_EVENT_SRQ_LIMIT_REACHED names this queue.
func (s *srq) LimitReached() bool { return s.fired.Swap(false) }

// Destroy implements fabric.SRQ: ibv_destroy_srq, whose EBUSY (queue pairs
// still attached) is ErrBusy.
func (s *srq) Destroy() error {
	d := s.pd.d
	d.mu.Lock()
	defer d.mu.Unlock()
	s.post.Lock()
	defer s.post.Unlock()
	if s.dead {
		return fmt.Errorf("%w: %v destroyed twice", fabric.ErrClosed, s)
	}
	if rc := C.ibv_destroy_srq(s.srq); rc != 0 {
		err := errnoErr("ibv_destroy_srq", syscall.Errno(rc), "")
		if rc == C.EBUSY {
			err = fmt.Errorf("%v still has %d queue pairs attached: %w", s, s.users, err)
		}
		return err
	}
	s.dead = true
	delete(s.pd.srqs, s)
	s.detachXRC()
	s.freeChain()
	return nil
}

// PostRecv implements fabric.SRQ with one ibv_post_srq_recv. Posts are
// serialized: any thread may post.
func (s *srq) PostRecv(wrs []fabric.RecvWR) (int, error) {
	s.post.Lock()
	defer s.post.Unlock()
	if s.dead {
		return 0, fmt.Errorf("%w: %v", fabric.ErrClosed, s)
	}
	t := s.slots
	t.mu.Lock()
	n := min(len(wrs), t.room())
	for i := 0; i < n; i++ {
		tag := t.reserve(wqEntry{id: wrs[i].ID, op: fabric.OpRecv, length: wrs[i].Local.Length})
		r := &s.recvs[i]
		r.wr_id = C.uint64_t(tag | recvBit)
		r.addr = C.uint64_t(wrs[i].Local.Addr)
		r.length = C.uint32_t(wrs[i].Local.Length)
		r.lkey = C.uint32_t(wrs[i].Local.LKey)
	}
	t.mu.Unlock()
	var verr error
	if n < len(wrs) {
		verr = fmt.Errorf("%w: %v holds %d receives; a receive's slot is free again once its completion has been polled",
			fabric.ErrQueueFull, s, s.maxWR)
	}
	if n == 0 {
		return 0, verr
	}
	r := int64(C.rs_post_srq_recv(s.srq, s.recvIn, C.int(n), s.recvWR, s.recvSGE))
	if errno := syscall.Errno(r >> 32); errno != 0 {
		posted := int(r & 0xffffffff)
		t.mu.Lock()
		for i := posted; i < n; i++ {
			t.releaseLocked(uint64(s.recvs[i].wr_id) &^ recvBit)
		}
		t.mu.Unlock()
		return posted, postErr("ibv_post_srq_recv", errno, posted)
	}
	return n, verr
}

// attachable returns the shared receive queue a queue pair of p may attach
// to (the device's mu held).
func (p *pd) attachable(x fabric.SRQ) (*srq, error) {
	s, ok := x.(*srq)
	switch {
	case !ok || s == nil || s.pd.d != p.d:
		return nil, fmt.Errorf("%w: CreateQP with a shared receive queue that is not this device's", fabric.ErrInvalidArg)
	case s.dead:
		return nil, fmt.Errorf("%w: CreateQP with a destroyed shared receive queue", fabric.ErrClosed)
	case s.pd != p:
		return nil, fmt.Errorf("%w: %v belongs to another protection domain", fabric.ErrInvalidArg, s)
	case s.xrcd != nil:
		return nil, fmt.Errorf("%w: %v is an XRC SRQ, reached by XRC_RECV queue pairs through its number; no queue pair attaches to it", fabric.ErrInvalidArg, s)
	}
	return s, nil
}

// limitReached records the limit event of the queue at address obj (the
// device's event reader).
func (d *device) limitReached(obj uintptr) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for p := range d.pds {
		for s := range p.srqs {
			if uintptr(unsafe.Pointer(s.srq)) == obj {
				s.fired.Store(true)
			}
		}
	}
}

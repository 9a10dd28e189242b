package loopback

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/host"
)

// device implements fabric.Device and host.GatedDevice for one node.
type device struct {
	n *nic
}

var (
	_ fabric.Device    = (*device)(nil)
	_ host.GatedDevice = (*device)(nil)
	_ fabric.PD        = (*pd)(nil)
	_ fabric.MR        = (*mr)(nil)
	_ fabric.CQ        = (*cq)(nil)
	_ fabric.AH        = (*ah)(nil)
)

func (d *device) Gate() host.Gate { return &d.n.gate }

func (d *device) Attr() fabric.DeviceAttr {
	id, lim := d.n.id, d.n.net.lim
	return fabric.DeviceAttr{Name: fmt.Sprintf("loopback%d", id), LinkLayer: "InfiniBand", LID: lidOf(id), GID: gidOf(id),
		MTU: lim.MTU, MaxQP: maxQP, MaxQPWR: lim.MaxQPWR, MaxCQE: maxCQE, MaxSGE: 1, MaxInline: maxInlineRC, MaxInlineUD: maxInlineUD, MaxMRBytes: maxMRBytes,
		SendQueue: lim.SendQueue}
}

func (d *device) AllocPD() (fabric.PD, error) {
	n := d.n
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.alive(); err != nil {
		return nil, err
	}
	return &pd{n: n}, nil
}

func (d *device) CreateCQ(depth int) (fabric.CQ, error) {
	n := d.n
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.alive(); err != nil {
		return nil, err
	}
	if err := fabric.CheckCQDepth(depth, maxCQE, ""); err != nil {
		return nil, err
	}
	return &cq{n: n, depth: depth}, nil
}

// pd implements fabric.PD. Its fields are guarded by the NIC's mu.
type pd struct {
	fabric.Domain
	n *nic
}

// alignedBytes returns n zero bytes whose first is aligned to
// fabric.MRAlign (a cache line), with cap n.
func alignedBytes(n int) []byte {
	b := make([]byte, n+fabric.MRAlign-1)
	pad := (fabric.MRAlign - int(uintptr(unsafe.Pointer(unsafe.SliceData(b)))%fabric.MRAlign)) % fabric.MRAlign
	return b[pad : pad+n : pad+n]
}

func (p *pd) RegMR(length int, access fabric.Access) (fabric.MR, error) {
	if length < 1 || int64(length) > maxMRBytes {
		return p.register(length, access, nil)
	}
	return p.register(length, access, alignedBytes(length))
}

// TimeRegMR implements fabric.RegTimer: it allocates the memory and writes
// a byte of every page first, then times the registration alone.
func (p *pd) TimeRegMR(length int, access fabric.Access) (fabric.MR, fabric.Duration, error) {
	var buf []byte
	if length >= 1 && int64(length) <= maxMRBytes {
		buf = alignedBytes(length)
		for i := 0; i < len(buf); i += 4096 {
			buf[i] = 0
		}
	}
	t0 := time.Now()
	m, err := p.register(length, access, buf)
	return m, fabric.Duration(time.Since(t0).Nanoseconds()) * fabric.Nanosecond, err
}

// register registers buf, length bytes (nil when length is out of range).
func (p *pd) register(length int, access fabric.Access, buf []byte) (fabric.MR, error) {
	n := p.n
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := p.Register(length, maxMRBytes, access, ""); err != nil {
		return nil, err
	}
	n.nextKey++
	m := &mr{Region: fabric.Region{Node: n.id, Key: n.nextKey<<8 | 0x42, Base: n.nextAddr, Access: access, Domain: &p.Domain}, n: n, pd: p, buf: buf}
	n.nextAddr += (uint64(length) + 4095) &^ 4095
	n.nextAddr += 4096 // a guard page: no two regions touch
	n.mrs[m.Key] = m
	return m, nil
}

func (p *pd) CreateAH(dest fabric.Address) (fabric.AH, error) {
	n := p.n
	t, err := n.net.resolve(dest)
	if err != nil {
		return nil, err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := p.Alive(); err != nil {
		return nil, err
	}
	p.Use()
	return &ah{pd: p, dest: dest, to: t}, nil
}

func (p *pd) Dealloc() error {
	p.n.mu.Lock()
	defer p.n.mu.Unlock()
	return p.Free()
}

// mr implements fabric.MR. Its memory is a Go slice. The CPU reads and
// writes it while holding the node's gate (host threads do); the NIC
// writes one-sided RDMA Writes into it under the gate exclusively, reads
// it under the gate shared, and fills posted receive buffers and RDMA
// Read destinations, which belong to the NIC, without the gate (the
// completion orders those with the CPU). key, addr and access never
// change; its lifecycle is guarded by the NIC's mu.
type mr struct {
	fabric.WaitableBase
	fabric.Region
	n   *nic
	pd  *pd
	buf []byte
}

func (m *mr) Bytes() []byte { return m.buf }
func (m *mr) Len() int      { return len(m.buf) }

// slice returns bytes [addr, addr+n) of the region, or false when they do
// not lie inside it (without overflow for made-up addresses).
func (m *mr) slice(addr, n uint64) ([]byte, bool) {
	off, ok := m.Offset(addr, n, len(m.buf))
	if !ok {
		return nil, false
	}
	return m.buf[off : off+n : off+n], true
}

func (m *mr) Dereg() error {
	n := m.n
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := m.Deregister(); err != nil {
		return err
	}
	delete(n.mrs, m.Key)
	return nil
}

// cq implements fabric.CQ; guarded by the NIC's mu.
type cq struct {
	fabric.WaitableBase
	n       *nic
	depth   int
	buf     []cqe
	head    int
	overrun bool
	lost    int64
	empties int // polls in a row that found nothing (pollsPerYield)
	fabric.Lifecycle
	dead bool
}

// cqe is a queued completion and the work-queue slots that polling it
// frees (as with libibverbs providers: a slot is free once its completion,
// for unsignaled sends a later one, has been polled).
type cqe struct {
	wc   fabric.WC
	qp   *qp
	free uint64 // the queue pair's slots before this count are released
	recv bool   // receive queue, else send queue
	xs   *srq   // an XRC receive's SRQ, whose slot polling frees (qp is nil)
}

// release frees what polling (or losing) e frees (the NIC's mu held).
func (e *cqe) release() {
	if e.xs != nil {
		e.xs.out--
		return
	}
	e.qp.release(e.free, e.recv)
}

func (q *cq) Depth() int { return q.depth }

// push queues a completion (the NIC's mu held).
func (q *cq) push(e cqe) {
	if q.dead {
		return
	}
	if len(q.buf)-q.head >= q.depth {
		q.overrun = true
		q.lost++
		e.release() // the completion is lost; do not wedge the queue pair too
		return
	}
	if q.head > 0 && len(q.buf) == cap(q.buf) {
		k := copy(q.buf, q.buf[q.head:])
		q.buf, q.head = q.buf[:k], 0
	}
	q.buf = append(q.buf, e)
}

func (q *cq) Poll(wcs []fabric.WC) (int, error) {
	n := q.n
	n.mu.Lock()
	if q.dead {
		n.mu.Unlock()
		return 0, fmt.Errorf("%w: completion queue destroyed", fabric.ErrClosed)
	}
	k := min(len(wcs), len(q.buf)-q.head)
	for i, e := range q.buf[q.head : q.head+k] {
		wcs[i] = e.wc
		e.release()
	}
	q.head += k
	if q.head == len(q.buf) {
		q.buf, q.head = q.buf[:0], 0
	}
	var err error
	if q.overrun {
		err = fmt.Errorf("%w: %d completions lost on a CQ of depth %d; size the CQ for every outstanding request", fabric.ErrCQOverrun, q.lost, q.depth)
	}
	yield := false
	if k == 0 {
		q.empties++
		yield = q.empties%pollsPerYield == 0
	} else {
		q.empties = 0
	}
	n.mu.Unlock()
	if k == 0 {
		// A thread spinning on Poll lets RDMA Writes land, and now and
		// then lets the NICs and the other threads run.
		n.gate.pass(yield)
	}
	return k, err
}

func (q *cq) Destroy() error {
	q.n.mu.Lock()
	defer q.n.mu.Unlock()
	return q.End(fabric.CheckDestroyCQ(q.Dead(), q.Users()))
}

// ah implements fabric.AH.
type ah struct {
	pd   *pd
	dest fabric.Address
	to   *nic
	// Its lifecycle is guarded by the NIC's mu.
	fabric.Lifecycle
}

func (a *ah) Dest() fabric.Address { return a.dest }

func (a *ah) Destroy() error {
	n := a.pd.n
	n.mu.Lock()
	defer n.mu.Unlock()
	return a.End(fabric.CheckDestroyAH(a.Dead()), &a.pd.Lifecycle)
}

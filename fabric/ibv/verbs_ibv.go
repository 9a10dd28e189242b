//go:build ibverbs

package ibv

/*
#cgo LDFLAGS: -libverbs
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// recvBit marks the wr_id of receive requests, so that a completion (whose
// opcode is undefined when it failed) is matched to the right queue.
const recvBit = 1 << 63

// device implements fabric.Device over one opened device context (one per
// node, also when OpenLocal puts several nodes on one device).
//
// Setup calls (AllocPD, CreateCQ, RegMR, CreateQP, CreateAH and the
// matching releases) are serialized by mu and may come from any thread of
// the node. The data path (PostSend, PostRecv, Poll) takes no device lock.
type device struct {
	ctx      *C.struct_ibv_context
	name     string
	port     int
	gidIndex int
	nodeID   int
	route    Path // marking and routing of every queue pair and address handle
	attr     fabric.DeviceAttr
	link     uint8 // enum ibv_link_layer
	mtuEnum  int32 // the port's active MTU (enum ibv_mtu)
	maxRd    int   // max_qp_rd_atom: incoming RDMA Reads per QP
	maxInitR int   // max_qp_init_rd_atom: outgoing RDMA Reads per QP
	maxSRQWR int   // max_srq_wr, 0 when the device has no shared receive queues
	mlx5     bool  // the mlx5 provider drives it (mlx5dv_is_supported): it may have DC

	mu     sync.Mutex
	pds    map[*pd]bool
	cqs    map[*cq]bool
	qps    map[uint32]*qp // live queue pairs by QPN, for their events
	closed bool

	// The asynchronous events: a goroutine (events) reads them and gives
	// each to what it fails (routeEvent). A fault of the device (fatal) is
	// kept in fault, the port's being down in portDown; every later Poll
	// of the device's completion queues returns them.
	fault      atomic.Pointer[error]
	portDown   atomic.Pointer[error]
	stopEvents chan struct{}
	eventsDone chan struct{}

	stateQueries atomic.Int64 // ibv_query_qp calls, for tests
}

// events reads the device's asynchronous events until stopEvents closes,
// waking every 100 ms to look (the read itself would block past a close of
// the device). It runs in its own goroutine: the hardware backend's code,
// not an algorithm's.
func (d *device) events() {
	defer close(d.eventsDone)
	for {
		select {
		case <-d.stopEvents:
			return
		default:
		}
		var typ C.int
		var qpn C.uint32_t
		var port C.int
		var obj C.uintptr_t
		switch C.rs_async(d.ctx, 100, &typ, &qpn, &port, &obj) {
		case 1:
			d.routeEvent(int(typ), uint32(qpn), int(port), uintptr(obj))
		case -1:
			return // the descriptor failed: nothing more will come
		}
	}
}

// routeEvent gives an asynchronous event to what it fails: a queue pair's
// error to that queue pair alone (its error completions then name it), a
// completion queue's overrun to that queue, a port going down to the
// device only when it is the port in use (and a port coming back clears
// it), a fatal device error to the whole device. A shared receive queue's
// limit event (obj names the queue, as it names the completion queue of
// an overrun) is no error: it goes to that queue's LimitReached.
func (d *device) routeEvent(typ int, qpn uint32, port int, obj uintptr) {
	err := asyncEventError(d.name, typ, qpn, port)
	switch eventScopeOf(typ) {
	case scopeQP:
		d.mu.Lock()
		q := d.qps[qpn]
		d.mu.Unlock()
		if q != nil {
			q.event.CompareAndSwap(nil, &err)
		}
	case scopeCQ:
		d.mu.Lock()
		for c := range d.cqs {
			if uintptr(unsafe.Pointer(c.cq)) == obj {
				c.event.CompareAndSwap(nil, &err)
			}
		}
		d.mu.Unlock()
	case scopeSRQ:
		d.limitReached(obj)
	case scopePort:
		if port == d.port {
			d.portDown.Store(&err)
		}
	case scopeDevice:
		d.fault.CompareAndSwap(nil, &err)
	default:
		if typ == ibvEventPortActive && port == d.port {
			d.portDown.Store(nil)
		}
	}
}

var _ fabric.Device = (*device)(nil)

// ethernet reports RoCE: addressing is always by GID.
func (d *device) ethernet() bool { return d.link == ibvLinkLayerEthernet }

// deviceNames lists the devices ibv_get_device_list finds; the error wraps
// ErrNoDevice when there are none or the library cannot look.
func deviceList() ([]*C.struct_ibv_device, []string, func(), error) {
	var num C.int
	list, err := C.ibv_get_device_list(&num)
	if list == nil {
		return nil, nil, func() {}, fmt.Errorf("%w: ibv_get_device_list failed: %v (is the kernel's RDMA support loaded, e.g. the ib_uverbs module, and /dev/infiniband readable?)", fabric.ErrNoDevice, err)
	}
	free := func() { C.ibv_free_device_list(list) }
	if num == 0 {
		free()
		return nil, nil, func() {}, fmt.Errorf("%w: no RDMA device (ibv_get_device_list found none)", fabric.ErrNoDevice)
	}
	devs := make([]*C.struct_ibv_device, num)
	names := make([]string, num)
	for i := range devs {
		devs[i] = C.rs_device_at(list, C.int(i))
		names[i] = C.GoString(C.ibv_get_device_name(devs[i]))
	}
	return devs, names, free, nil
}

// openDevice opens the named device (the first one for "") on port for
// node nodeID and reads its attributes.
func openDevice(name string, port, gidIndex, nodeID int, route Path) (*device, error) {
	devs, names, free, err := deviceList()
	if err != nil {
		return nil, err
	}
	defer free()
	pick := -1
	for i, n := range names {
		if name == "" || n == name {
			pick = i
			break
		}
	}
	if pick < 0 {
		return nil, fmt.Errorf("%w: no RDMA device named %q (found %v)", fabric.ErrNoDevice, name, names)
	}
	if port < 1 || port > 255 {
		return nil, fmt.Errorf("%w: ibv: port %d outside 1..255", fabric.ErrInvalidArg, port)
	}
	ctx, err := C.ibv_open_device(devs[pick])
	if ctx == nil {
		return nil, errnoErr("ibv_open_device("+names[pick]+")", err, "check permissions on /dev/infiniband")
	}
	d := &device{ctx: ctx, name: names[pick], port: port, nodeID: nodeID, route: route, pds: map[*pd]bool{}, cqs: map[*cq]bool{}, qps: map[uint32]*qp{},
		mlx5: isMLX5(devs[pick])}
	if err := d.query(gidIndex); err != nil {
		C.ibv_close_device(ctx)
		return nil, err
	}
	d.stopEvents, d.eventsDone = make(chan struct{}), make(chan struct{})
	go d.events()
	return d, nil
}

func (d *device) query(gidIndex int) error {
	var da C.struct_ibv_device_attr
	if rc := C.ibv_query_device(d.ctx, &da); rc != 0 {
		return errnoErr("ibv_query_device("+d.name+")", syscall.Errno(rc), "")
	}
	if d.port > int(da.phys_port_cnt) {
		return fmt.Errorf("%w: %s has ports 1..%d, not %d", fabric.ErrNoDevice, d.name, int(da.phys_port_cnt), d.port)
	}
	var pa C.struct_ibv_port_attr
	if rc := C.rs_query_port(d.ctx, C.uint8_t(d.port), &pa); rc != 0 {
		return errnoErr(fmt.Sprintf("ibv_query_port(%s, %d)", d.name, d.port), syscall.Errno(rc), "")
	}
	if pa.state != C.IBV_PORT_ACTIVE {
		return fmt.Errorf("%w: %s port %d is not active (state %d; see ibv_devinfo)", fabric.ErrNoDevice, d.name, d.port, int(pa.state))
	}
	d.link = uint8(pa.link_layer)
	d.mtuEnum = int32(pa.active_mtu)
	if gidIndex < 0 {
		gidIndex = d.autoGID(int(pa.gid_tbl_len))
	}
	if gidIndex >= int(pa.gid_tbl_len) {
		return fmt.Errorf("%w: GID index %d outside the %d entries of %s port %d", fabric.ErrInvalidArg, gidIndex, int(pa.gid_tbl_len), d.name, d.port)
	}
	d.gidIndex = gidIndex
	var gid fabric.GID
	if rc := C.rs_query_gid(d.ctx, C.uint8_t(d.port), C.int(gidIndex), (*C.uint8_t)(unsafe.Pointer(&gid[0]))); rc != 0 {
		return errnoErr(fmt.Sprintf("ibv_query_gid(%s, port %d, index %d)", d.name, d.port, gidIndex), syscall.Errno(rc), "")
	}
	if d.ethernet() && gid == (fabric.GID{}) {
		return fmt.Errorf("%w: %s port %d is RoCE and GID index %d is empty (list them with show_gids or ibv_devinfo -v)", fabric.ErrInvalidArg, d.name, d.port, gidIndex)
	}
	d.maxRd, d.maxInitR = int(da.max_qp_rd_atom), int(da.max_qp_init_rd_atom)
	if da.max_srq > 0 {
		d.maxSRQWR = int(da.max_srq_wr)
	}
	d.attr = fabric.DeviceAttr{
		Name: d.name, LinkLayer: linkLayerName(d.link), LID: uint16(pa.lid), GID: gid,
		MTU: mtuBytes(d.mtuEnum), MaxQP: int(da.max_qp), MaxQPWR: int(da.max_qp_wr), MaxCQE: int(da.max_cqe),
		MaxSGE: int(da.max_sge), MaxMRBytes: mrSizeLimit(uint64(da.max_mr_size)),
		RateGbps: portRateGbps(uint8(pa.active_width), uint8(pa.active_speed)),
	}
	d.attr.SendQueue = deviceSendQueue(C.GoString(&d.ctx.device.ibdev_path[0]), d.name, uint32(da.vendor_id), uint32(da.vendor_part_id), d.attr.MaxQPWR)
	d.attr.MaxInline = d.probeInline(ibvQPTRC)
	d.attr.MaxInlineUD = d.probeInline(ibvQPTUD)
	return nil
}

// autoGID picks the GID index for the zero Config.GID: on Ethernet the first
// RoCE v2 entry holding an IPv4-mapped address (::ffff:a.b.c.d), else the
// first RoCE v2 entry, else 0.
func (d *device) autoGID(n int) int {
	if !d.ethernet() {
		return 0
	}
	first := -1
	for i := 0; i < n; i++ {
		if C.rs_gid_type(d.ctx, C.uint32_t(d.port), C.uint32_t(i)) != C.IBV_GID_TYPE_ROCE_V2 {
			continue
		}
		var g fabric.GID
		if C.rs_query_gid(d.ctx, C.uint8_t(d.port), C.int(i), (*C.uint8_t)(unsafe.Pointer(&g[0]))) != 0 {
			continue
		}
		if first < 0 {
			first = i
		}
		if g[10] == 0xff && g[11] == 0xff && g[0] == 0 && g[8] == 0 {
			return i
		}
	}
	return max(first, 0)
}

// probeInline finds the largest inline size a queue pair of type typ (RC
// or UD) of this device accepts (verbs have no attribute for it), trying
// common sizes.
func (d *device) probeInline(typ C.int) int {
	p := C.ibv_alloc_pd(d.ctx)
	if p == nil {
		return 0
	}
	defer C.ibv_dealloc_pd(p)
	c := C.ibv_create_cq(d.ctx, 4, nil, nil, 0)
	if c == nil {
		return 0
	}
	defer C.ibv_destroy_cq(c)
	for _, n := range []int{1024, 512, 256, 220, 128, 64, 32} {
		var caps C.struct_ibv_qp_cap
		if q := C.rs_create_qp(p, c, c, nil, typ, 1, 1, C.uint32_t(n), &caps); q != nil {
			C.ibv_destroy_qp(q)
			return n
		}
	}
	return 0
}

// Attr implements fabric.Device.
func (d *device) Attr() fabric.DeviceAttr { return d.attr }

// close releases every object still alive, then the context.
func (d *device) close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	pds, cqs := d.pds, d.cqs
	d.mu.Unlock()
	if d.stopEvents != nil {
		close(d.stopEvents)
		<-d.eventsDone
	}
	var first error
	keep := func(err error) {
		if first == nil && err != nil {
			first = err
		}
	}
	for p := range pds {
		for q := range p.qps {
			keep(q.Destroy())
		}
		for a := range p.ahs {
			keep(a.Destroy())
		}
		for s := range p.srqs {
			keep(s.Destroy())
		}
		for x := range p.xrcds {
			keep(x.Close())
		}
		for m := range p.mrs {
			keep(m.Dereg())
		}
	}
	for c := range cqs {
		keep(c.Destroy())
	}
	for p := range pds {
		keep(p.Dealloc())
	}
	if rc := C.ibv_close_device(d.ctx); rc != 0 {
		keep(errnoErr("ibv_close_device("+d.name+")", syscall.Errno(rc), ""))
	}
	return first
}

// AllocPD implements fabric.Device.
func (d *device) AllocPD() (fabric.PD, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, fmt.Errorf("%w: ibv: device %s closed", fabric.ErrClosed, d.name)
	}
	p, err := C.ibv_alloc_pd(d.ctx)
	if p == nil {
		return nil, errnoErr("ibv_alloc_pd", err, "")
	}
	x := &pd{d: d, pd: p, mrs: map[*mr]bool{}, qps: map[*qp]bool{}, ahs: map[*ah]bool{}, srqs: map[*srq]bool{}, xrcds: map[*xrcd]bool{}}
	d.pds[x] = true
	return x, nil
}

// CreateCQ implements fabric.Device. The hardware queue is larger than depth
// (see cqStage); the contract's depth is enforced in software.
func (d *device) CreateCQ(depth int) (fabric.CQ, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, fmt.Errorf("%w: ibv: device %s closed", fabric.ErrClosed, d.name)
	}
	if depth < 1 || depth > d.attr.MaxCQE {
		return nil, fmt.Errorf("%w: CQ depth %d outside 1..%d (max_cqe of %s)", fabric.ErrLimit, depth, d.attr.MaxCQE, d.name)
	}
	hw := hwCQDepth(depth, d.attr.MaxCQE)
	c, err := C.ibv_create_cq(d.ctx, C.int(hw), nil, nil, 0)
	if c == nil {
		return nil, errnoErr(fmt.Sprintf("ibv_create_cq(%d entries)", hw), err, "")
	}
	batch := min(hw, 256)
	x := &cq{d: d, cq: c, depth: depth, batch: batch, stage: newCQStage(depth), qps: map[uint32]*qp{}}
	x.cwc = (*C.struct_ibv_wc)(C.calloc(C.size_t(batch), C.sizeof_struct_ibv_wc))
	x.cout = (*C.rs_wc)(C.calloc(C.size_t(batch), C.sizeof_rs_wc))
	if x.cwc == nil || x.cout == nil {
		C.free(unsafe.Pointer(x.cwc))
		C.free(unsafe.Pointer(x.cout))
		C.ibv_destroy_cq(c)
		return nil, fmt.Errorf("%w: cannot allocate the completion buffers of a CQ (%d entries)", fabric.ErrLimit, batch)
	}
	x.outs = unsafe.Slice(x.cout, batch)
	d.cqs[x] = true
	return x, nil
}

// pd implements fabric.PD.
type pd struct {
	d     *device
	pd    *C.struct_ibv_pd
	mrs   map[*mr]bool
	qps   map[*qp]bool
	ahs   map[*ah]bool
	srqs  map[*srq]bool
	xrcds map[*xrcd]bool
	dead  bool
}

func (p *pd) users() int { return len(p.mrs) + len(p.qps) + len(p.ahs) + len(p.srqs) + len(p.xrcds) }

// Dealloc implements fabric.PD.
func (p *pd) Dealloc() error {
	p.d.mu.Lock()
	defer p.d.mu.Unlock()
	if p.dead {
		return fmt.Errorf("%w: protection domain deallocated twice", fabric.ErrClosed)
	}
	if n := p.users(); n > 0 {
		return fmt.Errorf("%w: protection domain still has %d memory regions, queue pairs, address handles, shared receive queues or XRC domains", fabric.ErrBusy, n)
	}
	if rc := C.ibv_dealloc_pd(p.pd); rc != 0 {
		return errnoErr("ibv_dealloc_pd", syscall.Errno(rc), "")
	}
	p.dead = true
	delete(p.d.pds, p)
	return nil
}

// mr implements fabric.MR over page-aligned C memory (never the Go heap,
// which the garbage collector may move and which must not be pinned by the
// NIC): Bytes is a slice over that memory, valid until Dereg.
type mr struct {
	fabric.WaitableBase
	pd   *pd
	mr   *C.struct_ibv_mr
	mem  unsafe.Pointer
	buf  []byte
	dead bool
}

// RegMR implements fabric.PD.
func (p *pd) RegMR(length int, access fabric.Access) (fabric.MR, error) {
	m, _, err := p.TimeRegMR(length, access)
	return m, err
}

// TimeRegMR implements fabric.RegTimer: the memory is allocated and zeroed
// (every page written, so faulted in) first; the duration is the
// ibv_reg_mr call alone, wall clock.
func (p *pd) TimeRegMR(length int, access fabric.Access) (fabric.MR, fabric.Duration, error) {
	p.d.mu.Lock()
	defer p.d.mu.Unlock()
	if p.dead {
		return nil, 0, fmt.Errorf("%w: protection domain deallocated", fabric.ErrClosed)
	}
	if length < 1 || int64(length) > p.d.attr.MaxMRBytes {
		return nil, 0, fmt.Errorf("%w: memory region of %d bytes outside 1..%d (max_mr_size)", fabric.ErrInvalidArg, length, p.d.attr.MaxMRBytes)
	}
	if access&fabric.AccessRemoteWrite != 0 && access&fabric.AccessLocalWrite == 0 {
		return nil, 0, fmt.Errorf("%w: remote write access requires local write access (as in ibv_reg_mr)", fabric.ErrInvalidArg)
	}
	mem := C.rs_alloc(C.size_t(length))
	if mem == nil {
		return nil, 0, fmt.Errorf("%w: cannot allocate %d bytes for a memory region", fabric.ErrLimit, length)
	}
	t0 := time.Now()
	m, err := C.ibv_reg_mr(p.pd, mem, C.size_t(length), C.int(accessOf(access)))
	took := fabric.Duration(time.Since(t0).Nanoseconds()) * fabric.Nanosecond
	if m == nil {
		C.free(mem)
		return nil, 0, errnoErr(fmt.Sprintf("ibv_reg_mr(%d bytes)", length), err, "ENOMEM usually means the locked-memory limit: raise ulimit -l")
	}
	x := &mr{pd: p, mr: m, mem: mem, buf: unsafe.Slice((*byte)(mem), length)}
	p.mrs[x] = true
	return x, took, nil
}

var _ fabric.RegTimer = (*pd)(nil)

// Bytes implements fabric.MR.
func (m *mr) Bytes() []byte { return m.buf }

// Addr implements fabric.MR.
func (m *mr) Addr() uint64 { return uint64(uintptr(m.mem)) }

// Len implements fabric.MR.
func (m *mr) Len() int { return len(m.buf) }

// LKey implements fabric.MR.
func (m *mr) LKey() uint32 { return uint32(m.mr.lkey) }

// RKey implements fabric.MR.
func (m *mr) RKey() uint32 { return uint32(m.mr.rkey) }

// SGE implements fabric.MR.
func (m *mr) SGE(off, n int) fabric.SGE {
	return fabric.SGE{Addr: m.Addr() + uint64(off), Length: uint32(n), LKey: m.LKey()}
}

// Dereg implements fabric.MR: deregisters the region and frees its memory.
// A second call fails with ErrClosed.
func (m *mr) Dereg() error {
	d := m.pd.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if m.dead {
		return fmt.Errorf("%w: memory region deregistered twice", fabric.ErrClosed)
	}
	if rc := C.ibv_dereg_mr(m.mr); rc != 0 {
		return errnoErr("ibv_dereg_mr", syscall.Errno(rc), "")
	}
	m.dead = true
	delete(m.pd.mrs, m)
	C.free(m.mem)
	m.mem, m.buf = nil, nil
	return nil
}

// cq implements fabric.CQ. Poll is serialized by mu (also against queue
// pairs being reset or destroyed, which purge their completions).
type cq struct {
	fabric.WaitableBase
	d     *device
	cq    *C.struct_ibv_cq
	depth int
	batch int

	mu    sync.Mutex
	stage *cqStage
	qps   map[uint32]*qp // queue pairs completing here, by QPN
	cwc   *C.struct_ibv_wc
	cout  *C.rs_wc
	outs  []C.rs_wc
	hwErr error
	qpErr error                 // the event of a queue pair whose error completion was staged
	xsrq  *srq                  // the XRC SRQ whose receives complete here (xrc_ibv.go), or nil
	event atomic.Pointer[error] // this queue's own asynchronous error (an overrun)
	users int
	dead  bool
}

// Depth implements fabric.CQ.
func (c *cq) Depth() int { return c.depth }

// Poll implements fabric.CQ: one cgo call drains the hardware queue (when
// fewer completions are staged than asked for) into the staging ring, from
// which wcs is filled.
func (c *cq) Poll(wcs []fabric.WC) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dead {
		return 0, fmt.Errorf("%w: completion queue destroyed", fabric.ErrClosed)
	}
	if c.stage.n < len(wcs) && c.hwErr == nil {
		c.drain()
	}
	n := c.stage.pop(wcs)
	switch {
	case c.d.fault.Load() != nil:
		return n, *c.d.fault.Load()
	case c.d.portDown.Load() != nil:
		return n, *c.d.portDown.Load()
	case c.event.Load() != nil:
		return n, *c.event.Load()
	case c.qpErr != nil:
		return n, c.qpErr
	case c.stage.overrun:
		return n, fmt.Errorf("%w: %d completions lost on a CQ of depth %d; size the CQ for every outstanding request",
			fabric.ErrCQOverrun, c.stage.lost, c.depth)
	case c.hwErr != nil:
		return n, c.hwErr
	}
	return n, nil
}

func (c *cq) drain() {
	for {
		k := int(C.rs_poll(c.cq, C.int(c.batch), c.cwc, c.cout))
		if k < 0 {
			c.hwErr = fmt.Errorf("%w: ibv_poll_cq failed (%d): the hardware queue is in error, usually after an overrun of its %d entries",
				fabric.ErrCQOverrun, k, c.depth)
			return
		}
		for i := 0; i < k; i++ {
			c.take(&c.outs[i])
		}
		if k < c.batch {
			return
		}
	}
}

// take stages one hardware completion, translated to the caller's terms.
func (c *cq) take(w *C.rs_wc) {
	q := c.qps[uint32(w.qp_num)]
	id := uint64(w.wr_id)
	if q == nil {
		if s := c.xsrq; s != nil && id&recvBit != 0 && id&srqBit != 0 {
			c.takeXRC(w, s) // an XRC_RECV queue pair delivered it
		}
		return // else its queue pair was destroyed
	}
	recv := id&recvBit != 0
	seq := id &^ recvBit
	st := staged{ring: q.sq, upTo: seq + 1}
	var e wqEntry
	var ok bool
	switch {
	case recv && id&srqBit != 0 && q.srq != nil: // its slot in the shared queue, whichever queue pair took it
		st = staged{srq: q.srq.slots, tag: seq}
		e, ok = q.srq.slots.lookup(seq)
	case recv:
		st.ring = q.rq
		e, ok = q.rq.lookup(seq)
	default:
		e, ok = q.sq.lookup(seq)
	}
	if !ok {
		return // from before the queue pair was last reset
	}
	status := uint32(w.status)
	if status != ibvWCSuccess && c.qpErr == nil {
		if e := q.event.Load(); e != nil {
			c.qpErr = *e
		}
	}
	wc := fabric.WC{ID: e.id, Status: statusOf(status), QPN: q.qpn, VendorErr: uint32(w.vendor_err)}
	if recv {
		wc.Op = recvOpOf(status, uint32(w.opcode))
		if status == ibvWCSuccess {
			wc.Bytes = int(w.byte_len)
			if uint32(w.wc_flags)&ibvWCWithImm != 0 {
				wc.HasImm, wc.Imm = true, uint32(w.imm)
			}
			if q.typ == fabric.UD {
				wc.SrcQP, wc.SrcLID = uint32(w.src_qp), uint16(w.slid)
			}
		}
	} else {
		wc.Op = e.op
		if status == ibvWCSuccess {
			wc.Bytes = int(e.length)
		}
	}
	st.wc = wc
	c.stage.push(st)
}

// Destroy implements fabric.CQ. It fails with ErrBusy while queue pairs use
// the queue and with ErrClosed the second time.
func (c *cq) Destroy() error {
	c.d.mu.Lock()
	defer c.d.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dead {
		return fmt.Errorf("%w: completion queue destroyed twice", fabric.ErrClosed)
	}
	if c.users > 0 {
		return fmt.Errorf("%w: completion queue still used by %d queue pairs", fabric.ErrBusy, c.users)
	}
	if rc := C.ibv_destroy_cq(c.cq); rc != 0 {
		return errnoErr("ibv_destroy_cq", syscall.Errno(rc), "")
	}
	c.dead = true
	delete(c.d.cqs, c)
	C.free(unsafe.Pointer(c.cwc))
	C.free(unsafe.Pointer(c.cout))
	c.cwc, c.cout, c.outs = nil, nil, nil
	return nil
}

// ah implements fabric.AH.
type ah struct {
	pd   *pd
	ah   *C.struct_ibv_ah
	dest fabric.Address
	dead bool
}

// path is the addressing of dest from this device: GID (global routing) on
// RoCE or when asked for, else the LID.
func (d *device) path(dest fabric.Address) C.rs_path {
	var p C.rs_path
	p.dlid = C.uint16_t(dest.LID)
	p.port = C.uint8_t(d.port)
	p.sl = C.uint8_t(d.route.ServiceLevel)
	if dest.SL != 0 { // the address's own service level wins over the configured path's
		p.sl = C.uint8_t(dest.SL)
	}
	p.static_rate = C.uint8_t(d.route.StaticRate)
	if dest.UseGID || d.ethernet() {
		p.use_gid = 1
		p.sgid_index = C.uint8_t(d.gidIndex)
		p.hop_limit = C.uint8_t(d.route.HopLimit)
		p.traffic_class = C.uint8_t(d.route.TrafficClass)
		for i, b := range dest.GID {
			p.dgid[i] = C.uint8_t(b)
		}
	}
	return p
}

// CreateAH implements fabric.PD.
func (p *pd) CreateAH(dest fabric.Address) (fabric.AH, error) {
	p.d.mu.Lock()
	defer p.d.mu.Unlock()
	if p.dead {
		return nil, fmt.Errorf("%w: protection domain deallocated", fabric.ErrClosed)
	}
	if !dest.UseGID && !p.d.ethernet() && dest.LID == 0 {
		return nil, fmt.Errorf("%w: address handle for LID 0 (an InfiniBand port needs a LID, or UseGID)", fabric.ErrInvalidArg)
	}
	path := p.d.path(dest)
	a, err := C.rs_create_ah(p.pd, &path)
	if a == nil {
		return nil, errnoErr("ibv_create_ah", err, "on RoCE the destination GID must be reachable (neighbour resolution)")
	}
	x := &ah{pd: p, ah: a, dest: dest}
	p.ahs[x] = true
	return x, nil
}

// Dest implements fabric.AH.
func (a *ah) Dest() fabric.Address { return a.dest }

// Destroy implements fabric.AH.
func (a *ah) Destroy() error {
	a.pd.d.mu.Lock()
	defer a.pd.d.mu.Unlock()
	if a.dead {
		return fmt.Errorf("%w: address handle destroyed twice", fabric.ErrClosed)
	}
	if rc := C.ibv_destroy_ah(a.ah); rc != 0 {
		return errnoErr("ibv_destroy_ah", syscall.Errno(rc), "")
	}
	a.dead = true
	delete(a.pd.ahs, a)
	return nil
}

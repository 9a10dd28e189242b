package algos

import (
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// MWOptions configure the RDMA Write shuffle middleware (OpenRDMAMW).
// Config.MsgBytes is the size of each worker pair's in and out ring (seed
// 003: 64 KB).
type MWOptions struct {
	// Threshold is how many unsent bytes an out ring must hold before a
	// write is posted (MW-DQE: 16 KB; a flush at the end sends less).
	Threshold int
	// NoticeBytes is how many bytes a receiver consumes from an in ring
	// before it tells the sender the space is free (default a quarter of
	// the ring; a receiver that has consumed everything it was told about
	// always tells at once).
	NoticeBytes int
	// RecordBytes is the capacity of the workers' staging buffers (Acquire),
	// whose tuples are appended whole to the rings (default 1 KiB; at most
	// a quarter of the ring minus the span header).
	RecordBytes int
	// Stack, if set, charges the host's CPU for an RDMA stack in software
	// (soft-iWARP: RDMA over the kernel's TCP): each posted write or notice
	// costs a system call and the transmit path per segment on the posting
	// thread; each write's bytes cost the receive path per segment and a
	// copy on the receiver's network thread.
	Stack *IPoIBCosts
}

// SoftIWARPCosts are the software RDMA stack's CPU costs of the iwarp-1g
// experiments (estimates, docs/architecture.md "Peer designs"): the IPoIB
// baseline's kernel costs with 64 KB segments (TCP segmentation and
// receive offloads of a Gigabit NIC), no copy on transmit (siw sends pages
// in place) and one on receive (placement from the socket buffers).
var SoftIWARPCosts = IPoIBCosts{SyscallCycles: 1200, TxSegmentCycles: 5000, RxSegmentCycles: 7000, SegmentBytes: 65536, SendCopies: 0, RecvCopies: 1}

// GbESocketCosts are the kernel's costs of TCP sockets on a Gigabit
// Ethernet NIC (the Sockets-MW baseline): as SoftIWARPCosts with the copy
// into the socket buffer (checksums are offloaded).
var GbESocketCosts = IPoIBCosts{SyscallCycles: 1200, TxSegmentCycles: 5000, RxSegmentCycles: 7000, SegmentBytes: 65536, SendCopies: 1, RecvCopies: 1}

const (
	mwSpanHeader  = HeaderBytes
	mwNoticeEntry = 16
	// mwNoticeMax entries per notice keep it within 128 bytes, which the
	// simulator's size-only mode moves whole (fabric.SizeOnlyWindow at
	// each end); more wait for the next notice.
	mwNoticeMax   = (2*fabric.SizeOnlyWindow - 8) / mwNoticeEntry
	mwNoticeRecvs = 16
	mwWritten     = 1
	mwFreed       = 2
	mwEnd         = 3
	mwWrWrite     = 1 << 48
	mwWrNotice    = 2 << 48
)

// mw is the RDMA Write shuffle middleware of MW-DQE as a shared endpoint:
// one RC connection and one registered region per pair of nodes; the
// region holds an out ring for every (sending thread, destination) pair and
// an in ring for every (source thread, this node) pair, of Config.MsgBytes
// each. A worker appends its staging buffer's tuples to its out ring for
// the destination (a local destination gets the buffer at once, without
// the network); once Threshold bytes are unsent, no write of that ring is
// in flight and the receiver has room, the whole span is RDMA-written to
// the same offset of the matching in ring, preceded by a span header
// (payload bytes, tuples, checksum). The network thread handles write
// completions (freeing out-ring space, posting a deferred write), sends
// "data written" and "space freed" notices, batched per connection in one
// two-sided Send with at most one in flight, and takes the peers' notices.
// The last stream's end flushes every ring regardless of the threshold and
// sends an end notice.
type mw struct {
	waitList       []fabric.Waitable // what the progress wait watches, built on first use
	opt            MWOptions
	cfg            Config
	node           fabric.Node
	me             int
	n              int
	t              int // rings per direction per pair: the sharing threads
	ring           int
	progressThread // the network thread
	pd             fabric.PD
	scq            fabric.CQ
	rcq            fabric.CQ
	qps            []fabric.QP
	mrs            []fabric.MR // per peer: the pair's region
	rem            []fabric.QPInfo
	info           EndpointInfo
	wcs            []fabric.WC
	own            owned // what the endpoint created, freed by a failed Open or by Close

	outOff, inOff, nsendOff, nrecvOff, noticeBytes, regionBytes int

	stage      []*Buffer // staging buffers, Acquire
	stageMR    fabric.MR
	retain     []int
	free       []int
	slots      map[string]int // sending thread -> its ring index
	out, in    [][]mwRing     // [peer][slot]
	flushing   []bool         // end of stream queued for the peer
	endSent    []bool
	srcEnded   []bool      // the peer's end notice arrived
	pend       [][]mwEntry // notices to send, per peer
	noticeBusy []bool
	signaled   int
	ended      []bool // PutData saw Depleted for the node

	ready     deliveries
	doneCount int
	closedSrc []bool

	avail, space fabric.Signal // data arrived / ring space freed, or the network thread exited
	txLock       fabric.Mutex
	scan         int
}

type mwEntry struct {
	kind, slot uint32
	pos        uint64
}

type mwSpan struct {
	start, end int64
	released   bool
}

// mwRing is one ring's state; positions are absolute byte counts.
type mwRing struct {
	base int // offset of the ring in the pair's region
	// Out ring.
	head                 int64 // open span's header position, or -1
	fill, written, acked int64
	freed                int64 // the receiver's consumed position (notices)
	wrEnd                int64
	inflight, closing    bool
	n                    int
	tuples, sum          uint64
	// In ring.
	avail, read, consumed, notified int64
	spans                           []mwSpan
}

// OpenRDMAMW opens the RDMA Write middleware endpoint on the calling
// thread's node and starts its network thread on the node's last core.
func OpenRDMAMW(th fabric.Thread, cfg Config, opt MWOptions) (Endpoint, error) {
	if err := cfg.check(0); err != nil {
		return nil, err
	}
	if opt.Threshold == 0 {
		opt.Threshold = 16 << 10
	}
	if opt.NoticeBytes == 0 {
		opt.NoticeBytes = cfg.MsgBytes / 4
	}
	if opt.RecordBytes == 0 {
		opt.RecordBytes = min(1<<10, cfg.MsgBytes/4-mwSpanHeader)
	}
	r := cfg.MsgBytes
	switch {
	case cfg.Adaptive != nil:
		return nil, fmt.Errorf("%w: RDMA-MW: adaptive buffers are not supported: each worker pair has one fixed ring (MW-DQE)", ErrConfig)
	case r%64 != 0:
		return nil, fmt.Errorf("%w: RDMA-MW: ring of %d bytes (the message size) must be a multiple of 64", ErrConfig, r)
	case r/4 < mwSpanHeader+TupleBytes:
		least := (4*(mwSpanHeader+TupleBytes) + 63) / 64 * 64
		return nil, fmt.Errorf("%w: RDMA-MW: ring of %d bytes (the message size) too small: a quarter of it must hold a staging buffer of one %d-byte tuple and its %d-byte header; use a message size of at least %d", ErrConfig, r, TupleBytes, mwSpanHeader, least)
	case opt.RecordBytes < TupleBytes || opt.RecordBytes%TupleBytes != 0 || mwSpanHeader+opt.RecordBytes > r/4:
		return nil, fmt.Errorf("%w: RDMA-MW: staging buffers of %d bytes: need a multiple of %d bytes, at most a quarter of the %d-byte ring less %d", ErrConfig, opt.RecordBytes, TupleBytes, r, mwSpanHeader)
	case opt.Threshold < 1 || opt.Threshold > r/2:
		return nil, fmt.Errorf("%w: RDMA-MW: write threshold %d bytes outside 1..%d (half the %d-byte ring)", ErrConfig, opt.Threshold, r/2, r)
	case opt.NoticeBytes < 1 || opt.NoticeBytes > r:
		return nil, fmt.Errorf("%w: RDMA-MW: space-freed notice every %d bytes outside 1..%d (the ring)", ErrConfig, opt.NoticeBytes, r)
	}
	if c := opt.Stack; c != nil && (c.SegmentBytes < 1 || c.SyscallCycles < 0 || c.TxSegmentCycles < 0 || c.RxSegmentCycles < 0 || c.SendCopies < 0 || c.RecvCopies < 0) {
		return nil, fmt.Errorf("%w: RDMA-MW: stack costs must not be negative and segments must hold a byte: %+v", ErrConfig, *c)
	}
	e := &mw{opt: opt, cfg: cfg, node: th.Node(), me: th.Node().ID(), n: cfg.Nodes, t: cfg.Threads, ring: r, slots: map[string]int{}}
	e.mu, e.txLock = e.node.NewMutex(), e.node.NewMutex()
	e.label("RDMA-MW", "network thread", cfg.Tag, e.me)
	e.work, e.avail, e.space, e.exit = e.node.NewSignal(), e.node.NewSignal(), e.node.NewSignal(), e.node.NewSignal()
	e.wcs = make([]fabric.WC, 64)
	if err := e.setup(th); err != nil {
		return nil, fmt.Errorf("algos: open RDMA-MW endpoint %d on node %d: %w", cfg.Tag, e.me, freed(err, e.own.free()))
	}
	th.Spawn(fmt.Sprintf("network%d", cfg.Tag), e.node.Cores()-1, e.network)
	return e, nil
}

func (e *mw) setup(th fabric.Thread) error {
	n, t, r := e.n, e.t, e.ring
	dev := e.node.Device()
	var err error
	if e.pd, err = dev.AllocPD(); err != nil {
		return err
	}
	e.own.pd(e.pd)
	if e.scq, err = dev.CreateCQ(min(n*(t+2)+64, dev.Attr().MaxCQE)); err != nil {
		return err
	}
	e.own.cq(e.scq)
	if e.rcq, err = dev.CreateCQ(min(n*mwNoticeRecvs+16, dev.Attr().MaxCQE)); err != nil {
		return err
	}
	e.own.cq(e.rcq)
	e.noticeBytes = 8 + mwNoticeEntry*mwNoticeMax
	e.outOff, e.inOff = 0, t*r
	e.nsendOff = 2 * t * r
	e.nrecvOff = e.nsendOff + e.noticeBytes
	e.regionBytes = e.nrecvOff + mwNoticeRecvs*e.noticeBytes
	// Staging buffers: each thread's partly filled buffer per destination,
	// and as many again in flight to the local destination.
	nstage := 2*t*n + 2*t
	if e.stageMR, err = e.pd.RegMR(nstage*e.opt.RecordBytes, fabric.AccessLocalWrite); err != nil {
		return err
	}
	e.own.mr(e.stageMR)
	mem := e.stageMR.Bytes()
	for i := 0; i < nstage; i++ {
		e.stage = append(e.stage, &Buffer{Data: mem[i*e.opt.RecordBytes : (i+1)*e.opt.RecordBytes], id: i, mr: e.stageMR, off: i * e.opt.RecordBytes})
		e.free = append(e.free, i)
	}
	e.retain = make([]int, nstage)
	e.info.RegisteredBytes = int64(nstage * e.opt.RecordBytes)
	e.qps, e.mrs = make([]fabric.QP, n), make([]fabric.MR, n)
	e.out, e.in = make([][]mwRing, n), make([][]mwRing, n)
	e.flushing, e.endSent, e.srcEnded, e.noticeBusy = make([]bool, n), make([]bool, n), make([]bool, n), make([]bool, n)
	e.ended, e.closedSrc = make([]bool, n), make([]bool, n)
	e.pend = make([][]mwEntry, n)
	var blob []byte
	for j := 0; j < n; j++ {
		info := fabric.QPInfo{Node: uint32(e.me), Bytes: uint64(e.regionBytes)}
		if j != e.me {
			if e.mrs[j], err = e.pd.RegMR(e.regionBytes, fabric.AccessLocalWrite|fabric.AccessRemoteWrite); err != nil {
				return err
			}
			e.own.mr(e.mrs[j])
			e.info.RegisteredBytes += int64(e.regionBytes)
			qp, err := newRCQP(&e.own, e.pd, e.scq, e.rcq, fabric.QPCaps{MaxSendWR: t + 8, MaxRecvWR: mwNoticeRecvs, MaxInline: HeaderBytes},
				fabric.AccessRemoteWrite)
			if err != nil {
				return err
			}
			e.qps[j] = qp
			for k := 0; k < mwNoticeRecvs; k++ {
				if err := e.postNoticeRecv(j, k); err != nil {
					return err
				}
			}
			e.out[j], e.in[j] = make([]mwRing, t), make([]mwRing, t)
			for k := 0; k < t; k++ {
				e.out[j][k] = mwRing{base: e.outOff + k*r, head: -1}
				e.in[j][k] = mwRing{base: e.inOff + k*r}
			}
			qi := qp.Info()
			info.QPN, info.LID, info.GID = qi.QPN, qi.LID, qi.GID
			info.PSN = rcPSN(e.me, j)
			info.Addr, info.RKey = e.mrs[j].Addr(), e.mrs[j].RKey()
		}
		enc, _ := info.MarshalBinary()
		blob = append(blob, enc...)
	}
	e.info.QPs = n - 1
	e.rem, err = connectPeers(e.node, fmt.Sprintf("rdmamw/%d", e.cfg.Tag), blob, e.qps, uint64(e.regionBytes), false, e.cfg.SL)
	return err
}

func (e *mw) postNoticeRecv(j, k int) error {
	_, err := e.qps[j].PostRecv([]fabric.RecvWR{{ID: uint64(j*mwNoticeRecvs + k), Local: e.mrs[j].SGE(e.nrecvOff+k*e.noticeBytes, e.noticeBytes)}})
	return err
}

// spanStart is where a span that would start at q starts: a span never
// starts where a header and a whole staging buffer no longer fit before
// the end of the ring (both ends apply the same rule).
func (e *mw) spanStart(q int64) int64 {
	r := int64(e.ring)
	if left := r - q%r; left < int64(mwSpanHeader+e.opt.RecordBytes) {
		return q + left
	}
	return q
}

func (e *mw) waitOn(th fabric.Thread, deadline fabric.Time, what string, w fabric.Waitable) error {
	if err := e.failed(); err != nil {
		return err
	}
	if th.Now() >= deadline {
		return fmt.Errorf("algos: RDMA-MW endpoint %d on node %d: no progress for %v while %s", e.cfg.Tag, e.me, e.cfg.Timeout, what)
	}
	waitReleased(th, e.mu, deadline, w)
	return nil
}

// cpu spends software-stack work on th without holding the lock.
func (e *mw) cpu(th fabric.Thread, cycles int64, copyBytes int, serial bool) {
	work := func() {
		th.Compute(cycles)
		if copyBytes > 0 {
			th.Charge(fabric.WorkCopy, copyBytes)
		}
	}
	withoutLock(e.mu, func() {
		if serial {
			withLock(e.txLock, work)
		} else {
			work()
		}
	})
}

func segs(c *IPoIBCosts, n int) int64 { return int64(max(1, (n+c.SegmentBytes-1)/c.SegmentBytes)) }

func (e *mw) Acquire(th fabric.Thread) (*Buffer, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	deadline := th.Now().Add(e.cfg.Timeout)
	for len(e.free) == 0 {
		if err := e.waitOn(th, deadline, "waiting for a free staging buffer", e.avail); err != nil {
			return nil, err
		}
	}
	i := e.free[len(e.free)-1]
	e.free = e.free[:len(e.free)-1]
	e.retain[i] = 0
	b := e.stage[i]
	b.N, b.Tuples, b.Sum = 0, 0, 0
	return b, nil
}

func (e *mw) drop(id int) {
	if e.retain[id]--; e.retain[id] <= 0 {
		e.free = append(e.free, id)
		e.avail.Notify()
	}
}

func (e *mw) slot(th fabric.Thread) (int, error) {
	if k, ok := e.slots[th.Name()]; ok {
		return k, nil
	}
	if len(e.slots) == e.t {
		return 0, fmt.Errorf("%w: RDMA-MW endpoint shared by %d threads: thread %q is one more", ErrConfig, e.t, th.Name())
	}
	e.slots[th.Name()] = len(e.slots)
	return len(e.slots) - 1, nil
}

// PutData appends b's tuples to the calling thread's out ring of every
// destination (waiting for ring space) and posts a write when the
// threshold is reached; Depleted flushes every ring to those destinations.
func (e *mw) PutData(th fabric.Thread, b *Buffer, dests []int, st State) error {
	if b == nil || b.id < 0 || b.id >= len(e.stage) || e.stage[b.id] != b {
		return fmt.Errorf("%w: PutData with a buffer this endpoint did not lend", ErrConfig)
	}
	if b.N < 0 || b.N > len(b.Data) || b.N%TupleBytes != 0 {
		return fmt.Errorf("%w: buffer holds %d bytes, capacity %d, tuples of %d bytes", ErrConfig, b.N, len(b.Data), TupleBytes)
	}
	for _, d := range dests {
		if d < 0 || d >= e.n {
			return fmt.Errorf("%w: destination node %d in a %d-node cluster", ErrConfig, d, e.n)
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if err := e.failed(); err != nil {
		return err
	}
	k, err := e.slot(th)
	if err != nil {
		return err
	}
	e.retain[b.id]++
	defer e.drop(b.id)
	for _, d := range dests {
		if e.ended[d] {
			return fmt.Errorf("%w: PutData to node %d after its end of stream", ErrConfig, d)
		}
		if d == e.me {
			e.retain[b.id]++
			dl := Delivery{Src: d, Data: b.Data[:b.N], N: b.N, Tuples: b.Tuples, Sum: b.Sum, id: -1 - b.id}
			if st == Depleted {
				dl.State = Depleted
				e.ended[d], e.closedSrc[d] = true, true
				e.doneCount++
			}
			e.ready.push(dl)
			e.avail.Notify()
			continue
		}
		if b.N > 0 {
			if err := e.appendTo(th, d, k, b); err != nil {
				return err
			}
		}
		if st == Depleted {
			e.ended[d], e.flushing[d] = true, true
			for kk := range e.out[d] {
				if err := e.tryWrite(th, d, kk); err != nil {
					return err
				}
			}
			e.work.Notify()
		}
	}
	return nil
}

// appendTo appends b's payload to out ring (d, k).
func (e *mw) appendTo(th fabric.Thread, d, k int, b *Buffer) error {
	r := int64(e.ring)
	deadline := th.Now().Add(e.cfg.Timeout)
	for {
		o := &e.out[d][k]
		switch {
		case o.closing:
			// A span that reached the end of the ring waits to be written.
		case o.head < 0:
			q := e.spanStart(o.fill)
			if q+mwSpanHeader+int64(b.N) <= o.acked+r {
				o.head, o.fill = q, q+mwSpanHeader
				o.n, o.tuples, o.sum = 0, 0, 0
				continue
			}
		case o.head%r+(o.fill-o.head)+int64(b.N) > r:
			o.closing = true // the buffer would cross the end: write the span as it is
			if err := e.tryWrite(th, d, k); err != nil {
				return err
			}
			continue
		case o.fill+int64(b.N) <= o.acked+r:
			mem := e.mrs[d].Bytes()
			at := o.base + int(o.fill%r)
			if e.node.Payload() {
				copy(mem[at:at+b.N], b.Data[:b.N])
			}
			o.fill += int64(b.N)
			o.n += b.N
			o.tuples += b.Tuples
			o.sum += b.Sum
			return e.tryWrite(th, d, k)
		}
		if err := e.waitOn(th, deadline, fmt.Sprintf("waiting for room in the ring to node %d (head %d, filled %d, written %d, acknowledged %d, freed %d, in flight %v, closing %v)",
			d, o.head, o.fill, o.written, o.acked, o.freed, o.inflight, o.closing), e.space); err != nil {
			return err
		}
	}
}

// tryWrite posts ring (d, k)'s open span if it may go: no write of the ring
// in flight, the threshold reached (or the ring flushing or closing), and
// room for it in the receiver's ring.
func (e *mw) tryWrite(th fabric.Thread, d, k int) error {
	o := &e.out[d][k]
	if o.inflight || o.head < 0 || o.n == 0 && !o.closing {
		if o.head >= 0 && o.n == 0 && e.flushing[d] && !o.inflight {
			// An empty span opened and never filled: give it back (every
			// earlier byte was written).
			o.fill, o.head = o.written, -1
		}
		return nil
	}
	if o.fill-o.written < int64(e.opt.Threshold) && !e.flushing[d] && !o.closing {
		return nil
	}
	if o.fill-o.freed > int64(e.ring) {
		return nil // the receiver has not freed the room yet
	}
	h := header{src: e.me, n: o.n, tuples: o.tuples, sum: o.sum, seq: uint64(o.head)}
	mem := e.mrs[d].Bytes()
	at := o.base + int(o.head%int64(e.ring))
	h.put(mem[at:])
	start, end := o.head, o.fill
	o.written, o.wrEnd, o.inflight, o.closing, o.head = end, end, true, false, -1
	length := int(end - start)
	if c := e.opt.Stack; c != nil {
		e.cpu(th, c.SyscallCycles+segs(c, length)*c.TxSegmentCycles, c.SendCopies*length, true)
	}
	wr := fabric.SendWR{ID: mwWrWrite | uint64(d*e.t+k), Op: fabric.OpWrite, Local: e.mrs[d].SGE(at, length), Flags: fabric.Signaled,
		RemoteAddr: e.rem[d].Addr + uint64(e.inOff+k*e.ring+int(start%int64(e.ring))), RKey: e.rem[d].RKey}
	if _, err := e.qps[d].PostSend([]fabric.SendWR{wr}); err != nil {
		return err
	}
	e.signaled++
	e.info.Transfers++
	e.space.Notify()
	return nil
}

func (e *mw) GetData(th fabric.Thread) (Delivery, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	deadline := th.Now().Add(e.cfg.Timeout)
	for {
		if d, ok := e.ready.pop(); ok {
			return d, nil
		}
		if d, ok, err := e.take(); err != nil || ok {
			return d, err
		}
		if e.doneCount == e.n {
			return Delivery{End: true}, nil
		}
		if err := e.waitOn(th, deadline, fmt.Sprintf("receiving (%d of %d sources ended)", e.doneCount, e.n), e.avail); err != nil {
			return Delivery{}, err
		}
	}
}

// take hands out the next span written into an in ring, rings in turn.
func (e *mw) take() (Delivery, bool, error) {
	total := e.n * e.t
	for i := 0; i < total; i++ {
		idx := (e.scan + i) % total
		j, k := idx/e.t, idx%e.t
		if j == e.me || e.closedSrc[j] {
			continue
		}
		in := &e.in[j][k]
		if in.read >= in.avail {
			continue
		}
		e.scan = idx + 1
		r := int64(e.ring)
		at := in.base + int(in.read%r)
		mem := e.mrs[j].Bytes()
		var h header
		if err := h.get(mem[at:at+mwSpanHeader], e.ring-mwSpanHeader); err != nil {
			return Delivery{}, false, fmt.Errorf("from node %d: %w", j, err)
		}
		if h.src != j || h.seq != uint64(in.read) || in.read%r+int64(mwSpanHeader+h.n) > r {
			return Delivery{}, false, fmt.Errorf("%w: span from node %d at %d: header says node %d, position %d, %d bytes", ErrBadMessage, j, in.read, h.src, h.seq, h.n)
		}
		end := in.read + int64(mwSpanHeader+h.n)
		d := Delivery{Src: j, Data: mem[at+mwSpanHeader : at+mwSpanHeader+h.n], N: h.n, Tuples: h.tuples, Sum: h.sum, id: int(in.read)<<12 | idx}
		in.spans = append(in.spans, mwSpan{start: in.read, end: end})
		in.read = e.spanStart(end)
		e.checkEnd(j)
		return d, true, nil
	}
	return Delivery{}, false, nil
}

// checkEnd counts source j as ended once its end notice arrived and every
// span it announced has been handed out.
func (e *mw) checkEnd(j int) {
	if !e.srcEnded[j] || e.closedSrc[j] {
		return
	}
	for k := range e.in[j] {
		if e.in[j][k].read < e.in[j][k].avail {
			return
		}
	}
	e.closedSrc[j] = true
	e.doneCount++
	e.avail.Notify()
}

func (e *mw) Release(th fabric.Thread, d Delivery) error {
	if d.End {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if id, local, err := localDelivery(d, e.me, len(e.stage)); local {
		if err == nil {
			e.drop(id)
		}
		return err
	}
	idx, pos := d.id&0xfff, int64(d.id>>12)
	j, k := idx/e.t, idx%e.t
	if idx >= e.n*e.t || j != d.Src || j == e.me {
		return errForeignDelivery
	}
	in := &e.in[j][k]
	found := false
	for i := range in.spans {
		if in.spans[i].start == pos && !in.spans[i].released {
			in.spans[i].released, found = true, true
			break
		}
	}
	if !found {
		return errForeignDelivery
	}
	for len(in.spans) > 0 && in.spans[0].released {
		in.consumed = e.spanStart(in.spans[0].end)
		in.spans = in.spans[1:]
	}
	drained := in.consumed >= in.avail
	if in.consumed > in.notified && (in.consumed-in.notified >= int64(e.opt.NoticeBytes) || drained) && !e.srcEnded[j] {
		in.notified = in.consumed
		e.queueNotice(j, mwEntry{kind: mwFreed, slot: uint32(k), pos: uint64(in.consumed)})
	}
	return nil
}

// queueNotice adds an entry to the next notice to peer j (an entry of the
// same kind and ring replaces the older one: positions are absolute).
func (e *mw) queueNotice(j int, x mwEntry) {
	for i := range e.pend[j] {
		if e.pend[j][i].kind == x.kind && e.pend[j][i].slot == x.slot {
			e.pend[j][i] = x
			e.work.Notify()
			return
		}
	}
	e.pend[j] = append(e.pend[j], x)
	e.work.Notify()
}

// Close stops the network thread once every ring is flushed and every
// notice sent, meets the other nodes and frees everything. Should the
// network thread have failed, or the barrier fail, it still frees
// everything (the thread has exited either way), and returns that error.
func (e *mw) Close(th fabric.Thread) error {
	return e.closeWith(th, e.node, fmt.Sprintf("rdmamw/%d/down", e.cfg.Tag), &e.own)
}

func (e *mw) Info() EndpointInfo {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.info
}

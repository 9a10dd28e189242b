package algos

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/flowctl"
)

// Schedule is how the HyPer-style multiplexer orders its sends.
type Schedule string

// Schedules of the multiplexer.
const (
	// ScheduleRR: round-robin phases (Roediger15 §3.2.3). In phase p (from
	// 1) node i sends up to PhaseMessages messages to node
	// (i + ((p-1) mod (n-1)) + 1) mod n, so that it receives from the
	// mirror node; every node waits for its phase's sends to complete and
	// then for every other node to finish the phase (a barrier of 8-byte
	// RDMA Writes) before the next phase.
	ScheduleRR Schedule = "rr"
	// ScheduleNone: unscheduled sending: queued messages go out in the
	// order the workers handed them over, to whichever destination has
	// credit, with InFlight messages in flight per node.
	ScheduleNone Schedule = "none"
)

// HyPerOptions configure the HyPer-style multiplexer (OpenHyPer).
type HyPerOptions struct {
	Schedule Schedule // default ScheduleRR
	// PhaseMessages is how many messages a node sends to one target
	// between two barriers (Roediger15: 8 messages of 512 KB). Default 8.
	PhaseMessages int
	// InFlight is how many messages an unscheduled multiplexer keeps in
	// flight (default 2, as perftest's alltoall_bw --schedule random).
	InFlight int
	// RecvBuffers is how many receive buffers the multiplexer posts per
	// source (default: PhaseMessages, or Buffers x Threads if larger).
	RecvBuffers int
	// TCP, if set, makes the multiplexer send and receive through the
	// kernel's TCP stack over IPoIB instead of RDMA: every send() and
	// recv() costs what the IPoIB baseline charges, on the multiplexer's
	// own thread (Roediger15's TCP/IPoIB engine).
	TCP *IPoIBCosts
	// Observe, if set, is called for every data message the multiplexer
	// posts: the phase (0 when unscheduled) and the destination (tests).
	Observe func(node int, phase uint64, dest int, at fabric.Time)
}

func (o *HyPerOptions) fill(cfg Config) error {
	if o.Schedule == "" {
		o.Schedule = ScheduleRR
	}
	if o.PhaseMessages == 0 {
		o.PhaseMessages = 8
	}
	if o.InFlight == 0 {
		o.InFlight = 2
	}
	if o.RecvBuffers == 0 {
		o.RecvBuffers = max(o.PhaseMessages, cfg.Buffers*cfg.Threads)
	}
	switch {
	case o.Schedule != ScheduleRR && o.Schedule != ScheduleNone:
		return fmt.Errorf("%w: HyPer schedule %q: choose %q (round-robin phases) or %q (unscheduled)", ErrConfig, o.Schedule, ScheduleRR, ScheduleNone)
	case o.PhaseMessages < 1:
		return fmt.Errorf("%w: HyPer: %d messages per phase, need at least 1", ErrConfig, o.PhaseMessages)
	case o.InFlight < 1:
		return fmt.Errorf("%w: HyPer: %d messages in flight, need at least 1", ErrConfig, o.InFlight)
	case o.RecvBuffers < 1:
		return fmt.Errorf("%w: HyPer: %d receive buffers per source, need at least 1", ErrConfig, o.RecvBuffers)
	case cfg.CreditEvery > o.RecvBuffers:
		return fmt.Errorf("%w: HyPer: credit every %d receives needs at least that many receive buffers per source, not %d", ErrConfig, cfg.CreditEvery, o.RecvBuffers)
	case cfg.Adaptive != nil:
		return fmt.Errorf("%w: HyPer: adaptive buffers are not supported: the multiplexer's message pool is fixed (Roediger15 §3.2.2)", ErrConfig)
	}
	if o.TCP != nil {
		c := o.TCP
		if c.SegmentBytes < 1 || c.SyscallCycles < 0 || c.TxSegmentCycles < 0 || c.RxSegmentCycles < 0 || c.SendCopies < 0 || c.RecvCopies < 0 {
			return fmt.Errorf("%w: HyPer over TCP: costs must not be negative and segments must hold a byte: %+v", ErrConfig, *c)
		}
	}
	return nil
}

// hyper is the HyPer-style communication multiplexer of Roediger15 §3.2.2
// as a shared endpoint: workers fill messages taken from the node's
// registered pool and hand them over with PutData, which only queues them
// (a local destination gets the message at once, without the network); a
// dedicated multiplexer thread owns every connection (one RC queue pair per
// other node), sends the queued messages with two-sided RC Sends of their
// used bytes only, posts the receives, hands received messages to the
// workers (GetData) and reposts them when released. A message sent to
// several destinations carries a retain count and returns to the pool when
// the last send completed (and, for the local destination, the last
// Release). Flow control: credit per source (absolute counts of posted
// receives written back by RDMA Write, as in MQ/SR); the queues are
// bounded by the pool. Network scheduling: see Schedule.
type hyper struct {
	waitList       []fabric.Waitable // what the progress wait watches, built on first use
	opt            HyPerOptions
	cfg            Config
	node           fabric.Node
	me             int
	n              int
	progressThread // the multiplexer
	pd             fabric.PD
	scq            fabric.CQ
	rcq            fabric.CQ
	mr             fabric.MR
	qps            []fabric.QP // per node; nil for this node
	info           EndpointInfo
	wcs            []fabric.WC
	own            owned // what the endpoint created, freed by a failed Open or by Close

	recvPer                                                  int // receive buffers per source
	sendOff, recvOff, creditOff, barrierOff, scratchOff, end int
	remote                                                   []fabric.QPInfo // per peer: its region (credit and barrier words)

	bufs   []*Buffer
	retain []int // per send buffer: sends and local deliveries outstanding
	free   []int

	queue   [][]qmsg // per destination: messages handed over, oldest first
	qhead   []int
	queued  int
	seq     uint64
	ended   []bool // the Depleted message to this destination is queued
	sentEnd []bool // ... and posted
	cs      []flowctl.CreditSender
	cr      []*flowctl.CreditReceiver

	ready     deliveries
	closedSrc []bool
	doneCount int
	reposts   []int // released receive slots for the multiplexer to repost

	avail fabric.Signal // a send buffer was freed, or the multiplexer exited

	// Multiplexer state.
	phase     uint64 // current phase (round-robin), from 1
	stage     int
	phaseSent int
	inflight  int // data sends posted and not completed
	signaled  int // every send is signaled
	done      bool
	doneSent  bool
	lastMove  fabric.Time
}

type qmsg struct {
	id  int
	seq uint64
	st  State
}

const (
	stSend = iota
	stDrain
	stBarrier
)

const (
	hyWrData   = 1 << 48
	hyWrCtl    = 2 << 48
	barrierEnd = math.MaxUint64 // a node that will send nothing more
)

// OpenHyPer opens the HyPer-style multiplexer endpoint on the calling
// thread's node and starts its multiplexer thread on the node's last core.
// cfg.Threads threads share it. Every node must open endpoint cfg.Tag at
// the same time.
func OpenHyPer(th fabric.Thread, cfg Config, opt HyPerOptions) (Endpoint, error) {
	if err := cfg.check(0); err != nil {
		return nil, err
	}
	if err := opt.fill(cfg); err != nil {
		return nil, err
	}
	e := &hyper{opt: opt, cfg: cfg, node: th.Node(), me: th.Node().ID(), n: cfg.Nodes}
	e.mu = e.node.NewMutex()
	e.label("HyPer", "multiplexer", cfg.Tag, e.me)
	e.work, e.avail, e.exit = e.node.NewSignal(), e.node.NewSignal(), e.node.NewSignal()
	e.wcs = make([]fabric.WC, 64)
	if err := e.setup(th); err != nil {
		return nil, fmt.Errorf("algos: open HyPer endpoint %d on node %d: %w", cfg.Tag, e.me, freed(err, e.own.free()))
	}
	e.phase, e.lastMove = 1, th.Now()
	th.Spawn(fmt.Sprintf("multiplexer%d", cfg.Tag), e.node.Cores()-1, e.multiplex)
	return e, nil
}

func (e *hyper) sendBuffers() int {
	// Each thread's partly filled message per destination, a phase's worth
	// of full messages queued per destination, and Buffers per thread.
	return e.cfg.Threads*e.n + e.opt.PhaseMessages*max(1, e.n-1) + e.cfg.Buffers*e.cfg.Threads
}

func (e *hyper) setup(th fabric.Thread) error {
	n, msg := e.n, e.cfg.MsgBytes
	e.recvPer = e.opt.RecvBuffers
	dev := e.node.Device()
	var err error
	if e.pd, err = dev.AllocPD(); err != nil {
		return err
	}
	e.own.pd(e.pd)
	nsend := e.sendBuffers()
	if e.scq, err = dev.CreateCQ(min(nsend*n+8*n+64, dev.Attr().MaxCQE)); err != nil {
		return err
	}
	e.own.cq(e.scq)
	if e.rcq, err = dev.CreateCQ(min(n*e.recvPer+16, dev.Attr().MaxCQE)); err != nil {
		return err
	}
	e.own.cq(e.rcq)
	e.sendOff = 0
	e.recvOff = nsend * msg
	e.creditOff = e.recvOff + n*e.recvPer*msg
	e.barrierOff = e.creditOff + 8*n
	e.scratchOff = e.barrierOff + 8*n
	e.end = e.scratchOff + 8
	if e.mr, err = e.pd.RegMR(e.end, fabric.AccessLocalWrite|fabric.AccessRemoteWrite); err != nil {
		return err
	}
	e.own.mr(e.mr)
	e.info.RegisteredBytes = int64(e.end)
	mem := e.mr.Bytes()
	for i := 0; i < nsend; i++ {
		o := e.sendOff + i*msg
		e.bufs = append(e.bufs, &Buffer{Data: mem[o+HeaderBytes : o+msg], id: i, mr: e.mr, off: o})
		e.free = append(e.free, i)
	}
	e.retain = make([]int, nsend)
	e.queue = make([][]qmsg, n)
	e.qhead = make([]int, n)
	e.ended, e.sentEnd, e.closedSrc = make([]bool, n), make([]bool, n), make([]bool, n)
	e.cs = make([]flowctl.CreditSender, n)
	e.cr = make([]*flowctl.CreditReceiver, n)
	e.qps = make([]fabric.QP, n)
	var blob []byte
	for j := 0; j < n; j++ {
		info := fabric.QPInfo{Node: uint32(e.me), Addr: e.mr.Addr(), RKey: e.mr.RKey(), Bytes: uint64(e.end)}
		if j != e.me {
			qp, err := newRCQP(&e.own, e.pd, e.scq, e.rcq, fabric.QPCaps{MaxSendWR: nsend + 4*n + 64, MaxRecvWR: e.recvPer, MaxInline: HeaderBytes},
				fabric.AccessRemoteWrite)
			if err != nil {
				return err
			}
			e.qps[j] = qp
			for k := 0; k < e.recvPer; k++ {
				if err := e.postRecv(j, k); err != nil {
					return err
				}
			}
			if e.cr[j], err = flowctl.NewCreditReceiver(e.cfg.CreditEvery); err != nil {
				return err
			}
			e.cr[j].Posted(e.recvPer) // known to the sender by configuration
			e.cs[j].Update(uint64(e.recvPer))
			qi := qp.Info()
			info.QPN, info.LID, info.GID = qi.QPN, qi.LID, qi.GID
			info.PSN = rcPSN(e.me, j)
		}
		enc, _ := info.MarshalBinary()
		blob = append(blob, enc...)
	}
	e.info.QPs = n - 1
	e.remote, err = connectPeers(e.node, fmt.Sprintf("hyper/%d", e.cfg.Tag), blob, e.qps, uint64(e.end), false)
	return err
}

func (e *hyper) postRecv(src, k int) error {
	slot := src*e.recvPer + k
	off := e.recvOff + slot*e.cfg.MsgBytes
	_, err := e.qps[src].PostRecv([]fabric.RecvWR{{ID: uint64(slot), Local: e.mr.SGE(off, e.cfg.MsgBytes)}})
	return err
}

// wait releases the lock, waits for w or the deadline, and takes it again;
// it fails when the deadline has passed.
func (e *hyper) wait(th fabric.Thread, deadline fabric.Time, what string) error {
	if th.Now() >= deadline {
		return fmt.Errorf("algos: HyPer endpoint %d on node %d: no progress for %v while %s", e.cfg.Tag, e.me, e.cfg.Timeout, what)
	}
	waitReleased(th, e.mu, deadline, e.avail)
	return nil
}

func (e *hyper) Acquire(th fabric.Thread) (*Buffer, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	deadline := th.Now().Add(e.cfg.Timeout)
	for len(e.free) == 0 {
		if err := e.failed(); err != nil {
			return nil, err
		}
		if err := e.wait(th, deadline, "waiting for a free message"); err != nil {
			return nil, err
		}
	}
	i := e.free[len(e.free)-1]
	e.free = e.free[:len(e.free)-1]
	b := e.bufs[i]
	b.N, b.Tuples, b.Sum = 0, 0, 0
	return b, nil
}

func (e *hyper) release(id int) {
	if e.retain[id]--; e.retain[id] == 0 {
		e.free = append(e.free, id)
		e.avail.Notify()
	}
}

// PutData hands b to the multiplexer for every destination in dests (a
// local destination gets it at once) and returns without waiting.
func (e *hyper) PutData(th fabric.Thread, b *Buffer, dests []int, st State) error {
	if b == nil || b.id < 0 || b.id >= len(e.bufs) || e.bufs[b.id] != b {
		return fmt.Errorf("%w: PutData with a buffer this endpoint did not lend", ErrConfig)
	}
	if b.N < 0 || b.N > len(b.Data) {
		return fmt.Errorf("%w: buffer holds %d bytes, capacity %d", ErrConfig, b.N, len(b.Data))
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
	h := header{src: e.me, n: b.N, tuples: b.Tuples, sum: b.Sum}
	if st == Depleted {
		h.flags = flagDepleted
	}
	h.put(e.mr.Bytes()[b.off:])
	e.retain[b.id]++ // held until every destination is handled
	for _, d := range dests {
		if e.ended[d] {
			e.release(b.id)
			return fmt.Errorf("%w: PutData to node %d after its end of stream", ErrConfig, d)
		}
		e.retain[b.id]++
		if d == e.me {
			dl := Delivery{Src: d, Data: b.Data[:b.N], N: b.N, Tuples: b.Tuples, Sum: b.Sum, id: -1 - b.id}
			if st == Depleted {
				dl.State = Depleted
				e.ended[d], e.sentEnd[d] = true, true
				e.closedSrc[d] = true
				e.doneCount++
			}
			e.ready.push(dl)
			e.avail.Notify()
			continue
		}
		e.seq++
		e.queue[d] = append(e.queue[d], qmsg{id: b.id, seq: e.seq, st: st})
		e.queued++
		if st == Depleted {
			e.ended[d] = true
		}
	}
	e.release(b.id)
	e.work.Notify()
	return nil
}

func (e *hyper) GetData(th fabric.Thread) (Delivery, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	deadline := th.Now().Add(e.cfg.Timeout)
	for {
		if d, ok := e.ready.pop(); ok {
			return d, nil
		}
		if e.doneCount == e.n {
			return Delivery{End: true}, nil
		}
		if err := e.failed(); err != nil {
			return Delivery{}, err
		}
		if err := e.wait(th, deadline, fmt.Sprintf("receiving (%d of %d sources ended)", e.doneCount, e.n)); err != nil {
			return Delivery{}, err
		}
	}
}

func (e *hyper) Release(th fabric.Thread, d Delivery) error {
	if d.End {
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if d.id < 0 {
		id := -1 - d.id
		if id >= len(e.bufs) || d.Src != e.me {
			return errForeignDelivery
		}
		e.release(id)
		return nil
	}
	if d.id >= e.n*e.recvPer || d.Src != d.id/e.recvPer {
		return errForeignDelivery
	}
	e.reposts = append(e.reposts, d.id)
	e.work.Notify()
	return nil
}

// Close stops the multiplexer once it has sent everything, waits for it,
// meets the other nodes at a barrier and frees everything. Should the
// multiplexer have failed, or the barrier fail, it still frees everything
// (the multiplexer has exited either way), and returns that error.
func (e *hyper) Close(th fabric.Thread) error {
	err := e.halt(th)
	if err == nil {
		err = e.node.OOB().Barrier(fmt.Sprintf("hyper/%d/down", e.cfg.Tag))
	}
	return freed(err, e.own.free())
}

func (e *hyper) Info() EndpointInfo {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.info
}

// multiplex is the multiplexer thread.
func (e *hyper) multiplex(th fabric.Thread) error { return e.run(th, e.loop, e.avail) }

func (e *hyper) loop(th fabric.Thread) error {
	e.lastMove = th.Now()
	for {
		moved, err := e.step(th)
		if err != nil {
			return err
		}
		if e.stop && e.done && e.doneSent && e.signaled == 0 {
			return nil
		}
		if moved {
			e.lastMove = th.Now()
			continue
		}
		deadline := th.Now().Add(e.cfg.Timeout)
		if e.busy() {
			if th.Now() >= e.lastMove.Add(e.cfg.Timeout) {
				return fmt.Errorf("no progress for %v: %s", e.cfg.Timeout, e.state())
			}
			deadline = e.lastMove.Add(e.cfg.Timeout)
		}
		if e.waitList == nil { // built once: a variadic call through the interface allocates
			e.waitList = []fabric.Waitable{e.work, e.scq, e.rcq, e.mr}
		}
		e.idle(th, deadline, e.waitList)
	}
}

// busy reports whether the multiplexer waits for the network or its peers
// (a timeout is then an error), not for the workers.
func (e *hyper) busy() bool {
	return e.signaled > 0 || e.stage != stSend || e.queued > 0
}

func (e *hyper) state() string {
	return fmt.Sprintf("phase %d, stage %d, %d messages queued, %d sends outstanding, %d of %d sources ended", e.phase, e.stage, e.queued, e.signaled, e.doneCount, e.n)
}

// step does whatever can be done now and reports whether anything moved.
func (e *hyper) step(th fabric.Thread) (bool, error) {
	// Send completions.
	moved, err := pollAll(e.scq, e.wcs, e.me, func(wc fabric.WC) error {
		e.signaled--
		if wc.ID&wrKind == hyWrData {
			e.inflight--
			e.release(int(wc.ID &^ wrKind))
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	// Receive completions: hand the messages to the workers.
	got, err := pollAll(e.rcq, e.wcs, e.me, func(wc fabric.WC) error { return e.received(th, wc) })
	if err != nil {
		return false, err
	}
	moved = moved || got
	// Released receive buffers: repost, and credit the source.
	for _, slot := range e.reposts {
		src := slot / e.recvPer
		if e.closedSrc[src] {
			continue
		}
		if err := e.postRecv(src, slot%e.recvPer); err != nil {
			return false, err
		}
		if v, ok := e.cr[src].Posted(1); ok {
			if err := e.writeWord(src, e.creditOff+8*e.me, v); err != nil {
				return false, err
			}
			e.info.CreditWrites++
		}
		moved = true
	}
	e.reposts = e.reposts[:0]
	// Sending.
	var sent bool
	if e.opt.Schedule == ScheduleNone {
		sent, err = e.sendUnscheduled(th)
	} else {
		sent, err = e.sendScheduled(th)
	}
	if err != nil {
		return false, err
	}
	moved = moved || sent
	// The end: everything sent and completed; tell the peers not to wait
	// for this node in their barriers.
	if !e.done && e.queued == 0 && e.inflight == 0 && e.stage == stSend && e.allEnded() {
		e.done = true
	}
	if e.done && !e.doneSent {
		for j := 0; j < e.n; j++ {
			if j != e.me {
				if err := e.writeWord(j, e.barrierOff+8*e.me, barrierEnd); err != nil {
					return false, err
				}
			}
		}
		e.doneSent, moved = true, true
	}
	return moved, nil
}

func (e *hyper) allEnded() bool {
	for j := 0; j < e.n; j++ {
		if !e.sentEnd[j] {
			return false
		}
	}
	return true
}

// received hands one received message (a successful completion) to the
// workers.
func (e *hyper) received(th fabric.Thread, wc fabric.WC) error {
	slot := int(wc.ID)
	src := slot / e.recvPer
	off := e.recvOff + slot*e.cfg.MsgBytes
	buf := e.mr.Bytes()[off : off+e.cfg.MsgBytes]
	var h header
	if err := h.get(buf[:wc.Bytes], e.cfg.MsgBytes-HeaderBytes); err != nil {
		return fmt.Errorf("from node %d: %w", src, err)
	}
	if h.src != src {
		return fmt.Errorf("%w: message on node %d's connection claims to be from node %d", ErrBadMessage, src, h.src)
	}
	if e.closedSrc[src] {
		return fmt.Errorf("%w: data from node %d after its end of stream", ErrBadMessage, src)
	}
	if c := e.opt.TCP; c != nil { // recv() on the multiplexer's thread
		e.cpu(th, int64(max(1, (h.n+HeaderBytes+c.SegmentBytes-1)/c.SegmentBytes))*c.RxSegmentCycles+2*c.SyscallCycles, c.RecvCopies*(h.n+HeaderBytes))
	}
	d := Delivery{Src: src, Data: buf[HeaderBytes : HeaderBytes+h.n], N: h.n, Tuples: h.tuples, Sum: h.sum, id: slot}
	if h.flags&flagDepleted != 0 {
		d.State = Depleted
		e.closedSrc[src] = true
		e.doneCount++
	}
	e.ready.push(d)
	e.avail.Notify()
	return nil
}

// writeWord writes an 8-byte value into node j's region at off with an
// inline RDMA Write (credit and barrier words).
func (e *hyper) writeWord(j, off int, v uint64) error {
	binary.LittleEndian.PutUint64(e.mr.Bytes()[e.scratchOff:], v)
	wr := fabric.SendWR{ID: hyWrCtl, Op: fabric.OpWrite, Local: e.mr.SGE(e.scratchOff, 8), Flags: fabric.Inline | fabric.Signaled,
		RemoteAddr: e.remote[j].Addr + uint64(off), RKey: e.remote[j].RKey}
	if _, err := e.qps[j].PostSend([]fabric.SendWR{wr}); err != nil {
		return err
	}
	e.signaled++
	return nil
}

// cpu spends the kernel's work of the TCP variant on the multiplexer's
// thread without holding the endpoint's lock (the workers go on meanwhile).
func (e *hyper) cpu(th fabric.Thread, cycles int64, copyBytes int) {
	e.mu.Unlock()
	th.Compute(cycles)
	if copyBytes > 0 {
		th.Charge(fabric.WorkCopy, copyBytes)
	}
	e.mu.Lock()
}

// credit reports whether destination d has credit, refreshing it from the
// word d writes into our region.
func (e *hyper) credit(th fabric.Thread, d int) bool {
	if e.cs[d].Available() > 0 {
		return true
	}
	th.Sync()
	e.cs[d].Update(binary.LittleEndian.Uint64(e.mr.Bytes()[e.creditOff+8*d:]))
	if e.cs[d].Available() == 0 {
		e.info.CreditStalls++
		return false
	}
	return true
}

// post sends the oldest queued message of destination d.
func (e *hyper) post(th fabric.Thread, d int) error {
	m := e.queue[d][e.qhead[d]]
	e.queue[d][e.qhead[d]] = qmsg{}
	if e.qhead[d]++; e.qhead[d] == len(e.queue[d]) {
		e.queue[d], e.qhead[d] = e.queue[d][:0], 0
	}
	e.queued--
	if err := e.cs[d].Consume(); err != nil {
		return err
	}
	b := e.bufs[m.id]
	n := int(binary.LittleEndian.Uint32(e.mr.Bytes()[b.off+4:])) // the used bytes, from the header
	if c := e.opt.TCP; c != nil {                                // send() on the multiplexer's thread, before the bytes leave
		e.cpu(th, c.SyscallCycles+int64(max(1, (n+HeaderBytes+c.SegmentBytes-1)/c.SegmentBytes))*c.TxSegmentCycles, c.SendCopies*(n+HeaderBytes))
	}
	wr := fabric.SendWR{ID: hyWrData | uint64(m.id), Op: fabric.OpSend, Local: e.mr.SGE(b.off, HeaderBytes+n), Flags: fabric.Signaled}
	if _, err := e.qps[d].PostSend([]fabric.SendWR{wr}); err != nil {
		return err
	}
	e.signaled++
	e.inflight++
	e.info.Transfers++
	if m.st == Depleted {
		e.sentEnd[d] = true
	}
	if e.opt.Observe != nil {
		p := e.phase
		if e.opt.Schedule == ScheduleNone {
			p = 0
		}
		e.opt.Observe(e.me, p, d, th.Now())
	}
	return nil
}

// sendUnscheduled posts queued messages in hand-over order to destinations
// with credit, up to InFlight in flight.
func (e *hyper) sendUnscheduled(th fabric.Thread) (bool, error) {
	moved := false
	for e.inflight < e.opt.InFlight && e.queued > 0 {
		best := -1
		for d := 0; d < e.n; d++ {
			if e.qhead[d] < len(e.queue[d]) && (best < 0 || e.queue[d][e.qhead[d]].seq < e.queue[best][e.qhead[best]].seq) && e.credit(th, d) {
				best = d
			}
		}
		if best < 0 {
			break
		}
		if err := e.post(th, best); err != nil {
			return false, err
		}
		moved = true
	}
	return moved, nil
}

// target is node me's destination in phase p.
func (e *hyper) target(p uint64) int {
	return (e.me + int((p-1)%uint64(e.n-1)) + 1) % e.n
}

// sendScheduled runs the round-robin phases.
func (e *hyper) sendScheduled(th fabric.Thread) (bool, error) {
	if e.n == 1 || e.done || e.stage == stSend && e.queued == 0 && e.allEnded() {
		return false, nil
	}
	moved := false
	for {
		switch e.stage {
		case stSend:
			t := e.target(e.phase)
			for e.phaseSent < e.opt.PhaseMessages && e.qhead[t] < len(e.queue[t]) && e.credit(th, t) {
				if err := e.post(th, t); err != nil {
					return false, err
				}
				e.phaseSent++
				moved = true
			}
			if e.phaseSent == 0 && e.linger(th, t) {
				return moved, nil
			}
			e.stage = stDrain
			moved = true
		case stDrain:
			if e.inflight > 0 {
				return moved, nil
			}
			for j := 0; j < e.n; j++ {
				if j != e.me && !e.peerDone(j) {
					if err := e.writeWord(j, e.barrierOff+8*e.me, e.phase); err != nil {
						return false, err
					}
					if c := e.opt.TCP; c != nil {
						e.cpu(th, c.SyscallCycles, 0)
					}
				}
			}
			e.stage = stBarrier
			moved = true
		case stBarrier:
			th.Sync()
			for j := 0; j < e.n; j++ {
				if j != e.me && e.peerWord(j) < e.phase {
					return moved, nil
				}
			}
			e.phase++
			e.phaseSent = 0
			e.stage = stSend
			moved = true
			if e.queued == 0 && e.allEnded() {
				return moved, nil // done: step ends the schedule
			}
		}
	}
}

func (e *hyper) peerWord(j int) uint64 {
	return binary.LittleEndian.Uint64(e.mr.Bytes()[e.barrierOff+8*j:])
}

func (e *hyper) peerDone(j int) bool { return e.peerWord(j) == barrierEnd }

// linger reports whether a phase in which nothing could be sent to target
// t should wait before its barrier: when this node has nothing queued for
// any other node (nothing to gain from moving on) and no peer has finished
// the phase yet. A node with nothing to send thus waits for work, credit
// or a peer instead of spinning through empty barriers.
func (e *hyper) linger(th fabric.Thread, t int) bool {
	if e.queued > len(e.queue[t])-e.qhead[t] {
		return false // something queued for another node
	}
	if e.queued == 0 && e.allEnded() {
		return false
	}
	th.Sync()
	for j := 0; j < e.n; j++ {
		if w := e.peerWord(j); j != e.me && w != barrierEnd && w >= e.phase {
			return false
		}
	}
	return true
}

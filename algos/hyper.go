package algos

import (
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

func (e *hyper) sendBuffers() int { return e.sendBuffersAt(e.n) }

// sendBuffersAt is sendBuffers in a cluster of n nodes: each thread's
// partly filled message per destination, a phase's worth of full messages
// queued per destination, and Buffers per thread.
func (e *hyper) sendBuffersAt(n int) int {
	return e.cfg.Threads*n + e.opt.PhaseMessages*max(1, n-1) + e.cfg.Buffers*e.cfg.Threads
}

// lever is what the multiplexer asks of its queue pair per peer as the
// cluster grows: a send for every send buffer, four control messages per
// node, and 64 more; its receives. It needs every slot.
func (e *hyper) lever() lever {
	return lever{name: "Nodes", value: e.n, ask: func(n int) []queueAsk {
		send := e.sendBuffersAt(n) + 4*n + 64
		return []queueAsk{{what: "HyPer's queue pair per peer", typ: fabric.RC, inline: HeaderBytes, send: send, least: send, recv: e.recvPer}}
	}}
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
	depths, err := fitQueues(dev.Attr(), n, e.lever())
	if err != nil {
		return err
	}
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
	e.creditOff = alignUp(e.recvOff+n*e.recvPer*msg, 8) // polled words aligned (polled.go)
	e.barrierOff = e.creditOff + 8*n
	e.scratchOff = e.barrierOff + 8*n
	e.end = e.scratchOff + 8
	if e.mr, err = e.pd.RegMR(e.end, fabric.AccessLocalWrite|fabric.AccessRemoteWrite); err != nil {
		return err
	}
	e.own.mr(e.mr)
	if err := polledAt("credit and barrier words", e.mr.Bytes(), e.creditOff, 8, 2*n); err != nil {
		return err
	}
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
			qp, err := newRCQP(&e.own, e.pd, e.scq, e.rcq, fabric.QPCaps{MaxSendWR: depths[0], MaxRecvWR: e.recvPer, MaxInline: HeaderBytes},
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
	e.remote, err = connectPeers(e.node, fmt.Sprintf("hyper/%d", e.cfg.Tag), blob, e.qps, uint64(e.end), false, e.cfg.SL)
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
	if id, local, err := localDelivery(d, e.me, len(e.bufs)); local {
		if err == nil {
			e.release(id)
		}
		return err
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
	return e.closeWith(th, e.node, fmt.Sprintf("hyper/%d/down", e.cfg.Tag), &e.own)
}

func (e *hyper) Info() EndpointInfo {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.info
}

package algos

import (
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// MPICosts are the MPI baseline's software costs (Liu19 §7.1 used
// MVAPICH2 with MPI_Send and MPI_Irecv). Cycles are spent on the calling
// thread's core while it holds the library's lock, so threads serialize on
// them, as in an MPI library that supports MPI_THREAD_MULTIPLE with one
// global lock. docs/model.md gives the source of each default.
type MPICosts struct {
	CallCycles  int64 // one MPI call's bookkeeping (request, progress engine entry)
	MatchCycles int64 // matching an incoming message against posted receives
	// EagerBytes is the eager threshold: messages up to this size (header
	// included) are copied into the receiver's pre-registered buffers;
	// larger ones use the RDMA Write rendezvous (RTS, CTS, data, FIN).
	EagerBytes int
	// InlineBytes is the largest eager message (header included) sent
	// inline, its bytes copied into the work request so that the NIC
	// need not fetch them (MVAPICH2's rdma_max_inline_size); capped by
	// the device's inline limit. 0: none.
	InlineBytes int
	// Wait is what a thread does while it waits inside the library.
	Wait MPIWait
}

// MPIWait is how a thread that waits inside an MPI library (a blocking
// MPI_Send, MPI_Wait, MPI_Waitany, MPI_Waitall) spends the time: the
// progress engine polls the network holding the library's global lock,
// and after PollsBeforeYield polls in a row that found nothing lets the
// lock go, calls sched_yield (YieldCycles), spins SpinCycles and takes
// the lock again. The lock is a pthread mutex (fabric.Node's
// NewSleepingMutex): a thread that finds it taken sleeps until the
// holder's unlock wakes it. docs/model.md gives each library's values.
type MPIWait struct {
	// PollsBeforeYield is the number of empty polls made holding the
	// lock before it is let go; 0 waits without polling, asleep until a
	// completion arrives (an idealised library, not a real one).
	PollsBeforeYield int
	// YieldCycles is how long the lock stays free when it is let go: a
	// sched_yield that finds nothing else to run (MPICH), or, where the
	// yield compiles to nothing (MVAPICH2 on Linux), the calls between
	// the unlock and the lock.
	YieldCycles int64
	SpinCycles  int64 // spinning after the yield, before locking again
}

// MVAPICH2Wait is MVAPICH2 2.3's progress wait, the library of Liu19's MPI
// baseline: its ch3 mrail progress engine counts empty polls and, past
// MV2_THREAD_YIELD_SPIN_THRESHOLD (5, so on the 6th), unlocks the global
// mutex, "yields" and spins MV2_NUM_SPINS_BEFORE_LOCK (2000) times before
// locking again; but a default Linux build defines the yield as nothing
// and the spin is an empty loop that -O2 removes, so the thread unlocks
// and locks again at once. MPICHWait is MPICH's (ch4 with the global
// critical section): unlock, sched_yield and lock after every empty poll.
// docs/model.md [M5] gives the sources.
var (
	MVAPICH2Wait = MPIWait{PollsBeforeYield: 6, YieldCycles: mpiRelockCycles}
	MPICHWait    = MPIWait{PollsBeforeYield: 1, YieldCycles: mpiYieldCycles}
)

// Cycle counts of the waits (docs/model.md [M5]): mpiYieldCycles is one
// sched_yield that finds nothing else to run (439 ns on a 3.6 GHz
// Haswell); mpiRelockCycles is what MVAPICH2 does between its unlock and
// its lock when it yields nothing: the error-checking mutex's owner check
// and the atomic count of queued threads on each side, two contended
// atomics (E). The lock is free meanwhile, the only moment a woken
// thread can take it from a thread that keeps polling.
const (
	mpiYieldCycles  = 1600
	mpiRelockCycles = 100
)

// DefaultMPICosts are the defaults documented in docs/model.md: MVAPICH2,
// as Liu19 §7.1 ran it.
var DefaultMPICosts = MPICosts{CallCycles: 600, MatchCycles: 300, EagerBytes: 16 << 10, InlineBytes: 128, Wait: MVAPICH2Wait}

// MPIMsgBytes is the MPI baseline's default message size, 64 KB as in seed
// 001 §7.1.
const MPIMsgBytes = 64 << 10

// Message kinds of the MPI baseline, in the top byte of the header's
// sequence field.
const (
	mpiRTS   = 1 // request to send: the header describes the data
	mpiCTS   = 2 // clear to send: names the receive buffer to write into
	mpiFIN   = 3 // the data is in the receive buffer
	mpiEager = 4 // header and data in one send

	mpiKindShift = 56
	mpiSlotMask  = 1<<24 - 1
)

// Send work request identifiers.
const (
	wrMPIDone = 1 << 48 // completes one destination of send buffer id (eager send or FIN)
	wrMPICtl  = 2 << 48 // RTS or CTS, signaled now and then to free send-queue slots
)

// mpiPending is a message announced but not yet matched with a receive
// buffer (MPI's unexpected queue), or matched and waiting for its data.
type mpiPending struct {
	state uint8 // of the receive buffer: recvFree, recvAwaiting or recvLent
	src   int
	kind  int // mpiRTS or mpiEager
	h     header
	req   int    // the sender's buffer (rendezvous)
	eager []byte // copied payload of an unexpected eager message
}

// States of a receive buffer.
const (
	recvFree     = iota // posted as MPI_Irecv
	recvAwaiting        // matched with a rendezvous; waiting for its FIN
	recvLent            // delivered; lent to the caller until Release
)

// mpi is the MPI baseline endpoint, in the style of MVAPICH2 over RC: one
// process-wide library per node (a shared endpoint whose every call holds
// one lock), one RC queue pair per peer, MPI_Send (blocking) per
// destination of a buffer (MPI_Isend to every member and MPI_Waitall for a
// group), and MPI_Irecv(MPI_ANY_SOURCE) buffers posted by the receiving
// threads. Messages above the eager threshold use the RDMA Write
// rendezvous: the sender's RTS is matched against a posted receive buffer
// (or queued as unexpected, in arrival order), the receiver answers with a
// CTS naming that buffer, the sender writes the data straight into it and
// sends a FIN. Smaller messages go eagerly into pre-posted control slots
// and are copied into a receive buffer (or, unexpected, into a temporary
// copy first). Registered memory: the user buffers (MVAPICH registers them
// once, through its registration cache) and the control slots. Broadcast
// is MPI_Ibcast (mpi_bcast.go) when Config.Broadcast says every buffer goes
// to every node, plus a send to this node itself; otherwise a send to every
// member.
type mpi struct {
	waitList []fabric.Waitable // what the progress wait watches, built on first use
	endpointBase
	costs MPICosts
	pd    fabric.PD
	rcq   fabric.CQ
	mr    fabric.MR
	qps   []fabric.QP
	peers []fabric.QPInfo // per peer: its receive buffers (address, rkey)

	msg        int // bytes per user buffer (header included)
	slotBytes  int // bytes per control slot
	slotsPer   int // control slots per peer
	inline     int // largest message sent inline, bytes (at least a header)
	recvOff    int
	ctlOff     int
	scratchOff int
	remaining  []int // per send buffer: destinations not yet complete
	freeRecv   []int // receive buffers posted as MPI_Irecv
	pending    []mpiPending
	unexpected []mpiPending
	closedSrc  []bool
	unsignaled []int      // per queue pair: unsignaled control sends
	self       []int      // {me}: the destination of our own copy of a broadcast
	bc         bcastState // MPI_Ibcast (cfg.Broadcast)
	// window > 0: non-blocking sends (OpenMPINonblocking), up to window
	// send buffers in flight per thread.
	window int
	// failures, if the backend knows of failed peers (a simulated crash):
	// waits sleep once one has failed (polls).
	failures fabric.PeerFailures
}

// OpenMPI opens the MPI baseline endpoint on the calling thread's node;
// cfg.Threads threads share it (one MPI process per node). Every node must
// open endpoint cfg.Tag at the same time.
func OpenMPI(th fabric.Thread, cfg Config, costs MPICosts) (Endpoint, error) {
	return openMPI(th, cfg, costs, 0)
}

// OpenMPINonblocking opens the MPI baseline with non-blocking sends, as
// message-rate benchmarks (osu_bw, osu_mbw_mr, mt-p2p-msgrate) send:
// PutData is MPI_Isend to every destination and returns once the sends
// are posted; a send buffer is free again once every destination has it,
// and Acquire waits for one (MPI_Waitany) when none is. Each thread may
// have window buffers in flight: the pool holds window x cfg.Threads send
// buffers (at least OpenMPI's), and as many receive buffers and eager
// slots per peer. Receives are non-blocking too: GetData charges a
// window-th of a call per message, a receiver's MPI_Waitall over its
// window of MPI_Irecv (Release is the MPI_Irecv). Not with cfg.Broadcast.
// The shuffle's MPI baseline is OpenMPI's blocking MPI_Send (Liu19 §7.1).
func OpenMPINonblocking(th fabric.Thread, cfg Config, costs MPICosts, window int) (Endpoint, error) {
	if window < 1 {
		return nil, fmt.Errorf("%w: MPI non-blocking sends need a window of at least 1, not %d", ErrConfig, window)
	}
	if cfg.Broadcast {
		return nil, fmt.Errorf("%w: MPI non-blocking sends are modelled for point-to-point messages only, not with MPI_Ibcast (the broadcast pattern)", ErrConfig)
	}
	return openMPI(th, cfg, costs, window)
}

func openMPI(th fabric.Thread, cfg Config, costs MPICosts, window int) (Endpoint, error) {
	if err := cfg.check(0); err != nil {
		return nil, err
	}
	if cfg.Adaptive != nil {
		return nil, fmt.Errorf("%w: MPI does not support adaptive buffers: the MPI baseline keeps its own fixed buffers, as MPI libraries do", ErrConfig)
	}
	w := costs.Wait
	if costs.CallCycles < 0 || costs.MatchCycles < 0 || costs.EagerBytes < HeaderBytes || costs.InlineBytes < 0 ||
		w.PollsBeforeYield < 0 || w.YieldCycles < 0 || w.SpinCycles < 0 {
		return nil, fmt.Errorf("%w: MPI costs must not be negative and the eager threshold must hold a %d-byte header: %+v", ErrConfig, HeaderBytes, costs)
	}
	e := &mpi{costs: costs, window: window}
	e.init("MPI", th, cfg)
	// The library's global lock is a pthread mutex: its waiters sleep.
	e.mu = e.node.NewSleepingMutex()
	e.failures, _ = e.node.(fabric.PeerFailures)
	if err := e.setup(th); err != nil {
		return nil, fmt.Errorf("algos: open MPI endpoint %d on node %d: %w", cfg.Tag, e.me, freed(err, e.own.free()))
	}
	e.recv = e.receiving()
	return e, nil
}

// queueDepths is what the endpoint's queue pair per peer holds with t
// threads: its receive slots (slotsPer) and its send depth.
func (e *mpi) queueDepths(t int) (slotsPer, sendWR int) {
	n := e.n
	// A thread has at most one blocking send per peer in flight, so at
	// most an RTS or eager message, a FIN and a CTS per thread and peer sit
	// unprocessed in our control slots.
	slotsPer = 3*t + 2
	sendWR = 4*t + 2*creditSignalEvery + 8
	if e.window > 0 {
		// Up to window sends per thread in flight, all to one peer at
		// worst: as many eager slots (MPI libraries pre-post that many
		// per connection for a window of 64).
		slotsPer += (e.window + 2) * t
		sendWR += 3 * e.window * t // eager sends, or RTS, write and FIN
	}
	if e.cfg.Broadcast && n > 1 {
		// Broadcast pieces and their RTS, CTS and FIN: about two per
		// broadcast posted per peer; more wait for a slot on the wire
		// (RNR), as an MPI library's eager flow control holds them.
		slotsPer += 2*e.cfg.Buffers*t + 2
		sendWR += 2*slotsPer + 2*n + 2*t // staged pieces, writes and FINs
	}
	return slotsPer, sendWR
}

func (e *mpi) setup(th fabric.Thread) error {
	n, t := e.n, e.cfg.Threads
	e.msg = e.cfg.MsgBytes
	// Every sending thread holds at most one buffer per group plus the one
	// in flight; the pools match MQ/SR's for the same configuration.
	count := e.cfg.Buffers * t * n
	if e.window > 0 {
		// Up to window sends per thread in flight, all to one peer at
		// worst: as many receive buffers (and eager slots, queueDepths).
		count = max(count, e.window*t)
	}
	bcast := e.cfg.Broadcast && n > 1
	e.slotBytes = min(e.costs.EagerBytes, e.msg)
	dev := e.node.Device()
	e.inline = max(min(e.costs.InlineBytes, dev.Attr().MaxInline), HeaderBytes)
	var err error
	if e.pd, err = dev.AllocPD(); err != nil {
		return err
	}
	e.own.pd(e.pd)
	depths, err := fitQueues(dev.Attr(), n, lever{name: "Threads", value: t, ask: func(v int) []queueAsk {
		slots, send := e.queueDepths(v)
		return []queueAsk{{what: "MPI's queue pair per peer", typ: fabric.RC, inline: e.inline, send: send, least: send, recv: slots}}
	}})
	if err != nil {
		return err
	}
	e.slotsPer, _ = e.queueDepths(t)
	sendWR := depths[0]
	if e.scq, err = dev.CreateCQ(min(n*sendWR, dev.Attr().MaxCQE)); err != nil {
		return err
	}
	e.own.cq(e.scq)
	if e.rcq, err = dev.CreateCQ(min(n*e.slotsPer+16, dev.Attr().MaxCQE)); err != nil {
		return err
	}
	e.own.cq(e.rcq)
	e.recvOff = count * e.msg
	e.ctlOff = 2 * count * e.msg
	e.scratchOff = e.ctlOff + n*e.slotsPer*e.slotBytes
	size := e.scratchOff + HeaderBytes
	if bcast {
		size = e.bcastSetup(size)
	}
	if e.mr, err = e.pd.RegMR(size, fabric.AccessLocalWrite|fabric.AccessRemoteWrite); err != nil {
		return err
	}
	e.own.mr(e.mr)
	e.info.RegisteredBytes = int64(size)
	e.initPool(e.mr, 0, count, e.msg)
	e.remaining = make([]int, count)
	e.pending = make([]mpiPending, count)
	for i := count - 1; i >= 0; i-- {
		e.freeRecv = append(e.freeRecv, i)
	}
	e.closedSrc = make([]bool, n)
	e.unsignaled = make([]int, n)
	e.self = []int{e.me}
	var blob []byte
	for j := 0; j < n; j++ {
		qp, err := newRCQP(&e.own, e.pd, e.scq, e.rcq, fabric.QPCaps{MaxSendWR: sendWR, MaxRecvWR: e.slotsPer, MaxInline: e.inline},
			fabric.AccessRemoteWrite)
		if err != nil {
			return err
		}
		e.qps = append(e.qps, qp)
		for k := 0; k < e.slotsPer; k++ {
			if err := e.postSlot(j, k); err != nil {
				return err
			}
		}
		info := qp.Info()
		info.PSN = rcPSN(e.me, j)
		info.Addr, info.RKey, info.Bytes = e.mr.Addr()+uint64(e.recvOff), e.mr.RKey(), uint64(count*e.msg)
		enc, _ := info.MarshalBinary()
		blob = append(blob, enc...)
	}
	e.info.QPs = n
	if e.peers, err = connectPeers(e.node, fmt.Sprintf("mpi/%d", e.cfg.Tag), blob, e.qps, 0, true, e.cfg.SL); err != nil {
		return err
	}
	if bcast {
		return e.postBcasts(th)
	}
	return nil
}

// eagerFlags are the flags of a signaled eager send of n payload bytes:
// inline when header and payload fit e.inline.
func (e *mpi) eagerFlags(n int) fabric.SendFlags {
	if HeaderBytes+n <= e.inline {
		return fabric.Signaled | fabric.Inline
	}
	return fabric.Signaled
}

func (e *mpi) slotOff(peer, k int) int { return e.ctlOff + (peer*e.slotsPer+k)*e.slotBytes }

func (e *mpi) postSlot(peer, k int) error {
	err := e.postRecv1(e.qps[peer], fabric.RecvWR{ID: uint64(peer*e.slotsPer + k), Local: e.mr.SGE(e.slotOff(peer, k), e.slotBytes)})
	return err
}

// control sends a header-only message (RTS, CTS or FIN) inline: its bytes
// are copied when it is posted, so one scratch header serves them all.
func (e *mpi) control(d int, h header, id uint64, signaled bool) error {
	h.src = e.me
	h.put(e.mr.Bytes()[e.scratchOff:])
	wr := fabric.SendWR{ID: id, Op: fabric.OpSend, Local: e.mr.SGE(e.scratchOff, HeaderBytes), Flags: fabric.Inline}
	if signaled {
		wr.Flags |= fabric.Signaled
		e.signaled++
	} else {
		e.signalSome(&wr, &e.unsignaled[d], false)
	}
	err := e.postSend1(e.qps[d], wr)
	return err
}

func mpiSeq(kind int, a, b int) uint64 {
	return uint64(kind)<<mpiKindShift | uint64(a&mpiSlotMask)<<24 | uint64(b&mpiSlotMask)
}

func mpiFields(seq uint64) (kind, a, b int) {
	return int(seq >> mpiKindShift), int(seq >> 24 & mpiSlotMask), int(seq & mpiSlotMask)
}

// PutData is MPI_Isend of b to every destination and MPI_Waitall: it
// returns once every destination has the data (rendezvous: the FIN has
// completed; eager: the send has completed).
func (e *mpi) PutData(th fabric.Thread, b *Buffer, dests []int, st State) error {
	e.lock() // before checkBuffer: adaptive buffers grow e.bufs under the lock
	defer e.unlock()
	if err := e.checkBuffer(b); err != nil {
		return err
	}
	if e.window > 0 && st == Depleted {
		// The end of the stream goes after the data: MPI_Waitall on the
		// sends in flight first, or an eager end could be taken before a
		// rendezvous still waiting for its clear-to-send.
		if err := e.awaitSent(th, "waiting for the sends in flight before the end of stream"); err != nil {
			return err
		}
	}
	h := e.headerFor(b, st)
	off := b.id * e.msg
	eager := HeaderBytes+b.N <= e.slotBytes
	bcast := e.bcastAll(dests)
	if eager || bcast {
		// Once for every destination: the buffer belongs to the NIC from
		// the first send on, so the header must not be written again
		// while that send reads it. MPI_Ibcast moves the whole buffer,
		// header included (every node posts the same count).
		h.seq = mpiSeq(mpiEager, b.id, 0)
		h.put(e.mr.Bytes()[off:])
	}
	if bcast {
		th.Compute(e.costs.CallCycles)
		if err := e.bcastStart(th, b.id); err != nil {
			return err
		}
		dests = e.self
	}
	for _, d := range dests {
		if d < 0 || d >= e.n {
			return fmt.Errorf("%w: destination node %d in a %d-node cluster", ErrConfig, d, e.n)
		}
		th.Compute(e.costs.CallCycles)
		e.remaining[b.id]++
		if eager {
			wr := fabric.SendWR{ID: wrMPIDone | uint64(b.id), Op: fabric.OpSend, Local: e.mr.SGE(off, HeaderBytes+b.N), Flags: e.eagerFlags(b.N)}
			e.signaled++
			if err := e.postSend1(e.qps[d], wr); err != nil {
				return err
			}
			continue
		}
		h.seq = mpiSeq(mpiRTS, b.id, 0)
		if err := e.control(d, h, wrMPICtl, false); err != nil {
			return err
		}
	}
	if e.window > 0 {
		// MPI_Isend: the buffer is free again once every destination has
		// it (progress, sent).
		if e.remaining[b.id] == 0 {
			e.free = append(e.free, b.id)
		}
		return nil
	}
	id := b.id
	if err := e.progressUntil(th, func() bool { return e.remaining[id] == 0 }, waiting{"waiting for every destination to take send buffer %d", id}); err != nil {
		return err
	}
	e.free = append(e.free, id)
	return nil
}

// progressUntil runs the progress engine, waiting for either completion
// queue when it finds nothing, until done; it fails after cfg.Timeout
// without progress. Called with the lock held.
func (e *mpi) progressUntil(th fabric.Thread, done func() bool, what waiting) error {
	deadline := th.Now().Add(e.cfg.Timeout)
	empties := 0
	for !done() {
		n, err := e.progress(th)
		if err != nil {
			return err
		}
		if n > 0 {
			deadline = th.Now().Add(e.cfg.Timeout)
			empties = 0
			continue
		}
		empties++
		if err := e.idle(th, deadline, empties, what); err != nil {
			return err
		}
	}
	return nil
}

// idle is what the progress engine does after empties polls in a row that
// found nothing (MPICosts.Wait): poll again holding the lock, or let the
// lock go for a sched_yield and a spin, or (PollsBeforeYield 0, or a peer
// has failed: polls) sleep until a completion. It fails once deadline has
// passed. Called with the lock held; returns with it held.
func (e *mpi) idle(th fabric.Thread, deadline fabric.Time, empties int, what waiting) error {
	if !e.polls(th) {
		return e.wait(th, deadline, nil, what)
	}
	if err := e.stalled(th, deadline, what); err != nil {
		return err
	}
	e.yield(th, empties)
	return nil
}

// polls says whether a waiting thread polls (MPICosts.Wait) rather than
// sleeps until a completion. Once a peer has failed (a simulated crash,
// fabric.PeerFailures) it sleeps: the run can then only end in an error,
// the transport's retries exhausted or a timeout, which the NIC and the
// deadlines time, not the polls; simulating every poll of that wait made
// an MPI run with a crashed peer take 15-20 s of wall time, where the
// designs that sleep took well under one.
func (e *mpi) polls(th fabric.Thread) bool {
	if e.costs.Wait.PollsBeforeYield == 0 {
		return false
	}
	return e.failures == nil || e.failures.PeerFailed(th.Now()) < 0
}

// stalled is the error of a wait whose deadline has passed, or nil.
func (e *mpi) stalled(th fabric.Thread, deadline fabric.Time, what waiting) error {
	if th.Now() >= deadline {
		return fmt.Errorf("algos: MPI endpoint %d on node %d: no progress for %v while %s", e.cfg.Tag, e.me, e.cfg.Timeout, what)
	}
	return nil
}

// yield lets the library's lock go after every PollsBeforeYield-th empty
// poll in a row: sched_yield, a spin, and the lock again. Called with the
// lock held; returns with it held.
func (e *mpi) yield(th fabric.Thread, empties int) {
	w := e.costs.Wait
	if empties%w.PollsBeforeYield != 0 {
		return
	}
	withoutLock(e.mu, func() { th.Compute(w.YieldCycles + w.SpinCycles) })
}

// wait overrides endpointBase.wait to wake on either completion queue.
func (e *mpi) wait(th fabric.Thread, deadline fabric.Time, _ fabric.Waitable, what waiting) error {
	if err := e.stalled(th, deadline, what); err != nil {
		return err
	}
	if e.waitList == nil { // built once (under the lock): a variadic call through the interface allocates
		e.waitList = []fabric.Waitable{e.scq, e.rcq}
	}
	waitReleased(th, e.mu, deadline, e.waitList...)
	return nil
}

// Acquire returns a free send buffer. MPI_Send is blocking, so a thread
// gets its buffer back from PutData and the pool never runs dry for the
// SHUFFLE operator; a caller holding more buffers than the pool has gets
// an error instead of a hang. With non-blocking sends Acquire waits
// (MPI_Waitany) for a buffer whose sends have completed.
func (e *mpi) Acquire(th fabric.Thread) (*Buffer, error) {
	e.lock()
	defer e.unlock()
	if e.window > 0 {
		if err := e.awaitFree(th); err != nil {
			return nil, err
		}
	}
	if len(e.free) == 0 {
		return nil, fmt.Errorf("%w: MPI endpoint %d on node %d: all %d send buffers are held by the caller", ErrConfig, e.cfg.Tag, e.me, len(e.bufs))
	}
	i := e.free[len(e.free)-1]
	e.free = e.free[:len(e.free)-1]
	b := e.bufs[i]
	b.N, b.Tuples, b.Sum = 0, 0, 0
	return b, nil
}

// awaitFree runs the progress engine until a send buffer is free or no
// send is in flight (the caller then holds every buffer). Called with the
// lock held.
func (e *mpi) awaitFree(th fabric.Thread) error {
	if len(e.free) > 0 || !e.inFlight() {
		return nil
	}
	th.Compute(e.costs.CallCycles) // MPI_Waitany's bookkeeping
	// In flight is what a destination has not taken yet: a rendezvous
	// whose RTS went unsignaled completes no send of its own until its
	// FIN, so the count of signaled sends cannot tell.
	return e.progressUntil(th, func() bool { return len(e.free) > 0 || !e.inFlight() }, waiting{format: "waiting for a non-blocking send to complete"})
}

// inFlight says whether a non-blocking send has a destination that does
// not have its data yet.
func (e *mpi) inFlight() bool {
	for _, r := range e.remaining {
		if r > 0 {
			return true
		}
	}
	return false
}

// awaitSent runs the progress engine until every non-blocking send has
// reached all its destinations (MPI_Waitall). Called with the lock held.
func (e *mpi) awaitSent(th fabric.Thread, what string) error {
	return e.progressUntil(th, func() bool { return !e.inFlight() }, waiting{format: what})
}

// progress is the library's progress engine: it handles send completions
// and incoming control messages. Called with the lock held.
func (e *mpi) progress(th fabric.Thread) (int, error) {
	n, err := pollOnce(e.scq, e.wcs, e.me, func(wc fabric.WC) error {
		e.signaled--
		switch wc.ID & wrKind {
		case wrMPIDone:
			id := int(wc.ID &^ wrKind)
			if e.remaining[id]--; e.remaining[id] == 0 && e.window > 0 {
				e.free = append(e.free, id) // a non-blocking send's buffer
			}
		case wrMPIBcast:
			return e.bcastSent(th, wc.ID&^wrKind)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	m, err := pollOnce(e.rcq, e.wcs, e.me, func(wc fabric.WC) error { return e.incoming(th, wc) })
	if err != nil {
		return 0, err
	}
	return n + m, nil
}

// incoming handles one control slot's message and reposts the slot.
func (e *mpi) incoming(th fabric.Thread, wc fabric.WC) error {
	peer, k := int(wc.ID)/e.slotsPer, int(wc.ID)%e.slotsPer
	off := e.slotOff(peer, k)
	var h header
	if err := h.get(e.mr.Bytes()[off:off+wc.Bytes], e.msg-HeaderBytes); err != nil {
		return fmt.Errorf("from node %d: %w", peer, err)
	}
	if h.src != peer {
		return fmt.Errorf("%w: message on node %d's connection claims to be from node %d", ErrBadMessage, peer, h.src)
	}
	kind, a, b := mpiFields(h.seq)
	switch kind {
	case mpiRTS, mpiEager:
		if e.closedSrc[peer] {
			return fmt.Errorf("%w: data from node %d after its end of stream", ErrBadMessage, peer)
		}
		p := mpiPending{src: peer, kind: kind, h: h, req: a}
		if kind == mpiEager {
			if HeaderBytes+h.n > wc.Bytes {
				return fmt.Errorf("%w: eager message from node %d of %d bytes announces %d", ErrBadMessage, peer, wc.Bytes, h.n)
			}
			// The slot goes back at once: an unexpected message waits in a
			// copy, as MPI libraries keep it.
			p.eager = append([]byte(nil), e.mr.Bytes()[off+HeaderBytes:off+HeaderBytes+h.n]...)
			th.Charge(fabric.WorkCopy, h.n)
		}
		th.Compute(e.costs.MatchCycles)
		e.unexpected = append(e.unexpected, p)
		if err := e.match(th); err != nil {
			return err
		}
	case mpiCTS:
		if a >= len(e.bufs) || b >= len(e.pending) || e.remaining[a] == 0 {
			return fmt.Errorf("%w: clear-to-send from node %d for buffer %d, receive buffer %d", ErrBadMessage, peer, a, b)
		}
		buf := e.bufs[a]
		wr := fabric.SendWR{ID: wrMPICtl, Op: fabric.OpWrite, Local: e.mr.SGE(a*e.msg+HeaderBytes, buf.N),
			RemoteAddr: e.peers[peer].Addr + uint64(b*e.msg+HeaderBytes), RKey: e.peers[peer].RKey}
		if buf.N > 0 {
			// Unsignaled: the FIN behind it on the same queue pair
			// completes after it.
			if err := e.postSend1(e.qps[peer], wr); err != nil {
				return err
			}
		}
		if err := e.control(peer, header{seq: mpiSeq(mpiFIN, b, 0)}, wrMPIDone|uint64(a), true); err != nil {
			return err
		}
	case mpiBcEager, mpiBcRTS, mpiBcCTS, mpiBcFIN:
		if HeaderBytes+h.n > wc.Bytes {
			return fmt.Errorf("%w: broadcast message from node %d of %d bytes announces %d", ErrBadMessage, peer, wc.Bytes, h.n)
		}
		if err := e.bcastIncoming(th, peer, kind, a, b, h, e.mr.Bytes()[off+HeaderBytes:off+HeaderBytes+h.n]); err != nil {
			return err
		}
	case mpiFIN:
		if a >= len(e.pending) || e.pending[a].state != recvAwaiting || e.pending[a].src != peer {
			return fmt.Errorf("%w: FIN from node %d for receive buffer %d it was not given", ErrBadMessage, peer, a)
		}
		e.deliver(a)
	default:
		return fmt.Errorf("%w: message kind %d from node %d", ErrBadMessage, kind, peer)
	}
	return e.postSlot(peer, k)
}

// match pairs unexpected messages, in arrival order, with posted receive
// buffers: a rendezvous gets a CTS, an eager message is copied in.
func (e *mpi) match(th fabric.Thread) error {
	for len(e.unexpected) > 0 && len(e.freeRecv) > 0 {
		p := e.unexpected[0]
		e.unexpected[0] = mpiPending{}
		e.unexpected = e.unexpected[1:]
		r := e.freeRecv[len(e.freeRecv)-1]
		e.freeRecv = e.freeRecv[:len(e.freeRecv)-1]
		e.pending[r] = p
		e.pending[r].state = recvAwaiting
		if p.kind == mpiEager {
			copy(e.mr.Bytes()[e.recvOff+r*e.msg+HeaderBytes:], p.eager)
			th.Charge(fabric.WorkCopy, len(p.eager))
			e.deliver(r)
			continue
		}
		if err := e.control(p.src, header{seq: mpiSeq(mpiCTS, p.req, r)}, wrMPICtl, false); err != nil {
			return err
		}
	}
	return nil
}

// deliver queues receive buffer r, whose data has arrived, for GetData.
func (e *mpi) deliver(r int) {
	p := e.pending[r]
	e.pending[r] = mpiPending{state: recvLent}
	off := e.recvOff + r*e.msg
	d := Delivery{Src: p.src, Data: e.mr.Bytes()[off+HeaderBytes : off+HeaderBytes+p.h.n], N: p.h.n, Tuples: p.h.tuples, Sum: p.h.sum, id: r}
	if p.h.flags&flagDepleted != 0 {
		d.State = Depleted
		e.closedSrc[p.src] = true
		e.doneCount++
	}
	e.ready.push(d)
}

// GetData is MPI_Waitany over the posted receive buffers.
func (e *mpi) GetData(th fabric.Thread) (Delivery, error) { return e.getData(th, &e.recv) }

// receiving is GetData's progress and per-delivery cost.
func (e *mpi) receiving() receiving {
	// The call's bookkeeping, under the library's lock like every call.
	// With non-blocking operations a receiver completes its window of
	// MPI_Irecv with one MPI_Waitall, as the message-rate benchmarks do:
	// a window-th of a call per message.
	cost := e.costs.CallCycles
	if e.window > 0 {
		cost = (cost + int64(e.window) - 1) / int64(e.window)
	}
	r := receiving{on: []fabric.Waitable{e.scq, e.rcq}, progress: e.progress,
		taken: func(th fabric.Thread, d Delivery) (Delivery, error) { th.Compute(cost); return d, nil }}
	if e.costs.Wait.PollsBeforeYield > 0 {
		r.pause = func(th fabric.Thread, empties int) bool {
			if !e.polls(th) {
				return false
			}
			e.yield(th, empties)
			return true
		}
	}
	return r
}

// Release posts the buffer again as an MPI_Irecv and matches any
// unexpected message with it.
func (e *mpi) Release(th fabric.Thread, d Delivery) error {
	if d.End {
		return nil
	}
	e.lock()
	defer e.unlock()
	if d.id < 0 || d.id >= len(e.pending) || e.pending[d.id].state != recvLent {
		return errForeignDelivery
	}
	th.Compute(e.costs.CallCycles)
	if e.bc.owner != nil && e.bc.owner[d.id] >= 0 {
		// The next MPI_Ibcast from the same root, unless its stream ended.
		root := e.bc.owner[d.id]
		if e.closedSrc[root] {
			e.pending[d.id].state = recvFree
			return nil
		}
		return e.postBcast(th, root, d.id)
	}
	e.pending[d.id].state = recvFree
	e.freeRecv = append(e.freeRecv, d.id)
	return e.match(th)
}

// Close waits for every send to complete, meets the other nodes at a
// barrier and frees everything. Should any of that fail, it still frees
// everything, and returns that error.
func (e *mpi) Close(th fabric.Thread) error {
	e.lock()
	defer e.unlock()
	return freed(e.finish(th), e.own.free())
}

// finish is Close's bookkeeping. Called with the lock held.
func (e *mpi) finish(th fabric.Thread) error {
	if e.window > 0 {
		if err := e.awaitSent(th, "waiting for the non-blocking sends to complete"); err != nil {
			return err
		}
	}
	if err := e.progressUntil(th, func() bool { return e.signaled == 0 }, waiting{format: "waiting for the last sends to complete"}); err != nil {
		return err
	}
	return e.node.OOB().Barrier(fmt.Sprintf("mpi/%d/down", e.cfg.Tag))
}

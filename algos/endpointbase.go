package algos

import (
	"fmt"
	"strings"

	"github.com/rdmashuffle/rdmashuffle/adaptive"
	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/flowctl"
)

// endpointBase is what the buffered endpoints share (Send/Receive over UD
// and RC, RDMA Write, RDMA Read, and the MPI baseline): the lock of a shared
// endpoint, waiting with a deadline, the pool of send buffers and their
// reclamation from send completions, per-destination credit, and the queue
// of deliveries polled but not yet handed out.
type endpointBase struct {
	design string // for error messages: "MQ/SR", "SQ/SR"
	cfg    Config
	node   fabric.Node
	me     int
	n      int
	mu     fabric.Mutex // every method holds it (threads of a node share endpoints)
	scq    fabric.CQ
	wcs    []fabric.WC
	info   EndpointInfo
	own    owned // what the endpoint created, freed by a failed Open or by Close

	bufs        []*Buffer
	free        []int
	outstanding []int // completions pending per send buffer
	signaled    int   // signaled sends not yet completed
	cs          []flowctl.CreditSender

	// Adaptive send buffers (cfg.Adaptive): the lane, each buffer's pool
	// buffer by id (nil once retired), ids free for reuse.
	slane      *adaptive.Lane
	sbufs      []*adaptive.Buf
	retiredIDs []int
	sendMsg    int

	// Holds on send buffers besides pending completions (UD loss
	// recovery: destinations that have not acknowledged); nil when unused.
	holds []int
	// tick, if set, does a design's periodic sender work while Acquire
	// waits (drain acknowledgements, retransmit): it reports how much it
	// did and when it wants to run again; tickOn are what wakes it.
	tick   func(th fabric.Thread) (int, fabric.Time, error)
	tickOn []fabric.Waitable

	// sentWC, if set, sees every successful send completion reap takes
	// (the DC designs: which DCI it frees).
	sentWC func(fabric.WC)

	ready     deliveries
	doneCount int       // sources whose stream has ended
	recv      receiving // how GetData finds deliveries: set by the design when it opens

	// One-request lists for postSend1 and postRecv1: a list built at the
	// call would escape to the heap through the QP interface.
	swr [1]fabric.SendWR
	rwr [1]fabric.RecvWR
}

// postSend1 posts wr on qp. The caller holds the endpoint's lock (as every
// endpoint method does), which guards the list it goes through.
func (e *endpointBase) postSend1(qp fabric.QP, wr fabric.SendWR) error {
	e.swr[0] = wr
	_, err := qp.PostSend(e.swr[:])
	e.swr[0] = fabric.SendWR{}
	return err
}

// postRecv1 posts wr on qp, as postSend1 does.
func (e *endpointBase) postRecv1(qp fabric.QP, wr fabric.RecvWR) error {
	e.rwr[0] = wr
	_, err := qp.PostRecv(e.rwr[:])
	e.rwr[0] = fabric.RecvWR{}
	return err
}

func (e *endpointBase) init(design string, th fabric.Thread, cfg Config) {
	e.design, e.cfg, e.node = design, cfg, th.Node()
	e.me, e.n = e.node.ID(), cfg.Nodes
	e.wcs = make([]fabric.WC, 32)
	e.cs = make([]flowctl.CreditSender, cfg.Nodes)
	// Even an endpoint per thread is used by two threads, the sending
	// fragment's and the receiving fragment's.
	e.mu = e.node.NewMutex()
}

// initSendBuffers makes count send buffers of msg bytes: lent by the
// adaptive pool (returned once the queue pairs, which may still name them,
// are gone) when the endpoint has one, else at off in mr.
func (e *endpointBase) initSendBuffers(mr fabric.MR, off, count, msg int) error {
	if e.cfg.Adaptive != nil {
		e.own.lent(e.returnSendBuffers)
		return e.initAdaptiveSend(count, msg)
	}
	e.initPool(mr, off, count, msg)
	return nil
}

// initPool makes count send buffers of msg bytes at offset off of mr, each
// with room for the header in front.
func (e *endpointBase) initPool(mr fabric.MR, off, count, msg int) {
	mem := mr.Bytes()
	for i := 0; i < count; i++ {
		o := off + i*msg
		e.bufs = append(e.bufs, &Buffer{Data: mem[o+HeaderBytes : o+msg], id: i, mr: mr, off: o})
		e.free = append(e.free, i)
	}
	e.outstanding = make([]int, count)
}

func (e *endpointBase) lock()   { e.mu.Lock() }
func (e *endpointBase) unlock() { e.mu.Unlock() }

// waitReleased releases mu while th waits for one of on or the deadline,
// and takes it again, also when the wait unwinds instead of returning (the
// simulator unwinds the threads of a run it stops): the caller's deferred
// Unlock then finds mu held, as it expects.
func waitReleased(th fabric.Thread, mu fabric.Mutex, deadline fabric.Time, on ...fabric.Waitable) {
	mu.Unlock()
	defer mu.Lock()
	th.Wait(deadline, on...)
}

// withLock runs f holding mu and lets mu go also when f unwinds (every
// backend unwinds the threads of a run it stops, from inside Compute,
// Busy or Wait): a lock left held would stall the threads still running.
func withLock(mu fabric.Mutex, f func()) {
	mu.Lock()
	defer mu.Unlock()
	f()
}

// withoutLock runs f without mu, which the caller holds, and takes mu
// again also when f unwinds: the caller's deferred Unlock then finds mu
// held (on real threads an unlock of a free lock kills the process).
func withoutLock(mu fabric.Mutex, f func()) {
	mu.Unlock()
	defer mu.Lock()
	f()
}

// waiting says what a wait is for, in an error should it time out: a
// format with at most one %d, and its argument. It is formatted only then,
// so a wait costs no allocation.
type waiting struct {
	format string
	arg    int
}

func (w waiting) String() string {
	if strings.Contains(w.format, "%") {
		return fmt.Sprintf(w.format, w.arg)
	}
	return w.format
}

// wait releases the lock, waits for w (or the deadline) and takes it again;
// it fails when the deadline has already passed.
func (e *endpointBase) wait(th fabric.Thread, deadline fabric.Time, w fabric.Waitable, what waiting) error {
	return e.waitFor(th, deadline, deadline, what, w)
}

// waitFor is wait that returns at until (at the latest) and fails only
// once deadline has passed.
func (e *endpointBase) waitFor(th fabric.Thread, deadline, until fabric.Time, what waiting, ws ...fabric.Waitable) error {
	if th.Now() >= deadline {
		return fmt.Errorf("algos: %s endpoint %d on node %d: no progress for %v while %s", e.design, e.cfg.Tag, e.me, e.cfg.Timeout, what)
	}
	waitReleased(th, e.mu, min(deadline, until), ws...)
	return nil
}

// held is the number of holds on send buffer i besides its completions.
func (e *endpointBase) held(i int) int {
	if e.holds == nil {
		return 0
	}
	return e.holds[i]
}

// unhold drops a hold on send buffer i, freeing it when nothing else
// holds it.
func (e *endpointBase) unhold(i int) error {
	if e.holds[i]--; e.holds[i] == 0 && e.outstanding[i] == 0 {
		return e.freeBuffer(i)
	}
	return nil
}

// reap polls send completions and frees send buffers whose every
// destination has completed.
func (e *endpointBase) reap() (int, error) {
	n, err := e.scq.Poll(e.wcs)
	if err != nil {
		return 0, err
	}
	for _, wc := range e.wcs[:n] {
		if wc.Status != fabric.StatusSuccess {
			return 0, &fabric.CompletionError{WC: wc, Node: e.me}
		}
		e.signaled--
		if e.sentWC != nil {
			e.sentWC(wc)
		}
		if wc.ID&wrKind == wrSend {
			i := int(wc.ID &^ wrKind)
			if e.outstanding[i]--; e.outstanding[i] == 0 && e.held(i) == 0 {
				if err := e.freeBuffer(i); err != nil {
					return 0, err
				}
			}
		}
	}
	return n, nil
}

func (e *endpointBase) Acquire(th fabric.Thread) (*Buffer, error) {
	e.lock()
	defer e.unlock()
	deadline := th.Now().Add(e.cfg.Timeout)
	for {
		if e.slane != nil {
			if _, err := e.adaptSend(th); err != nil {
				return nil, err
			}
		}
		if len(e.free) > 0 {
			break
		}
		n, err := e.reap()
		if err != nil {
			return nil, err
		}
		until := deadline
		if e.tick != nil {
			k, next, err := e.tick(th)
			if err != nil {
				return nil, err
			}
			n, until = n+k, next
		}
		if n > 0 {
			deadline = th.Now().Add(e.cfg.Timeout)
			continue
		}
		if err := e.waitFor(th, deadline, until, waiting{format: "waiting for a free send buffer"}, append([]fabric.Waitable{e.scq}, e.tickOn...)...); err != nil {
			return nil, err
		}
	}
	return e.lendFree()
}

// freeBuffer puts send buffer i back on the free list (every send of it
// completed, or it had no destination).
func (e *endpointBase) freeBuffer(i int) error {
	e.free = append(e.free, i)
	if e.slane != nil {
		return e.slane.Return(false)
	}
	return nil
}

// checkBuffer rejects a buffer this endpoint did not lend.
func (e *endpointBase) checkBuffer(b *Buffer) error {
	if b == nil || b.id < 0 || b.id >= len(e.bufs) || e.bufs[b.id] != b {
		return fmt.Errorf("%w: PutData with a buffer this endpoint did not lend", ErrConfig)
	}
	if b.N < 0 || b.N > len(b.Data) {
		return fmt.Errorf("%w: buffer holds %d bytes, capacity %d", ErrConfig, b.N, len(b.Data))
	}
	return nil
}

func (e *endpointBase) Info() EndpointInfo {
	i := e.info
	if e.slane != nil {
		i.addLane(e.slane, false)
	}
	return i
}

// quiesce waits until every signaled send has completed, then meets the
// other nodes' endpoints at a barrier, so that no queue pair disappears
// while a peer still sends to it. Called with the lock held.
func (e *endpointBase) quiesce(th fabric.Thread, name string) error {
	deadline := th.Now().Add(e.cfg.Timeout)
	for e.signaled > 0 {
		n, err := e.reap()
		if err != nil {
			return err
		}
		if n == 0 {
			if err := e.wait(th, deadline, e.scq, waiting{format: "waiting for the last sends to complete"}); err != nil {
				return err
			}
		}
	}
	return e.node.OOB().Barrier(fmt.Sprintf("%s/%d/down", name, e.cfg.Tag))
}

// receiving is how a design finds new deliveries for getData. A design
// builds it once, when it opens (its functions take the calling thread),
// so that GetData allocates nothing.
type receiving struct {
	// progress polls for deliveries and reports how much it did.
	progress func(th fabric.Thread) (int, error)
	// idle, if set, runs when progress found nothing; quiet is when this
	// GetData call began or its progress last found something. It returns
	// when the wait should end at the latest (or Forever), and quiet
	// anew (moved to now when it acted on the quiet).
	idle func(th fabric.Thread, now, quiet fabric.Time) (until, requiet fabric.Time, err error)
	// stuck, if set, describes a timeout better than the default.
	stuck func() error
	// on are the waitables that signal new work.
	on []fabric.Waitable
	// taken, if set, runs on each delivery as it is handed out and
	// returns it, amended.
	taken func(th fabric.Thread, d Delivery) (Delivery, error)
	// pause, if set, replaces the wait after a poll that found nothing:
	// the thread keeps polling, as an MPI library's progress engine does,
	// and pause, told how many polls in a row found nothing, may let the
	// lock go for a while (it returns with the lock held). It returns
	// false when the thread should wait after all.
	pause func(th fabric.Thread, empties int) bool
}

// getData is GetData for every design: it hands out polled deliveries,
// reports the end once every source has ended, and otherwise makes
// progress or waits, failing after cfg.Timeout without progress.
func (e *endpointBase) getData(th fabric.Thread, r *receiving) (Delivery, error) {
	quiet := th.Now() // before the lock, which may take time
	e.lock()
	defer e.unlock()
	deadline := th.Now().Add(e.cfg.Timeout)
	empties := 0
	for {
		if d, ok := e.ready.pop(); ok {
			if r.taken != nil {
				var err error
				if d, err = r.taken(th, d); err != nil {
					return Delivery{}, err
				}
			}
			return d, nil
		}
		if e.doneCount == e.n {
			return Delivery{End: true}, nil
		}
		n, err := r.progress(th)
		if err != nil {
			return Delivery{}, err
		}
		if n > 0 {
			quiet = th.Now()
			deadline = quiet.Add(e.cfg.Timeout)
			empties = 0
			continue
		}
		until := deadline
		if r.idle != nil {
			t, q, err := r.idle(th, th.Now(), quiet)
			if err != nil {
				return Delivery{}, err
			}
			until, quiet = min(until, t), q
		}
		if th.Now() >= deadline {
			if r.stuck != nil {
				return Delivery{}, r.stuck()
			}
			return Delivery{}, fmt.Errorf("algos: %s endpoint %d on node %d: no progress for %v while receiving (%d of %d sources ended)",
				e.design, e.cfg.Tag, e.me, e.cfg.Timeout, e.doneCount, e.n)
		}
		if r.pause != nil {
			empties++
			if r.pause(th, empties) {
				continue
			}
		}
		waitReleased(th, e.mu, until, r.on...)
	}
}

// signalSome marks wr signaled when it is the creditSignalEvery-th
// unsignaled request counted by *count, or when force is set: unsignaled
// requests hold their send-queue slots until a later signaled one of the
// same queue pair completes.
func (e *endpointBase) signalSome(wr *fabric.SendWR, count *int, force bool) {
	if *count++; *count == creditSignalEvery || force {
		wr.Flags |= fabric.Signaled
		e.signaled++
		*count = 0
	}
}

// pollLines charges the CPU time of a polling loop that read lines cache
// lines of memory the NIC writes (Config.PollLineCycles each).
func (e *endpointBase) pollLines(th fabric.Thread, lines int) {
	c := e.cfg.PollLineCycles
	if c == 0 {
		c = DefaultPollLineCycles
	}
	if c > 0 && lines > 0 {
		th.Compute(c * int64(lines))
	}
}

// headerFor is the header of b sent with state st.
func (e *endpointBase) headerFor(b *Buffer, st State) header {
	h := header{src: e.me, n: b.N, tuples: b.Tuples, sum: b.Sum}
	if st == Depleted {
		h.flags = flagDepleted
	}
	return h
}

// lendFree lends the most recently freed send buffer, empty (there must be
// one), and tells the adaptive send lane.
func (e *endpointBase) lendFree() (*Buffer, error) {
	i := e.free[len(e.free)-1]
	e.free = e.free[:len(e.free)-1]
	if e.slane != nil {
		if err := e.slane.TakeFree(); err != nil {
			return nil, err
		}
	}
	b := e.bufs[i]
	b.N, b.Tuples, b.Sum = 0, 0, 0
	return b, nil
}

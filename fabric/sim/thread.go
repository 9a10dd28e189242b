package sim

import (
	"errors"
	"fmt"
	"iter"
	"math/rand/v2"
	"runtime/debug"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// thread is a simulated thread: a coroutine (iter.Pull) that runs only
// while the cluster resumes it, so exactly one piece of code runs at a time
// and switching between threads costs a coroutine switch, not a scheduler
// round trip. It keeps its own clock, local, which may run ahead of the
// cluster's clock while the thread only computes; it catches up (sync)
// before it observes or changes shared state. While it catches up it fires
// network events itself, and yields only when another thread's turn comes.
type thread struct {
	c      *Cluster
	node   *node
	name   string
	nameID uint32 // the cluster's number for name (threadNames)
	core   int
	local  fabric.Time
	gen    uint64 // wake events carry the generation they were made for
	rng    *rand.Rand

	next  func() (struct{}, bool) // resume the coroutine
	stop  func()                  // abort it
	yield func(struct{}) bool     // inside the coroutine: give control back

	done bool
	// What this thread has observed, as Cluster.sigCounter values: memory
	// (Sync, or a return from Wait) and each completion queue it polled.
	// Wait returns at once for a Waitable signaled since its observation.
	memTick   uint64
	cqTick    []cqSeen // a thread polls few queues: a slice beats a map
	waitSince fabric.Time
	waitOn    any

	busy, idle fabric.Duration // CPU work and time spent waiting

	tIdx int         // position in the timer heap, -1 when no deadline is armed
	tAt  fabric.Time // armed deadline
	tSeq uint64
}

var _ fabric.Thread = (*thread)(nil)

func (th *thread) handle(uint64, *packet) {}

// errAbort unwinds a thread's coroutine when the run is aborted.
type errAbort struct{}

func (c *Cluster) spawn(n *node, name string, core int, start fabric.Time, fn func(fabric.Thread) error) {
	th := &thread{c: c, node: n, name: name, nameID: c.names.id(name), core: core, local: start, rng: c.rng("thread/" + name), tIdx: -1}
	th.next, th.stop = iter.Pull(func(yield func(struct{}) bool) {
		th.yield = yield
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(errAbort); !ok {
					panic(r)
				}
			}
		}()
		err := th.call(fn)
		th.done = true
		c.live--
		if err != nil {
			c.fail(fmt.Errorf("%s: %w", th.name, err))
		}
	})
	c.threads = append(c.threads, th)
	c.live++
	c.schedule(start, th, th.gen, nil)
}

func (th *thread) call(fn func(fabric.Thread) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(errAbort); ok {
				panic(r)
			}
			err = fmt.Errorf("panic: %v\n%s", r, debug.Stack())
		}
	}()
	return fn(th)
}

// step fires the next event or deadline. It returns the thread whose turn
// it is (nil when the event was a network event) and stop when the run
// cannot go on.
func (c *Cluster) step() (w *thread, stop bool) {
	ek, ev := c.q.min()
	tm := c.timers.peek()
	if c.stop == nil {
		switch {
		case !ev && tm == nil && c.live > 0:
			if c.stop = c.crashEnded(); c.stop == nil {
				c.stop = fmt.Errorf("%w: %s", fabric.ErrDeadlock, c.blocked())
			}
		case !ev && tm == nil:
			c.stop = errors.New("sim: event queue empty")
		case ev && ek.at > c.limit && (tm == nil || tm.tAt > c.limit), !ev && tm.tAt > c.limit:
			c.stop = fmt.Errorf("%w: %v simulated; still running: %s", fabric.ErrTimeLimit, c.cfg.TimeLimit, c.blocked())
		}
	}
	if c.stop != nil {
		return nil, true
	}
	if tm != nil && (!ev || tm.tAt < ek.at || tm.tAt == ek.at && tm.tSeq < ek.key>>slotBits) {
		// A Wait deadline passed.
		c.timers.clear(tm)
		c.now = tm.tAt
		c.countEvent()
		c.mix(uint64(tm.tAt))
		if c.tracer != nil {
			c.traceDeadline(tm.tAt, tm)
		}
		w = tm
	} else {
		k, b := c.q.take()
		c.fireBody(k.at, &b)
		var ok bool
		if w, ok = b.h.(*thread); !ok || b.arg != w.gen {
			return nil, false
		}
		c.timers.clear(w)
	}
	w.gen++
	return w, false
}

// loop fires events until this thread's own turn comes (it returns and the
// thread goes on), handing over to another thread whose turn comes first.
func (th *thread) loop() {
	c := th.c
	for {
		w, stop := c.step()
		switch {
		case stop:
			th.suspend()
			return
		case w == nil:
		case w == th:
			return
		default:
			c.handover = w
			th.suspend()
			return
		}
	}
}

// suspend gives control back to the driver until this thread is resumed.
func (th *thread) suspend() {
	if !th.yield(struct{}{}) {
		panic(errAbort{})
	}
}

// drive is the run's scheduler: it fires events and resumes threads whose
// turn has come until every thread has returned or the run must stop.
func (c *Cluster) drive() {
	for c.live > 0 && c.stop == nil {
		w := c.handover
		c.handover = nil
		if w == nil {
			var stop bool
			if w, stop = c.step(); stop {
				return
			}
			if w == nil {
				continue
			}
		}
		c.handoffs++
		c.cur = w
		if w.next == nil { // a wake left over from an earlier run
			w.done = true
		} else if _, ok := w.next(); !ok {
			w.done = true
		}
		c.cur = nil
	}
}

// syncTo brings the cluster's clock to at, firing every earlier event. It
// queues a wake-up for itself only when another thread's turn comes first.
func (th *thread) syncTo(at fabric.Time) {
	c := th.c
	for at <= c.limit {
		next, ok := c.nextAt()
		if !ok || next > at {
			c.now = at
			th.local = at
			if at >= th.node.crashAt {
				th.freeze()
			}
			return
		}
		w, stop := c.step()
		if stop {
			th.suspend()
			return
		}
		if w != nil && w != th {
			c.schedule(at, th, th.gen, nil)
			c.handover = w
			th.suspend()
			break
		}
	}
	if c.now < at { // beyond the time limit: let the loop stop the run
		c.schedule(at, th, th.gen, nil)
		th.loop()
	}
	th.local = c.now
	if th.local >= th.node.crashAt {
		th.freeze()
	}
}

// park blocks the thread until something schedules its wake event.
func (th *thread) park(on any) {
	th.waitSince, th.waitOn = th.c.now, on
	th.loop()
	th.waitOn = nil
	if th.c.now > th.local {
		th.idle += th.c.now.Sub(th.local)
		th.local = th.c.now
	}
}

func (th *thread) wakeAt(at fabric.Time) { th.c.schedule(at, th, th.gen, nil) }

func (th *thread) Name() string      { return th.name }
func (th *thread) Node() fabric.Node { return th.node }
func (th *thread) Core() int         { return th.core }
func (th *thread) Now() fabric.Time  { return th.local }
func (th *thread) Rand() *rand.Rand  { return th.rng }
func (th *thread) Sync() {
	th.syncTo(th.local)
	th.memTick = th.c.sigCounter
}

// observedCQ records that the thread has just polled a completion queue.
func (th *thread) observedCQ(s *sigbase) {
	for i := range th.cqTick {
		if th.cqTick[i].s == s {
			th.cqTick[i].tick = th.c.sigCounter
			return
		}
	}
	th.cqTick = append(th.cqTick, cqSeen{s, th.c.sigCounter})
}

// cqSeen is when a thread last polled a completion queue.
type cqSeen struct {
	s    *sigbase
	tick uint64
}

// polledAt returns when the thread last polled s; ok is false if never.
func (th *thread) polledAt(s *sigbase) (tick uint64, ok bool) {
	for i := range th.cqTick {
		if th.cqTick[i].s == s {
			return th.cqTick[i].tick, true
		}
	}
	return 0, false
}

func (th *thread) Compute(cycles int64) {
	if cycles > 0 {
		th.Busy(th.c.prof.cycles(cycles))
	}
}

func (th *thread) Charge(w fabric.Work, n int) {
	h := &th.c.prof.Host
	switch w {
	case fabric.WorkCopy:
		th.Busy(fabric.Duration(float64(n)*1000/h.MemcpyGBps + 0.5))
	case fabric.WorkHashTuple:
		th.Busy(ns(h.HashTupleNS * float64(n)))
	default:
		panic(fmt.Sprintf("sim: Charge of unknown work kind %d", w))
	}
}

func (th *thread) Busy(d fabric.Duration) {
	if d > 0 {
		th.local = th.local.Add(d)
		th.busy += d
	}
}

func (th *thread) Spawn(name string, core int, fn func(fabric.Thread) error) {
	if core < 0 || core >= th.node.Cores() { // fail the run (Spawn has no error result), do not panic
		th.c.fail(fmt.Errorf("%s: %w: Spawn %q on core %d: node has cores 0..%d", th.name, fabric.ErrInvalidArg, name, core, th.node.Cores()-1))
		return
	}
	th.c.spawn(th.node, fmt.Sprintf("n%d/%s", th.node.id, name), core, th.local, fn)
}

func (th *thread) Wait(deadline fabric.Time, on ...fabric.Waitable) {
	th.syncTo(th.local)
	defer func() { th.memTick = th.c.sigCounter }()
	for _, w := range on {
		s := sigOf(w)
		seen := th.memTick // memory and signals: observed at the last Sync
		if t, ok := th.polledAt(s); ok {
			seen = t // a completion queue: observed when last polled
		} else if s.isCQ {
			seen = 0 // never polled: poll first
		}
		if s.last > seen {
			return
		}
	}
	if deadline <= th.local {
		return
	}
	for _, w := range on {
		s := sigOf(w)
		s.waiters = append(s.waiters, waiter{th, th.gen})
	}
	if deadline != fabric.Forever {
		th.c.q.seq++
		th.c.timers.set(th, deadline, th.c.q.seq)
	}
	var what any = "nothing (deadline only)"
	if len(on) > 0 {
		what = on[0]
	}
	th.park(what)
}

// waiter is a thread parked on a Waitable, valid while th.gen == gen.
type waiter struct {
	th  *thread
	gen uint64
}

// sigbase makes a model object Waitable.
type sigbase struct {
	fabric.WaitableBase
	isCQ    bool // observed by polling, not by reading memory
	c       *Cluster
	last    uint64 // sigCounter value of the latest signal
	waiters []waiter
}

func (s *sigbase) sig() *sigbase { return s }

// signal records that something happened and wakes every waiter now.
func (s *sigbase) signal() {
	c := s.c
	c.sigCounter++
	s.last = c.sigCounter
	for _, w := range s.waiters {
		if w.th.gen == w.gen && !w.th.done {
			c.schedule(c.now, w.th, w.gen, nil)
		}
	}
	s.waiters = s.waiters[:0]
}

type hasSig interface{ sig() *sigbase }

func sigOf(w fabric.Waitable) *sigbase {
	s, ok := w.(hasSig)
	if !ok {
		panic(fmt.Sprintf("sim: %T is not a Waitable of the simulator", w))
	}
	return s.sig()
}

// current returns the running thread, or nil outside any thread.
func (c *Cluster) current() *thread { return c.cur }

// enter is called at the start of every verb: the calling thread catches up
// with the cluster and pays cost of CPU time. It returns the time at which
// the verb takes effect.
func (c *Cluster) enter(cost fabric.Duration) fabric.Time {
	th := c.cur
	if th == nil {
		return c.now
	}
	th.syncTo(th.local)
	th.Busy(cost)
	return th.local
}

// lockCaller returns the thread calling a Mutex's op ("Lock", "Unlock"),
// caught up with the cluster, or nil while the run is being aborted (the
// op then does nothing). It panics outside a simulated thread.
func (c *Cluster) lockCaller(op string) *thread {
	th := c.cur
	if th == nil {
		panic("sim: Mutex." + op + " outside a simulated thread")
	}
	if c.abort {
		return nil
	}
	th.syncTo(th.local)
	return th
}

// mutex is a simulated lock: contended acquisitions wait in FIFO order and
// pay the profile's hand-off cost.
type mutex struct {
	c     *Cluster
	held  bool
	queue []*thread
}

// Lock and Unlock do nothing while a run is being aborted: the threads
// only unwind through their deferred calls then, and a lock that a Wait
// released when the abort interrupted it is not held, whatever the
// deferred Unlock that follows expects.
func (m *mutex) Lock() {
	th := m.c.lockCaller("Lock")
	if th == nil {
		return
	}
	if !m.held {
		m.held = true
		th.Busy(m.c.prof.Host.lockCost())
		return
	}
	start := th.local
	m.queue = append(m.queue, th)
	th.park(m)
	m.c.stats.MutexWait += th.local.Sub(start)
}

func (m *mutex) Unlock() {
	th := m.c.lockCaller("Unlock")
	if th == nil {
		return
	}
	if !m.held {
		panic("sim: Unlock of an unlocked Mutex")
	}
	if len(m.queue) == 0 {
		m.held = false
		return
	}
	next := m.queue[0]
	// FIFO in place: the waiters are few, and the array is reused.
	n := copy(m.queue, m.queue[1:])
	m.queue[n] = nil
	m.queue = m.queue[:n]
	next.wakeAt(m.c.now.Add(m.c.prof.Host.handoffCost(th.core, next.core)))
}

func (m *mutex) String() string {
	return fmt.Sprintf("a Mutex (held: %v, %d waiting)", m.held, len(m.queue))
}

// signalObj is a fabric.Signal.
type signalObj struct{ sigbase }

func (s *signalObj) String() string { return "a Signal" }

func (s *signalObj) Notify() {
	if th := s.c.cur; th != nil {
		th.syncTo(th.local)
	}
	s.signal()
}

// lockState is a provider-internal lock, such as the spinlock that
// ibv_post_send takes on a queue pair and ibv_poll_cq on a completion queue:
// threads sharing one object serialize on it, and taking it from another
// thread costs a cache-line hand-off.
type lockState struct {
	free   fabric.Time // when the last holder released it
	holder *thread
}

// acquire takes l for the running thread (no-op outside threads); the
// caller's critical section ends at release.
func (c *Cluster) acquire(l *lockState) {
	th := c.cur
	if th == nil {
		return
	}
	if l.holder != nil && l.holder != th {
		start := max(th.local, l.free).Add(c.prof.Host.handoffCost(l.holder.core, th.core))
		c.stats.LockWait += start.Sub(th.local)
		th.Busy(start.Sub(th.local))
		c.stats.LockHandoffs++
	}
	l.holder = th
}

// release ends the running thread's critical section on l.
func (c *Cluster) release(l *lockState) {
	if th := c.cur; th != nil {
		l.free = th.local
	}
}

// threadNames numbers the names of the threads a cluster has spawned, so
// that a posted receive can name its poster in the 17 bits it has for it
// (rqe): a record kept for every posted receive costs no pointer. Names
// repeat from run to run, so the table grows with the distinct names only.
// Number 0 is the driver (no thread); past maxNameID distinct names, the
// rest share the last number, reported as unnamedPoster. Engine goroutine
// only.
type threadNames struct {
	byID []string
	ids  map[string]uint32
}

const maxNameID = 1<<(64-rqePoster) - 1

// severalPosters is the number a receive keeps when it stands for
// identical receives posted by different threads (rqRepeats); no name
// has it.
const severalPosters = maxNameID - 1

// unnamedPoster names the poster of a receive whose thread had no number
// of its own.
var unnamedPoster = fmt.Sprintf("one of the threads after the first %d names", severalPosters-1)

// severalPostersName names the poster of receives that several threads
// posted alike (same queue pair, wr_id and buffer, one after another).
const severalPostersName = "one of the threads that posted this same receive (same wr_id and buffer) in turn"

// id returns name's number, giving it the next one if it has none.
func (t *threadNames) id(name string) uint32 {
	if id, ok := t.ids[name]; ok {
		return id
	}
	if t.ids == nil {
		t.ids, t.byID = map[string]uint32{}, []string{"driver"}
	}
	id := uint32(len(t.byID))
	if id >= severalPosters {
		return maxNameID
	}
	t.byID = append(t.byID, name)
	t.ids[name] = id
	return id
}

// nameID is th's name's number, 0 for the driver (nil).
func (c *Cluster) nameID(th *thread) uint32 {
	if th == nil {
		return 0
	}
	return th.nameID
}

// threadNamed is the name numbered id (nameID).
func (c *Cluster) threadNamed(id uint32) string {
	switch {
	case id == 0:
		return threadName(nil)
	case id == severalPosters:
		return severalPostersName
	case int(id) < len(c.names.byID):
		return c.names.byID[id]
	}
	return unnamedPoster
}

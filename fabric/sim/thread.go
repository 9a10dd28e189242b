package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"runtime/debug"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// thread is a simulated thread. Its goroutine runs only while it holds the
// baton (Cluster.cur == thread). It keeps its own clock, local, which may run
// ahead of the cluster's clock while the thread only computes; it catches
// up (sync) before it observes or changes shared state.
type thread struct {
	c     *Cluster
	node  *node
	name  string
	core  int
	local fabric.Time
	gen   uint64 // wake events carry the generation they were made for
	wake  chan struct{}
	rng   *rand.Rand

	done, exiting bool
	syncTick      uint64 // Cluster.sigCounter at the last synchronization
	waitSince     fabric.Time
	waitOn        any

	busy, idle fabric.Duration // CPU work and time spent waiting
}

var _ fabric.Thread = (*thread)(nil)

func (th *thread) handle(uint64, *packet) {}

func (c *Cluster) spawn(n *node, name string, core int, start fabric.Time, fn func(fabric.Thread) error) {
	th := &thread{c: c, node: n, name: name, core: core, local: start, wake: make(chan struct{}),
		rng: c.rng("thread/" + name)}
	c.threads = append(c.threads, th)
	c.live++
	c.schedule(start, th, th.gen, nil)
	go th.run(fn)
}

func (th *thread) run(fn func(fabric.Thread) error) {
	c := th.c
	completed := false
	defer func() {
		if completed {
			return
		}
		// Reached through runtime.Goexit: an abort by the driver, or
		// t.FailNow (or similar) called inside a simulated thread.
		if !c.abort {
			c.live--
			c.fail(fmt.Errorf("sim: thread %s exited through runtime.Goexit (t.FailNow inside a thread? return an error instead)", th.name))
		}
		th.done = true
		c.cur = nil
		c.driver.wake <- struct{}{}
	}()
	<-th.wake
	if c.abort {
		runtime.Goexit()
	}
	err := th.call(fn)
	completed = true
	th.done = true
	c.live--
	if err != nil {
		c.fail(fmt.Errorf("%s: %w", th.name, err))
	}
	th.exiting = true
	if c.live == 0 || c.stop != nil {
		th.handTo(c.driver)
		return
	}
	th.loop()
}

func (th *thread) call(fn func(fabric.Thread) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v\n%s", r, debug.Stack())
		}
	}()
	return fn(th)
}

// loop fires events as the baton holder until this thread's own wake event
// fires (it returns and the thread goes on) or another thread's does (the
// baton passes to it and this goroutine blocks until its own turn).
func (th *thread) loop() {
	c := th.c
	for {
		if c.stop == nil {
			at, ok := c.q.peek()
			switch {
			case !ok && c.live > 0:
				c.stop = fmt.Errorf("%w: %s", fabric.ErrDeadlock, c.blocked())
			case !ok:
				c.stop = errors.New("sim: event queue empty")
			case at > c.limit:
				c.stop = fmt.Errorf("%w: %v simulated; still running: %s", fabric.ErrTimeLimit, c.cfg.TimeLimit, c.blocked())
			}
		}
		if c.stop != nil {
			if th != c.driver {
				th.handTo(c.driver)
			}
			return
		}
		ev := c.q.pop()
		c.fire(&ev)
		w, ok := ev.h.(*thread)
		if !ok || ev.arg != w.gen {
			continue
		}
		w.gen++
		if w == th {
			return
		}
		th.handTo(w)
		return
	}
}

// handTo passes the baton to another thread and, unless this thread is
// exiting, blocks until the baton comes back.
func (th *thread) handTo(to *thread) {
	c := th.c
	c.cur = to
	if to == c.driver {
		c.cur = nil
	}
	to.wake <- struct{}{}
	if th.exiting {
		return
	}
	<-th.wake
	if c.abort && th != c.driver {
		runtime.Goexit()
	}
}

// syncTo brings the cluster's clock to at, firing every earlier event.
func (th *thread) syncTo(at fabric.Time) {
	c := th.c
	if next, ok := c.q.peek(); (!ok || next > at) && at <= c.limit {
		c.now = at // nothing happens before at: no need to queue a wake
	} else {
		c.schedule(at, th, th.gen, nil)
		th.loop()
	}
	th.local = c.now
	th.syncTick = c.sigCounter
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
	th.syncTick = th.c.sigCounter
}

func (th *thread) wakeAt(at fabric.Time) { th.c.schedule(at, th, th.gen, nil) }

func (th *thread) Name() string      { return th.name }
func (th *thread) Node() fabric.Node { return th.node }
func (th *thread) Core() int         { return th.core }
func (th *thread) Now() fabric.Time  { return th.local }
func (th *thread) Rand() *rand.Rand  { return th.rng }
func (th *thread) Sync()             { th.syncTo(th.local) }

func (th *thread) Compute(cycles int64) {
	if cycles > 0 {
		th.Busy(th.c.prof.cycles(cycles))
	}
}

func (th *thread) Busy(d fabric.Duration) {
	if d > 0 {
		th.local = th.local.Add(d)
		th.busy += d
	}
}

func (th *thread) Spawn(name string, core int, fn func(fabric.Thread) error) {
	if core < 0 || core >= th.node.Cores() {
		panic(fmt.Sprintf("sim: Spawn %q on core %d: node has cores 0..%d", name, core, th.node.Cores()-1))
	}
	th.c.spawn(th.node, fmt.Sprintf("n%d/%s", th.node.id, name), core, th.local, fn)
}

func (th *thread) Wait(deadline fabric.Time, on ...fabric.Waitable) {
	prev := th.syncTick
	th.Sync()
	for _, w := range on {
		if sigOf(w).last > prev {
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
		th.wakeAt(deadline)
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

// current returns the thread holding the baton, or nil for the driver.
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

// mutex is a simulated lock: contended acquisitions wait in FIFO order and
// pay the profile's hand-off cost.
type mutex struct {
	c     *Cluster
	held  bool
	queue []*thread
}

func (m *mutex) Lock() {
	th := m.c.cur
	if th == nil {
		panic("sim: Mutex.Lock outside a simulated thread")
	}
	th.Sync()
	if !m.held {
		m.held = true
		th.Busy(m.c.prof.Host.lockCost())
		return
	}
	m.queue = append(m.queue, th)
	th.park(m)
}

func (m *mutex) Unlock() {
	th := m.c.cur
	if th == nil {
		panic("sim: Mutex.Unlock outside a simulated thread")
	}
	th.Sync()
	if !m.held {
		panic("sim: Unlock of an unlocked Mutex")
	}
	if len(m.queue) == 0 {
		m.held = false
		return
	}
	next := m.queue[0]
	m.queue = m.queue[1:]
	next.wakeAt(m.c.now.Add(m.c.prof.Host.handoffCost()))
}

// signalObj is a fabric.Signal.
type signalObj struct{ sigbase }

func (s *signalObj) Notify() {
	if th := s.c.cur; th != nil {
		th.Sync()
	}
	s.signal()
}

package host

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// This file is the execution environment of real machines (the
// fabric.Fabric, Node and Thread). It does not touch libibverbs: nodes get
// their fabric.Device from the caller (package ibv's devices, or none), so
// every build tests it with fake devices.

// cluster implements fabric.Fabric on real hosts: every node of the job
// (OpenLocal) or this process's one node (distributed).
type cluster struct {
	backend string // what Backend reports
	size    int
	nodes   []*node
	start   time.Time
	ghz     float64
	cfg     Config
	cpus    []int // CPUs threads are pinned to (Config.Pin)
	// release frees the devices when the cluster closes.
	release func() error

	mu     sync.Mutex
	run    *runState
	closed bool
}

// node implements fabric.Node.
type node struct {
	c     *cluster
	id    int
	index int // position among the local nodes (pinning)
	dev   fabric.Device
	oob   oobChannel
	cores int
	gate  Gate // the device's, or nil (GatedDevice)
}

// newCluster assembles a cluster of size nodes of which the given ones are
// local, each with its device and out-of-band channel; backend is what
// Backend reports.
func newCluster(backend string, cfg Config, size int, ids []int, devs []fabric.Device, oobs []oobChannel, release func() error) *cluster {
	c := &cluster{backend: backend, size: size, start: time.Now(), cfg: cfg, release: release}
	c.ghz = cfg.GHz
	if c.ghz <= 0 {
		c.ghz = cpuGHz()
	}
	c.cpus = allowedCPUs()
	cores := cfg.Cores
	if cores <= 0 {
		cores = max(1, len(c.cpus)/len(ids))
	}
	for i, id := range ids {
		n := &node{c: c, id: id, index: i, dev: devs[i], oob: oobs[i], cores: cores}
		if g, ok := devs[i].(GatedDevice); ok {
			n.gate = g.Gate()
		}
		c.nodes = append(c.nodes, n)
	}
	return c
}

// Backend implements fabric.Fabric.
func (c *cluster) Backend() string { return c.backend }

// Size implements fabric.Fabric.
func (c *cluster) Size() int { return c.size }

// Local implements fabric.Fabric.
func (c *cluster) Local() []fabric.Node {
	out := make([]fabric.Node, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n
	}
	return out
}

// runState is one Run: its threads, its first error and its abort.
type runState struct {
	c       *cluster
	wg      sync.WaitGroup
	mu      sync.Mutex
	err     error
	live    map[*thread]bool
	aborted atomic.Bool
	abortCh chan struct{}
}

// errAbort unwinds a thread whose run was aborted (raised by Wait, Busy
// and Compute; recovered by the thread's wrapper). Lock does not raise it:
// a caller that lets a lock go around a wait takes it again in a deferred
// call, and its own deferred unlock must then find the lock held.
type errAbort struct{}

// abortGrace is how long Run waits for threads to notice an abort.
var abortGrace = 10 * time.Second

// Run implements fabric.Fabric. Threads are goroutines locked to OS
// threads. The first error (or panic) of any thread, a failure reported by
// another node of a distributed job, or the time limit aborts the run:
// out-of-band calls fail and the other threads unwind at their next Wait,
// Busy, Compute or Lock. Run returns when every thread has returned; if a
// thread does not return within 10s of an abort (it spins without calling
// any of those), Run returns anyway, naming it, and the cluster refuses to
// Close or Run until it has returned.
func (c *cluster) Run(main func(th fabric.Thread) error) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return fmt.Errorf("%w: host: Run after Close", fabric.ErrClosed)
	}
	if c.run != nil {
		c.mu.Unlock()
		return errors.New("host: Run called while a run is in progress (or a failed run left threads behind)")
	}
	rs := &runState{c: c, live: map[*thread]bool{}, abortCh: make(chan struct{})}
	c.run = rs
	c.mu.Unlock()
	for _, n := range c.nodes {
		n.oob.newRun()
		if ab, ok := n.oob.(*tcpOOB); ok {
			f := rs.fail
			ab.onAbort.Store(&f)
		}
	}
	if c.cfg.TimeLimit > 0 {
		t := time.AfterFunc(c.cfg.TimeLimit, func() {
			rs.fail(fmt.Errorf("%w: host: %v of wall-clock time; still running: %s", fabric.ErrTimeLimit, c.cfg.TimeLimit, rs.running()))
		})
		defer t.Stop()
	}
	for _, n := range c.nodes {
		rs.spawn(n, fmt.Sprintf("n%d/main", n.id), 0, main)
	}
	done := make(chan struct{})
	go func() { rs.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-rs.abortCh:
		select {
		case <-done:
		case <-time.After(abortGrace):
			go func() { // the cluster is usable again once they return
				<-done
				c.mu.Lock()
				if c.run == rs {
					c.run = nil
				}
				c.mu.Unlock()
			}()
			rs.mu.Lock()
			err := rs.err
			rs.mu.Unlock()
			return fmt.Errorf("%w (and after the abort these threads did not return within %v: %s)", err, abortGrace, rs.running())
		}
	}
	c.mu.Lock()
	c.run = nil
	c.mu.Unlock()
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.err
}

// fail records the run's first error and aborts it.
func (rs *runState) fail(err error) {
	rs.mu.Lock()
	first := rs.err == nil
	if first {
		rs.err = err
	}
	rs.mu.Unlock()
	if first {
		rs.aborted.Store(true)
		close(rs.abortCh)
		for _, n := range rs.c.nodes {
			n.oob.abort(err)
		}
	}
}

func (rs *runState) running() string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var names []string
	for th := range rs.live {
		names = append(names, th.name)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

func (rs *runState) spawn(n *node, name string, core int, fn func(fabric.Thread) error) {
	h := fnv.New64a()
	h.Write([]byte(name))
	th := &thread{rs: rs, n: n, name: name, core: core, rng: rand.New(rand.NewPCG(rs.c.cfg.Seed, h.Sum64()))}
	rs.mu.Lock()
	rs.live[th] = true
	rs.mu.Unlock()
	rs.wg.Add(1)
	go th.main(fn)
}

// thread implements fabric.Thread.
type thread struct {
	rs   *runState
	n    *node
	name string
	core int
	rng  *rand.Rand
	held bool // the thread holds its node's gate (only its goroutine touches this)
}

// enter takes the node's gate (if it has one) as the thread runs on.
func (th *thread) enter() {
	if g := th.n.gate; g != nil && !th.held {
		g.Enter()
		th.held = true
	}
}

// leave lets go of the node's gate at a synchronizing point.
func (th *thread) leave() {
	if g := th.n.gate; g != nil && th.held {
		th.held = false
		g.Leave()
	}
}

func (th *thread) main(fn func(fabric.Thread) error) {
	rs := th.rs
	defer rs.wg.Done()
	runtime.LockOSThread()
	pinned := false
	if c := rs.c; c.cfg.Pin && len(c.cpus) > 0 {
		cpu := c.cpus[(th.n.index*th.n.cores+th.core)%len(c.cpus)]
		if err := pinTo(cpu); err != nil {
			rs.fail(fmt.Errorf("%s: pinning to CPU %d: %w", th.name, cpu, err))
		}
		pinned = true
	}
	if !pinned {
		// A pinned OS thread is discarded with its goroutine (its CPU
		// mask must not leak into the runtime's pool); others go back.
		defer runtime.UnlockOSThread()
	}
	th.enter()
	err := th.call(fn)
	th.leave()
	rs.mu.Lock()
	delete(rs.live, th)
	rs.mu.Unlock()
	if err != nil {
		rs.fail(fmt.Errorf("%s: %w", th.name, err))
	}
}

func (th *thread) call(fn func(fabric.Thread) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(errAbort); ok {
				err = nil // the run's error is already recorded
				return
			}
			err = fmt.Errorf("panic: %v\n%s", r, debug.Stack())
		}
	}()
	return fn(th)
}

// checkAbort unwinds the thread if its run was aborted.
func (th *thread) checkAbort() {
	if th.rs.aborted.Load() {
		panic(errAbort{})
	}
}

// Name implements fabric.Thread.
func (th *thread) Name() string { return th.name }

// Node implements fabric.Thread.
func (th *thread) Node() fabric.Node { return th.n }

// Core implements fabric.Thread.
func (th *thread) Core() int { return th.core }

// Rand implements fabric.Thread: a PCG stream seeded from Config.Seed and
// the thread's name.
func (th *thread) Rand() *rand.Rand { return th.rng }

// Now implements fabric.Thread: the monotonic clock since the cluster was
// opened, in picoseconds (nanosecond resolution).
func (th *thread) Now() fabric.Time { return th.n.c.now() }

func (c *cluster) now() fabric.Time {
	return fabric.Time(time.Since(c.start).Nanoseconds()) * fabric.Time(fabric.Nanosecond)
}

// Compute implements fabric.Thread: spins for cycles at the configured
// clock rate.
func (th *thread) Compute(cycles int64) {
	if cycles > 0 {
		th.Busy(fabric.Duration(float64(cycles) * 1000 / th.n.c.ghz))
	}
}

// Busy implements fabric.Thread: spins (without sleeping) for d. It
// unwinds the thread of an aborted run on entry, so that a loop of short
// spins does too, and every 1024 clock reads.
func (th *thread) Busy(d fabric.Duration) {
	if d <= 0 {
		return
	}
	th.checkAbort()
	th.leave()
	defer th.enter()
	end := th.Now().Add(d)
	for i := 0; th.Now() < end; i++ {
		if i&1023 == 1023 {
			th.checkAbort()
			runtime.Gosched()
		}
	}
}

// Charge implements fabric.Thread: the work was really done; nothing to add.
func (th *thread) Charge(fabric.Work, int) {}

// Sync implements fabric.Thread: a no-op on hardware, where memory written
// by the NIC is visible once its completion has been polled; with a
// software NIC (GatedDevice) it passes the node's gate, so that writes
// placed before it are visible after it. It is not a fence (Go has no
// standalone one, and a fence here would come before the loads that need
// ordering, not between them): pollers order their reads of NIC-written
// memory with an acquire load of the word they poll (algos/polled.go).
func (th *thread) Sync() {
	th.leave()
	th.enter()
}

// Wait implements fabric.Thread by returning at once (after yielding the
// processor): on hardware callers busy-poll, as the contract allows. It
// unwinds the thread if the run was aborted.
func (th *thread) Wait(deadline fabric.Time, on ...fabric.Waitable) {
	th.checkAbort()
	th.leave()
	runtime.Gosched()
	th.enter()
}

// Spawn implements fabric.Thread. A core outside 0..Cores()-1 fails the run
// with ErrInvalidArg.
func (th *thread) Spawn(name string, core int, fn func(fabric.Thread) error) {
	if core < 0 || core >= th.n.cores {
		th.rs.fail(fmt.Errorf("%s: %w: Spawn %q on core %d: node has cores 0..%d", th.name, fabric.ErrInvalidArg, name, core, th.n.cores-1))
		return
	}
	th.rs.spawn(th.n, fmt.Sprintf("n%d/%s", th.n.id, name), core, fn)
}

// ID implements fabric.Node.
func (n *node) ID() int { return n.id }

// Cores implements fabric.Node.
func (n *node) Cores() int { return n.cores }

// Device implements fabric.Node.
func (n *node) Device() fabric.Device { return n.dev }

// OOB implements fabric.Node. With a gated device the calls let go of the
// gate while they wait for the other nodes.
func (n *node) OOB() fabric.OOB {
	if n.gate != nil {
		return gatedOOB{n.oob, n.gate}
	}
	return n.oob
}

// Payload implements fabric.Node: real bytes always move.
func (n *node) Payload() bool { return true }

// NewMutex implements fabric.Node: a spinning lock (threads own their
// cores).
func (n *node) NewMutex() fabric.Mutex { return &mutex{gate: n.gate} }

// NewSleepingMutex implements fabric.Node: a waiter parks in the Go
// runtime as a pthread mutex's waiter sleeps in the kernel, and the
// runtime hands the lock to a waiter that has waited long, so a thread
// that lets the lock go and takes it back at once (an MPI progress loop)
// cannot starve the others even on one core. What a sleeping lock costs
// is the simulator's model.
func (n *node) NewSleepingMutex() fabric.Mutex { return &mutex{gate: n.gate, sleep: true} }

// NewSignal implements fabric.Node.
func (n *node) NewSignal() fabric.Signal { return &signal{} }

type mutex struct {
	mu    sync.Mutex
	gate  Gate // the node's, or nil; the locking thread holds it
	sleep bool // a waiter parks (NewSleepingMutex) instead of spinning
}

// Lock waits until it holds the lock, also in a run being aborted (the
// holder unwinds to its deferred unlock): it spins, or parks in the Go
// runtime for a sleeping lock. While it waits it lets go of the node's
// gate (a software NIC must be able to place writes while threads queue
// for a lock), and takes it again before it returns.
func (m *mutex) Lock() {
	if m.mu.TryLock() {
		return
	}
	if m.gate != nil {
		m.gate.Leave()
	}
	if m.sleep {
		m.mu.Lock()
	} else {
		for i := 0; !m.mu.TryLock(); i++ {
			if i&63 == 63 {
				runtime.Gosched()
			}
		}
	}
	if m.gate != nil {
		m.gate.Enter()
	}
}

func (m *mutex) Unlock() { m.mu.Unlock() }

func (c *cluster) current() *runState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.run
}

// signal implements fabric.Signal. Wait returns at once on hardware, so a
// notification only needs to be counted.
type signal struct {
	fabric.WaitableBase
	n atomic.Uint64
}

func (s *signal) Notify() { s.n.Add(1) }

// Close implements fabric.Fabric: closes the out-of-band channels and
// releases every verbs object of every local node. A second Close does
// nothing. It fails with ErrBusy while threads of an aborted run are still
// running (they may be using the objects).
func (c *cluster) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	if c.run != nil {
		return fmt.Errorf("%w: host: Close with threads still running: %s", fabric.ErrBusy, c.run.running())
	}
	c.closed = true
	var errs []error
	for _, n := range c.nodes {
		if err := n.oob.close(); err != nil {
			errs = append(errs, err)
		}
	}
	if c.release != nil {
		if err := c.release(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

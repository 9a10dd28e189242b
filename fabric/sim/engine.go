package sim

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"runtime"
	"sort"
	"strings"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// Config describes a simulated cluster.
type Config struct {
	// Nodes is the cluster size (at least 1).
	Nodes int
	// Profile is the hardware profile; nil selects DefaultProfile.
	Profile *Profile
	// Seed seeds every random source of the run (split per component)
	// but one: the context cache's choice of victims, whose stream is
	// fixed per node (qpcache.go, newNIC), so the seed does not move it.
	Seed uint64
	// SizeOnly selects size-only mode: the NIC moves only the first and
	// last fabric.SizeOnlyWindow bytes of each message. The zero value is
	// payload mode, in which every byte moves.
	SizeOnly bool
	// TimeLimit bounds a Run in simulated time; 0 means 100 simulated
	// seconds. A run that reaches it fails with fabric.ErrTimeLimit.
	TimeLimit fabric.Duration
	// QPNumbering picks the numbers each NIC gives its queue pairs. A
	// driver hands out whichever numbers are free, so on a real host the
	// numbers a program gets depend on the host's history, and with them
	// which queue pairs share a set of the NIC's context cache
	// (qpcache.go). 0, the default, numbers every NIC's queue pairs from
	// 0x100 in creation order (the numbering the profiles' caches were
	// fitted with); k > 0 starts NIC i's numbering at a base drawn from k
	// and i, so runs under several numberings show how much a result owes
	// to which queue pairs happen to conflict. It changes nothing else.
	QPNumbering uint64
	// Fabric, if set, wires the cluster as a network of switches with
	// forwarding tables (fabricwire.go); nil is one ideal crossbar with a
	// port per node.
	Fabric *Fabric
	// NoCheck turns the verbs-usage checker off (checker.go). It is on by
	// default: it only observes, so it changes no result.
	NoCheck bool
	// Progress, if set, is called from the run every 2^18 events (a few
	// tenths of a second of wall time) with the simulated time and the
	// events so far, for progress output. It must not call the cluster;
	// it changes no result.
	Progress func(now fabric.Time, events uint64)
	// Trace, if set, is told every event the run fires (tracer.go), for
	// explore run --trace and for finding where two runs part. It changes
	// no result.
	Trace Tracer
}

// DefaultTimeLimit bounds a run in simulated time when Config.TimeLimit
// is 0.
const DefaultTimeLimit = 100 * fabric.Second

// progressEvery is how many events pass between calls of Config.Progress
// (a power of two).
const progressEvery = 1 << 18

// Cluster is a simulated InfiniBand cluster; it implements fabric.Fabric.
// See the package comment for its concurrency rules.
type Cluster struct {
	maps  *regionSet // the mappings of its regions' memory (regionmem.go)
	cfg   Config
	prof  *Profile
	q     eventQueue
	now   fabric.Time
	limit fabric.Time

	nodes []*node
	net   *network

	cur      *thread // the running thread; nil when the driver runs
	handover *thread // the thread to resume next, chosen by a yielding thread
	threads  []*thread
	names    threadNames // every thread name spawned so far, by number (rqe's poster)
	live     int
	stop     error // the run's first failure, or why it must stop (deadlock, limit)
	abort    bool  // threads are being unwound: see abortAll

	// qpFailures says why each queue pair in the error state entered it,
	// the first time since its last reset (QPFailure).
	qpFailures map[*qp]string

	sigCounter uint64 // counts Waitable signals; orders them against syncs
	trace      uint64 // FNV-1a hash of every fired event
	events     uint64 // fired events
	handoffs   uint64 // baton passes between goroutines

	timers   timerHeap
	freePkts []*packet
	pktID    uint64
	stats    Stats
	oob      oobState

	futexRng *rand.Rand // sleeping mutexes' wake-up times (futex.go), made on first use

	inj *injector // the fault plan (faultplan.go), nil without one
	chk *checker  // the verbs-usage checker (checker.go), nil when off

	tracer Tracer // Config.Trace, nil when off
}

var _ fabric.Fabric = (*Cluster)(nil)

// New builds a cluster. It fails on an invalid configuration with an error
// that names the field.
func New(cfg Config) (*Cluster, error) {
	if cfg.Nodes < 1 {
		return nil, fmt.Errorf("sim: Nodes must be at least 1, got %d", cfg.Nodes)
	}
	if cfg.Nodes > 1<<15 {
		return nil, fmt.Errorf("sim: Nodes must be at most %d, got %d", 1<<15, cfg.Nodes)
	}
	if cfg.Profile == nil {
		cfg.Profile = DefaultProfile()
	}
	if err := cfg.Profile.Validate(); err != nil {
		return nil, err
	}
	if cfg.TimeLimit < 0 {
		return nil, fmt.Errorf("sim: TimeLimit must not be negative, got %v", cfg.TimeLimit)
	}
	if cfg.TimeLimit == 0 {
		cfg.TimeLimit = DefaultTimeLimit
	}
	c := &Cluster{cfg: cfg, prof: cfg.Profile, trace: 14695981039346656037, tracer: cfg.Trace}
	c.q.scale(cfg.Nodes)
	net, err := newNetwork(c)
	if err != nil {
		return nil, err
	}
	c.net = net
	if !cfg.NoCheck {
		c.chk = newChecker(c)
	}
	for i := 0; i < cfg.Nodes; i++ {
		c.nodes = append(c.nodes, newNode(c, i))
	}
	net.linkNICs()
	return c, nil
}

// Backend implements fabric.Fabric.
func (c *Cluster) Backend() string { return "sim" }

// Size implements fabric.Fabric.
func (c *Cluster) Size() int { return len(c.nodes) }

// Local implements fabric.Fabric: every node is local in the simulator.
func (c *Cluster) Local() []fabric.Node {
	out := make([]fabric.Node, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n
	}
	return out
}

// Node returns node i.
func (c *Cluster) Node(i int) fabric.Node { return c.nodes[i] }

// Profile returns the cluster's hardware profile.
func (c *Cluster) Profile() *Profile { return c.prof }

// Now is the cluster's global simulated time.
func (c *Cluster) Now() fabric.Time { return c.now }

// TraceHash is a hash of every event fired so far (time, kind, argument)
// and of every packet delivered. Two runs with the same configuration and
// seed have the same hash.
func (c *Cluster) TraceHash() uint64 { return c.trace }

// Events is the number of events fired so far.
func (c *Cluster) Events() uint64 { return c.events }

// Close implements fabric.Fabric.
func (c *Cluster) Close() error {
	for _, n := range c.nodes {
		n.close()
	}
	if c.maps != nil {
		c.maps.releaseAll()
	}
	runtime.KeepAlive(c) // no clean-up of c while its regions are being unmapped
	return nil
}

// rng returns a random source for a named component, derived from the
// run's seed, so that components never share a stream.
func (c *Cluster) rng(component string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(component))
	return rand.New(rand.NewPCG(c.cfg.Seed, h.Sum64()))
}

func (c *Cluster) schedule(at fabric.Time, h handler, arg uint64, p *packet) {
	if at < c.now {
		panic(fmt.Sprintf("sim: event scheduled in the past (%v < %v)", at, c.now))
	}
	c.q.push(at, h, arg, p)
}

func (c *Cluster) mix(v uint64) {
	c.trace = (c.trace ^ v) * 1099511628211
}

// Run implements fabric.Fabric: it starts main on core 0 of every node and
// runs the event loop until every thread has returned.
func (c *Cluster) Run(main func(th fabric.Thread) error) error {
	if c.cur != nil || c.live != 0 || c.abort {
		return errors.New("sim: Run called while a run is in progress")
	}
	c.stop, c.abort = nil, false
	c.limit = c.now.Add(c.cfg.TimeLimit)
	// Out-of-band calls are matched by their position in the run. A failed
	// run can leave nodes at different positions (one waited in a Barrier
	// the others never reached), so every run starts the sequence afresh;
	// after a successful run every node is at the same position anyway.
	c.oob = oobState{}
	for _, n := range c.nodes {
		n.oobCalls = 0
	}
	for _, n := range c.nodes {
		c.spawn(n, fmt.Sprintf("n%d/main", n.id), 0, c.now, main)
	}
	c.drive()
	if c.stop != nil || c.live > 0 {
		c.abortAll()
	}
	// What the run's thread functions hold (an application's records of
	// every queue pair) is garbage now. Model objects may still name a
	// thread (the last holder of a queue pair's lock, the poster of a
	// receive), so a finished thread lets go of its coroutine.
	for _, th := range c.threads {
		th.next, th.stop, th.yield = nil, nil, nil
	}
	clear(c.threads)
	c.threads = c.threads[:0]
	// The pool of free packets is as large as the run's peak of packets in
	// flight (an all-to-all's first messages): a run gives it back, and the
	// next one grows its own (docs/performance.md, "Scale").
	clear(c.freePkts)
	c.freePkts = nil
	return c.stop
}

// Advance fires every event up to d from now, with no threads: tests use it
// to drive verbs issued from the test goroutine, step by step.
func (c *Cluster) Advance(d fabric.Duration) {
	if c.live != 0 {
		panic("sim: Advance during a Run")
	}
	end := c.now.Add(d)
	for {
		at, ok := c.q.peek()
		if !ok || at > end {
			break
		}
		if c.timers.peek() != nil {
			panic("sim: Advance with threads waiting")
		}
		ev := c.q.pop()
		c.fire(&ev)
	}
	c.now = end
}

func (c *Cluster) fire(ev *event) {
	c.fireBody(ev.at, &evBody{h: ev.h, arg: ev.arg, p: ev.p})
}

// countEvent counts one fired event (or passed Wait deadline) and calls
// Config.Progress every progressEvery of them.
func (c *Cluster) countEvent() {
	c.events++
	if c.events&(progressEvery-1) == 0 && c.cfg.Progress != nil {
		c.cfg.Progress(c.now, c.events)
	}
}

// fireBody fires an event taken from the queue at time at.
func (c *Cluster) fireBody(at fabric.Time, b *evBody) {
	c.now = at
	c.countEvent()
	c.mix(uint64(at))
	c.mix(b.arg ^ uint64(kindOf(b.h))<<56)
	if c.tracer != nil {
		c.traceEvent(at, b)
	}
	b.h.handle(b.arg, b.p)
}

// abortAll unwinds every thread that has not returned (running its
// deferred calls) and discards the rest of the run's threads. Whatever
// the unwinding provokes (a deferred Unlock of a lock that a Wait had
// released, an error returned from a deferred call) is a consequence of
// the stop, not its cause: the run's error stays what stopped it, so a
// time limit is reported as fabric.ErrTimeLimit.
func (c *Cluster) abortAll() {
	c.abort = true
	for _, th := range c.threads {
		if !th.done {
			c.cur = th
			th.stop()
			th.done = true
			c.timers.clear(th)
		}
	}
	c.cur, c.handover = nil, nil
	c.abort = false
	c.live = 0
}

// blocked describes the threads still waiting, for deadlock reports.
func (c *Cluster) blocked() string {
	var s []string
	for _, th := range c.threads {
		if !th.done {
			if th.waitOn == nil {
				s = append(s, fmt.Sprintf("%s (running, at %v)", th.name, th.local))
			} else {
				s = append(s, fmt.Sprintf("%s (waiting since %v on %s)", th.name, th.waitSince, th.waitOn))
			}
		}
	}
	sort.Strings(s)
	return strings.Join(s, "; ")
}

// fail records a thread's error; the first error, or the deadlock or time
// limit that came before it, is the run's.
func (c *Cluster) fail(err error) {
	if c.stop == nil {
		c.stop = err
	}
}

// Handoffs is the number of times the baton passed between goroutines.
func Handoffs(c *Cluster) uint64 { return c.handoffs }

// nextAt is the time of the next event or deadline.
func (c *Cluster) nextAt() (fabric.Time, bool) {
	at, ok := c.q.peek()
	if tm := c.timers.peek(); tm != nil && (!ok || tm.tAt < at) {
		return tm.tAt, true
	}
	return at, ok
}

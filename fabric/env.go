package fabric

import "math/rand/v2"

// Fabric is a cluster as seen from one process: Size nodes, of which Local
// are hosted here (all of them in the simulator, one per process on
// hardware). It is the execution environment of the algorithms: Run starts
// their threads.
//
// A Fabric is not safe for concurrent use by several goroutines outside the
// threads it runs.
type Fabric interface {
	// Backend names the backend: "sim", "ibv", "loopback" (the in-process
	// software NIC), or "host" (real hosts without an RDMA device).
	Backend() string
	// Size is the number of nodes in the cluster.
	Size() int
	// Local lists the nodes hosted by this process.
	Local() []Node
	// Run starts main as the first thread (core 0) of every local node and
	// returns when every thread started by the run has returned. It returns
	// the first error a thread returned (or a panic it raised, as an
	// error), ErrDeadlock when every remaining thread waits on something
	// that can no longer happen, or ErrTimeLimit.
	Run(main func(th Thread) error) error
	// Close releases every resource of every local node.
	Close() error
}

// Node is one machine: cores, one RDMA device, and the out-of-band channel
// to the other nodes. Owned by its Fabric.
type Node interface {
	ID() int
	// Cores is the number of cores threads can be bound to.
	Cores() int
	// Device is the node's RDMA device, already opened.
	Device() Device
	// OOB is the out-of-band channel (TCP on hardware) used for connection
	// setup; it must be called from a thread of this node.
	OOB() OOB
	// NewMutex returns a lock for threads of this node. Its waiters spin
	// and take it in turn, as the designs' own locks do.
	NewMutex() Mutex
	// NewSleepingMutex returns a lock whose waiters sleep in the kernel
	// and are woken one at a time, as a pthread mutex's are (the global
	// lock of an MPI library): a releasing thread pays a wake-up system
	// call, and a running thread may take the lock ahead of a woken one.
	// On hardware backends it behaves as NewMutex's lock.
	NewSleepingMutex() Mutex
	// NewSignal returns a Waitable that threads of this node notify.
	NewSignal() Signal
	// Payload reports whether real bytes move. In size-only mode the NIC
	// moves only the first and last SizeOnlyWindow bytes of each message
	// (headers and trailers that protocols use) and the rest of a
	// destination buffer keeps whatever it held.
	Payload() bool
}

// SizeOnlyWindow is the number of bytes at the head and at the tail of every
// message that the NIC still moves in size-only mode.
const SizeOnlyWindow = 64

// Thread is a thread of execution bound to one core of one node. Algorithm
// code gets its clock, CPU work, waiting and randomness only from here.
//
// A Thread may only be used by the function it was passed to.
type Thread interface {
	Name() string
	Node() Node
	Core() int
	// Now is this thread's clock.
	Now() Time
	// Compute spends cycles of CPU work on this thread's core.
	Compute(cycles int64)
	// Busy spends d of CPU work.
	Busy(d Duration)
	// Charge accounts for CPU work the caller has really done (copied n
	// bytes, hashed n tuples): the simulator advances the clock by the
	// profile's cost of it; on hardware the work already took its time and
	// Charge does nothing. Compute, by contrast, burns time on both.
	Charge(work Work, n int)
	// Sync makes everything that happened in the cluster up to Now()
	// visible to this thread (memory written by the NIC). Verbs calls,
	// Wait, locks and OOB calls synchronize implicitly. A no-op on hardware,
	// and no fence: it cannot order the loads a thread makes after it
	// among themselves. A thread that polls a word the NIC writes (a
	// descriptor's sequence word) and then reads what it guards reads the
	// word with an atomic (acquire) load (algos/polled.go), which weakly
	// ordered CPUs (arm64) need.
	Sync()
	// Wait returns when one of on has something the thread has not
	// observed, or when deadline passes: a completion queue, a completion
	// since this thread last polled it; a memory region or a Signal, a
	// change since the thread's last Sync (or return from Wait). So the
	// pattern "poll (or Sync and read); if nothing, Wait" never misses an
	// event, whatever other calls come between. It may return early for no
	// reason (on hardware it returns at once: callers busy-poll), so callers
	// loop.
	Wait(deadline Time, on ...Waitable)
	// Spawn starts another thread of this node on core. A core outside
	// 0..Cores()-1 fails the run with an error wrapping ErrInvalidArg.
	Spawn(name string, core int, fn func(Thread) error)
	// Rand is this thread's private, seeded random source.
	Rand() *rand.Rand
}

// PeerFailures is implemented by a Node whose backend knows at once that
// another node of the fabric has failed: the simulator, whose fault plan
// crashes nodes. A real thread learns it only through its own verbs
// (retries exhausted) or a timeout, and so must a design on the
// simulator: nothing a design delivers or reports may depend on it.
// What it may change is how a wait is simulated: the MPI baseline models
// a busy-polling progress engine, which the simulator runs poll by poll;
// once a peer has failed the run can only end in an error, and the
// engine sleeps until its completion queues have news instead, so the run
// reaches that error (the transport's retries exhausted, or a timeout)
// without simulating every poll of the wait.
type PeerFailures interface {
	// PeerFailed returns a node other than this one that had failed by
	// time at, or -1 when none had. It costs no simulated time.
	PeerFailed(at Time) int
}

// Mutex is a lock shared by threads of one node. In the simulator a
// contended lock costs a hand-off as on a real CPU.
//
// A backend stops a run by unwinding its threads from inside Compute,
// Busy and Wait, running their deferred calls. So a thread releases a
// lock it holds across such calls in a deferred Unlock, and takes back a
// lock it let go around them in a deferred Lock (algos' withLock and
// withoutLock): on real threads a lock left held stalls the threads still
// running, and an Unlock of a free lock kills the process.
type Mutex interface {
	Lock()
	Unlock()
}

// Signal is a Waitable that threads notify, for handing work between threads
// of one node.
type Signal interface {
	Notify()
	Waitable
}

// OOB is the out-of-band channel between nodes, used for connection setup.
// Every call must be made by exactly one thread on every node, with the same
// key, in the same order.
type OOB interface {
	// AllGather contributes data and returns every node's contribution,
	// indexed by node id. The outer slice belongs to the caller; the
	// contributions are read-only: a backend may hand the same bytes to
	// every node of a process (an exchange among n nodes then keeps n
	// contributions, not n*n copies), so a caller that needs to change
	// one copies it first. Appending to one is safe (each is capped at its
	// length).
	AllGather(key string, data []byte) ([][]byte, error)
	// Exchange is a personalised all-to-all: this node gives out[j] to
	// node j (out holds one slice per node of the fabric, this one
	// included; nil or empty for nothing) and gets back in[j], what node
	// j gave this node, indexed by node id, nil when empty. Each node
	// receives only what is addressed to it, so an exchange of a record
	// per pair of nodes moves O(n) bytes per node, not the O(n*n) of an
	// all-gather of whole rows. The result is the caller's (each entry
	// capped at its length); the backend keeps no reference to out once
	// it returns. An out of another length fails with ErrInvalidArg.
	// In the simulator it costs what AllGather costs.
	Exchange(key string, out [][]byte) ([][]byte, error)
	// Barrier returns when every node has reached it.
	Barrier(key string) error
}

// Work names a kind of CPU work whose cost a backend knows (Thread.Charge).
type Work uint8

// Kinds of work.
const (
	WorkCopy      Work = iota + 1 // memcpy, per byte
	WorkHashTuple                 // hash a tuple's key and pick its buffer, per tuple
)

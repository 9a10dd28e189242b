package loopback

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/host"
)

// Limits of the loopback device (those of the simulator's EDR profile,
// so that designs size their queues alike); Limits can change the MTU and
// the queue depths.
const (
	defaultMTU     = 4096
	defaultMaxQPWR = 32768
	maxQP          = 1 << 16
	maxCQE         = 4194303
	maxInlineRC    = 988
	maxInlineUD    = 512
	maxRdAtomic    = 16
	maxMRBytes     = 1 << 40
	qpnBase        = 0x100
)

// Open returns a cluster of nodes nodes in this process, each with a
// loopback device whose NIC is a goroutine, on the execution environment
// of real hosts (package host: goroutine threads, the monotonic clock,
// busy polling, an in-memory out-of-band channel). Its Backend is
// "loopback". The caller closes it; Close stops the NICs.
func Open(cfg host.Config, nodes int) (fabric.Fabric, error) {
	return OpenLimits(cfg, nodes, Limits{})
}

// Limits are what the devices of a loopback cluster report and enforce
// instead of the defaults, so that a test can give them a real device's:
// the active MTU (default 4096), max_qp_wr (default 32768) and how send
// queues are sized (default: in requests). Zero fields keep the defaults.
type Limits struct {
	MTU       int
	MaxQPWR   int
	SendQueue fabric.SendQueueLayout
}

// OpenLimits is Open with devices of the limits lim.
func OpenLimits(cfg host.Config, nodes int, lim Limits) (fabric.Fabric, error) {
	if nodes < 1 {
		return nil, fmt.Errorf("%w: loopback: Open of %d nodes (need at least 1)", fabric.ErrInvalidArg, nodes)
	}
	if lim.MTU == 0 {
		lim.MTU = defaultMTU
	}
	if lim.MaxQPWR == 0 {
		lim.MaxQPWR = defaultMaxQPWR
	}
	if (lim.MTU != 256 && lim.MTU != 512 && lim.MTU != 1024 && lim.MTU != 2048 && lim.MTU != 4096) || lim.MaxQPWR < 1 {
		return nil, fmt.Errorf("%w: loopback: MTU %d (256, 512, 1024, 2048 or 4096), max_qp_wr %d", fabric.ErrInvalidArg, lim.MTU, lim.MaxQPWR)
	}
	if cfg.Cores <= 0 {
		// Threads are goroutines the runtime schedules, not pinned:
		// give every node nominal cores enough for any thread count.
		cfg.Cores = 256
	}
	net := &network{lim: lim}
	devs := make([]fabric.Device, nodes)
	for i := range devs {
		n := newNIC(net, i)
		net.nics = append(net.nics, n)
		devs[i] = &device{n: n}
	}
	for _, n := range net.nics {
		go n.run()
	}
	return host.NewLocal("loopback", cfg, devs, net.close), nil
}

// network is the set of NICs of one cluster.
type network struct {
	lim    Limits
	nics   []*nic
	closed atomic.Bool
}

func (w *network) close() error {
	if w.closed.Swap(true) {
		return nil
	}
	for _, n := range w.nics {
		close(n.stop)
		<-n.done
	}
	return nil
}

// resolve maps an address to a NIC.
func (w *network) resolve(a fabric.Address) (*nic, error) {
	if a.UseGID {
		for _, n := range w.nics {
			if gidOf(n.id) == a.GID {
				return n, nil
			}
		}
		return nil, fmt.Errorf("%w: no port with GID %x", fabric.ErrInvalidArg, a.GID[:])
	}
	if a.LID < 1 || int(a.LID) > len(w.nics) {
		return nil, fmt.Errorf("%w: no port with LID %d (ports have LIDs 1..%d)", fabric.ErrInvalidArg, a.LID, len(w.nics))
	}
	return w.nics[a.LID-1], nil
}

func lidOf(node int) uint16 { return uint16(node + 1) }

func gidOf(node int) fabric.GID {
	var g fabric.GID
	g[0], g[1] = 0xfe, 0x80
	g[14], g[15] = byte(node>>8), byte(node)
	return g
}

// gate is a node's host.Gate: its threads hold it shared while they run;
// the NIC takes it exclusively to place one-sided writes. A sync.RWMutex
// orders each reader with the writers before and after it, and readers
// not with each other, so the race detector still sees two threads of a
// node that share memory without a lock.
type gate struct {
	mu      sync.RWMutex
	holders atomic.Int32 // threads holding it (at most the node's threads)
}

func (g *gate) Enter() {
	g.mu.RLock()
	g.holders.Add(1)
}

func (g *gate) Leave() {
	g.holders.Add(-1)
	g.mu.RUnlock()
}

// pass lets the calling thread's writes land: a synchronizing point inside
// a verb (Poll finding nothing), when the caller holds the gate, as every
// thread of a run does. Outside a run nobody holds it and it does not
// touch it. With yield it also yields the processor, gate let go (see
// pollsPerYield).
func (g *gate) pass(yield bool) {
	if g.holders.Load() > 0 {
		g.Leave()
		if yield {
			runtime.Gosched()
		}
		g.Enter()
		return
	}
	if yield {
		runtime.Gosched()
	}
}

// pollsPerYield is how many polls in a row that find nothing a completion
// queue takes before its Poll yields the processor (runtime.Gosched).
//
// On hardware the NIC moves data while the CPU polls; here the NICs are
// goroutines, and so are the threads of every node, all sharing GOMAXPROCS
// processors, which a goroutine that never reaches a scheduling point
// holds until the runtime preempts it, 10-20 ms later. Threads that wait
// with Wait yield there; a design that waits by polling alone (the MPI
// baseline's progress engine, which polls holding its lock and lets it go
// only for a few cycles of Compute, too short for Busy to yield) held the
// processor for whole preemption slices: at GOMAXPROCS 1 each hop of a
// message waited a slice per spinning thread, and most runs failed their
// 1 s watchdog. So a completion queue polled in vain again and
// again hands the processor over. Not at every empty poll: a yield of a
// goroutine locked to its OS thread costs tens of microseconds, and
// threads that Wait after each empty poll already pay one there.
const pollsPerYield = 16

var errStopped = errors.New("loopback: cluster closed")

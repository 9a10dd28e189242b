package sim

import (
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// futexMutex is a lock whose waiters sleep in the kernel, as a glibc
// pthread mutex of the default or error-checking kind does (the lock an MPI
// library's global critical section is). It is the simulator's
// fabric.Node.NewSleepingMutex; docs/model.md ("Locks") cites the costs.
//
// Its lock word has glibc's three states: free, locked, and locked with
// possible sleepers. Lock takes a free lock with one atomic (host.lock_ns);
// otherwise it marks the word contended and sleeps (FUTEX_WAIT), without
// spinning in user space. Unlock frees the word first and, if it was
// contended, makes a FUTEX_WAKE system call on the releasing thread's core:
// host.futex_wake_ns when a sleeper is woken, host.syscall_ns when none
// sleeps. The woken thread (the longest sleeper, as the kernel's futex
// queue orders them) runs later, at least host.wakeup_ns and on average
// host.wakeup_tail_ns more (an exponential tail drawn from the cluster's
// seed: wake-ups are not equally fast, and a lock whose sleepers all woke
// after the same delay would meet the holder's polling loop in the same
// phase every time), and tries again; it does
// not own the lock, so a running thread that asks in between takes it
// first (barging) and the woken one goes back to sleep. A thread that took
// the lock after sleeping leaves the word contended, so the next Unlock
// makes the system call even when nobody sleeps any more, as glibc does.
//
// Owned by one Cluster; used only by its threads (one runs at a time).
type futexMutex struct {
	c     *Cluster
	state uint8 // futexFree, futexLocked, futexContended
	sleep []*thread
}

// States of a futexMutex's lock word (glibc's 0, 1, 2).
const (
	futexFree = iota
	futexLocked
	futexContended
)

func (m *futexMutex) Lock() {
	th := m.c.lockCaller("Lock")
	if th == nil {
		return
	}
	h := &m.c.prof.Host
	if m.state == futexFree {
		m.state = futexLocked
		th.Busy(h.lockCost())
		return
	}
	for {
		// The slow path exchanges the word with "contended" and sleeps
		// unless it was free.
		if m.state == futexFree {
			m.state = futexContended
			th.Busy(h.lockCost())
			return
		}
		m.state = futexContended
		m.sleep = append(m.sleep, th)
		start := th.local
		th.park(m)
		m.c.stats.MutexWait += th.local.Sub(start)
		if m.state != futexFree {
			m.c.stats.FutexRetries++ // taken again while this thread woke up
		}
		if m.c.abort {
			return
		}
		if th.local >= th.node.crashAt {
			th.freeze()
		}
	}
}

func (m *futexMutex) Unlock() {
	th := m.c.lockCaller("Unlock")
	if th == nil {
		return
	}
	if m.state == futexFree {
		panic("sim: Unlock of an unlocked Mutex")
	}
	contended := m.state == futexContended
	m.state = futexFree
	if !contended {
		return
	}
	h := &m.c.prof.Host
	if len(m.sleep) == 0 {
		m.c.stats.FutexEmptyWakes++
		th.Busy(ns(h.SyscallNS))
		return
	}
	next := m.sleep[0]
	n := copy(m.sleep, m.sleep[1:])
	m.sleep[n] = nil
	m.sleep = m.sleep[:n]
	m.c.stats.FutexWakes++
	next.wakeAt(m.c.now.Add(m.c.wakeup()))
	th.Busy(ns(h.FutexWakeNS))
}

func (m *futexMutex) String() string {
	return fmt.Sprintf("a sleeping Mutex (state %d, %d asleep)", m.state, len(m.sleep))
}

var _ fabric.Mutex = (*futexMutex)(nil)

// wakeup is how long a thread woken by FUTEX_WAKE takes to run: at least
// host.wakeup_ns, plus an exponentially distributed tail of mean
// host.wakeup_tail_ns, drawn from the cluster's own random source.
func (c *Cluster) wakeup() fabric.Duration {
	h := &c.prof.Host
	d := ns(h.WakeupNS)
	if h.WakeupTailNS > 0 {
		if c.futexRng == nil {
			c.futexRng = c.rng("futex")
		}
		d += ns(h.WakeupTailNS * c.futexRng.ExpFloat64())
	}
	return d
}

package sim

import "github.com/rdmashuffle/rdmashuffle/fabric"

// Doorbell registers (host.shared_doorbells, docs/model.md §1 "host CPU").
//
// A send queue is rung by writing to a doorbell register the NIC maps
// into the process (a UAR page; on mlx5 each page holds blue-flame
// registers, through which the work request itself is written with the
// doorbell). libmlx5 gives a device context 16 registers by default
// (MLX5_TOTAL_UUARS) of which 4 are low-latency ones
// (MLX5_NUM_LOW_LAT_UUARS, at least the total less 12): the first queue
// pairs created take one of those each and ring it without a lock; every
// later queue pair shares one of the other 12, the least used, and
// rings it holding that register's spinlock. With the switch off every
// queue pair rings a register of its own thread (a thread domain per
// thread, ibv_alloc_td, or the two variables raised), which costs nothing
// beyond host.post_send_ns: the model before doorbells.

const (
	mlx5LowLatencyRegs = 4  // lock-free registers, one queue pair each
	mlx5SharedRegs     = 12 // registers shared behind a spinlock
)

// doorbells is one device context's registers under the default allocation.
type doorbells struct {
	lowLatency int                   // low-latency registers taken (they are given out once)
	shared     [mlx5SharedRegs]dbReg // the shared registers
	of         map[*qp]*dbReg        // a queue pair's shared register; absent: one of its own
}

// dbReg is a shared register: its users and the spinlock its writers take.
type dbReg struct {
	users int
	lk    lockState
}

// newDoorbells returns a context's registers when p shares them, else nil.
func newDoorbells(p *Profile) *doorbells {
	if p.Host.SharedDoorbells != 1 {
		return nil
	}
	return &doorbells{of: map[*qp]*dbReg{}}
}

// assign gives q its register as libmlx5 would, in creation order: a
// low-latency one while any is left, otherwise the least used shared one
// (the first of equals). Queue pairs without a send queue take none.
func (d *doorbells) assign(q *qp) {
	if d == nil || q.typ == fabric.XRCRecv || q.typ == fabric.DCT {
		return
	}
	if d.lowLatency < mlx5LowLatencyRegs {
		d.lowLatency++
		return
	}
	r := &d.shared[0]
	for i := range d.shared {
		if d.shared[i].users < r.users {
			r = &d.shared[i]
		}
	}
	r.users++
	d.of[q] = r
}

// release gives a destroyed queue pair's shared register back (a
// low-latency one is not given to another queue pair: the model's runs
// destroy queue pairs only at their end).
func (d *doorbells) release(q *qp) {
	if d == nil {
		return
	}
	if r := d.of[q]; r != nil {
		r.users--
		delete(d.of, q)
	}
}

// ring is the running thread ringing q's doorbell at the end of PostSend:
// on a shared register it takes the register's spinlock (a hand-off from
// another thread's core costs what the provider's other locks cost) and
// holds it for one atomic (host.lock_ns), the write of the doorbell. It
// returns the thread's time after the write (t when nothing is charged).
func (d *doorbells) ring(c *Cluster, q *qp, t fabric.Time) fabric.Time {
	r := d.of[q]
	th := c.cur
	if r == nil || th == nil {
		return t
	}
	c.acquire(&r.lk)
	th.Busy(c.prof.Host.lockCost())
	c.release(&r.lk)
	c.stats.DoorbellLocks++
	return th.local
}

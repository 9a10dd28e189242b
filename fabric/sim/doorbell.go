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
// later queue pair shares one of 11 others, the least used, and rings it
// holding that register's spinlock. The sixteenth, register 0, is never
// given to a queue pair: the kernel driver keeps it for plain 64-bit
// doorbells (Linux drivers/infiniband/hw/mlx5/qp.c: num_med_bfreg is the
// total less the low-latency ones less NUM_NON_BLUE_FLAME_BFREGS, 1;
// alloc_bfreg tries the low-latency class, then the least used medium
// one). With the switch off every
// queue pair rings a register of its own thread (a thread domain per
// thread, ibv_alloc_td, or the two variables raised), which costs nothing
// beyond host.post_send_ns: the model before doorbells.
//
// Ringing costs the posting thread host.doorbell_ns once per PostSend
// call that posted something (the write of the doorbell register: a
// blue-flame copy of the request to write-combining memory and its
// flush), beside host.post_send_ns per request; on a shared register the
// write is made holding the register's lock, so the register takes one
// writer at a time. 0 (the default, omitted from the encoding): no cost
// of its own (the profiles whose post_send_ns is a cost model's per-post
// figure, doorbell included).

const (
	mlx5LowLatencyRegs = 4  // lock-free registers, one queue pair each
	mlx5SharedRegs     = 11 // registers shared behind a spinlock (16 less 4 less register 0)
)

// doorbells is one device context's registers: under the default
// allocation when shared, and what a write costs.
type doorbells struct {
	shared     bool                  // host.shared_doorbells 1
	cost       fabric.Duration       // host.doorbell_ns
	lowLatency int                   // low-latency registers taken (they are given out once)
	regs       [mlx5SharedRegs]dbReg // the shared registers
	of         map[*qp]*dbReg        // a queue pair's shared register; absent: one of its own
}

// dbReg is a shared register: its users and the spinlock its writers take.
type dbReg struct {
	users int
	lk    lockState
}

// newDoorbells returns a context's registers when p shares them or
// charges their writes, else nil (ringing then costs nothing of its own).
func newDoorbells(p *Profile) *doorbells {
	if p.Host.SharedDoorbells != 1 && !(p.Host.DoorbellNS > 0) {
		return nil
	}
	return &doorbells{shared: p.Host.SharedDoorbells == 1, cost: ns(p.Host.DoorbellNS), of: map[*qp]*dbReg{}}
}

// assign gives q its register as libmlx5 would, in creation order: a
// low-latency one while any is left, otherwise the least used shared one
// (the first of equals). Queue pairs without a send queue take none.
func (d *doorbells) assign(q *qp) {
	if d == nil || !d.shared || q.typ == fabric.XRCRecv || q.typ == fabric.DCT {
		return
	}
	if d.lowLatency < mlx5LowLatencyRegs {
		d.lowLatency++
		return
	}
	r := &d.regs[0]
	for i := range d.regs {
		if d.regs[i].users < r.users {
			r = &d.regs[i]
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
// the write costs host.doorbell_ns; on a shared register the thread first
// takes the register's spinlock (one atomic, host.lock_ns, and a
// cache-line hand-off when another thread's core had it, as the
// provider's other locks) and holds it through the write. It returns the
// thread's time after the write (t outside threads).
func (d *doorbells) ring(c *Cluster, q *qp, t fabric.Time) fabric.Time {
	th := c.cur
	if th == nil {
		return t
	}
	r := d.of[q]
	if r == nil {
		th.Busy(d.cost)
		return th.local
	}
	c.acquire(&r.lk)
	th.Busy(c.prof.Host.lockCost() + d.cost)
	c.release(&r.lk)
	c.stats.DoorbellLocks++
	return th.local
}

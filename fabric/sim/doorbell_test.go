package sim

import (
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/perftest"
)

// TestDoorbellAssign: libmlx5's default allocation, in creation order: the
// first four queue pairs with a send queue get a low-latency register of
// their own, later ones the least used of the eleven shared registers, and
// a destroyed queue pair's shared register is used less again.
func TestDoorbellAssign(t *testing.T) {
	p := mtProfile(t, "hdr-cx6", func(p *Profile) { p.Host.SharedDoorbells = 1 })
	d := newDoorbells(p)
	qps := make([]*qp, 4+2*mlx5SharedRegs+1)
	for i := range qps {
		qps[i] = &qp{typ: fabric.RC}
		d.assign(qps[i])
	}
	target := &qp{typ: fabric.XRCRecv}
	d.assign(target)
	tests := []struct {
		name string
		q    *qp
		reg  int // index of the shared register; -1: none (its own)
	}{
		{"first", qps[0], -1},
		{"fourth", qps[3], -1},
		{"fifth", qps[4], 0},
		{"fifteenth", qps[14], 10},
		{"sixteenth", qps[15], 0},
		{"seventeenth", qps[16], 1},
		{"twenty-sixth", qps[25], 10},
		{"twenty-seventh", qps[26], 0},
		{"XRC target", target, -1},
	}
	for _, tt := range tests {
		got := -1
		if r := d.of[tt.q]; r != nil {
			for i := range d.regs {
				if &d.regs[i] == r {
					got = i
				}
			}
		}
		if got != tt.reg {
			t.Errorf("%s queue pair: register %d, want %d (-1: its own)", tt.name, got, tt.reg)
		}
	}
	if u := d.regs[0].users; u != 3 {
		t.Errorf("register 0 has %d users, want 3", u)
	}
	d.release(qps[4])
	if u := d.regs[0].users; u != 2 {
		t.Errorf("register 0 after a destroy: %d users, want 2", u)
	}
	if newDoorbells(mtProfile(t, "edr-cx4", nil)) != nil {
		t.Error("edr-cx4 (no sharing, no doorbell cost): want no doorbell state")
	}
	own := newDoorbells(mtProfile(t, "hdr-cx6", nil)) // a doorbell cost, no sharing
	q := &qp{typ: fabric.RC}
	for range 20 {
		own.assign(q)
	}
	if own == nil || own.shared || len(own.of) != 0 || own.cost <= 0 {
		t.Errorf("hdr-cx6: want a doorbell cost and no shared register, got %+v", own)
	}
}

// TestSharedDoorbells: threads with a queue pair each (SMART's per-thread
// queue pairs) on one issuing NIC. With four threads every queue pair has
// a low-latency register, so sharing changes nothing; with 32 the later
// queue pairs share registers, their doorbells take locks and the rate
// does not rise.
func TestSharedDoorbells(t *testing.T) {
	run := func(threads, shared int) (float64, Stats) {
		p := mtProfile(t, "hdr-cx6", func(p *Profile) { p.Host.SharedDoorbells = shared })
		c := mtCluster(t, Config{Nodes: 2, Seed: 1, SizeOnly: true, Profile: p})
		r, err := perftest.RunSwarm(c, perftest.SwarmConfig{Op: fabric.OpWrite, QPs: threads, Threads: threads,
			Window: 8, PerQP: 8, Bytes: 8, OpsPerThread: 400, OneSided: true})
		if err != nil {
			t.Fatal(err)
		}
		return r, c.Stats()
	}
	tests := []struct {
		threads   int
		wantLocks bool
		wantSame  bool
	}{
		{4, false, true},
		{32, true, false},
	}
	for _, tt := range tests {
		own, sOwn := run(tt.threads, 0)
		shared, sShared := run(tt.threads, 1)
		t.Logf("%d threads: %.2f M/s with registers of their own, %.2f shared (%d doorbells under a lock, %d hand-offs)",
			tt.threads, own, shared, sShared.DoorbellLocks, sShared.LockHandoffs)
		if sOwn.DoorbellLocks != 0 {
			t.Errorf("%d threads, own registers: %d doorbells under a lock, want 0", tt.threads, sOwn.DoorbellLocks)
		}
		if got := sShared.DoorbellLocks > 0; got != tt.wantLocks {
			t.Errorf("%d threads, shared: %d doorbells under a lock; want some: %v", tt.threads, sShared.DoorbellLocks, tt.wantLocks)
		}
		if tt.wantSame && own != shared {
			t.Errorf("%d threads: %.3f M/s own, %.3f shared; want the same", tt.threads, own, shared)
		}
		if shared > own {
			t.Errorf("%d threads: shared registers faster (%.3f M/s) than own (%.3f)", tt.threads, shared, own)
		}
	}
}

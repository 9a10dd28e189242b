package sim_test

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"weak"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/fabrictest"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// TestDeadlock: when every remaining thread waits on something that can no
// longer happen, Run fails with ErrDeadlock naming the stuck threads.
func TestDeadlock(t *testing.T) {
	cases := []struct {
		name  string
		stuck []string // thread names the error must mention
		main  func(th fabric.Thread) error
	}{
		{"wait-forever-on-signal", []string{"n1/main"}, func(th fabric.Thread) error {
			if th.Node().ID() == 1 {
				th.Wait(fabric.Forever, th.Node().NewSignal())
			}
			return nil
		}},
		{"wait-forever-on-cq", []string{"n0/main", "n1/main", "n2/main"}, func(th fabric.Thread) error {
			cq, err := th.Node().Device().CreateCQ(4)
			if err != nil {
				return err
			}
			th.Wait(fabric.Forever, cq)
			return nil
		}},
		{"wait-forever-on-nothing", []string{"n0/main"}, func(th fabric.Thread) error {
			if th.Node().ID() == 0 {
				th.Wait(fabric.Forever)
			}
			return nil
		}},
		{"lock-never-released", []string{"n0/waiter"}, func(th fabric.Thread) error {
			if th.Node().ID() != 0 {
				return nil
			}
			mu := th.Node().NewMutex()
			mu.Lock()
			th.Spawn("waiter", 1, func(th fabric.Thread) error {
				mu.Lock()
				return nil
			})
			return nil // returns holding the lock
		}},
		{"barrier-missing-a-node", []string{"n0/main", "n2/main"}, func(th fabric.Thread) error {
			if th.Node().ID() == 1 {
				return nil
			}
			return th.Node().OOB().Barrier("never-complete")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, sim.Config{Nodes: 3, Seed: 1})
			err := c.Run(tc.main)
			if !errors.Is(err, fabric.ErrDeadlock) {
				t.Fatalf("Run returned %v, want ErrDeadlock", err)
			}
			// It says what each thread waits on, readably (no struct dumps).
			if msg := err.Error(); strings.Contains(msg, "%!") || strings.Contains(msg, "&{") {
				t.Errorf("deadlock error is not readable: %v", err)
			}
			for _, name := range tc.stuck {
				if !strings.Contains(err.Error(), name) {
					t.Errorf("deadlock error does not name %s: %v", name, err)
				}
			}
			for _, name := range []string{"n0/main", "n1/main", "n2/main"} {
				if !slices.Contains(tc.stuck, name) && strings.Contains(err.Error(), name+" ") {
					t.Errorf("deadlock error names %s, which returned: %v", name, err)
				}
			}
		})
	}
}

// TestTimeLimit: a thread that polls forever, with deadlines, hits the
// run's time limit in simulated time.
func TestTimeLimit(t *testing.T) {
	for _, limit := range []fabric.Duration{fabric.Millisecond, 7 * fabric.Millisecond} {
		t.Run(limit.String(), func(t *testing.T) {
			c := newCluster(t, sim.Config{Nodes: 2, Seed: 1, TimeLimit: limit})
			polls := 0
			var start fabric.Time
			err := c.Run(func(th fabric.Thread) error {
				if th.Node().ID() == 1 {
					return nil
				}
				cq, err := th.Node().Device().CreateCQ(4)
				if err != nil {
					return err
				}
				var wc [1]fabric.WC
				start = th.Now() // after the CQ's creation cost
				for {
					if _, err := cq.Poll(wc[:]); err != nil {
						return err
					}
					polls++
					th.Wait(th.Now().Add(10*fabric.Microsecond), cq)
				}
			})
			if !errors.Is(err, fabric.ErrTimeLimit) {
				t.Fatalf("Run returned %v, want ErrTimeLimit", err)
			}
			if !strings.Contains(err.Error(), "n0/main") {
				t.Errorf("time-limit error does not name the running thread: %v", err)
			}
			if now := c.Now(); now > fabric.Time(limit) || now < fabric.Time(limit-20*fabric.Microsecond) {
				t.Errorf("stopped at %v, want just below the limit %v", now, limit)
			}
			if want := int(fabric.Time(limit).Sub(start) / (10 * fabric.Microsecond)); polls < want-2 || polls > want+2 {
				t.Errorf("%d polls, want about %d", polls, want)
			}
		})
	}
}

// TestThreadPanic: a panic in a simulated thread (main or spawned) comes
// back from Run as an error naming the thread; other threads are stopped.
func TestThreadPanic(t *testing.T) {
	for _, spawned := range []bool{false, true} {
		t.Run(fmt.Sprintf("spawned=%v", spawned), func(t *testing.T) {
			c := newCluster(t, sim.Config{Nodes: 2, Seed: 1})
			name := "n1/main"
			if spawned {
				name = "n1/bomb"
			}
			err := c.Run(func(th fabric.Thread) error {
				if th.Node().ID() == 0 {
					// Would wait for a long time: the panic must stop it.
					th.Wait(th.Now().Add(fabric.Second))
					return errors.New("node 0 was not stopped")
				}
				th.Busy(fabric.Microsecond)
				if spawned {
					th.Spawn("bomb", 2, func(th fabric.Thread) error {
						th.Sync()
						panic("boom")
					})
					th.Wait(th.Now().Add(fabric.Second))
					return nil
				}
				th.Sync()
				panic("boom")
			})
			if err == nil || !strings.Contains(err.Error(), "boom") || !strings.Contains(err.Error(), name) {
				t.Fatalf("Run returned %v, want the panic of %s", err, name)
			}
			if c.Now() > fabric.Time(10*fabric.Microsecond) {
				t.Errorf("the run went on until %v after the panic", c.Now())
			}
		})
	}
}

// TestThreadError: the first error a thread returns stops the run.
func TestThreadError(t *testing.T) {
	c := newCluster(t, sim.Config{Nodes: 2, Seed: 1})
	sentinel := errors.New("sentinel")
	err := c.Run(func(th fabric.Thread) error {
		if th.Node().ID() == 1 {
			th.Busy(5 * fabric.Microsecond)
			return sentinel
		}
		th.Wait(fabric.Forever, th.Node().NewSignal())
		return nil
	})
	if !errors.Is(err, sentinel) || !strings.Contains(err.Error(), "n1/main") {
		t.Fatalf("Run returned %v, want the sentinel error of n1/main", err)
	}
}

// TestMutexSerializes: threads contending for one Mutex never overlap in
// their critical sections, are served in FIFO order, and each contended
// hand-off costs the profile's hand-off time.
func TestMutexSerializes(t *testing.T) {
	const threads, iters = 4, 25
	hold := 3 * fabric.Microsecond
	for _, seed := range []uint64{1, 2} {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			c := newCluster(t, sim.Config{Nodes: 1, Seed: seed})
			type span struct {
				who        int
				start, end fabric.Time
			}
			var spans []span
			counter := 0
			err := c.Run(func(th fabric.Thread) error {
				mu := th.Node().NewMutex()
				done := th.Node().NewSignal()
				finished := 0
				for w := 0; w < threads; w++ {
					th.Spawn(fmt.Sprintf("worker%d", w), w+1, func(th fabric.Thread) error {
						for i := 0; i < iters; i++ {
							th.Busy(fabric.Duration(th.Rand().IntN(1000)) * fabric.Nanosecond)
							mu.Lock()
							s := span{who: w, start: th.Now()}
							v := counter
							th.Busy(hold) // a read-modify-write that takes time
							counter = v + 1
							s.end = th.Now()
							spans = append(spans, s)
							mu.Unlock()
						}
						mu.Lock()
						finished++
						mu.Unlock()
						done.Notify()
						return nil
					})
				}
				for {
					mu.Lock()
					f := finished
					mu.Unlock()
					if f == threads {
						return nil
					}
					th.Wait(fabric.Forever, done)
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			if counter != threads*iters || len(spans) != threads*iters {
				t.Fatalf("counter %d, %d critical sections; want %d", counter, len(spans), threads*iters)
			}
			for i := 1; i < len(spans); i++ {
				if spans[i].start < spans[i-1].end {
					t.Fatalf("critical sections overlap: %+v and %+v", spans[i-1], spans[i])
				}
			}
			handoff := fabric.Duration(c.Profile().Host.LockHandoffNS * 1000)
			contended := 0
			for i := 1; i < len(spans); i++ {
				if spans[i].who != spans[i-1].who && spans[i].start.Sub(spans[i-1].end) == handoff {
					contended++
				}
			}
			if contended < len(spans)/2 {
				t.Errorf("only %d of %d critical sections were handed off directly; the lock is not contended", contended, len(spans))
			}
		})
	}
}

// TestOOBMismatchedKeys: nodes calling AllGather with different keys get a
// clear error naming both keys.
func TestOOBMismatchedKeys(t *testing.T) {
	c := newCluster(t, sim.Config{Nodes: 2, Seed: 1})
	err := c.Run(func(th fabric.Thread) error {
		k := "alpha"
		if th.Node().ID() == 1 {
			k = "beta"
		}
		_, err := th.Node().OOB().AllGather(k, []byte{byte(th.Node().ID())})
		return err
	})
	if err == nil {
		t.Fatal("AllGather with mismatched keys succeeded")
	}
	for _, s := range []string{`"alpha"`, `"beta"`, "same order"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not mention %s", err, s)
		}
	}
}

// TestOOBAllGather: contributions come back indexed by node, after one
// out-of-band round trip; the caller's own buffer is copied, and the
// (read-only, shared) contributions are capped so that an append cannot
// spill into another's.
func TestOOBAllGather(t *testing.T) {
	const nodes = 5
	c := newCluster(t, sim.Config{Nodes: nodes, Seed: 1})
	err := c.Run(func(th fabric.Thread) error {
		me := th.Node().ID()
		th.Busy(fabric.Duration(me) * fabric.Microsecond) // arrive at different times
		mine := []byte(fmt.Sprintf("node-%d", me))
		all, err := th.Node().OOB().AllGather("names", mine)
		if err != nil {
			return err
		}
		mine[0] = 'X' // the gathered copy must not change
		for i, b := range all {
			if string(b) != fmt.Sprintf("node-%d", i) {
				return fmt.Errorf("contribution %d is %q", i, b)
			}
		}
		for i, b := range all {
			if cap(b) != len(b) {
				return fmt.Errorf("contribution %d has room beyond its bytes (cap %d, len %d): an append would write shared memory", i, cap(b), len(b))
			}
		}
		_ = append(all[0], 'Y')
		rtt := fabric.Duration(c.Profile().OOB.RTTUS * 1e6)
		if want := fabric.Time(nodes-1) * fabric.Time(fabric.Microsecond); th.Now() < want.Add(rtt) {
			return fmt.Errorf("AllGather returned at %v, before the last node arrived plus one round trip", th.Now())
		}
		return th.Node().OOB().Barrier("end")
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestSpawn: spawned threads run on their node and core, with their own
// names and random streams, and the run ends when the last one returns.
func TestSpawn(t *testing.T) {
	c := newCluster(t, sim.Config{Nodes: 2, Seed: 1})
	type info struct {
		name       string
		node, core int
		end        fabric.Time
		r          uint64
	}
	var got []info
	err := c.Run(func(th fabric.Thread) error {
		for i := 1; i <= 3; i++ {
			th.Spawn(fmt.Sprintf("w%d", i), i, func(th fabric.Thread) error {
				th.Busy(fabric.Duration(i) * 10 * fabric.Microsecond)
				th.Sync()
				got = append(got, info{th.Name(), th.Node().ID(), th.Core(), th.Now(), th.Rand().Uint64()})
				return nil
			})
		}
		got = append(got, info{th.Name(), th.Node().ID(), th.Core(), th.Now(), th.Rand().Uint64()})
		return nil // main returns first; the run waits for the others
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 8 {
		t.Fatalf("%d threads ran, want 8: %+v", len(got), got)
	}
	seen := map[string]bool{}
	rs := map[uint64]bool{}
	for _, g := range got {
		seen[g.name] = true
		rs[g.r] = true
		want := fmt.Sprintf("n%d/main", g.node)
		if g.core > 0 {
			want = fmt.Sprintf("n%d/w%d", g.node, g.core)
			if g.end != fabric.Time(g.core)*fabric.Time(10*fabric.Microsecond) {
				t.Errorf("%s ended at %v, want %v", g.name, g.end, fabric.Duration(g.core)*10*fabric.Microsecond)
			}
		}
		if g.name != want {
			t.Errorf("thread on node %d core %d is named %q, want %q", g.node, g.core, g.name, want)
		}
	}
	if len(seen) != 8 || len(rs) != 8 {
		t.Errorf("thread names or random streams are not distinct: %v", got)
	}
	if c.Now() != fabric.Time(30*fabric.Microsecond) {
		t.Errorf("run ended at %v, want 30us (the last spawned thread)", c.Now())
	}

	// Spawning on a core the node does not have is a panic, reported as
	// an error.
	err = c.Run(func(th fabric.Thread) error {
		th.Spawn("bad", th.Node().Cores(), func(fabric.Thread) error { return nil })
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "core") {
		t.Errorf("Spawn on core %d: Run returned %v, want an error", c.Node(0).Cores(), err)
	}
}

// TestRunTwice: a cluster can run several times; the clock, the queue
// pairs' numbering and the OOB sequence carry on. A failed run (deadlock,
// time limit, error) does not poison the next one.
func TestRunTwice(t *testing.T) {
	ping := func(th fabric.Thread) error {
		conn, err := fabrictest.Connect(th, 1-th.Node().ID(), fabrictest.Options{})
		if err != nil {
			return err
		}
		if th.Node().ID() == 1 {
			if _, err := conn.QP.PostRecv([]fabric.RecvWR{{ID: 1, Local: conn.MR.SGE(0, 64)}}); err != nil {
				return err
			}
			if err := th.Node().OOB().Barrier("posted"); err != nil {
				return err
			}
			wcs, err := fabrictest.Await(th, conn.RCQ, 1, fabric.Millisecond)
			if err != nil {
				return err
			}
			return fabrictest.Expect(wcs[0], 1, fabric.StatusSuccess, fabric.OpRecv)
		}
		if err := th.Node().OOB().Barrier("posted"); err != nil {
			return err
		}
		if _, err := conn.QP.PostSend([]fabric.SendWR{{ID: 2, Op: fabric.OpSend, Local: conn.MR.SGE(0, 64), Flags: fabric.Signaled}}); err != nil {
			return err
		}
		wcs, err := fabrictest.Await(th, conn.SCQ, 1, fabric.Millisecond)
		if err != nil {
			return err
		}
		return fabrictest.Expect(wcs[0], 2, fabric.StatusSuccess, fabric.OpSend)
	}
	failures := []struct {
		name string
		want error
		main func(th fabric.Thread) error
	}{
		{"none", nil, ping},
		{"deadlock", fabric.ErrDeadlock, func(th fabric.Thread) error {
			if th.Node().ID() == 0 {
				return th.Node().OOB().Barrier("alone") // node 1 never comes
			}
			return nil
		}},
		{"time-limit", fabric.ErrTimeLimit, func(th fabric.Thread) error {
			for {
				th.Wait(th.Now().Add(fabric.Duration(th.Node().ID()+1) * 30 * fabric.Microsecond))
			}
		}},
		{"error-while-others-wait", fabric.ErrInvalidArg, func(th fabric.Thread) error {
			if th.Node().ID() == 0 {
				th.Wait(th.Now().Add(fabric.Second), th.Node().NewSignal())
				return nil
			}
			th.Busy(fabric.Microsecond)
			return fabric.ErrInvalidArg
		}},
		{"panic-while-other-in-oob", nil, func(th fabric.Thread) error {
			if th.Node().ID() == 1 {
				th.Busy(fabric.Microsecond)
				th.Sync() // node 0 is in the Barrier by now
				panic("boom")
			}
			return th.Node().OOB().Barrier("half")
		}},
	}
	for _, f := range failures {
		t.Run(f.name, func(t *testing.T) {
			c := newCluster(t, sim.Config{Nodes: 2, Seed: 1, TimeLimit: 100 * fabric.Millisecond})
			err := c.Run(f.main)
			switch {
			case f.name == "none":
				if err != nil {
					t.Fatalf("first run: %v", err)
				}
			case f.want != nil && !errors.Is(err, f.want):
				t.Fatalf("first run returned %v, want %v", err, f.want)
			case err == nil:
				t.Fatal("first run succeeded, want an error")
			}
			t1 := c.Now()
			for i := 0; i < 2; i++ {
				if err := c.Run(ping); err != nil {
					t.Fatalf("run %d after %s: %v", i+2, f.name, err)
				}
				if c.Now() <= t1 {
					t.Errorf("clock went from %v to %v", t1, c.Now())
				}
				t1 = c.Now()
			}
		})
	}
}

// TestWaitAfterOtherVerbs: a completion that lands between a thread's poll
// and its Wait, while the thread makes other calls (here: taking and
// releasing a lock, posting a receive), must end the Wait at once.
func TestWaitAfterOtherVerbs(t *testing.T) {
	c := newCluster(t, sim.Config{Nodes: 2, Seed: 1})
	var waited fabric.Duration
	err := c.Run(func(th fabric.Thread) error {
		me := th.Node().ID()
		conn, err := fabrictest.Connect(th, 1-me, fabrictest.Options{})
		if err != nil {
			return err
		}
		if me == 1 {
			th.Busy(20 * fabric.Microsecond) // after node 0 has looked
			wr := fabric.SendWR{ID: 1, Op: fabric.OpWrite, Local: conn.MR.SGE(0, 8), Flags: fabric.Signaled,
				RemoteAddr: conn.Peer.Addr, RKey: conn.Peer.RKey}
			_, err := conn.QP.PostSend([]fabric.SendWR{wr})
			return err
		}
		mu := th.Node().NewMutex()
		var wcs [1]fabric.WC
		if n, _ := conn.SCQ.Poll(wcs[:]); n != 0 {
			return fmt.Errorf("unexpected completion")
		}
		th.Sync() // memory observed: the write has not landed yet
		if conn.MR.Bytes()[0] != 0 {
			return fmt.Errorf("write landed too early for this test")
		}
		// Meanwhile node 1's write lands in our memory; we were busy.
		th.Busy(50 * fabric.Microsecond)
		mu.Lock()
		mu.Unlock()
		start := th.Now()
		th.Wait(start.Add(fabric.Second), conn.MR)
		waited = th.Now().Sub(start)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if waited > fabric.Microsecond {
		t.Fatalf("Wait slept %v for a write that had already landed", waited)
	}
}

// TestStopCauseWins: when a run stops (time limit, deadlock) while a
// thread waits with a lock released, the unwinding runs the thread's
// deferred Unlock on a lock it no longer holds; that, and a panic in a
// deferred call while unwinding, must not replace the cause. Before, Run returned "panic: sim: Unlock of an unlocked
// Mutex" with a stack trace, and the time limit was lost.
func TestStopCauseWins(t *testing.T) {
	// lockedWait is an endpoint's wait: hold the lock, release it to
	// wait, take it again; the deferred Unlock expects it held.
	lockedWait := func(th fabric.Thread, mu fabric.Mutex, on fabric.Waitable) {
		mu.Lock()
		defer mu.Unlock()
		for {
			mu.Unlock()
			th.Wait(th.Now().Add(10*fabric.Microsecond), on)
			mu.Lock()
		}
	}
	for _, tc := range []struct {
		name string
		want error
		main func(th fabric.Thread) error
	}{
		{"time-limit, lock released in a wait", fabric.ErrTimeLimit, func(th fabric.Thread) error {
			lockedWait(th, th.Node().NewMutex(), th.Node().NewSignal())
			return nil
		}},
		{"time-limit, two threads share the lock", fabric.ErrTimeLimit, func(th fabric.Thread) error {
			mu, sig := th.Node().NewMutex(), th.Node().NewSignal()
			th.Spawn("other", 1, func(ot fabric.Thread) error {
				lockedWait(ot, mu, sig)
				return nil
			})
			lockedWait(th, mu, sig)
			return nil
		}},
		{"deadlock, lock released in a wait", fabric.ErrDeadlock, func(th fabric.Thread) error {
			mu := th.Node().NewMutex()
			mu.Lock()
			defer mu.Unlock()
			mu.Unlock()
			th.Wait(fabric.Forever, th.Node().NewSignal())
			mu.Lock()
			return nil
		}},
		{"time-limit, a deferred call panics while unwinding", fabric.ErrTimeLimit, func(th fabric.Thread) error {
			defer func() { panic("cleanup panicked") }()
			for {
				th.Wait(th.Now().Add(10 * fabric.Microsecond))
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, sim.Config{Nodes: 2, Seed: 1, TimeLimit: fabric.Millisecond})
			err := c.Run(tc.main)
			if !errors.Is(err, tc.want) || strings.Contains(err.Error(), "panic") || strings.Contains(err.Error(), "cleanup") {
				t.Fatalf("Run returned %v, want %v and nothing else", err, tc.want)
			}
			if err := c.Run(func(th fabric.Thread) error { return nil }); err != nil {
				t.Fatalf("next run: %v", err)
			}
		})
	}
}

// TestRunReleasesThreadState: once a run is over, what its thread
// functions held can be collected, although model objects still name
// the threads (a queue pair remembers the last thread that posted on it).
// A 1024-node perftest run's per-queue-pair records are its bulk.
func TestRunReleasesThreadState(t *testing.T) {
	c := newCluster(t, sim.Config{Nodes: 2, Seed: 1})
	var held [2]weak.Pointer[[1 << 16]byte]
	err := c.Run(func(th fabric.Thread) error {
		state := new([1 << 16]byte)
		held[th.Node().ID()] = weak.Make(state)
		conn, err := fabrictest.Connect(th, 1-th.Node().ID(), fabrictest.Options{})
		if err != nil {
			return err
		}
		if _, err := conn.QP.PostRecv([]fabric.RecvWR{{ID: uint64(state[0]), Local: conn.MR.SGE(0, 64)}}); err != nil {
			return err
		}
		th.Spawn("worker", 1, func(fabric.Thread) error { state[1]++; return nil })
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	for i, p := range held {
		if p.Value() != nil {
			t.Errorf("node %d: the state its threads held is still reachable after the run", i)
		}
	}
}

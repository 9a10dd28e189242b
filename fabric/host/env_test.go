package host

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// localCluster is an OpenLocal cluster without devices (the environment
// never touches them).
func localCluster(t *testing.T, nodes int, cfg Config) *cluster {
	cfg = cfg.WithDefaults()
	hub := newLocalHub(nodes, cfg.OOBTimeout)
	ids := make([]int, nodes)
	devs := make([]fabric.Device, nodes)
	oobs := make([]oobChannel, nodes)
	for i := range ids {
		ids[i], oobs[i] = i, hub.view(i)
	}
	released := 0
	c := newCluster("host", cfg, nodes, ids, devs, oobs, func() error { released++; return nil })
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if released != 1 {
			t.Errorf("devices released %d times", released)
		}
	})
	return c
}

func TestRunThreadsAndOOB(t *testing.T) {
	c := localCluster(t, 3, Config{Cores: 4, Seed: 9})
	if c.Backend() != "host" || c.Size() != 3 || len(c.Local()) != 3 {
		t.Fatal("cluster shape")
	}
	var spawned atomic.Int32
	names := sync.Map{}
	err := c.Run(func(th fabric.Thread) error {
		n := th.Node()
		if !n.Payload() || n.Cores() != 4 || th.Core() != 0 || th.Name() != fmt.Sprintf("n%d/main", n.ID()) {
			return fmt.Errorf("thread %s on node %d core %d cores %d", th.Name(), n.ID(), th.Core(), n.Cores())
		}
		mu := n.NewMutex()
		sig := n.NewSignal()
		counter := 0
		for k := 1; k < 4; k++ {
			th.Spawn(fmt.Sprint("w", k), k, func(w fabric.Thread) error {
				names.Store(w.Name(), true)
				for i := 0; i < 1000; i++ {
					mu.Lock()
					counter++
					mu.Unlock()
				}
				sig.Notify()
				spawned.Add(1)
				return nil
			})
		}
		all, err := n.OOB().AllGather("ids", []byte{byte(n.ID())})
		if err != nil {
			return err
		}
		for i, d := range all {
			if len(d) != 1 || int(d[0]) != i {
				return fmt.Errorf("AllGather entry %d = %v", i, d)
			}
		}
		th.Wait(fabric.Forever, sig) // returns at once on hardware
		return n.OOB().Barrier("end")
	})
	if err != nil {
		t.Fatal(err)
	}
	if spawned.Load() != 9 {
		t.Fatalf("%d spawned threads ran, want 9", spawned.Load())
	}
	if _, ok := names.Load("n2/w3"); !ok {
		t.Error("spawned thread names are n<node>/<name>")
	}
	// A second run works (the OOB sequence starts afresh).
	if err := c.Run(func(th fabric.Thread) error { return th.Node().OOB().Barrier("again") }); err != nil {
		t.Fatal(err)
	}
}

func TestRunFailureAbortsOthers(t *testing.T) {
	c := localCluster(t, 3, Config{})
	err := c.Run(func(th fabric.Thread) error {
		switch th.Node().ID() {
		case 0:
			return errors.New("out of buffers")
		case 1:
			return th.Node().OOB().Barrier("never") // fails when node 0 aborts the run
		}
		for { // node 2 busy-polls: unwound at its next Wait
			th.Wait(fabric.Forever)
		}
	})
	if err == nil || !strings.Contains(err.Error(), "n0/main: out of buffers") {
		t.Fatalf("Run: %v", err)
	}
	// The cluster is usable again.
	if err := c.Run(func(th fabric.Thread) error { return th.Node().OOB().Barrier("ok") }); err != nil {
		t.Fatalf("run after a failed run: %v", err)
	}
}

func TestRunPanicBadCoreTimeLimit(t *testing.T) {
	c := localCluster(t, 1, Config{Cores: 2})
	err := c.Run(func(th fabric.Thread) error { panic("boom") })
	if err == nil || !strings.Contains(err.Error(), "panic: boom") {
		t.Fatalf("panic: %v", err)
	}
	err = c.Run(func(th fabric.Thread) error {
		th.Spawn("x", 2, func(fabric.Thread) error { return nil })
		return nil
	})
	if !errors.Is(err, fabric.ErrInvalidArg) || !strings.Contains(err.Error(), `Spawn "x" on core 2: node has cores 0..1`) {
		t.Fatalf("bad core: %v", err)
	}
	c.cfg.TimeLimit = 100 * time.Millisecond
	err = c.Run(func(th fabric.Thread) error {
		for {
			th.Busy(fabric.Millisecond)
		}
	})
	if !errors.Is(err, fabric.ErrTimeLimit) || !strings.Contains(err.Error(), "n0/main") {
		t.Fatalf("time limit: %v", err)
	}
}

func TestRunStuckThreadRefusesClose(t *testing.T) {
	old := abortGrace
	abortGrace = 100 * time.Millisecond
	defer func() { abortGrace = old }()
	c := localCluster(t, 1, Config{Cores: 2})
	release := make(chan struct{})
	err := c.Run(func(th fabric.Thread) error {
		th.Spawn("stuck", 1, func(fabric.Thread) error { <-release; return nil })
		return errors.New("fail")
	})
	if err == nil || !strings.Contains(err.Error(), "n0/stuck") {
		t.Fatalf("Run: %v", err)
	}
	if err := c.Close(); !errors.Is(err, fabric.ErrBusy) {
		t.Fatalf("Close with a stuck thread: %v", err)
	}
	if err := c.Run(func(fabric.Thread) error { return nil }); err == nil {
		t.Fatal("Run while a thread is stuck")
	}
	close(release)
	// The cluster becomes free once the stuck thread returns (a cluster
	// that stays busy hangs here until go test's own timeout).
	for c.current() != nil {
		time.Sleep(time.Millisecond)
	}
}

func TestClockComputeRand(t *testing.T) {
	c := localCluster(t, 2, Config{GHz: 2, Seed: 5})
	var r0, r1 [2]uint64
	err := c.Run(func(th fabric.Thread) error {
		t0 := th.Now()
		th.Busy(2 * fabric.Millisecond)
		t1 := th.Now()
		th.Compute(2_000_000) // 1 ms at 2 GHz
		t2 := th.Now()
		// Lower bounds only: a loaded machine may take any longer.
		if d := t1.Sub(t0); d < 2*fabric.Millisecond {
			return fmt.Errorf("Busy(2ms) took %v", d)
		}
		if d := t2.Sub(t1); d < fabric.Millisecond {
			return fmt.Errorf("Compute(2e6 cycles at 2 GHz) took %v", d)
		}
		th.Charge(fabric.WorkCopy, 1<<20)
		th.Sync()
		v := th.Rand().Uint64()
		if th.Node().ID() == 0 {
			r0[0] = v
		} else {
			r1[0] = v
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if r0[0] == r1[0] {
		t.Error("threads share a random stream")
	}
	// Same seed, same names: same streams.
	c2 := localCluster(t, 2, Config{Seed: 5})
	err = c2.Run(func(th fabric.Thread) error {
		v := th.Rand().Uint64()
		if th.Node().ID() == 0 {
			r0[1] = v
		}
		return nil
	})
	if err != nil || r0[1] != r0[0] {
		t.Errorf("thread random streams are not reproducible: %v", err)
	}
}

func TestCloseTwiceAndRunAfterClose(t *testing.T) {
	c := localCluster(t, 1, Config{})
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := c.Run(func(fabric.Thread) error { return nil }); !errors.Is(err, fabric.ErrClosed) {
		t.Fatalf("Run after Close: %v", err)
	}
}

// TestDistributedRun runs a three-process job as goroutines: one cluster
// per "process", joined by the TCP out-of-band channel.
func TestDistributedRun(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	const n = 3
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := 0; r < n; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var l net.Listener
			if r == 0 {
				l = ln
			}
			b := Bootstrap{Rank: r, Size: n, Coordinator: addr}
			o, err := dialOOB(b, "job", 5*time.Second, 5*time.Second, l)
			if err != nil {
				errs[r] = err
				return
			}
			c := newCluster("host", Config{}.WithDefaults(), n, []int{r}, []fabric.Device{nil}, []oobChannel{o}, nil)
			defer c.Close()
			if c.Size() != n || len(c.Local()) != 1 || c.Local()[0].ID() != r {
				errs[r] = errors.New("shape")
				return
			}
			// A first run succeeds; in a second one node 1 fails and
			// the others, blocked in a Barrier, learn why.
			if err := c.Run(func(th fabric.Thread) error {
				all, err := th.Node().OOB().AllGather("who", []byte{byte(r)})
				if err == nil && (len(all) != n || all[2][0] != 2) {
					err = fmt.Errorf("AllGather %v", all)
				}
				return err
			}); err != nil {
				errs[r] = err
				return
			}
			errs[r] = c.Run(func(th fabric.Thread) error {
				if r == 1 {
					return errors.New("disk full")
				}
				return th.Node().OOB().Barrier("never")
			})
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "disk full") {
			t.Errorf("node %d: %v; want node 1's failure", r, err)
		}
	}
}

// A thread that lets a lock go around a wait takes it again in a deferred
// call when an abort unwinds the wait, while another thread holds it: the
// lock must then be its again before its own deferred unlock runs (an
// unlock of an unlocked mutex kills the process).
func TestAbortWhileRelocking(t *testing.T) {
	for _, kind := range []string{"spinning", "sleeping"} {
		t.Run(kind, func(t *testing.T) {
			c := localCluster(t, 1, Config{Cores: 3})
			var waiting, holding atomic.Bool
			err := c.Run(func(th fabric.Thread) error {
				mu := th.Node().NewMutex()
				if kind == "sleeping" {
					mu = th.Node().NewSleepingMutex()
				}
				th.Spawn("waiter", 1, func(th fabric.Thread) error {
					mu.Lock()
					defer mu.Unlock()
					mu.Unlock()
					defer mu.Lock()
					waiting.Store(true)
					for { // unwound at a Wait once the run is aborted
						th.Wait(fabric.Forever)
					}
				})
				th.Spawn("holder", 2, func(th fabric.Thread) error {
					for !waiting.Load() {
						th.Busy(fabric.Microsecond)
					}
					mu.Lock()
					defer mu.Unlock()
					defer time.Sleep(10 * time.Millisecond) // slow to unwind: the waiter's relock waits
					holding.Store(true)
					for {
						th.Busy(fabric.Microsecond)
					}
				})
				for !holding.Load() {
					th.Busy(fabric.Microsecond)
				}
				th.Busy(fabric.Millisecond) // the waiter is parked in its wait
				return errors.New("abort")
			})
			if err == nil || !strings.Contains(err.Error(), "n0/main: abort") {
				t.Fatalf("Run: %v", err)
			}
		})
	}
}

package fabrictest

import (
	"errors"
	"fmt"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// This file holds the cases of the execution contract: threads, waiting,
// signals, locks, out-of-band exchange, the clock and randomness. They
// need no RDMA device, so they also run on the host environment.

// RunExec runs the execution-contract cases against fresh two-node
// clusters from f.
func RunExec(t *testing.T, f Factory) {
	for _, c := range ExecCases() {
		t.Run(c.Name, func(t *testing.T) {
			fab := f(t, 2)
			err := fab.Run(c.Body)
			switch {
			case c.Want == nil && err != nil:
				t.Fatal(err)
			case c.Want != nil && !errors.Is(err, c.Want):
				t.Fatalf("run returned %v, want an error wrapping %v", err, c.Want)
			}
		})
	}
}

// ExecCases lists the checks of the execution contract.
func ExecCases() []Case {
	return []Case{
		{Name: "MutexCounts", Body: func(th fabric.Thread) error { return mutexCounts(th, th.Node().NewMutex()) }},
		{Name: "SleepingMutexCounts", Body: func(th fabric.Thread) error { return mutexCounts(th, th.Node().NewSleepingMutex()) }},
		{Name: "SignalWakesWaiter", Body: signalWakes},
		{Name: "SpawnOnEveryCore", Body: spawnCores},
		{Name: "SpawnBadCore", Body: spawnBadCore, Want: fabric.ErrInvalidArg},
		{Name: "ThreadErrorFailsRun", Body: threadError, Want: errThread},
		{Name: "OOBAllGather", Body: oobAllGather},
		{Name: "OOBExchange", Body: oobExchange},
		{Name: "ClockAndBusy", Body: clockBusy},
		{Name: "RandPerThread", Body: randPerThread},
	}
}

// execWait bounds every wait of these cases: long, since threads really
// run in parallel on a loaded machine, and reached only when something
// hangs (the simulator gets there in no time).
const execWait = 10 * fabric.Second

// join waits until *done (read under mu) reaches n, or fails after wait.
func join(th fabric.Thread, mu fabric.Mutex, sig fabric.Signal, done *int, n int) error {
	deadline := th.Now().Add(execWait)
	for {
		mu.Lock()
		d := *done
		mu.Unlock()
		if d >= n {
			return nil
		}
		if th.Now() >= deadline {
			return fmt.Errorf("%d of %d threads finished after %v", d, n, execWait)
		}
		th.Wait(deadline, sig)
	}
}

// mutexCounts: threads on every core increment one counter under mu, a
// node Mutex (NewMutex or NewSleepingMutex); no increment is lost (and,
// under the race detector, the lock orders them).
func mutexCounts(th fabric.Thread, mu fabric.Mutex) error {
	const perThread = 500
	n := th.Node()
	threads := min(n.Cores(), 4)
	sig := n.NewSignal()
	count, done := 0, 0
	for i := 0; i < threads; i++ {
		th.Spawn(fmt.Sprintf("adder%d", i), i, func(th fabric.Thread) error {
			for k := 0; k < perThread; k++ {
				mu.Lock()
				count++
				mu.Unlock()
			}
			mu.Lock()
			done++
			mu.Unlock()
			sig.Notify()
			return nil
		})
	}
	if err := join(th, mu, sig, &done, threads); err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	if count != threads*perThread {
		return fmt.Errorf("%d threads each added %d under a Mutex: counter %d, want %d", threads, perThread, count, threads*perThread)
	}
	return nil
}

// signalWakes: a thread waiting on a Signal sees the state its notifier
// published under a Mutex, whatever the order of Notify and Wait.
func signalWakes(th fabric.Thread) error {
	n := th.Node()
	mu, sig, back := n.NewMutex(), n.NewSignal(), n.NewSignal()
	const rounds = 50
	turn := 0 // odd: the helper's move
	th.Spawn("pong", min(1, n.Cores()-1), func(th fabric.Thread) error {
		for r := 0; r < rounds; r++ {
			if err := awaitTurn(th, mu, sig, &turn, 2*r+1); err != nil {
				return err
			}
			mu.Lock()
			turn++
			mu.Unlock()
			back.Notify()
		}
		return nil
	})
	for r := 0; r < rounds; r++ {
		mu.Lock()
		turn++
		mu.Unlock()
		sig.Notify()
		if err := awaitTurn(th, mu, back, &turn, 2*r+2); err != nil {
			return err
		}
	}
	return nil
}

func awaitTurn(th fabric.Thread, mu fabric.Mutex, sig fabric.Signal, turn *int, want int) error {
	deadline := th.Now().Add(execWait)
	for {
		mu.Lock()
		t := *turn
		mu.Unlock()
		if t >= want {
			return nil
		}
		if th.Now() >= deadline {
			return fmt.Errorf("%s: turn %d after %v, want %d (a Signal's Notify was missed)", th.Name(), t, execWait, want)
		}
		th.Wait(deadline, sig)
	}
}

// spawnCores: a thread can be started on every core of the node, it runs
// on the core asked for, and the run waits for all of them.
func spawnCores(th fabric.Thread) error {
	n := th.Node()
	mu, sig := n.NewMutex(), n.NewSignal()
	done := 0
	var bad error
	cores := min(n.Cores(), 8)
	for c := 0; c < cores; c++ {
		th.Spawn(fmt.Sprintf("core%d", c), c, func(t fabric.Thread) error {
			mu.Lock()
			if t.Core() != c || t.Node().ID() != n.ID() {
				bad = fmt.Errorf("thread spawned on node %d core %d reports node %d core %d", n.ID(), c, t.Node().ID(), t.Core())
			}
			done++
			mu.Unlock()
			sig.Notify()
			return nil
		})
	}
	if err := join(th, mu, sig, &done, cores); err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	return bad
}

// spawnBadCore: a core outside 0..Cores()-1 fails the run with
// ErrInvalidArg.
func spawnBadCore(th fabric.Thread) error {
	th.Spawn("nowhere", th.Node().Cores(), func(fabric.Thread) error { return nil })
	return nil
}

var errThread = errors.New("fabrictest: a thread's error")

// threadError: the error a spawned thread returns is the run's.
func threadError(th fabric.Thread) error {
	if th.Node().ID() == 1 {
		th.Spawn("failing", 0, func(fabric.Thread) error { return fmt.Errorf("wrapped: %w", errThread) })
	}
	return nil
}

// oobAllGather: every node gets every node's contribution, by id, over
// several rounds and a barrier; empty contributions come back empty.
func oobAllGather(th fabric.Thread) error {
	n := th.Node()
	o := n.OOB()
	for r := 0; r < 3; r++ {
		mine := []byte(fmt.Sprintf("node %d round %d", n.ID(), r))
		if r == 1 {
			mine = nil
		}
		all, err := o.AllGather(fmt.Sprintf("round%d", r), mine)
		if err != nil {
			return err
		}
		if len(all) != 2 {
			return fmt.Errorf("AllGather returned %d contributions, want 2", len(all))
		}
		for i, b := range all {
			want := fmt.Sprintf("node %d round %d", i, r)
			if r == 1 {
				want = ""
			}
			if string(b) != want {
				return fmt.Errorf("AllGather round %d: node %d's contribution %q, want %q", r, i, b, want)
			}
		}
		all[1-n.ID()] = append(all[1-n.ID()], 'x') // the result is the caller's
		if err := o.Barrier(fmt.Sprintf("after%d", r)); err != nil {
			return err
		}
	}
	return nil
}

// oobExchange: every node gets what each node gave it and nothing else,
// over several rounds (empty slices come back empty, the result is the
// caller's, out is the caller's again once Exchange returns), between
// all-gathers and barriers; an out of the wrong length is ErrInvalidArg.
func oobExchange(th fabric.Thread) error {
	n := th.Node()
	o := n.OOB()
	size := 2
	for r := 0; r < 3; r++ {
		out := make([][]byte, size)
		for j := range out {
			if r != 1 || j == 0 {
				out[j] = []byte(fmt.Sprintf("%d for %d, round %d", n.ID(), j, r))
			}
		}
		in, err := o.Exchange(fmt.Sprintf("exchange%d", r), out)
		if err != nil {
			return err
		}
		for j := range out {
			out[j] = append(out[j][:0], "changed"...) // the backend keeps no reference
		}
		if len(in) != size {
			return fmt.Errorf("Exchange returned %d slices, want %d", len(in), size)
		}
		for j, b := range in {
			want := fmt.Sprintf("%d for %d, round %d", j, n.ID(), r)
			if r == 1 && n.ID() != 0 {
				want = ""
			}
			if string(b) != want {
				return fmt.Errorf("Exchange round %d: from node %d %q, want %q", r, j, b, want)
			}
		}
		in[0] = append(in[0], 'x') // the result is the caller's
		if _, err := o.AllGather(fmt.Sprintf("between%d", r), []byte{byte(n.ID())}); err != nil {
			return err
		}
		if err := o.Barrier(fmt.Sprintf("after%d", r)); err != nil {
			return err
		}
	}
	if _, err := o.Exchange("short", make([][]byte, size-1)); !errors.Is(err, fabric.ErrInvalidArg) {
		return fmt.Errorf("Exchange with %d slices for %d nodes: %v, want ErrInvalidArg", size-1, size, err)
	}
	return nil
}

// clockBusy: Now never goes back, and Busy(d) spends at least d of it.
func clockBusy(th fabric.Thread) error {
	prev := th.Now()
	for _, d := range []fabric.Duration{0, fabric.Microsecond, 50 * fabric.Microsecond} {
		th.Busy(d)
		now := th.Now()
		if now.Sub(prev) < d {
			return fmt.Errorf("Busy(%v) advanced the clock by %v", d, now.Sub(prev))
		}
		prev = now
		th.Compute(1000)
		th.Sync()
		if now := th.Now(); now < prev {
			return fmt.Errorf("the clock went back from %v to %v", prev, now)
		}
	}
	return nil
}

// randPerThread: every thread has its own source (threads draw from them
// at the same time; under the race detector a shared one is reported), and
// two threads do not draw the same sequence.
func randPerThread(th fabric.Thread) error {
	n := th.Node()
	mu, sig := n.NewMutex(), n.NewSignal()
	const threads = 3
	seqs := make([][4]uint64, threads)
	done := 0
	for i := 0; i < threads; i++ {
		th.Spawn(fmt.Sprintf("rand%d", i), i%n.Cores(), func(t fabric.Thread) error {
			var s [4]uint64
			for k := range s {
				s[k] = t.Rand().Uint64()
			}
			for k := 0; k < 1000; k++ {
				t.Rand().Uint64()
			}
			mu.Lock()
			seqs[i] = s
			done++
			mu.Unlock()
			sig.Notify()
			return nil
		})
	}
	if err := join(th, mu, sig, &done, threads); err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	for i := 0; i < threads; i++ {
		for j := i + 1; j < threads; j++ {
			if seqs[i] == seqs[j] {
				return fmt.Errorf("threads rand%d and rand%d draw the same numbers %v", i, j, seqs[i])
			}
		}
	}
	return nil
}

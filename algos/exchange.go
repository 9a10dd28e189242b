package algos

import (
	"encoding/binary"
	"fmt"
	"sync/atomic"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// This file is the per-node driver that every exchange shares: a run of
// the synthetic workload, a step of a TPC-H plan, I-Store's stream workers.
// A node's main thread starts its worker threads, waits until they have
// all returned or one has failed, and returns the first failure.

// SpawnJoin starts n threads on th's node, thread i named and placed by
// place(i) and running body(t, i), and waits until every one has returned
// or one has failed; it returns the first failure (the run's abort then
// unwinds the threads still running). Threads are started in index order.
func SpawnJoin(th fabric.Thread, n int, place func(i int) (name string, core int), body func(t fabric.Thread, i int) error) error {
	var running atomic.Int32
	var firstErr atomic.Pointer[error]
	done := th.Node().NewSignal()
	running.Store(int32(n))
	for i := range n {
		name, core := place(i)
		th.Spawn(name, core, func(t fabric.Thread) error {
			defer func() { running.Add(-1); done.Notify() }()
			err := body(t, i)
			if err != nil {
				firstErr.CompareAndSwap(nil, &err)
			}
			return err
		})
	}
	for running.Load() > 0 && firstErr.Load() == nil {
		th.Wait(fabric.Forever, done)
	}
	if e := firstErr.Load(); e != nil {
		return *e
	}
	return nil
}

// Step is one exchange on one node: Threads sending threads (SHUFFLE) and
// as many receiving threads (RECEIVE), sending thread k on core 2k and
// receiving thread k on core 2k+1 (modulo the node's cores), as in seed
// 001's experiments. The caller owns what the threads produce; Lock is the
// node's lock for it, which Step also uses to count finished senders.
type Step struct {
	Name    string // thread names: Name+"shuffle"+k and Name+"receive"+k
	Threads int
	// Shared: every sending thread shares one endpoint, so only the last
	// one to finish may end the stream; Send's last then reports whether
	// the calling thread is that one (nil otherwise).
	Shared  bool
	Lock    fabric.Mutex
	Send    func(st fabric.Thread, k int, last func() bool) error
	Receive func(rt fabric.Thread, k int) error
}

// Run runs the step's threads on th's node and returns the first failure.
func (s Step) Run(th fabric.Thread) error {
	finished := 0
	last := func() bool {
		s.Lock.Lock()
		defer s.Lock.Unlock()
		finished++
		return finished == s.Threads
	}
	if !s.Shared {
		last = nil
	}
	cores := th.Node().Cores()
	return SpawnJoin(th, 2*s.Threads, func(i int) (string, int) {
		role := "shuffle"
		if i%2 == 1 {
			role = "receive"
		}
		return fmt.Sprintf("%s%s%d", s.Name, role, i/2), i % cores
	}, func(t fabric.Thread, i int) error {
		if i%2 == 0 {
			return s.Send(t, i/2, last)
		}
		return s.Receive(t, i/2)
	})
}

// GatherInts all-gathers every node's int64 values over the out-of-band
// channel under key: out[i] is node i's values.
func GatherInts(th fabric.Thread, key string, vals []int64) ([][]int64, error) {
	buf := make([]byte, 0, 8*len(vals))
	for _, v := range vals {
		buf = binary.LittleEndian.AppendUint64(buf, uint64(v))
	}
	all, err := th.Node().OOB().AllGather(key, buf)
	if err != nil {
		return nil, err
	}
	out := make([][]int64, len(all))
	for i, b := range all {
		for j := 0; j+8 <= len(b); j += 8 {
			out[i] = append(out[i], int64(binary.LittleEndian.Uint64(b[j:])))
		}
	}
	return out, nil
}

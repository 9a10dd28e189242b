package perftest

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// SwarmConfig is one run of the rc-swarm benchmark of Kalia et al. (the
// source of the msgrate_qps.yaml sweeps) reduced to two nodes: each node
// has Threads workers, each with its own completion queue and QPs/Threads
// RC queue pairs to the other node, and each worker keeps Window
// operations of Bytes in flight, every one signaled, each on a queue pair
// chosen at random. Both nodes issue and both serve, so a NIC holds QPs
// connected contexts used by requests and responses alike, as in the
// many-machine original (where a NIC's QPs lead to many machines; the
// NIC's work per queue pair is the same).
//
// OneSided has node 0 issue and node 1 only serve (a requester NIC against
// a responder NIC), and reports node 0's rate. Burst, if above 1, replaces
// the random choice with the pattern of benchmarks that walk their queue
// pairs: each worker posts a round, Burst operations on each of its queue
// pairs in turn, only the last signaled; then, round after round, it posts
// the next round before it waits for one completion per queue pair (the
// previous round's), so up to two rounds are in flight on each queue pair
// (g4197's scalability benchmark); Window is then twice Burst times the
// worker's queue pairs.
//
// Sync makes each worker post a whole window, one operation per
// PostSend (one doorbell each), and wait until all of it has completed
// before posting the next (the batch-and-wait loop of SMART's test_rdma),
// instead of posting again as each operation completes.
//
// PerQP, if above SwarmQPDepth, lets a worker keep that many operations
// in flight on one queue pair (its send queue is that deep); RDMA Reads
// beyond the NIC's 16 per queue pair wait in the send queue, as on the
// hardware (max_qp_rd_atom 16).
type SwarmConfig struct {
	Op                   fabric.Opcode // fabric.OpRead or fabric.OpWrite
	QPs, Threads, Window int
	Bytes, OpsPerThread  int
	OneSided, Sync       bool
	Burst, PerQP         int
}

// SwarmQPDepth is the send queue depth and read depth of each queue pair
// (at least a burst).
const SwarmQPDepth = 16

func (c SwarmConfig) depth() int { return max(SwarmQPDepth, 2*c.Burst, c.PerQP) }

// RunSwarm runs cfg on f (two nodes) and returns the mean over nodes of
// the operations each issued per second, in millions: the operations its
// workers completed until the first of them had done its OpsPerThread,
// over that time. That is the rate while every worker runs, as the
// benchmarks measure it (each thread counts what it does in a fixed time,
// and the counts are added): workers that share a bottleneck unevenly (a
// doorbell register, a context-cache set) finish at different times, and
// the time of the slowest would make the fast ones look as slow. The swarm is what
// shows a NIC's queue-pair context cache: many queue pairs used at random
// by several threads, each with operations in flight (explore bench's
// read_swarm and write_swarm; experiments/evidence fits the cache to it).
func RunSwarm(f fabric.Fabric, cfg SwarmConfig) (float64, error) {
	if f.Size() != 2 || cfg.Threads < 1 || cfg.QPs < cfg.Threads || cfg.Window < 1 || cfg.Bytes < 1 || cfg.OpsPerThread < 1 {
		return 0, fmt.Errorf("perftest: swarm: bad configuration %+v on %d nodes", cfg, f.Size())
	}
	rates := make([]float64, 2)
	err := f.Run(func(th fabric.Thread) error {
		r, err := swarmNode(th, cfg)
		rates[th.Node().ID()] = r
		return err
	})
	if cfg.OneSided {
		return rates[0], err
	}
	return (rates[0] + rates[1]) / 2, err
}

// swarmWorker is one worker's queue pairs and completion queue.
type swarmWorker struct {
	cq     fabric.CQ
	qps    []fabric.QP
	remote []fabric.QPInfo
	out    []int // operations in flight per queue pair
	tally  *swarmTally
}

// swarmTally counts a node's completed operations and keeps the count
// and the time at which the first worker finished.
type swarmTally struct {
	ops      atomic.Int64
	finished atomic.Bool
	opsAt    int64       // ops when the first worker finished
	at       fabric.Time // and when
}

// finish records the count at now if no worker finished before.
func (t *swarmTally) finish(now fabric.Time) {
	if t.finished.CompareAndSwap(false, true) {
		t.opsAt, t.at = t.ops.Load(), now
	}
}

func swarmNode(th fabric.Thread, cfg SwarmConfig) (float64, error) {
	n := th.Node()
	pd, err := n.Device().AllocPD()
	if err != nil {
		return 0, err
	}
	slot := cfg.Bytes
	mr, err := pd.RegMR(cfg.QPs*slot, fabric.AccessLocalWrite|fabric.AccessRemoteWrite|fabric.AccessRemoteRead)
	if err != nil {
		return 0, err
	}
	ws := make([]*swarmWorker, cfg.Threads)
	tally := &swarmTally{}
	var blob []byte
	for i := 0; i < cfg.QPs; i++ {
		w := ws[i%cfg.Threads]
		if w == nil {
			w = &swarmWorker{tally: tally}
			if w.cq, err = n.Device().CreateCQ(cfg.Window + 16); err != nil {
				return 0, err
			}
			ws[i%cfg.Threads] = w
		}
		qp, err := pd.CreateQP(fabric.QPInit{Type: fabric.RC, SendCQ: w.cq, RecvCQ: w.cq,
			Caps: fabric.QPCaps{MaxSendWR: cfg.depth(), MaxRecvWR: 1}})
		if err != nil {
			return 0, err
		}
		if err := qp.Modify(fabric.StateInit, fabric.QPAttr{Access: fabric.AccessLocalWrite | fabric.AccessRemoteWrite | fabric.AccessRemoteRead}); err != nil {
			return 0, err
		}
		w.qps, w.out = append(w.qps, qp), append(w.out, 0)
		info := qp.Info()
		info.PSN = fabric.PSN(i)
		s := mr.SGE(i*slot, slot)
		info.Addr, info.RKey, info.Bytes = s.Addr, mr.RKey(), uint64(slot)
		enc, _ := info.MarshalBinary()
		blob = append(blob, enc...)
	}
	all, err := n.OOB().AllGather("swarm", blob)
	if err != nil {
		return 0, err
	}
	peer := all[1-n.ID()]
	for i := 0; i < cfg.QPs; i++ {
		var info fabric.QPInfo
		if err := info.UnmarshalBinary(peer[i*fabric.QPInfoWireBytes : (i+1)*fabric.QPInfoWireBytes]); err != nil {
			return 0, err
		}
		w := ws[i%cfg.Threads]
		qp := w.qps[len(w.remote)]
		w.remote = append(w.remote, info)
		if err := qp.Modify(fabric.StateRTR, fabric.QPAttr{Dest: info.Address(), RemotePSN: info.PSN,
			MinRNRTimer: 12, MaxDestRdAtomic: SwarmQPDepth}); err != nil {
			return 0, err
		}
		if err := qp.Modify(fabric.StateRTS, fabric.QPAttr{SendPSN: fabric.PSN(i), Timeout: 14, RetryCnt: 7,
			RNRRetry: 7, MaxRdAtomic: SwarmQPDepth}); err != nil {
			return 0, err
		}
	}
	if err := n.OOB().Barrier("swarm-ready"); err != nil {
		return 0, err
	}
	if cfg.OneSided && n.ID() == 1 {
		// The responder: its NIC serves; no thread of it issues.
		return 0, n.OOB().Barrier("swarm-done")
	}
	start := th.Now()
	var left atomic.Int32
	left.Store(int32(cfg.Threads))
	done := n.NewSignal()
	errs := make([]error, cfg.Threads)
	for i, w := range ws {
		th.Spawn(fmt.Sprint("swarm-", i), (i+1)%n.Cores(), func(wt fabric.Thread) error {
			defer func() { left.Add(-1); done.Notify() }()
			if cfg.Burst > 1 {
				errs[i] = w.runBursts(wt, mr, slot, cfg)
			} else {
				errs[i] = w.run(wt, mr, slot, cfg)
			}
			if errs[i] == nil {
				tally.finish(wt.Now())
			}
			return errs[i]
		})
	}
	for left.Load() > 0 {
		th.Wait(fabric.Forever, done)
	}
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	if err := n.OOB().Barrier("swarm-done"); err != nil {
		return 0, err
	}
	return float64(tally.opsAt) / tally.at.Sub(start).Seconds() / 1e6, nil
}

// run keeps cfg.Window operations in flight on random queue pairs of w
// until cfg.OpsPerThread have completed.
func (w *swarmWorker) run(th fabric.Thread, mr fabric.MR, slot int, cfg SwarmConfig) error {
	wcs := make([]fabric.WC, 32)
	posted, completed, inFlight := 0, 0, 0
	last := th.Now()
	for completed < cfg.OpsPerThread {
		for inFlight < cfg.Window && posted < cfg.OpsPerThread && (!cfg.Sync || inFlight == 0 || posted%cfg.Window != 0) {
			k := th.Rand().IntN(len(w.qps))
			if w.out[k] >= max(SwarmQPDepth, cfg.PerQP) {
				break // that queue pair is full: poll first, as rc-swarm does
			}
			wr := fabric.SendWR{ID: uint64(k), Op: cfg.Op, Local: mr.SGE(k*slot, cfg.Bytes), Flags: fabric.Signaled,
				RemoteAddr: w.remote[k].Addr, RKey: w.remote[k].RKey}
			if _, err := w.qps[k].PostSend([]fabric.SendWR{wr}); err != nil {
				return err
			}
			w.out[k]++
			posted++
			inFlight++
		}
		n, err := w.poll(th, wcs)
		if err != nil {
			return err
		}
		for _, wc := range wcs[:n] {
			w.out[wc.ID]--
			completed++
			inFlight--
		}
		w.tally.ops.Add(int64(n))
		if n > 0 {
			last = th.Now()
			continue
		}
		if th.Now().Sub(last) > fabric.Second {
			return fmt.Errorf("perftest: swarm: node %d: no completion for a second (%d of %d done)", th.Node().ID(), completed, cfg.OpsPerThread)
		}
		th.Wait(last.Add(fabric.Second+1), w.cq)
	}
	return nil
}

// runBursts walks w's queue pairs in rounds of Burst operations on each,
// the last signaled: it posts a round, then posts each next round before
// it waits until no queue pair has more than that round in flight (one
// completion per queue pair, the round before's: the benchmark polls a
// completion queue per queue pair), and waits for the last round at the
// end, until cfg.OpsPerThread operations (rounded up to whole rounds) are
// done.
func (w *swarmWorker) runBursts(th fabric.Thread, mr fabric.MR, slot int, cfg SwarmConfig) error {
	wcs := make([]fabric.WC, 32)
	wrs := make([]fabric.SendWR, cfg.Burst)
	inFlight := make([]int, len(w.qps)) // rounds posted and not yet completed, per queue pair
	post := func() error {
		for k, qp := range w.qps {
			for j := range wrs {
				wrs[j] = fabric.SendWR{ID: uint64(k), Op: cfg.Op, Local: mr.SGE(k*slot, cfg.Bytes),
					RemoteAddr: w.remote[k].Addr, RKey: w.remote[k].RKey}
			}
			wrs[len(wrs)-1].Flags = fabric.Signaled
			if _, err := qp.PostSend(wrs); err != nil {
				return err
			}
			inFlight[k]++
		}
		return nil
	}
	// reap waits until every queue pair has at most keep rounds in flight.
	reap := func(keep int) error {
		over := 0
		for _, r := range inFlight {
			over += max(r-keep, 0)
		}
		last := th.Now()
		for over > 0 {
			n, err := w.poll(th, wcs)
			if err != nil {
				return err
			}
			for _, wc := range wcs[:n] {
				if inFlight[wc.ID]--; inFlight[wc.ID] >= keep {
					over--
				}
			}
			w.tally.ops.Add(int64(n * cfg.Burst))
			if n > 0 {
				last = th.Now()
				continue
			}
			if th.Now().Sub(last) > fabric.Second {
				return fmt.Errorf("perftest: swarm: node %d: no completion for a second (%d rounds still to complete)", th.Node().ID(), over)
			}
			th.Wait(last.Add(fabric.Second+1), w.cq)
		}
		return nil
	}
	round := cfg.Burst * len(w.qps)
	if err := post(); err != nil {
		return err
	}
	for done := round; done < cfg.OpsPerThread; done += round {
		if err := post(); err != nil {
			return err
		}
		if err := reap(1); err != nil {
			return err
		}
	}
	return reap(0)
}

// poll reaps w's completions into wcs; a failed one is the run's error.
func (w *swarmWorker) poll(th fabric.Thread, wcs []fabric.WC) (int, error) {
	n, err := w.cq.Poll(wcs)
	if err != nil {
		return 0, err
	}
	for _, wc := range wcs[:n] {
		if wc.Status != fabric.StatusSuccess {
			return 0, &fabric.CompletionError{WC: wc, Node: th.Node().ID()}
		}
	}
	return n, nil
}

// runSwarmTest runs read_swarm or write_swarm: the swarm with cfg's
// queue pairs, threads, window, size and operations per thread.
func runSwarmTest(f fabric.Fabric, cfg Config) (*Result, error) {
	op := fabric.OpRead
	if cfg.Test == "write_swarm" {
		op = fabric.OpWrite
	}
	rate, err := RunSwarm(f, SwarmConfig{Op: op, QPs: cfg.QPs, Threads: cfg.Threads, Window: cfg.Window, Bytes: cfg.Size, OpsPerThread: cfg.Iters})
	if err != nil {
		return nil, err
	}
	return &Result{Test: cfg.Test, Backend: f.Backend(), Nodes: f.Size(), Conn: cfg.Conn.String(), Bytes: cfg.Size,
		Iterations: cfg.Iters, QPs: cfg.QPs, Threads: cfg.Threads, Window: cfg.Window,
		MsgRateMpps: rate, BWAvgGbps: rate * float64(cfg.Size) * 8 / 1e3}, nil
}

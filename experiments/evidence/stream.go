package evidence

import (
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// This file runs the baselines' endpoint designs (algos.Baselines: TCP
// over IPoIB, MPI) between two simulated nodes the way iperf, osu_bw and
// IMB PingPong run them: a one-directional stream of fixed-size messages
// from node 0 to node 1 on one or more threads, or one message bouncing
// between the two. The designs run exactly as a shuffle runs them (their
// default costs, buffers and credit); only the traffic pattern differs.

// streamConfig is one run of a baseline design between two nodes.
type streamConfig struct {
	Design   algos.Design
	Streams  int // sending threads on node 0 (iperf -P, osu_bw's one rank)
	Bytes    int // payload bytes per message (iperf -l, the OSU/IMB size)
	Messages int // messages per stream (per direction for a ping-pong)
	// Window, when positive, opens the MPI design with non-blocking sends
	// (algos.OpenMPINonblocking): up to Window messages in flight per
	// stream, as osu_bw and mt-p2p-msgrate keep. MPI only.
	Window int
	// Both makes the stream bidirectional (osu_bibw): node 1's threads
	// send to node 0 as node 0's send to node 1, and the rate is the sum
	// of both directions.
	Both bool
	// Wait is how the MPI design's threads wait in the library: the
	// zero value polls without letting the lock go (MPI_THREAD_SINGLE,
	// as osu_bw and IMB run), algos.MPICHWait for MPICH's
	// MPI_THREAD_MULTIPLE. MPI only.
	Wait algos.MPIWait
	// MPI and IPoIB, when set, replace the designs' default software
	// costs (Software); MPI's Wait is Wait's whatever they say.
	MPI   *algos.MPICosts
	IPoIB *algos.IPoIBCosts
}

// Endpoint settings of these runs: those of `explore run` without flags
// (experiments.DefaultConfig: two buffers per destination, credit every
// two), a generous timeout.
const (
	streamBuffers     = 2
	streamCreditEvery = 2
	streamTimeout     = fabric.Second
)

// msgBytes is the endpoint's message size for b payload bytes: the
// header plus the payload, at least a header and one tuple (the smallest
// message an endpoint accepts; the payload sent stays b).
func msgBytes(b int) int { return max(b, algos.TupleBytes) + algos.HeaderBytes }

// baseline returns the baseline design called name.
func baseline(name string) (algos.Design, error) {
	for _, d := range algos.Baselines() {
		if d.Name == name {
			return d, nil
		}
	}
	return algos.Design{}, fmt.Errorf("evidence: no baseline design %q", name)
}

// openStream opens the endpoints of cfg on th's node: one shared by every
// stream for a shared design, else one per stream. Both nodes open the
// same endpoints.
func openStream(th fabric.Thread, cfg streamConfig) ([]algos.Endpoint, error) {
	n := cfg.Streams
	ec := algos.Config{Nodes: 2, MsgBytes: msgBytes(cfg.Bytes), Buffers: streamBuffers, CreditEvery: streamCreditEvery, Timeout: streamTimeout,
		MPI: cfg.MPI, IPoIB: cfg.IPoIB}
	if cfg.Design.Shared {
		n, ec.Threads = 1, cfg.Streams
	}
	open := cfg.Design.Open
	if cfg.Design.Name == algos.NameMPI {
		costs := algos.DefaultMPICosts
		if cfg.MPI != nil {
			costs = *cfg.MPI
		}
		costs.Wait = cfg.Wait
		open = func(th fabric.Thread, c algos.Config) (algos.Endpoint, error) {
			if cfg.Window > 0 {
				return algos.OpenMPINonblocking(th, c, costs, cfg.Window)
			}
			return algos.OpenMPI(th, c, costs)
		}
	} else if cfg.Window > 0 || cfg.Wait != (algos.MPIWait{}) {
		return nil, fmt.Errorf("evidence: a window of non-blocking sends and a library wait are for the MPI design only, not %s", cfg.Design.Name)
	}
	eps := make([]algos.Endpoint, n)
	for k := range eps {
		ec.Tag = k
		ep, err := open(th, ec)
		if err != nil {
			for _, e := range eps[:k] {
				e.Close(th)
			}
			return nil, err
		}
		eps[k] = ep
	}
	return eps, nil
}

// closeStream closes eps, returning the first error.
func closeStream(th fabric.Thread, eps []algos.Endpoint) error {
	var first error
	for _, ep := range eps {
		if err := ep.Close(th); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// send sends one message of cfg.Bytes on ep to dest.
func send(th fabric.Thread, ep algos.Endpoint, bytes, dest int) error {
	b, err := ep.Acquire(th)
	if err != nil {
		return err
	}
	b.N, b.Tuples = bytes, uint64(bytes/algos.TupleBytes)
	return ep.PutData(th, b, []int{dest}, algos.MoreData)
}

// runStream runs cfg as a one-directional stream: on node 0, cfg.Streams
// threads each send cfg.Messages messages to node 1; node 1's as many
// receiving threads take them (and, with cfg.Both, the same the other
// way). Both nodes then end their streams (the endpoints expect every node
// to end its stream to every node). It returns the goodput, payload bytes
// over the time from the start barrier to the last data message taken (on
// either node with cfg.Both), in bytes per second.
func runStream(f fabric.Fabric, cfg streamConfig) (float64, error) {
	if f.Size() != 2 || cfg.Streams < 1 || cfg.Bytes < 1 || cfg.Messages < 1 {
		return 0, fmt.Errorf("evidence: stream: bad configuration %+v on %d nodes", cfg, f.Size())
	}
	directions := 1
	if cfg.Both {
		directions = 2
	}
	var start, stop [2]fabric.Time // per node: the start barrier and its last data message taken
	err := f.Run(func(th fabric.Thread) error {
		eps, err := openStream(th, cfg)
		if err != nil {
			return err
		}
		me := th.Node().ID()
		if err := th.Node().OOB().Barrier("stream-start"); err != nil {
			closeStream(th, eps)
			return err
		}
		start[me] = th.Now()
		var last fabric.Time
		var took, senders int
		mu := th.Node().NewMutex()
		sent := th.Node().NewSignal()
		ep := func(k int) algos.Endpoint { return eps[min(k, len(eps)-1)] }
		step := algos.Step{Name: "stream-", Threads: cfg.Streams, Shared: cfg.Design.Shared, Lock: mu}
		step.Send = func(st fabric.Thread, k int, lastSender func() bool) error {
			for i := 0; (me == 0 || cfg.Both) && i < cfg.Messages; i++ {
				if err := send(st, ep(k), cfg.Bytes, 1-me); err != nil {
					return err
				}
			}
			mu.Lock()
			senders++
			mu.Unlock()
			sent.Notify()
			if lastSender != nil && !lastSender() {
				return nil
			}
			return end(st, ep(k))
		}
		step.Receive = func(rt fabric.Thread, k int) error {
			// As in iperf, osu_bw and mt-p2p-msgrate, node 0 only sends
			// while the stream runs: its receiving threads, which take
			// the ends of the streams, enter the library afterwards.
			for me == 0 && !cfg.Both {
				mu.Lock()
				all := senders == cfg.Streams
				mu.Unlock()
				if all {
					break
				}
				rt.Wait(fabric.Forever, sent)
			}
			t, n, err := drain(rt, ep(k))
			mu.Lock()
			last, took = max(last, t), took+n
			mu.Unlock()
			return err
		}
		if err := step.Run(th); err != nil {
			closeStream(th, eps)
			return err
		}
		if me == 1 || cfg.Both {
			if want := cfg.Streams * cfg.Messages; last <= start[me] || took != want {
				closeStream(th, eps)
				return fmt.Errorf("evidence: stream: node %d took %d data messages of %d", me, took, want)
			}
			stop[me] = last
		}
		return closeStream(th, eps)
	})
	if err != nil {
		return 0, err
	}
	return float64(directions*cfg.Streams*cfg.Messages*cfg.Bytes) / max(stop[0], stop[1]).Sub(start[1]).Seconds(), nil
}

// end ends th's stream on ep to both nodes with an empty buffer.
func end(th fabric.Thread, ep algos.Endpoint) error {
	b, err := ep.Acquire(th)
	if err != nil {
		return err
	}
	return ep.PutData(th, b, []int{0, 1}, algos.Depleted)
}

// drain takes deliveries on ep until every source has ended and returns
// the time the last data message was taken (zero if none was) and how many
// data messages it took.
func drain(th fabric.Thread, ep algos.Endpoint) (fabric.Time, int, error) {
	var last fabric.Time
	var n int
	for {
		d, err := ep.GetData(th)
		if err != nil || d.End {
			return last, n, err
		}
		if d.N > 0 {
			last = th.Now()
			n++
		}
		if err := ep.Release(th, d); err != nil {
			return last, n, err
		}
	}
}

// runPingPong runs cfg as IMB PingPong: node 0 sends a message of
// cfg.Bytes to node 1 and waits for node 1 to send it back, cfg.Messages
// times, on one thread per node. It returns half the mean round trip.
func runPingPong(f fabric.Fabric, cfg streamConfig) (fabric.Duration, error) {
	if f.Size() != 2 || cfg.Streams != 1 || cfg.Bytes < 1 || cfg.Messages < 1 {
		return 0, fmt.Errorf("evidence: ping-pong: bad configuration %+v on %d nodes", cfg, f.Size())
	}
	var half fabric.Duration
	err := f.Run(func(th fabric.Thread) error {
		eps, err := openStream(th, cfg)
		if err != nil {
			return err
		}
		ep, me := eps[0], th.Node().ID()
		if err := th.Node().OOB().Barrier("pingpong-start"); err != nil {
			closeStream(th, eps)
			return err
		}
		start := th.Now()
		for i := 0; i < cfg.Messages && err == nil; i++ {
			if me == 0 {
				if err = send(th, ep, cfg.Bytes, 1); err == nil {
					err = take(th, ep)
				}
			} else if err = take(th, ep); err == nil {
				err = send(th, ep, cfg.Bytes, 0)
			}
		}
		if me == 0 {
			half = th.Now().Sub(start) / fabric.Duration(2*cfg.Messages)
		}
		if err == nil {
			err = end(th, ep)
		}
		if err == nil {
			_, _, err = drain(th, ep)
		}
		if err != nil {
			closeStream(th, eps)
			return err
		}
		return closeStream(th, eps)
	})
	return half, err
}

// take takes one data message on ep and releases it.
func take(th fabric.Thread, ep algos.Endpoint) error {
	d, err := ep.GetData(th)
	if err != nil {
		return err
	}
	if d.End || d.N == 0 {
		return fmt.Errorf("evidence: ping-pong: node %d: stream ended early", th.Node().ID())
	}
	return ep.Release(th, d)
}

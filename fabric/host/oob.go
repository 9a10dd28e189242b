package host

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// oobChannel is a node's out-of-band channel with the controls the
// environment needs around it.
type oobChannel interface {
	fabric.OOB
	// abort makes every pending and later call fail with err (the run
	// failed somewhere); in a distributed job it tells the other nodes.
	abort(err error)
	// newRun prepares for a Run after a successful one.
	newRun()
	close() error
}

// localHub is the out-of-band channel of the nodes of one process
// (OpenLocal): calls are matched by their position in each node's sequence
// of calls, as in the simulator, and must use the same key.
type localHub struct {
	mu      sync.Mutex
	cond    *sync.Cond
	nodes   int
	timeout time.Duration
	rounds  map[int]*localRound
	calls   []int // per node: calls made this run
	err     error // set by abort
	closed  bool
}

type localRound struct {
	key     string
	barrier bool
	first   int // node that opened the round
	data    [][]byte
	from    []bool
	arrived int
	read    int
	failed  error
}

func newLocalHub(nodes int, timeout time.Duration) *localHub {
	h := &localHub{nodes: nodes, timeout: timeout, rounds: map[int]*localRound{}, calls: make([]int, nodes)}
	h.cond = sync.NewCond(&h.mu)
	return h
}

// view is node id's side of the hub.
func (h *localHub) view(id int) oobChannel { return &localOOB{h: h, id: id} }

type localOOB struct {
	h  *localHub
	id int
}

func (o *localOOB) AllGather(key string, data []byte) ([][]byte, error) {
	return o.h.gather(o.id, key, data, false)
}

func (o *localOOB) Barrier(key string) error {
	_, err := o.h.gather(o.id, key, nil, true)
	return err
}

func (o *localOOB) abort(err error) { o.h.abort(err) }
func (o *localOOB) newRun()         { o.h.newRun() }
func (o *localOOB) close() error {
	o.h.mu.Lock()
	o.h.closed = true
	o.h.mu.Unlock()
	o.h.abort(fmt.Errorf("%w: out-of-band channel closed", fabric.ErrClosed))
	return nil
}

func (h *localHub) abort(err error) {
	h.mu.Lock()
	if h.err == nil {
		h.err = err
	}
	h.mu.Unlock()
	h.cond.Broadcast()
}

func (h *localHub) newRun() {
	h.mu.Lock()
	defer h.mu.Unlock()
	// Like the simulator: calls are matched by position within a run, so
	// every run starts the sequence afresh; a failed run's error is
	// forgotten (unless the hub was closed).
	h.rounds = map[int]*localRound{}
	clear(h.calls)
	if !h.closed {
		h.err = nil
	}
}

func opName(barrier bool, key string) string {
	if barrier {
		return fmt.Sprintf("Barrier(%q)", key)
	}
	return fmt.Sprintf("AllGather(%q)", key)
}

func (h *localHub) gather(id int, key string, data []byte, barrier bool) ([][]byte, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err != nil {
		return nil, fmt.Errorf("host: out-of-band %s on node %d: %w", opName(barrier, key), id, h.err)
	}
	pos := h.calls[id]
	h.calls[id]++
	r := h.rounds[pos]
	if r == nil {
		r = &localRound{key: key, barrier: barrier, first: id, data: make([][]byte, h.nodes), from: make([]bool, h.nodes)}
		h.rounds[pos] = r
	}
	if r.key != key || r.barrier != barrier {
		err := fmt.Errorf("host: out-of-band call %d: node %d calls %s but node %d called %s (nodes must make the same calls in the same order)",
			pos, id, opName(barrier, key), r.first, opName(r.barrier, r.key))
		if h.err == nil {
			h.err = err
		}
		h.cond.Broadcast()
		return nil, err
	}
	if len(data) > 0 {
		r.data[id] = append([]byte(nil), data...)
	}
	r.from[id] = true
	r.arrived++
	if r.arrived == h.nodes {
		h.cond.Broadcast()
	}
	deadline := time.Now().Add(h.timeout)
	timer := time.AfterFunc(h.timeout, func() { h.mu.Lock(); h.cond.Broadcast(); h.mu.Unlock() })
	defer timer.Stop()
	for r.arrived < h.nodes && h.err == nil && r.failed == nil {
		if !time.Now().Before(deadline) {
			var missing []string
			for i, ok := range r.from {
				if !ok {
					missing = append(missing, fmt.Sprint(i))
				}
			}
			sort.Strings(missing)
			r.failed = fmt.Errorf("host: out-of-band %s: node(s) %s did not reach it within %v", opName(barrier, key), strings.Join(missing, ", "), h.timeout)
			if h.err == nil {
				h.err = r.failed
			}
			h.cond.Broadcast()
			break
		}
		h.cond.Wait()
	}
	if r.arrived < h.nodes {
		if r.failed != nil {
			return nil, r.failed
		}
		return nil, fmt.Errorf("host: out-of-band %s on node %d: %w", opName(barrier, key), id, h.err)
	}
	var out [][]byte
	if !barrier {
		out = make([][]byte, h.nodes)
		for i, d := range r.data {
			if d != nil {
				out[i] = d[:len(d):len(d)] // shared, read-only (fabric.OOB)
			}
		}
	}
	if r.read++; r.read == h.nodes {
		delete(h.rounds, pos)
	}
	return out, nil
}

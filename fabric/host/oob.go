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
	kind    opKind
	first   int                // node that opened the round
	data    [][]byte           // AllGather: each node's contribution
	rows    []fabric.PackedRow // Exchange: what each node gives each node
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
	return o.h.join(o.id, key, opGather, data, nil)
}

// Exchange implements fabric.OOB: each node's slices are copied once, into
// one allocation, and each node is handed the ones addressed to it.
func (o *localOOB) Exchange(key string, out [][]byte) ([][]byte, error) {
	if len(out) != o.h.nodes {
		return nil, fmt.Errorf("%w: host: out-of-band %s on node %d with %d slices for %d nodes", fabric.ErrInvalidArg, opName(opExchange, key), o.id, len(out), o.h.nodes)
	}
	return o.h.join(o.id, key, opExchange, nil, out)
}

func (o *localOOB) Barrier(key string) error {
	_, err := o.h.join(o.id, key, opBarrier, nil, nil)
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

// opKind is which out-of-band call a round is.
type opKind uint8

const (
	opGather opKind = iota
	opBarrier
	opExchange
)

func opName(kind opKind, key string) string {
	switch kind {
	case opBarrier:
		return fmt.Sprintf("Barrier(%q)", key)
	case opExchange:
		return fmt.Sprintf("Exchange(%q)", key)
	}
	return fmt.Sprintf("AllGather(%q)", key)
}

// copyRow copies out into one allocation, each slice capped at its
// length (nil when empty).
func copyRow(out [][]byte) [][]byte {
	p := fabric.PackRow(out)
	row := make([][]byte, len(out))
	for j := range row {
		row[j] = p.Entry(j)
	}
	return row
}

// join is every call of node id: it contributes data (AllGather) or out
// (Exchange), waits for every node and takes its result.
func (h *localHub) join(id int, key string, kind opKind, data []byte, out [][]byte) ([][]byte, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.err != nil {
		return nil, fmt.Errorf("host: out-of-band %s on node %d: %w", opName(kind, key), id, h.err)
	}
	pos := h.calls[id]
	h.calls[id]++
	r := h.rounds[pos]
	if r == nil {
		r = &localRound{key: key, kind: kind, first: id, from: make([]bool, h.nodes)}
		switch kind {
		case opGather:
			r.data = make([][]byte, h.nodes)
		case opExchange:
			r.rows = make([]fabric.PackedRow, h.nodes)
		}
		h.rounds[pos] = r
	}
	if r.key != key || r.kind != kind {
		err := fmt.Errorf("host: out-of-band call %d: node %d calls %s but node %d called %s (nodes must make the same calls in the same order)",
			pos, id, opName(kind, key), r.first, opName(r.kind, r.key))
		if h.err == nil {
			h.err = err
		}
		h.cond.Broadcast()
		return nil, err
	}
	switch {
	case kind == opGather && len(data) > 0:
		r.data[id] = append([]byte(nil), data...)
	case kind == opExchange:
		r.rows[id] = fabric.PackRow(out)
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
			r.failed = fmt.Errorf("host: out-of-band %s: node(s) %s did not reach it within %v", opName(kind, key), strings.Join(missing, ", "), h.timeout)
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
		return nil, fmt.Errorf("host: out-of-band %s on node %d: %w", opName(kind, key), id, h.err)
	}
	var res [][]byte
	switch kind {
	case opGather:
		res = make([][]byte, h.nodes)
		for i, d := range r.data {
			if d != nil {
				res[i] = d[:len(d):len(d)] // shared, read-only (fabric.OOB)
			}
		}
	case opExchange:
		res = make([][]byte, h.nodes)
		for i, row := range r.rows {
			res[i] = row.Entry(id) // this node's alone
		}
	}
	if r.read++; r.read == h.nodes {
		delete(h.rounds, pos)
	}
	return res, nil
}

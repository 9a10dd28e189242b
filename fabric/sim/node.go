package sim

import (
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// node is a simulated host: cores, one NIC (the device) and its OOB
// endpoint.
type node struct {
	c        *Cluster
	id       int
	nic      *nic
	dev      *device
	oobCalls int
	crashAt  fabric.Time // when a fault plan crashes the node (Forever: never)
}

var _ fabric.Node = (*node)(nil)

func newNode(c *Cluster, id int) *node {
	n := &node{c: c, id: id, crashAt: fabric.Forever}
	n.nic = newNIC(c, n)
	n.dev = &device{c: c, n: n}
	return n
}

func (n *node) ID() int                { return n.id }
func (n *node) Cores() int             { return n.c.prof.Host.Cores }
func (n *node) Device() fabric.Device  { return n.dev }
func (n *node) OOB() fabric.OOB        { return (*oob)(n) }
func (n *node) NewMutex() fabric.Mutex { return &mutex{c: n.c} }

// NewSleepingMutex implements fabric.Node: a futex-based lock (futex.go).
func (n *node) NewSleepingMutex() fabric.Mutex { return &futexMutex{c: n.c} }
func (n *node) NewSignal() fabric.Signal {
	return &signalObj{sigbase{c: n.c}}
}
func (n *node) Payload() bool { return !n.c.cfg.SizeOnly }

func (n *node) close() {
	for _, q := range n.nic.qps {
		if q != nil {
			q.destroyed = true
		}
	}
}

func lidOf(node int) uint16 { return uint16(node + 1) }

func gidOf(node int) fabric.GID {
	var g fabric.GID
	g[0], g[1] = 0xfe, 0x80
	g[14], g[15] = byte(node>>8), byte(node)
	return g
}

// resolve maps an address to a node id.
func (c *Cluster) resolve(a fabric.Address) (int, error) {
	if a.SL > fabric.MaxSL {
		return 0, fmt.Errorf("%w: service level %d (0..15)", fabric.ErrInvalidArg, a.SL)
	}
	if a.UseGID {
		for i := range c.nodes {
			if gidOf(i) == a.GID {
				return i, nil
			}
		}
		return 0, fmt.Errorf("%w: no port with GID %x in this %d-node cluster", fabric.ErrInvalidArg, a.GID, len(c.nodes))
	}
	if a.LID == 0 || int(a.LID) > len(c.nodes) {
		return 0, fmt.Errorf("%w: no port with LID %d (LIDs are 1..%d)", fabric.ErrInvalidArg, a.LID, len(c.nodes))
	}
	return int(a.LID) - 1, nil
}

// oob implements fabric.OOB for a node: an all-gather, personalised
// exchange or barrier among the nodes whose cost is one out-of-band round
// trip after the last contribution, whatever it carries.
type oob node

// oobKind is which call a round is.
type oobKind uint8

const (
	oobGather oobKind = iota
	oobBarrier
	oobExchange
)

func (k oobKind) call(key string) string {
	switch k {
	case oobBarrier:
		return fmt.Sprintf("Barrier(%q)", key)
	case oobExchange:
		return fmt.Sprintf("Exchange(%q)", key)
	}
	return fmt.Sprintf("AllGather(%q)", key)
}

type oobRound struct {
	key     string
	kind    oobKind
	data    [][]byte           // AllGather: per node, its contribution
	rows    []fabric.PackedRow // Exchange: per node, what it gives each node
	from    []bool
	arrived int
	read    int // nodes that have taken their result
	waiters []*thread
	ready   fabric.Time
	done    bool
}

type oobState struct{ rounds []*oobRound }

func (o *oob) AllGather(key string, data []byte) ([][]byte, error) {
	return o.join(key, oobGather, data, nil)
}

// Exchange implements fabric.OOB: each node's slices are copied once, into
// one allocation, and every node is handed the ones addressed to it.
func (o *oob) Exchange(key string, out [][]byte) ([][]byte, error) {
	n := (*node)(o)
	if len(out) != len(n.c.nodes) {
		return nil, fmt.Errorf("%w: sim: OOB.Exchange(%q) on node %d with %d slices for %d nodes", fabric.ErrInvalidArg, key, n.id, len(out), len(n.c.nodes))
	}
	return o.join(key, oobExchange, nil, out)
}

func (o *oob) Barrier(key string) error {
	_, err := o.join(key, oobBarrier, nil, nil)
	return err
}

// join is every call: node n contributes data (AllGather) or out
// (Exchange), waits for every node and takes its result; a Barrier takes
// no copy of anything.
func (o *oob) join(key string, kind oobKind, data []byte, out [][]byte) ([][]byte, error) {
	n := (*node)(o)
	c := n.c
	th := c.cur
	if th == nil || th.node != n {
		return nil, fmt.Errorf("sim: OOB.%s must be called from a thread of node %d", kind.call(key), n.id)
	}
	th.syncTo(th.local)
	r := n.oobCalls
	n.oobCalls++
	for len(c.oob.rounds) <= r {
		c.oob.rounds = append(c.oob.rounds, nil)
	}
	round := c.oob.rounds[r]
	if round == nil {
		round = &oobRound{key: key, kind: kind, from: make([]bool, len(c.nodes))}
		switch kind {
		case oobGather:
			round.data = make([][]byte, len(c.nodes))
		case oobExchange:
			round.rows = make([]fabric.PackedRow, len(c.nodes))
		}
		c.oob.rounds[r] = round
	}
	if round.key != key || round.kind != kind {
		return nil, fmt.Errorf("sim: out-of-band call %d: node %d calls %s but another node called %s (nodes must make the same calls in the same order)",
			r, n.id, kind.call(key), round.kind.call(round.key))
	}
	switch {
	case kind == oobGather && len(data) > 0:
		round.data[n.id] = append([]byte(nil), data...) // the caller keeps data
	case kind == oobExchange:
		round.rows[n.id] = fabric.PackRow(out)
	}
	round.from[n.id] = true
	round.arrived++
	if round.arrived == len(c.nodes) {
		round.done = true
		round.ready = c.now.Add(ns(c.prof.OOB.RTTUS * 1000))
		for _, w := range round.waiters {
			w.wakeAt(round.ready)
		}
		th.wakeAt(round.ready)
	} else {
		round.waiters = append(round.waiters, th)
		if at := c.oobCrash(round); at != fabric.Forever {
			th.wakeAt(max(at, c.now)) // a crashed node closes its connections
		}
	}
	for {
		th.park(fmt.Sprintf("out-of-band exchange %q", key))
		if round.done && c.now >= round.ready {
			break
		}
		if round.done { // woken for a crash after all had arrived
			th.wakeAt(round.ready)
			continue
		}
		return nil, fmt.Errorf("sim: out-of-band exchange %q: node %d crashed before taking part (its connections closed; fault plan)",
			key, c.oobCrashed(round))
	}
	res := round.result(n.id)
	if round.read++; round.read == len(round.from) {
		round.data, round.rows = nil, nil // every node has its result
	}
	return res, nil
}

// result is node me's result of a finished round.
func (round *oobRound) result(me int) [][]byte {
	var out [][]byte
	switch round.kind {
	case oobGather:
		// Every node gets the stored contributions themselves (read-only
		// by the contract), each capped so that an append by the caller
		// cannot spill into shared memory: one copy per contribution, not
		// one per node and contribution.
		out = make([][]byte, len(round.data))
		for i, d := range round.data {
			if len(d) > 0 {
				out[i] = d[:len(d):len(d)]
			}
		}
	case oobExchange:
		out = make([][]byte, len(round.rows))
		for i, row := range round.rows {
			out[i] = row.Entry(me)
		}
	}
	return out
}

// oobCrash is the earliest time a node missing from round crashes.
func (c *Cluster) oobCrash(round *oobRound) fabric.Time {
	at := fabric.Forever
	if c.inj == nil {
		return at
	}
	for i, n := range c.nodes {
		if !round.from[i] {
			at = min(at, n.crashAt)
		}
	}
	return at
}

// oobCrashed names a node missing from round that has crashed.
func (c *Cluster) oobCrashed(round *oobRound) int {
	for i, n := range c.nodes {
		if !round.from[i] && c.now >= n.crashAt {
			return i
		}
	}
	return -1
}

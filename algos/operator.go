package algos

import (
	"encoding/binary"
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// vector is how many tuples the SHUFFLE operator takes from its input per
// step (vector-at-a-time processing); CPU cost is charged per vector.
const vector = 1024

// ShuffleInput is what one thread of the SHUFFLE operator sends: tuples
// [From, To) of its node's fragment: of Src when set, of Rel otherwise.
type ShuffleInput struct {
	Rel      Relation
	Src      Source
	From, To int64
}

// Source is any tuple input of the SHUFFLE operator (Relation is one): it
// writes tuples [from, from+len(vec)/TupleBytes) into vec, 16 bytes each
// (key a, then payload b, little-endian), as a scan would produce them.
type Source interface {
	FillVector(vec []byte, from int64)
}

// Shuffle runs the SHUFFLE operator (Liu17 Algorithm 1) for one thread:
// it hashes every input tuple to its transmission group, appends it to
// that group's output buffer, sends full buffers, and at the end flushes
// every partly filled buffer. The end of stream goes to every receiver:
// with an endpoint per thread (last == nil) every thread's final buffers
// carry it; with a shared endpoint, last reports whether the calling thread
// is the last to have flushed (it is called once, after the flush), and
// that thread alone ends every stream. It returns what it sent to each
// node.
func Shuffle(th fabric.Thread, ep Endpoint, in ShuffleInput, g Groups, last func() bool) ([]Tally, error) {
	payload := th.Node().Payload()
	out := make([]*Buffer, g.Len())
	for i := range out {
		b, err := ep.Acquire(th)
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	nodes := 0
	for i := 0; i < g.Len(); i++ {
		for _, m := range g.Members(i) {
			nodes = max(nodes, m+1)
		}
	}
	sent := make([]Tally, nodes)
	account := func(b *Buffer, grp int) {
		for _, m := range g.Members(grp) {
			sent[m].Add(Tally{b.Tuples, b.Sum})
		}
	}
	part := Partitioner{Groups: g, Out: out, Payload: payload, Checksum: true}
	vec := make([]byte, vector*TupleBytes)
	var src Source = in.Rel
	if in.Src != nil {
		src = in.Src
	}
	// In size-only mode the synthetic relation's tuples need not exist as
	// bytes: ScatterRelation computes them as it partitions them (the same
	// buffers, stops and checksums; the same CPU work is charged).
	generate := !payload && in.Src == nil
	for j := in.From; j < in.To; {
		k := min(int64(vector), in.To-j)
		if !generate {
			src.FillVector(vec[:k*TupleBytes], j)
		}
		th.Charge(fabric.WorkHashTuple, int(k))
		th.Charge(fabric.WorkCopy, int(k)*TupleBytes)
		for i := 0; ; {
			var next, grp int
			if generate {
				next, grp = part.ScatterRelation(in.Rel, j, int(k), i)
			} else {
				next, grp = part.Scatter(vec[:k*TupleBytes], i)
			}
			if grp < 0 {
				break
			}
			b := out[grp]
			account(b, grp)
			if err := ep.PutData(th, b, g.Members(grp), MoreData); err != nil {
				return nil, err
			}
			nb, err := ep.Acquire(th)
			if err != nil {
				return nil, err
			}
			out[grp] = nb
			i = next
		}
		j += k
	}
	// When groups overlap (multicast), a node's stream ends only after its
	// last group's buffer, so the streams end with separate empty buffers,
	// one per node.
	overlap := g.Overlapping()
	st := Depleted
	if last != nil || overlap {
		st = MoreData // the streams end below, once per node
	}
	from := 0
	if f, ok := ep.(flushStarter); ok {
		from = f.flushFrom(len(out))
	}
	for k := range out {
		grp := (from + k) % len(out)
		b := out[grp]
		account(b, grp)
		if err := ep.PutData(th, b, g.Members(grp), st); err != nil {
			return nil, err
		}
	}
	// With a shared endpoint, the thread that finishes its flush last ends
	// every stream with an empty Depleted buffer: only then are all the
	// other threads' buffers already posted ahead of it.
	if last == nil && !overlap || last != nil && !last() {
		return sent, nil
	}
	ends := make([][]int, 0, nodes)
	if overlap {
		for d := 0; d < nodes; d++ {
			ends = append(ends, []int{d})
		}
	} else {
		for grp := 0; grp < g.Len(); grp++ {
			ends = append(ends, g.Members(grp))
		}
	}
	for _, dests := range ends {
		b, err := ep.Acquire(th)
		if err != nil {
			return nil, err
		}
		if err := ep.PutData(th, b, dests, Depleted); err != nil {
			return nil, err
		}
	}
	return sent, nil
}

// ReceiveStats is what one thread of the RECEIVE operator saw.
type ReceiveStats struct {
	From    []Tally // per source node
	Corrupt int     // buffers whose payload did not match their header
}

// Receive runs the RECEIVE operator (Liu17 Algorithm 2) for one thread:
// it takes every buffer the endpoint delivers, copies the tuples out,
// releases the buffer at once, and then spends cyclesPerTuple of
// processing on each tuple (the receiving fragment's work). In payload
// mode it recomputes every buffer's checksum from its tuples.
func Receive(th fabric.Thread, ep Endpoint, nodes int, cyclesPerTuple int64) (ReceiveStats, error) {
	return ReceiveFunc(th, ep, nodes, cyclesPerTuple, nil)
}

// ReceiveFunc is Receive that also hands every buffer's tuples to consume
// (when not nil), after the integrity check and before the per-tuple
// cycles are spent: tuples holds the copied-out payload in payload mode
// and is nil in size-only mode, n is the buffer's tuple count from its
// header. consume runs on the receiving thread; tuples is reused after it
// returns.
func ReceiveFunc(th fabric.Thread, ep Endpoint, nodes int, cyclesPerTuple int64, consume func(tuples []byte, n uint64)) (ReceiveStats, error) {
	st := ReceiveStats{From: make([]Tally, nodes)}
	payload := th.Node().Payload()
	var scratch []byte
	for {
		d, err := ep.GetData(th)
		if err != nil {
			return st, err
		}
		if d.End {
			return st, nil
		}
		if d.Src < 0 || d.Src >= nodes {
			return st, fmt.Errorf("%w: source node %d in a %d-node cluster", ErrBadMessage, d.Src, nodes)
		}
		th.Charge(fabric.WorkCopy, d.N)
		if payload {
			scratch = append(scratch[:0], d.Data[:d.N]...)
		}
		tuples, sum := d.Tuples, d.Sum
		if err := ep.Release(th, d); err != nil {
			return st, err
		}
		if payload {
			var s uint64
			for i := 0; i+TupleBytes <= len(scratch); i += TupleBytes {
				s += TupleSum(binary.LittleEndian.Uint64(scratch[i:]), binary.LittleEndian.Uint64(scratch[i+8:]))
			}
			if s != sum || uint64(len(scratch)/TupleBytes) != tuples {
				st.Corrupt++
			}
		}
		st.From[d.Src].Add(Tally{tuples, sum})
		if consume != nil {
			if payload {
				consume(scratch, tuples)
			} else {
				consume(nil, tuples)
			}
		}
		th.Compute(cyclesPerTuple * int64(tuples))
	}
}

// flushStarter is an endpoint that has the final flush of Shuffle start
// at a group of its choosing (and go round from there) instead of the
// first: the DC designs, whose initiators reach a few targets at a time
// (mqdc.go).
type flushStarter interface {
	flushFrom(groups int) int
}

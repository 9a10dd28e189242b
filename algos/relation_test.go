package algos

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"
)

func crc(b []byte) uint64 { return uint64(crc32.ChecksumIEEE(b)) }

// relationCase is one shape of input for TestScatterRelationMatchesScatter.
type relationCase struct {
	pattern  Pattern
	nodes    int
	rel      Relation
	bufBytes int   // capacity of each output buffer (need not be whole tuples)
	preN     int   // tuples already in each buffer at the start
	shared   bool  // group 0's buffer is also group 1's
	vectors  []int // tuples per vector, taken from the relation in order
	start    int   // tuple index of the first call on each vector
}

// runRelation drives step over c's vectors as the SHUFFLE operator does
// and records every stop (and the buffer stopped on) and the buffers at the
// end; on a stop it empties the full buffer or puts a fresh one in its
// place, alternately.
func runRelation(t *testing.T, c relationCase, payload, checksum bool, step func(p *Partitioner, from int64, n, i int) (int, int)) []string {
	t.Helper()
	g, err := NewGroups(c.pattern, c.nodes)
	if err != nil {
		t.Fatal(err)
	}
	fresh := func(k uint64) *Buffer {
		b := &Buffer{Data: make([]byte, c.bufBytes)}
		b.N = min(c.preN*TupleBytes, len(b.Data)/TupleBytes*TupleBytes)
		b.Tuples, b.Sum = uint64(b.N/TupleBytes), mix(k)
		return b
	}
	out := make([]*Buffer, g.Len())
	for d := range out {
		out[d] = fresh(uint64(d))
	}
	if c.shared && len(out) > 1 {
		out[1] = out[0]
	}
	p := &Partitioner{Groups: g, Out: out, Payload: payload, Checksum: checksum}
	var log []string
	from := int64(0)
	for v, n := range c.vectors {
		for i := c.start; ; {
			next, full := step(p, from, n, i)
			if full < 0 {
				log = append(log, fmt.Sprintf("vector %d: done at %d", v, next))
				break
			}
			b := out[full]
			log = append(log, fmt.Sprintf("vector %d: stop at %d group %d: N %d tuples %d sum %x data %x", v, next, full, b.N, b.Tuples, b.Sum, crc(b.Data)))
			if len(log) > 100000 || next < i {
				t.Fatalf("runaway scatter at vector %d tuple %d", v, next)
			}
			if len(b.Data) < TupleBytes {
				break // a buffer that can never take a tuple: next vector
			}
			if len(log)%2 == 0 || c.shared {
				b.N, b.Tuples, b.Sum = 0, 0, 0
			} else {
				out[full] = fresh(uint64(len(log)) << 8)
			}
			i = next
		}
		from += int64(n)
	}
	for d, b := range out {
		log = append(log, fmt.Sprintf("end: group %d: N %d tuples %d sum %x data %x", d, b.N, b.Tuples, b.Sum, crc(b.Data)))
	}
	return log
}

// refRelation is the specification ScatterRelation must match: Scatter's
// (refScatter) over r.Tuple(from+i), ..., r.Tuple(from+n-1), with TupleSum
// checksums in payload mode and KeySum's in size-only mode.
func refRelation(p *Partitioner, r Relation, from int64, n, i int) (next, full int) {
	sumOf := KeySum
	if p.Payload {
		sumOf = TupleSum
	}
	for ; i < n; i++ {
		a, bv := r.Tuple(from + int64(i))
		g := int(uint32(a) % uint32(p.Groups.Len()))
		b := p.Out[g]
		if b.N+TupleBytes > len(b.Data) {
			return i, g
		}
		if p.Payload {
			binary.LittleEndian.PutUint64(b.Data[b.N:], a)
			binary.LittleEndian.PutUint64(b.Data[b.N+8:], bv)
		}
		b.N += TupleBytes
		b.Tuples++
		if p.Checksum {
			b.Sum += sumOf(a, bv)
		}
	}
	return n, -1
}

// TestScatterRelationMatchesScatter checks ScatterRelation against
// refRelation, stop by stop and byte by byte, in every mode (payload or
// size-only, with or without checksum), over group
// counts on both sides of the fast path's limits, buffers that fill
// mid-vector, odd vector lengths, nodes and seeds.
func TestScatterRelationMatchesScatter(t *testing.T) {
	odd := []int{1024, 1, 0, 1031, 3, 17, 1024, 555}
	full := []int{1024, 1024, 1024, 1024, 1024, 1024, 1024, 1024, 1024, 777}
	var cases []relationCase
	for nodes := 1; nodes <= 17; nodes++ {
		rel := Relation{Seed: uint64(nodes) * 77, Node: nodes - 1}
		cases = append(cases,
			relationCase{pattern: Repartition, nodes: nodes, rel: rel, bufBytes: 4096 - 40, vectors: full},
			relationCase{pattern: Repartition, nodes: nodes, rel: rel, bufBytes: 5 * TupleBytes, vectors: odd},
			relationCase{pattern: Repartition, nodes: nodes, rel: rel, bufBytes: 37*TupleBytes + 9, preN: 3, vectors: odd},
			relationCase{pattern: Repartition, nodes: nodes, rel: rel, bufBytes: 200 * TupleBytes, vectors: odd, start: 2},
		)
	}
	for _, nodes := range []int{31, 64, 255, 256, 257, 300} {
		rel := Relation{Seed: 5, Node: nodes}
		cases = append(cases,
			relationCase{pattern: Repartition, nodes: nodes, rel: rel, bufBytes: 3 * TupleBytes, vectors: odd},
			relationCase{pattern: Repartition, nodes: nodes, rel: rel, bufBytes: 64 << 10, vectors: odd},
		)
	}
	cases = append(cases,
		relationCase{pattern: Broadcast, nodes: 3, rel: Relation{Seed: 9, Node: 2}, bufBytes: 7 * TupleBytes, vectors: odd},
		relationCase{pattern: Multicast + ":2", nodes: 8, rel: Relation{Seed: 9, Node: 7}, bufBytes: 99 * TupleBytes, vectors: full},
		relationCase{pattern: Repartition, nodes: 4, rel: Relation{Seed: 1, Node: 3}, bufBytes: 9 * TupleBytes, shared: true, vectors: odd},
		relationCase{pattern: Repartition, nodes: 8, rel: Relation{Seed: 1}, bufBytes: 0, vectors: []int{0, 3, 1}},
		relationCase{pattern: Repartition, nodes: 8, rel: Relation{Seed: 1}, bufBytes: 64, vectors: []int{3}, start: 5},
	)
	for ci, c := range cases {
		for mode := 0; mode < 4; mode++ {
			payload, checksum := mode&1 != 0, mode&2 != 0
			name := fmt.Sprintf("%d:%s/%d/buf=%d/pre=%d/shared=%v/payload=%v/checksum=%v", ci, c.pattern, c.nodes, c.bufBytes, c.preN, c.shared, payload, checksum)
			want := runRelation(t, c, payload, checksum, func(p *Partitioner, from int64, n, i int) (int, int) {
				return refRelation(p, c.rel, from, n, i)
			})
			got := runRelation(t, c, payload, checksum, func(p *Partitioner, from int64, n, i int) (int, int) {
				return p.ScatterRelation(c.rel, from, n, i)
			})
			if len(got) != len(want) {
				t.Fatalf("%s: %d stops, want %d", name, len(got), len(want))
			}
			for k := range want {
				if got[k] != want[k] {
					t.Fatalf("%s: line %d:\n got %s\nwant %s", name, k, got[k], want[k])
				}
			}
		}
	}
}

package algos

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"testing"
)

func TestScatterMatchesTuples(t *testing.T) {
	g, _ := NewGroups(Repartition, 5)
	out := make([]*Buffer, 5)
	for i := range out {
		out[i] = &Buffer{Data: make([]byte, 64*TupleBytes)}
	}
	p := Partitioner{Groups: g, Out: out, Payload: true, Checksum: true}
	r := Relation{Seed: 3, Node: 1}
	vec := make([]byte, 100*TupleBytes)
	r.FillVector(vec, 0)
	var want [5]Tally
	for j := int64(0); j < 100; j++ {
		a, b := r.Tuple(j)
		want[g.Of(a)].Add(Tally{1, TupleSum(a, b)})
	}
	if next, full := p.Scatter(vec, 0); next != 100 || full != -1 {
		t.Fatalf("Scatter stopped at %d (group %d)", next, full)
	}
	for d := range out {
		if out[d].Tuples != want[d].Tuples || out[d].Sum != want[d].Sum || out[d].N != int(want[d].Tuples)*TupleBytes {
			t.Fatalf("group %d: %d tuples, sum %x; want %d, %x", d, out[d].Tuples, out[d].Sum, want[d].Tuples, want[d].Sum)
		}
	}
	// A full buffer stops the scatter before the tuple that does not fit.
	small := []*Buffer{{Data: make([]byte, 2*TupleBytes)}}
	b1, _ := NewGroups(Broadcast, 3)
	p = Partitioner{Groups: b1, Out: small}
	if next, full := p.Scatter(vec, 0); next != 2 || full != 0 {
		t.Fatalf("full buffer: stopped at %d (group %d), want 2 (0)", next, full)
	}
}

// TestDividerMatchesModulo checks Scatter's multiply-based remainder
// against % for every group count it handles, at the edges of the 32-bit
// range, near multiples of the divisor and on pseudo-random keys.
func TestDividerMatchesModulo(t *testing.T) {
	for d := 1; d <= maxFastGroups; d++ {
		dv := newDivider(d)
		check := func(x uint32) {
			if got, want := dv.of(x), uint8(x%uint32(d)); got != want {
				t.Fatalf("%d %% %d: got %d, want %d", x, d, got, want)
			}
		}
		top := ^uint32(0) / uint32(d) * uint32(d)
		for k := uint32(0); k < 3*uint32(d); k++ {
			check(k)
			check(^uint32(0) - k)
			check(top - k)
		}
		for k := uint64(0); k < 20000; k++ {
			check(uint32(mix(k ^ uint64(d)<<32)))
		}
	}
}

// refScatter is the specification Scatter must match: per tuple, group =
// low 32 bits of key a mod the number of groups; stop before a tuple whose
// group's buffer has no room; else append (payload mode), count, checksum.
func refScatter(p *Partitioner, vec []byte, i int) (next, full int) {
	n := len(vec) / TupleBytes
	for ; i < n; i++ {
		a := binary.LittleEndian.Uint64(vec[i*TupleBytes:])
		bv := binary.LittleEndian.Uint64(vec[i*TupleBytes+8:])
		g := int(uint32(a) % uint32(p.Groups.Len()))
		b := p.Out[g]
		if b.N+TupleBytes > len(b.Data) {
			return i, g
		}
		if p.Payload {
			copy(b.Data[b.N:b.N+TupleBytes], vec[i*TupleBytes:])
		}
		b.N += TupleBytes
		b.Tuples++
		if p.Checksum {
			b.Sum += TupleSum(a, bv)
		}
	}
	return n, -1
}

// scatterCase is one shape of input for TestScatterMatchesReference.
type scatterCase struct {
	pattern  Pattern
	nodes    int
	bufBytes int   // capacity of each output buffer (need not be whole tuples)
	preN     int   // tuples already in each buffer at the start
	shared   bool  // group 0's buffer is also group 1's
	vectors  []int // tuples per input vector
	trailing int   // extra bytes after the last whole tuple of each vector
	start    int   // tuple index of the first call on each vector
}

// scatterRun is what one run of the operator's loop did: every buffer it
// "sent" (stopped on), and the buffers at the end.
type scatterRun struct {
	stops []string
	final []Buffer
}

// runScatter drives scatter over the vectors as the SHUFFLE operator does:
// on a full group it records the stop and the buffer, then either empties
// that buffer or puts a fresh one in its place (both happen, so that a
// Partitioner that caches anything about Out is exercised).
func runScatter(t *testing.T, c scatterCase, payload, checksum bool, seed uint64, scatter func(*Partitioner, []byte, int) (int, int)) scatterRun {
	t.Helper()
	g, err := NewGroups(c.pattern, c.nodes)
	if err != nil {
		t.Fatal(err)
	}
	fresh := func(k uint64) *Buffer {
		b := &Buffer{Data: make([]byte, c.bufBytes)}
		for j := range b.Data {
			b.Data[j] = byte(seed + k + uint64(j*j>>3))
		}
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
	var run scatterRun
	key := uint64(0)
	for v, tuples := range c.vectors {
		vec := make([]byte, tuples*TupleBytes+c.trailing)
		for j := 0; j < tuples; j++ {
			key++
			a := mix(seed ^ key)
			switch key % 7 { // keys at the edges of the 32-bit remainder
			case 1:
				a = 0xffffffff
			case 2:
				a = a&^0xffffffff | uint64(uint32(a)/uint32(g.Len())*uint32(g.Len()))
			case 3:
				a = a&^0xffffffff | uint64(uint32(a)/uint32(g.Len())*uint32(g.Len())-1)
			}
			binary.LittleEndian.PutUint64(vec[j*TupleBytes:], a)
			binary.LittleEndian.PutUint64(vec[j*TupleBytes+8:], mix(key))
		}
		for j := tuples * TupleBytes; j < len(vec); j++ {
			vec[j] = 0xee
		}
		for i := c.start; ; {
			next, full := scatter(p, vec, i)
			if full < 0 {
				if want := max(i, tuples); next != want {
					run.stops = append(run.stops, fmt.Sprintf("vector %d: done at %d, want %d", v, next, want))
				}
				break
			}
			b := out[full]
			h := fnv.New64a()
			h.Write(b.Data)
			run.stops = append(run.stops, fmt.Sprintf("vector %d: stop at %d group %d: N %d tuples %d sum %x data %x",
				v, next, full, b.N, b.Tuples, b.Sum, h.Sum64()))
			if len(run.stops) > 100000 || next < i {
				t.Fatalf("runaway scatter at vector %d tuple %d", v, next)
			}
			if len(b.Data) < TupleBytes {
				break // a buffer that can never take a tuple: next vector
			}
			if key%2 == 0 || c.shared {
				b.N, b.Tuples, b.Sum = 0, 0, 0
			} else {
				out[full] = fresh(uint64(len(run.stops)) << 8)
			}
			key++
			i = next
		}
	}
	for _, b := range out {
		run.final = append(run.final, Buffer{Data: bytes.Clone(b.Data), N: b.N, Tuples: b.Tuples, Sum: b.Sum})
	}
	return run
}

// TestScatterMatchesReference compares Scatter with refScatter, stop by
// stop and byte by byte, over many group counts (both sides of the fast
// path's 256-group limit), buffers that fill mid-vector, vectors of odd
// lengths, and every mode (payload or size-only, with or without checksum).
func TestScatterMatchesReference(t *testing.T) {
	odd := []int{1000, 1, 0, 1031, 3, 17, 1024, 555}
	var cases []scatterCase
	for nodes := 1; nodes <= 17; nodes++ {
		cases = append(cases,
			scatterCase{pattern: Repartition, nodes: nodes, bufBytes: 64 << 10, vectors: []int{1024, 1024, 1024, 1024, 1024, 1024, 1024, 1024, 1024, 777}},
			scatterCase{pattern: Repartition, nodes: nodes, bufBytes: 5 * TupleBytes, vectors: odd, trailing: 7},
			scatterCase{pattern: Repartition, nodes: nodes, bufBytes: 37*TupleBytes + 9, preN: 3, vectors: odd},
			scatterCase{pattern: Repartition, nodes: nodes, bufBytes: 200 * TupleBytes, vectors: odd, start: 2},
		)
	}
	for _, nodes := range []int{31, 64, 255, 256, 257, 300} {
		cases = append(cases,
			scatterCase{pattern: Repartition, nodes: nodes, bufBytes: 3 * TupleBytes, vectors: odd, trailing: 15},
			scatterCase{pattern: Repartition, nodes: nodes, bufBytes: 64 << 10, vectors: odd},
		)
	}
	cases = append(cases,
		scatterCase{pattern: Broadcast, nodes: 3, bufBytes: 7 * TupleBytes, vectors: odd, trailing: 1},
		scatterCase{pattern: Broadcast, nodes: 16, bufBytes: 64 << 10, vectors: []int{1024, 1024, 1024, 1024, 1024}},
		scatterCase{pattern: Repartition, nodes: 4, bufBytes: 9 * TupleBytes, shared: true, vectors: odd},
		scatterCase{pattern: Repartition, nodes: 8, bufBytes: 0, vectors: []int{0, 3, 1}},
		scatterCase{pattern: Repartition, nodes: 8, bufBytes: 64, vectors: []int{3}, start: 5},
	)
	ref := func(p *Partitioner, vec []byte, i int) (int, int) { return refScatter(p, vec, i) }
	opt := func(p *Partitioner, vec []byte, i int) (int, int) { return p.Scatter(vec, i) }
	for ci, c := range cases {
		for mode := 0; mode < 4; mode++ {
			payload, checksum := mode&1 != 0, mode&2 != 0
			name := fmt.Sprintf("%d:%s/%d/buf=%d/pre=%d/shared=%v/payload=%v/checksum=%v", ci, c.pattern, c.nodes, c.bufBytes, c.preN, c.shared, payload, checksum)
			seed := uint64(ci*4 + mode)
			want := runScatter(t, c, payload, checksum, seed, ref)
			got := runScatter(t, c, payload, checksum, seed, opt)
			if len(got.stops) != len(want.stops) {
				t.Fatalf("%s: %d stops, want %d", name, len(got.stops), len(want.stops))
			}
			for k := range want.stops {
				if got.stops[k] != want.stops[k] {
					t.Fatalf("%s: stop %d:\n got %.300s\nwant %.300s", name, k, got.stops[k], want.stops[k])
				}
			}
			for d := range want.final {
				w, g := want.final[d], got.final[d]
				if g.N != w.N || g.Tuples != w.Tuples || g.Sum != w.Sum || !bytes.Equal(g.Data, w.Data) {
					t.Fatalf("%s: group %d at the end: N %d tuples %d sum %x; want %d %d %x (data equal: %v)",
						name, d, g.N, g.Tuples, g.Sum, w.N, w.Tuples, w.Sum, bytes.Equal(g.Data, w.Data))
				}
			}
		}
	}
}

// BenchmarkScatter measures the SHUFFLE hot path (hash each 16-byte tuple
// to its destination and copy it into that destination's 64 KiB buffer,
// recycling full buffers as the operator does) over a 64 MiB input that
// does not fit in cache, against copying the same input into the same
// recycled buffers with memcpy, on one core. The ratio goes into
// docs/performance.md.
func BenchmarkScatter(b *testing.B) {
	const inBytes = 64 << 20
	in := make([]byte, inBytes)
	Relation{Seed: 1}.FillVector(in, 0)
	const vecBytes = 1024 * TupleBytes
	for _, dests := range []int{8, 16} {
		for _, sum := range []bool{false, true} {
			b.Run(fmt.Sprintf("dests=%d/checksum=%v", dests, sum), func(b *testing.B) {
				benchScatter(b, in, dests, sum)
			})
		}
		b.Run(fmt.Sprintf("dests=%d/memcpy", dests), func(b *testing.B) {
			out := make([][]byte, dests)
			for i := range out {
				out[i] = make([]byte, 64<<10)
			}
			b.SetBytes(inBytes)
			for it := 0; it < b.N; it++ {
				d, pos := 0, 0
				for off := 0; off < inBytes; off += vecBytes {
					if pos+vecBytes > len(out[d]) {
						d, pos = (d+1)%dests, 0
					}
					copy(out[d][pos:], in[off:off+vecBytes])
					pos += vecBytes
				}
			}
		})
	}
}

// benchScatter scatters in, 16 KiB vector by vector, into dests buffers
// of 64 KiB, emptying each buffer that fills as if it had been sent.
func benchScatter(b *testing.B, in []byte, dests int, sum bool) {
	const vecBytes = 1024 * TupleBytes
	g, _ := NewGroups(Repartition, dests)
	out := make([]*Buffer, dests)
	for i := range out {
		out[i] = &Buffer{Data: make([]byte, 64<<10)}
	}
	p := Partitioner{Groups: g, Out: out, Payload: true, Checksum: sum}
	b.SetBytes(int64(len(in)))
	for it := 0; it < b.N; it++ {
		for off := 0; off+vecBytes <= len(in); off += vecBytes {
			vec := in[off : off+vecBytes]
			for i := 0; ; {
				next, full := p.Scatter(vec, i)
				if full < 0 {
					break
				}
				out[full].N = 0 // "sent": reuse the buffer
				i = next
			}
		}
	}
}

// BenchmarkScatterInCache is BenchmarkScatter's scatter over a 256 KiB
// input that stays in cache, so that it measures Scatter's own work more
// than the memory system; 12 destinations take the multiply-based
// remainder, 8 and 16 the mask. It also reports ns per tuple.
func BenchmarkScatterInCache(b *testing.B) {
	const inBytes = 256 << 10
	in := make([]byte, inBytes)
	Relation{Seed: 1}.FillVector(in, 0)
	for _, dests := range []int{8, 12, 16} {
		for _, sum := range []bool{false, true} {
			b.Run(fmt.Sprintf("dests=%d/checksum=%v", dests, sum), func(b *testing.B) {
				benchScatter(b, in, dests, sum)
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(inBytes/TupleBytes), "ns/tuple")
			})
		}
	}
}

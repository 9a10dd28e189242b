package algos

import (
	"fmt"
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
				g, _ := NewGroups(Repartition, dests)
				out := make([]*Buffer, dests)
				for i := range out {
					out[i] = &Buffer{Data: make([]byte, 64<<10)}
				}
				p := Partitioner{Groups: g, Out: out, Payload: true, Checksum: sum}
				b.SetBytes(inBytes)
				for it := 0; it < b.N; it++ {
					for off := 0; off < inBytes; off += vecBytes {
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

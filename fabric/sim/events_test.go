package sim

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

type nop struct{ n int }

func (h *nop) handle(uint64, *packet) { h.n++ }

func TestEventQueueOrder(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 0))
			var q eventQueue
			h := &nop{}
			type key struct {
				at  fabric.Time
				seq uint64
			}
			for i := 0; i < 5000; i++ {
				q.push(fabric.Time(r.IntN(100)), h, uint64(i), nil)
			}
			var prev key
			for i := 0; q.len() > 0; i++ {
				e := q.pop()
				k := key{e.at, e.seq}
				if i > 0 && (k.at < prev.at || k.at == prev.at && k.seq < prev.seq) {
					t.Fatalf("event %d out of order: %+v after %+v", i, k, prev)
				}
				if k.at == prev.at && i > 0 && e.arg < uint64(prev.seq-1) {
					t.Fatalf("simultaneous events not FIFO")
				}
				prev = k
			}
		})
	}
}

// BenchmarkEventQueue measures raw event throughput: each fired event
// schedules one new event a random distance ahead, keeping 1024 pending,
// as a network model does.
func BenchmarkEventQueue(b *testing.B) {
	var q eventQueue
	h := &nop{}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 1024; i++ {
		q.push(fabric.Time(r.IntN(1_000_000)), h, 0, nil)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		e := q.pop()
		e.h.handle(e.arg, e.p)
		q.push(e.at+fabric.Time(r.IntN(1_000_000)), h, 0, nil)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

package sim

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

type nop struct{ n int }

func (h *nop) handle(uint64, *packet) { h.n++ }
func (h *nop) kind() uint8            { return 9 }

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

// TestEventQueueBucketShrinks: a bucket that outgrew its share of the
// ring's keys (a burst of simultaneous events) returns to that share once
// it empties, and the queue's order is the same before and after.
func TestEventQueueBucketShrinks(t *testing.T) {
	var q eventQueue
	h := &nop{}
	for round := 0; round < 3; round++ {
		at := fabric.Time(0).Add(fabric.Duration(round) * fabric.Microsecond)
		for i := 0; i < 100; i++ { // one bucket, 100 events
			q.push(at, h, uint64(i), nil)
		}
		i := int((int64(at) >> q.shift) & q.mask)
		if c := cap(q.ring[i].k); c < 100 {
			t.Fatalf("round %d: bucket %d holds 100 events in a capacity of %d", round, i, c)
		}
		for want := uint64(0); q.len() > 0; want++ {
			if e := q.pop(); e.arg != want || e.at != at {
				t.Fatalf("round %d: popped event %d at %v, want %d at %v", round, e.arg, e.at, want, at)
			}
		}
		if b := q.ring[i].k; cap(b) != bucketCap || &b[:1][0] != &q.keys[i*bucketCap] {
			t.Fatalf("round %d: emptied bucket %d kept a capacity of %d, not its share of %d keys", round, i, cap(b), bucketCap)
		}
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

// TestEventQueueMatchesReference interleaves pushes and pops as the
// simulator does (never scheduling before the last fired event), with
// distances from zero to beyond the calendar's window (so events land in
// the ring, in crowded buckets and in the far heap), and checks the queue
// against a plain sort by (time, scheduling order), for the ring sizes of
// small and large clusters.
func TestEventQueueMatchesReference(t *testing.T) {
	for _, nodes := range []int{1, 64, 256} {
		t.Run(fmt.Sprintf("nodes=%d", nodes), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(nodes), 7))
			var q eventQueue
			q.scale(nodes)
			type ref struct {
				at  fabric.Time
				seq uint64
			}
			var pending []ref
			var now fabric.Time
			h := &nop{}
			var seq uint64
			for i := 0; i < 200000; i++ {
				if len(pending) == 0 || r.IntN(100) < 52 {
					var d fabric.Time
					switch r.IntN(10) {
					case 0:
						d = 0
					case 1:
						d = fabric.Time(r.IntN(100)) // crowded: a few picoseconds
					case 2:
						d = fabric.Time(r.Int64N(int64(100 * fabric.Microsecond))) // often beyond the window
					case 3:
						d = fabric.Time(r.Int64N(int64(70 * fabric.Millisecond))) // an ACK timer
					default:
						d = fabric.Time(r.IntN(2_000_000)) // within 2 us
					}
					seq++
					q.push(now+d, h, seq, nil)
					pending = append(pending, ref{now + d, seq})
					continue
				}
				m := 0
				for j, p := range pending {
					if p.at < pending[m].at || p.at == pending[m].at && p.seq < pending[m].seq {
						m = j
					}
				}
				want := pending[m]
				pending = append(pending[:m], pending[m+1:]...)
				if at, ok := q.peek(); !ok || at != want.at {
					t.Fatalf("step %d: peek %v %v, want %v", i, at, ok, want.at)
				}
				e := q.pop()
				if e.at != want.at || e.arg != want.seq {
					t.Fatalf("step %d: popped (%v, #%d), want (%v, #%d)", i, e.at, e.arg, want.at, want.seq)
				}
				now = e.at
				if q.len() != len(pending) {
					t.Fatalf("step %d: %d pending, want %d", i, q.len(), len(pending))
				}
			}
		})
	}
}

// TestSlotsHoldLargestCluster: the event queue's slots outnumber the queue
// pairs of a 4096-node all-to-all (each RC queue pair may hold its ACK
// timer pending), and sequence numbers last far beyond the longest run's
// events (a few times 10^8 at 4096 nodes).
func TestSlotsHoldLargestCluster(t *testing.T) {
	if slotMask+1 < 2*4096*4095 {
		t.Errorf("%d event slots for %d queue pairs", slotMask+1, 4096*4095)
	}
	if maxSeq < 100_000_000_000 {
		t.Errorf("%d sequence numbers per cluster", uint64(maxSeq))
	}
}

//go:build ibverbs

package ibv

import (
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// post stages and publishes n requests with ids from id.
func post(r *wqRing, n int, id uint64) uint64 {
	base := r.tail.Load()
	for i := 0; i < n; i++ {
		r.stage(base+uint64(i), wqEntry{id: id + uint64(i), op: fabric.OpSend, length: uint32(i)})
	}
	r.publish(base + uint64(n))
	return base
}

func TestWQRingSlotsFreedByPoll(t *testing.T) {
	r := newWQRing(4)
	if r.room() != 4 {
		t.Fatalf("room %d", r.room())
	}
	base := post(r, 4, 10)
	if r.room() != 0 {
		t.Fatalf("full queue has room %d", r.room())
	}
	// The completion of request 2 (covering unsignaled 0 and 1) arrives and
	// is staged: no slot is free until it is handed over.
	s := newCQStage(8)
	e, ok := r.lookup(base + 2)
	if !ok || e.id != 12 {
		t.Fatalf("lookup: %+v %v", e, ok)
	}
	s.push(staged{wc: fabric.WC{ID: e.id}, ring: r, upTo: base + 3})
	if r.room() != 0 {
		t.Fatal("a staged, unpolled completion freed slots")
	}
	wcs := make([]fabric.WC, 4)
	if n := s.pop(wcs); n != 1 || wcs[0].ID != 12 {
		t.Fatalf("pop %d %+v", n, wcs[0])
	}
	if r.room() != 3 {
		t.Fatalf("after polling the completion of the third request room is %d, want 3", r.room())
	}
	// Releases never go backwards.
	r.release(base + 1)
	if r.room() != 3 {
		t.Fatal("release went backwards")
	}
	if _, ok := r.lookup(base + 1); ok {
		t.Fatal("a released sequence number is still outstanding")
	}
	if _, ok := r.lookup(base + 4); ok {
		t.Fatal("an unposted sequence number is outstanding")
	}
}

func TestWQRingRetractAndReset(t *testing.T) {
	r := newWQRing(8)
	base := post(r, 5, 0)
	r.retract(base + 2) // the provider took only two
	if r.room() != 6 {
		t.Fatalf("room after retract %d", r.room())
	}
	if _, ok := r.lookup(base + 3); ok {
		t.Fatal("retracted request outstanding")
	}
	r.reset()
	if r.room() != 8 {
		t.Fatalf("room after reset %d", r.room())
	}
	if _, ok := r.lookup(base); ok {
		t.Fatal("a stale completion from before RESET must not match")
	}
	// Sequence numbers keep growing and the ring wraps.
	for round := 0; round < 5; round++ {
		b := post(r, 8, uint64(100*round))
		for i := 0; i < 8; i++ {
			if e, ok := r.lookup(b + uint64(i)); !ok || e.id != uint64(100*round+i) {
				t.Fatalf("round %d entry %d: %+v %v", round, i, e, ok)
			}
		}
		r.release(b + 8)
	}
}

func TestCQStageOverrun(t *testing.T) {
	r := newWQRing(16)
	base := post(r, 4, 0)
	s := newCQStage(2)
	for i := 0; i < 4; i++ {
		s.push(staged{wc: fabric.WC{ID: uint64(i)}, ring: r, upTo: base + uint64(i) + 1})
	}
	if !s.overrun || s.lost != 2 {
		t.Fatalf("overrun %v lost %d", s.overrun, s.lost)
	}
	// Lost completions released their slots (through request 3, as the
	// simulator does) so that the queue pair is not wedged.
	if r.room() != 16 {
		t.Fatalf("room %d, want 16 (the lost completions released through request 3)", r.room())
	}
	wcs := make([]fabric.WC, 8)
	if n := s.pop(wcs); n != 2 || wcs[0].ID != 0 || wcs[1].ID != 1 {
		t.Fatalf("pop %d: %v", n, wcs[:n])
	}
	if r.room() != 16 || !s.overrun {
		t.Fatal("slots or sticky overrun")
	}
}

func TestCQStagePurgeAndWrap(t *testing.T) {
	a, b := newWQRing(64), newWQRing(64)
	post(a, 32, 0)
	post(b, 32, 1000)
	s := newCQStage(5)
	wcs := make([]fabric.WC, 3)
	next := map[*wqRing]uint64{a: 0, b: 0}
	var got []uint64
	for i := 0; i < 20; i++ {
		r := a
		if i%3 == 0 {
			r = b
		}
		seq := next[r]
		next[r]++
		e, _ := r.lookup(seq)
		s.push(staged{wc: fabric.WC{ID: e.id}, ring: r, upTo: seq + 1})
		if s.n >= 4 {
			n := s.pop(wcs[:2])
			for _, wc := range wcs[:n] {
				got = append(got, wc.ID)
			}
		}
	}
	if s.overrun {
		t.Fatal("overrun")
	}
	s.purge(b)
	for s.n > 0 {
		n := s.pop(wcs)
		for _, wc := range wcs[:n] {
			if wc.ID >= 1000 {
				t.Fatalf("purged completion %d delivered", wc.ID)
			}
			got = append(got, wc.ID)
		}
	}
	// Completions of a come out in order.
	last := -1
	for _, id := range got {
		if id < 1000 {
			if int(id) <= last {
				t.Fatalf("out of order: %v", got)
			}
			last = int(id)
		}
	}
}

func TestHWCQDepth(t *testing.T) {
	for _, tc := range []struct{ depth, max, want int }{{2, 1 << 22, 66}, {256, 1 << 22, 512}, {1000, 1500, 1500}, {10, 0, 74}} {
		if got := hwCQDepth(tc.depth, tc.max); got != tc.want {
			t.Errorf("hwCQDepth(%d, %d) = %d, want %d", tc.depth, tc.max, got, tc.want)
		}
	}
}

// TestSRQTableOutOfOrder: a shared queue's slots are released one by one,
// in any order; a tag is good once, and a reused slot's new generation
// does not answer to the old tag.
func TestSRQTableOutOfOrder(t *testing.T) {
	tb := newSRQTable(3)
	var tags []uint64
	tb.mu.Lock()
	for i := range 3 {
		tags = append(tags, tb.reserve(wqEntry{id: uint64(10 + i)}))
	}
	if tb.room() != 0 {
		t.Fatalf("room %d after filling a table of 3", tb.room())
	}
	tb.mu.Unlock()
	for i, tag := range tags {
		if tag&srqBit == 0 || tag&recvBit != 0 {
			t.Fatalf("tag %#x: want srqBit and no recvBit", tag)
		}
		if e, ok := tb.lookup(tag); !ok || e.id != uint64(10+i) {
			t.Fatalf("lookup(%#x) = %v, %v", tag, e, ok)
		}
	}
	tb.release(tags[1])
	tb.release(tags[1]) // a second release does nothing
	if _, ok := tb.lookup(tags[1]); ok {
		t.Fatal("a released tag is still found")
	}
	tb.mu.Lock()
	if tb.room() != 1 {
		t.Fatalf("room %d after one release", tb.room())
	}
	again := tb.reserve(wqEntry{id: 20})
	tb.mu.Unlock()
	if uint32(again) != uint32(tags[1]) || again == tags[1] {
		t.Fatalf("reused slot: tag %#x after %#x, want the same slot in a new generation", again, tags[1])
	}
	if _, ok := tb.lookup(tags[1]); ok {
		t.Fatal("the old tag of a reused slot is found")
	}
	if e, ok := tb.lookup(again); !ok || e.id != 20 {
		t.Fatalf("lookup(%#x) = %v, %v", again, e, ok)
	}
}

// TestCQStagePurgeShared: purging a queue pair's staged completions frees
// the shared queue's slots of its receives, and only its.
func TestCQStagePurgeShared(t *testing.T) {
	tb := newSRQTable(4)
	s := newCQStage(8)
	tb.mu.Lock()
	for i := range 4 {
		tag := tb.reserve(wqEntry{id: uint64(i)})
		s.push(staged{wc: fabric.WC{ID: uint64(i), QPN: uint32(0x100 + i%2)}, srq: tb, tag: tag})
	}
	tb.mu.Unlock()
	s.purgeShared(0x101)
	tb.mu.Lock()
	room := tb.room()
	tb.mu.Unlock()
	if s.n != 2 || room != 2 {
		t.Fatalf("after purging QPN 0x101: %d staged, room %d; want 2 and 2", s.n, room)
	}
	wcs := make([]fabric.WC, 4)
	if n := s.pop(wcs); n != 2 || wcs[0].ID != 0 || wcs[1].ID != 2 {
		t.Fatalf("popped %v", wcs[:n])
	}
	tb.mu.Lock()
	room = tb.room()
	tb.mu.Unlock()
	if room != 4 {
		t.Fatalf("room %d after polling everything", room)
	}
}

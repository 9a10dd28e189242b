package sim

import (
	"fmt"
	"github.com/rdmashuffle/rdmashuffle/fabric/perftest"
	"testing"
	"unsafe"
)

// TestReservedKeepsOutstanding: a ring that grows keeps every outstanding
// entry at the slot its index names in the larger ring, grows to the next
// power of two that holds the outstanding entries and the reservation (a
// batch grows it once, an empty ring starts at the size asked for), and is
// kept as it is when it has the room.
func TestReservedKeepsOutstanding(t *testing.T) {
	for _, tc := range []struct {
		size, from, to uint64
		n, want        int
	}{
		{0, 0, 0, 1, 1}, {0, 5, 5, 16, 16}, {0, 0, 0, 3, 4},
		{4, 0, 4, 1, 8}, {4, 6, 10, 1, 8}, {8, 13, 21, 1, 16}, {2, 1, 2, 1, 2},
		{4, 6, 10, 12, 16}, {4, 6, 8, 2, 4}, {16, 3, 3, 16, 16},
	} {
		ring := make([]uint64, tc.size)
		for i := tc.from; i < tc.to; i++ {
			ring[i&(tc.size-1)] = i
		}
		next := reserved(ring, tc.from, tc.to, tc.n)
		if len(next) != tc.want {
			t.Fatalf("%+v: %d entries, want %d", tc, len(next), tc.want)
		}
		if tc.want == int(tc.size) && tc.size > 0 && &next[0] != &ring[0] {
			t.Errorf("%+v: a ring with room was replaced", tc)
		}
		for i := tc.from; i < tc.to; i++ {
			if got := next[i&uint64(len(next)-1)]; got != i {
				t.Errorf("%+v: index %d holds %d", tc, i, got)
			}
		}
	}
}

// TestQPSizes: what a queue pair and its ring entries take on a 64-bit
// machine (docs/performance.md "Scale"). A ring of 16 sends is 4 KiB, an
// allocation size class of its own (at 264 bytes an entry it took 4,864
// bytes); the queue pair fits the 384-byte class (it took 448 bytes until
// its counts became 32-bit and its flags filled its gaps).
func TestQPSizes(t *testing.T) {
	if unsafe.Sizeof(uintptr(0)) != 8 {
		t.Skip("sizes are for 64-bit machines")
	}
	for _, tc := range []struct {
		what      string
		got, want uintptr
	}{
		{"send-queue entry", unsafe.Sizeof(sqe{}), 256},
		{"receive-queue entry", unsafe.Sizeof(rqe{}), 24},
		{"queue pair", unsafe.Sizeof(qp{}), 384},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %d bytes, want %d (update docs/performance.md and the estimate in experiments/benchmem.go if this is meant)", tc.what, tc.got, tc.want)
		}
	}
}

// TestPosterNames: a receive's poster is kept as the number of its
// thread's name; names that repeat (every run spawns n0/main again) keep
// their number, the driver is 0, and past the 17 bits' room the rest share
// one number that says so rather than naming a wrong thread.
func TestPosterNames(t *testing.T) {
	c := &Cluster{}
	a, b := c.names.id("n0/main"), c.names.id("n1/main")
	if a == 0 || b == a || c.names.id("n0/main") != a {
		t.Fatalf("ids %d, %d, again %d: want distinct non-zero ids that repeat", a, b, c.names.id("n0/main"))
	}
	var e rqe
	e.at = 12345 | rqeCkOn
	e.setPoster(b)
	if e.poster() != b || e.off() != 12345 || !e.has(rqeCkOn) || c.threadNamed(e.poster()) != "n1/main" {
		t.Fatalf("poster %d (%q), offset %d, checked %v", e.poster(), c.threadNamed(e.poster()), e.off(), e.has(rqeCkOn))
	}
	if got := c.threadNamed(c.nameID(nil)); got != "driver" {
		t.Errorf("no thread is named %q, want driver", got)
	}
	for i := len(c.names.byID); i < maxNameID; i++ {
		c.names.id(fmt.Sprint("t", i))
	}
	if got := c.threadNamed(severalPosters); got != severalPostersName {
		t.Errorf("the number of receives posted by several threads names %q", got)
	}
	for id, name := range c.names.byID {
		if uint32(id) == severalPosters {
			t.Errorf("%q was given the number of several posters", name)
		}
	}
	last := c.names.id("one more")
	e.setPoster(last)
	if last != maxNameID || e.poster() != maxNameID || c.threadNamed(last) != unnamedPoster || e.off() != 12345 {
		t.Errorf("past the room: id %d, kept %d, named %q, offset %d", last, e.poster(), c.threadNamed(last), e.off())
	}
	if c.threadNamed(a) != "n0/main" {
		t.Errorf("the first name is now %q", c.threadNamed(a))
	}
}

// TestRunGivesPacketsBack: a run returns its pool of free packets (as large
// as its peak of packets in flight), and the next run on the cluster, which
// grows a pool of its own, measures the same.
func TestRunGivesPacketsBack(t *testing.T) {
	c, err := New(Config{Nodes: 4, Seed: 1, SizeOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cfg := perftest.Config{Test: "alltoall_bw", Size: 4096, Iters: 20, TxDepth: 16, RxDepth: 16, CQMod: 8}
	first, err := perftest.Run(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if c.freePkts != nil {
		t.Fatalf("%d free packets kept after the run", len(c.freePkts))
	}
	second, err := perftest.Run(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if first.BWAvgGbps != second.BWAvgGbps || first.MsgRateMpps != second.MsgRateMpps {
		t.Errorf("second run %v Gb/s, %v Mpps; first %v, %v", second.BWAvgGbps, second.MsgRateMpps, first.BWAvgGbps, first.MsgRateMpps)
	}
}

// TestRepeatedReceives: a receive queue that keeps repeats of its last
// entry instead of entries gives every receive as posted, whatever the
// order of posts, takes, changes of a taken entry, releases and resets
// (checked against a plain list of the receives over seeded random
// sequences), and holds only the entries not repeated: a queue pair
// reposting one buffer keeps at most a few, however deep its queue.
func TestRepeatedReceives(t *testing.T) {
	entries := []rqe{{id: 1, at: 64, n: 4096, mr: 1}, {id: 1, at: 128, n: 4096, mr: 1}, {id: 2, at: 64, n: 4096, mr: 1}}
	for seed := uint64(1); seed <= 200; seed++ {
		q := &qp{}
		var want []rqe // receive i is want[i]
		rnd := seed
		next := func(n int) int { rnd = mix(rnd); return int(rnd % uint64(n)) }
		for step := 0; step < 400; step++ {
			switch op := next(10); {
			case op < 5 && q.rqTail-q.rqFree < 64: // post one of three buffers, by one of two threads
				e := entries[next(len(entries))]
				if seed%2 == 0 {
					e = entries[0]
				}
				e.setPoster(uint32(1 + next(2)))
				q.rqPush(e)
				want = append(want, e)
			case op < 8 && q.rqHead < q.rqTail: // take the next one and mark it as the NIC's checker does
				e := q.rqAt(q.rqHead)
				e.set(rqeCkHeld, true)
				want[q.rqHead].set(rqeCkHeld, true)
				q.rqHead++
			case op < 9 && q.rqFree < q.rqHead: // release some taken ones
				q.freeRecvs(q.rqFree + uint64(1+next(int(q.rqHead-q.rqFree))))
			case op == 9 && next(8) == 0: // reset
				q.freeRecvs(q.rqTail)
				q.rqHead = q.rqTail
			}
			for i := q.rqFree; i < q.rqTail; i++ {
				got, w := *q.rqPeek(i), want[i]
				if got.poster() != w.poster() && got.poster() != severalPosters {
					t.Fatalf("seed %d step %d: receive %d posted by %d, kept as %d", seed, step, i, w.poster(), got.poster())
				}
				got.setPoster(0)
				w.setPoster(0)
				if got != w {
					t.Fatalf("seed %d step %d: receive %d is %+v, want %+v", seed, step, i, got, w)
				}
			}
		}
	}
	// One buffer reposted by two threads in turn, as perftest's receivers
	// do: 16 receives, taken and reposted one at a time, in a ring of at
	// most 4 entries.
	q := &qp{}
	e := entries[0]
	for i := 0; i < 16; i++ {
		e.setPoster(1)
		q.rqPush(e)
	}
	for i := 0; i < 1000; i++ {
		q.rqAt(q.rqHead).set(rqeCkHeld, true)
		q.rqHead++
		q.freeRecvs(q.rqHead)
		e.setPoster(2)
		q.rqPush(e)
	}
	if len(q.rq) > 4 || q.rqTail-q.rqFree != 16 {
		t.Errorf("%d receives posted in a ring of %d entries, want 16 in at most 4", q.rqTail-q.rqFree, len(q.rq))
	}
}

func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

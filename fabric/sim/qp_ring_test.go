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

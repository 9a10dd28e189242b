package algos

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestHeaderRoundTrip(t *testing.T) {
	in := header{flags: flagDepleted, src: 513, n: 4064, seq: 1 << 40, tuples: 254, sum: 0xdeadbeefcafe}
	b := make([]byte, HeaderBytes)
	in.put(b)
	var out header
	if err := out.get(b, 4064); err != nil || out != in {
		t.Fatalf("round trip: %+v %v, want %+v", out, err, in)
	}
}

func TestHeaderRejects(t *testing.T) {
	good := make([]byte, HeaderBytes)
	(&header{n: 16}).put(good)
	for _, tc := range []struct {
		name string
		b    []byte
		max  int
	}{
		{"short", good[:10], 100},
		{"magic", append([]byte{0}, good[1:]...), 100},
		{"too-long", good, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h header
			if err := h.get(tc.b, tc.max); !errors.Is(err, ErrBadMessage) {
				t.Fatalf("got %v, want ErrBadMessage", err)
			}
		})
	}
}

func FuzzHeader(f *testing.F) {
	b := make([]byte, HeaderBytes)
	(&header{n: 100, seq: 3}).put(b)
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		var h header
		if err := h.get(b, 4096); err != nil {
			return
		}
		if h.n < 0 || h.n > 4096 {
			t.Fatalf("accepted payload length %d", h.n)
		}
		c := make([]byte, HeaderBytes)
		h.put(c)
		var g header
		if err := g.get(c, 4096); err != nil || g != h {
			t.Fatalf("re-encoding changed the header: %+v vs %+v (%v)", g, h, err)
		}
	})
}

func TestGroups(t *testing.T) {
	g, err := NewGroups(Repartition, 4)
	if err != nil || g.Len() != 4 || g.Of(10) != 2 || g.Of(1<<40+7) != 3 || len(g.Members(2)) != 1 || g.Members(2)[0] != 2 {
		t.Fatalf("repartition groups wrong: %v %v", g, err)
	}
	g, err = NewGroups(Broadcast, 3)
	if err != nil || g.Len() != 1 || g.Of(12345) != 0 || len(g.Members(0)) != 3 {
		t.Fatalf("broadcast groups wrong: %v %v", g, err)
	}
	g, err = NewGroups("multicast:2", 3)
	if err != nil || g.Len() != 3 || g.Of(5) != 2 || fmt.Sprint(g.Members(2)) != "[2 0]" {
		t.Fatalf("multicast groups wrong: %v %v", g, err)
	}
	for _, bad := range []Pattern{"sideways", "multicast", "multicast:0", "multicast:4", "multicast:x", "multicast:-1"} {
		if _, err := NewGroups(bad, 3); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "multicast:K") {
			t.Errorf("pattern %q: %v", bad, err)
		}
	}
}

func TestRelationAndChecksum(t *testing.T) {
	r := Relation{Seed: 7, Node: 3, Tuples: 1000}
	a1, b1 := r.Tuple(5)
	a2, b2 := r.Tuple(5)
	if a1 != a2 || b1 != b2 {
		t.Fatal("tuples must be a pure function of (seed, node, index)")
	}
	// Keys spread evenly over destinations.
	counts := make([]int, 8)
	var fwd, rev uint64
	for j := int64(0); j < r.Tuples; j++ {
		a, b := r.Tuple(j)
		counts[a%8]++
		fwd += TupleSum(a, b)
	}
	for j := r.Tuples - 1; j >= 0; j-- {
		a, b := r.Tuple(j)
		rev += TupleSum(a, b)
	}
	if fwd != rev {
		t.Fatal("the checksum must not depend on order")
	}
	for d, c := range counts {
		if c < 80 || c > 170 {
			t.Fatalf("destination %d gets %d of 1000 tuples: keys are not uniform", d, c)
		}
	}
	a, b := r.Tuple(1)
	if TupleSum(a, b) == TupleSum(a, b+1) {
		t.Fatal("altering a tuple must change its checksum")
	}
}

func TestConfigCheck(t *testing.T) {
	for _, c := range []Config{
		{Nodes: 0, MsgBytes: 4096, Buffers: 2, CreditEvery: 2},
		{Nodes: 2, MsgBytes: 16, Buffers: 2, CreditEvery: 2},
		{Nodes: 2, MsgBytes: 4096, Buffers: 0, CreditEvery: 1},
		{Nodes: 2, MsgBytes: 4096, Buffers: 2, CreditEvery: 0},
		{Nodes: 2, MsgBytes: 4096, Buffers: 2, CreditEvery: 4},
		{Nodes: 2, MsgBytes: 8192, Buffers: 2, CreditEvery: 2},
	} {
		if err := c.check(4096); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: got %v, want ErrConfig", c, err)
		}
	}
}

func TestGroupsModulo(t *testing.T) {
	for _, n := range []int{2, 3, 5, 7, 8, 13, 16, 100, 1000} {
		g, _ := NewGroups(Repartition, n)
		for _, key := range []uint64{0, 1, 2, 99, 1<<32 - 1, 1 << 32, 0xdeadbeefcafef00d, ^uint64(0)} {
			if got, want := g.Of(key), int(uint32(key)%uint32(n)); got != want {
				t.Fatalf("n=%d key=%#x: group %d, want %d", n, key, got, want)
			}
		}
	}
}

package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/perftest"
)

// checkCache verifies the cache's invariants: no set holds more than its
// ways, every entry is in the set its number hashes to and is marked
// cached, and the count matches.
func checkCache(c *qpCache) error {
	total := 0
	sets := map[int][]uint32{}
	if c.flat != nil {
		for s := range c.nsets {
			sets[s] = c.set(s)
			for _, n := range c.flat[s*c.ways+len(sets[s]) : (s+1)*c.ways] {
				if n != 0 {
					return fmt.Errorf("set %d keeps qp %d beyond its %d ways in use", s, n, len(sets[s]))
				}
			}
		}
	}
	for s, set := range c.sparse {
		if c.flat != nil || s < 0 || s >= c.nsets {
			return fmt.Errorf("sparse set %d in a cache of %d sets (dense: %v)", s, c.nsets, c.flat != nil)
		}
		sets[s] = set
	}
	for s, set := range sets {
		if len(set) > c.ways {
			return fmt.Errorf("set %d holds %d entries, more than %d ways", s, len(set), c.ways)
		}
		for _, n := range set {
			q := c.lookup(n)
			if q == nil || q.qpn != n {
				return fmt.Errorf("set %d holds qp %d, which its NIC does not have", s, n)
			}
			if !q.cached {
				return fmt.Errorf("qp %d in set %d is not marked cached", q.qpn, s)
			}
			if c.setOf(q) != s {
				return fmt.Errorf("qp %d is in set %d, hashes to %d", q.qpn, s, c.setOf(q))
			}
		}
		total += len(set)
	}
	if total != c.n {
		return fmt.Errorf("sets hold %d entries, count says %d", total, c.n)
	}
	return nil
}

// testCache is newQPCache for the queue pairs qs (testQPs), which its
// lookup finds by number as a NIC's does.
func testCache(entries, ways, fetches int, miss fabric.Duration, seed uint64, qs []*qp) qpCache {
	c := newQPCache(entries, ways, fetches, miss, seed)
	c.lookup = func(n uint32) *qp {
		if i := int(n) - qpnBase; i >= 0 && i < len(qs) {
			return qs[i]
		}
		return nil
	}
	return c
}

func testQPs(n int) []*qp {
	qs := make([]*qp, n)
	for i := range qs {
		qs[i] = &qp{qpn: uint32(qpnBase + i)}
	}
	return qs
}

// TestQPCacheInvariants drives caches of several shapes with random
// touches and evictions: the invariants hold after every step, a touched
// context is cached, a hit changes nothing, an evicted one is gone, and
// every touch counts once as a hit or a miss.
func TestQPCacheInvariants(t *testing.T) {
	cases := []struct{ entries, ways, fetches int }{
		{1, 0, 1}, {4, 0, 1}, {16, 4, 2}, {96, 2, 3}, {64, 8, 32}, {10, 4, 1}, // 10 in sets of 4: 8 usable
		{denseSets + 1, 1, 4}, {4 * denseSets, 2, 16}, {512, 0, 2}, // sparse sets
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%d/%d/%d", tc.entries, tc.ways, tc.fetches), func(t *testing.T) {
			qs := testQPs(3*tc.entries + 1)
			c := testCache(tc.entries, tc.ways, tc.fetches, 500, 7, qs)
			if c.capacity() > tc.entries || c.capacity() < 1 {
				t.Fatalf("capacity %d for %d entries in sets of %d", c.capacity(), tc.entries, tc.ways)
			}
			rng := rand.New(rand.NewPCG(uint64(tc.entries), 3))
			touches := int64(0)
			now := fabric.Time(0)
			for step := 0; step < 4000; step++ {
				now += fabric.Time(rng.IntN(300))
				q := qs[rng.IntN(len(qs))]
				if rng.IntN(8) == 0 {
					c.evict(q)
					if q.cached {
						t.Fatalf("step %d: qp %d still cached after evict", step, q.qpn)
					}
				} else {
					touches++
					was, n := q.cached, c.n
					ready, miss := c.touch(q, now)
					switch {
					case miss == was:
						t.Fatalf("step %d: miss %v for a context cached %v", step, miss, was)
					case !q.cached:
						t.Fatalf("step %d: qp %d not cached after a touch", step, q.qpn)
					case ready < now:
						t.Fatalf("step %d: ready at %v, before the touch at %v", step, ready, now)
					case !miss && c.n != n:
						t.Fatalf("step %d: a hit changed the count from %d to %d", step, n, c.n)
					}
				}
				if err := checkCache(&c); err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
			}
			if c.hits+c.misses != touches {
				t.Errorf("hits %d + misses %d, want %d touches", c.hits, c.misses, touches)
			}
		})
	}
}

// TestQPCacheConcurrentFetches: misses that start together overlap up to
// the number of fetch slots, each taking the miss cost; a second use of a
// context whose fetch is under way is a hit that waits for the same fetch.
func TestQPCacheConcurrentFetches(t *testing.T) {
	const miss = fabric.Duration(500)
	for _, fetches := range []int{1, 3, 8} {
		qs := testQPs(12)
		c := testCache(64, 0, fetches, miss, 1, qs)
		for i, q := range qs {
			ready, m := c.touch(q, 100)
			want := fabric.Time(100).Add(miss * fabric.Duration(i/fetches+1))
			if !m || ready != want {
				t.Errorf("%d fetches: miss %d ready at %v (miss %v), want %v", fetches, i, ready, m, want)
			}
		}
		first := qs[0].cache.readyAt
		ready, m := c.touch(qs[0], 101)
		if m || ready != first || c.misses != int64(len(qs)) {
			t.Errorf("%d fetches: a use during the fetch: ready %v (miss %v), want %v and no new miss", fetches, ready, m, first)
		}
		if ready, _ := c.touch(qs[0], first+10); ready != first+10 {
			t.Errorf("%d fetches: a use after the fetch waits until %v", fetches, ready)
		}
	}
}

// TestQPCacheVictimNotInFlight: a full set replaces a context whose fetch
// has completed rather than one still on its way in.
func TestQPCacheVictimNotInFlight(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		qs := testQPs(5)
		c := testCache(4, 0, 4, 1000, seed, qs)
		c.touch(qs[0], 0) // ready at 1000
		for _, q := range qs[1:4] {
			c.touch(q, 900) // ready at 1900
		}
		c.touch(qs[4], 1500) // only qs[0] is on the NIC
		if qs[0].cached {
			t.Errorf("seed %d: the completed context survived; an in-flight one was replaced", seed)
		}
	}
}

// TestQPCacheRandomReplacementKeepsPart: a cyclic pattern over twice the
// capacity misses on every access under a strict LRU; random replacement
// keeps part of it. With N = 2C accesses between reuses, a context
// survives the N(1-h) replacements of its set with probability about
// exp(-2(1-h)) = h, so h is about 0.20; over 4C it is about 0.02.
func TestQPCacheRandomReplacementKeepsPart(t *testing.T) {
	cases := []struct {
		ratio  int
		lo, hi float64
	}{{2, 0.12, 0.30}, {4, 0, 0.06}}
	for _, tc := range cases {
		qs := testQPs(256 * tc.ratio)
		c := testCache(256, 0, 1, 0, 5, qs)
		for round := 0; round < 20; round++ {
			for _, q := range qs {
				c.touch(q, 0)
			}
		}
		h := float64(c.hits) / float64(c.hits+c.misses)
		if h < tc.lo || h > tc.hi {
			t.Errorf("cycle of %dx the capacity: hit rate %.3f, want %.2f..%.2f", tc.ratio, h, tc.lo, tc.hi)
		}
	}
}

// TestModelQPCacheDestroyEvicts: destroying or resetting a queue pair
// drops its context from its NIC's cache, and new queue pairs fill it.
func TestModelQPCacheDestroyEvicts(t *testing.T) {
	p := mtProfile(t, "fdr-cx3", func(p *Profile) { p.NIC.QPCacheEntries, p.NIC.QPCacheWays = 8, 0 })
	c := mtCluster(t, Config{Nodes: 2, Seed: 1, Profile: p})
	h := newHarness(t, c, 4096)
	run := func() {
		for {
			more, err := h.step()
			if err != nil {
				t.Fatal(err)
			}
			if !more {
				return
			}
		}
	}
	h.connect(0, 1)
	nic := c.nodes[0].nic
	q := h.nodes[0].qps[1].(*qp)
	h.write(0, 1, 64, 1)
	run()
	if !q.cached || nic.cache.n != 1 {
		t.Fatalf("after a write, the requester's context is not cached (cached %v, %d entries)", q.cached, nic.cache.n)
	}
	if err := q.Destroy(); err != nil {
		t.Fatal(err)
	}
	if q.cached || nic.cache.n != 0 || checkCache(&nic.cache) != nil {
		t.Fatalf("after Destroy: cached %v, %d entries left (%v)", q.cached, nic.cache.n, checkCache(&nic.cache))
	}
	r := h.nodes[1].qps[0].(*qp)
	if !r.cached {
		t.Fatal("the responder's context is not cached after a write arrived")
	}
	if err := r.Modify(fabric.StateReset, fabric.QPAttr{}); err != nil {
		t.Fatal(err)
	}
	if r.cached || checkCache(&c.nodes[1].nic.cache) != nil {
		t.Fatalf("after a reset: cached %v", r.cached)
	}
	before := nic.cache.misses
	for i := 0; i < 4; i++ {
		h.connect(0, 1)
		h.write(0, 1, 64, 2)
		run()
	}
	if nic.cache.n != 4 || nic.cache.misses-before != 4 {
		t.Fatalf("after four new queue pairs: %d entries, %d misses; want 4 and 4", nic.cache.n, nic.cache.misses-before)
	}
}

// TestModelQPCacheGradualDecline: with a cache of 32 contexts, 32-byte
// RDMA Reads and Writes spread over ever more queue pairs in turn
// (perftest --interleave) lose at most 3x per doubling (no cliff); past
// the cache READs fall further than WRITEs, since a READ looks its context
// up once more at the responder to build the response. Every lookup is
// counted once: one per work request, one per arriving packet and, for a
// READ, one per response built.
func TestModelQPCacheGradualDecline(t *testing.T) {
	const iters = 40
	rate := map[string]map[int]float64{}
	qps := []int{8, 16, 32, 64, 128, 256}
	for _, test := range []string{"read_bw", "write_bw"} {
		rate[test] = map[int]float64{}
		for _, q := range qps {
			p := mtProfile(t, "fdr-cx3", func(p *Profile) { p.NIC.QPCacheEntries, p.NIC.QPCacheWays = 32, 4 })
			c := mtCluster(t, Config{Nodes: 2, Seed: 1, SizeOnly: true, Profile: p})
			r, err := perftest.Run(c, perftest.Config{Test: test, Size: 32, Iters: iters, QPs: q, Interleave: true})
			if err != nil {
				t.Fatal(err)
			}
			st := c.Stats()
			rate[test][q] = r.MsgRateMpps
			t.Logf("%s %d QPs: %.2f M/s, %d hits, %d misses", test, q, r.MsgRateMpps, st.QPCacheHits, st.QPCacheMisses)
			want := st.PacketsSent + int64(iters*q)
			if test == "read_bw" {
				want += int64(iters * q)
			}
			if got := st.QPCacheHits + st.QPCacheMisses; got != want {
				t.Errorf("%s %d QPs: %d lookups counted, want %d", test, q, got, want)
			}
			for i, n := range c.nodes {
				if err := checkCache(&n.nic.cache); err != nil {
					t.Errorf("%s %d QPs: node %d: %v", test, q, i, err)
				}
			}
		}
		for i := 1; i < len(qps); i++ {
			if a, b := rate[test][qps[i-1]], rate[test][qps[i]]; b < a/3 {
				t.Errorf("%s: %d -> %d QPs falls from %.2f to %.2f M/s, more than 3x", test, qps[i-1], qps[i], a, b)
			}
		}
		if rate[test][256] > rate[test][8]/1.5 {
			t.Errorf("%s: 256 QPs over a cache of 32 keep %.2f of %.2f M/s; want a clear loss", test, rate[test][256], rate[test][8])
		}
	}
	if r, w := rate["read_bw"][256], rate["write_bw"][256]; !(r < 0.85*w) || math.IsNaN(r) {
		t.Errorf("256 QPs: READ %.2f M/s, WRITE %.2f; want READ clearly lower (responder state)", r, w)
	}
}

// TestQPNumbering: numbering 0 gives every NIC's queue pairs the numbers
// from 0x100 on; numbering k > 0 gives each NIC its own base, the same for
// the same k, inside the 24-bit field with room for 2^23 queue pairs, and
// runs under it work. The numbering decides which queue pairs share a set
// of the context cache, so the misses of 64 queue pairs in turn over 80
// contexts in 2 ways differ between numberings, while the lookups do not.
func TestQPNumbering(t *testing.T) {
	for _, tc := range []struct {
		k    uint64
		node int
	}{{0, 0}, {0, 7}, {1, 0}, {1, 1}, {2, 0}, {1 << 40, 3}, {math.MaxUint64, 1 << 15}} {
		b := firstQPN(tc.k, tc.node)
		switch {
		case tc.k == 0 && b != qpnBase:
			t.Errorf("numbering 0, node %d: first QPN %#x, want %#x", tc.node, b, qpnBase)
		case b < qpnBase || b >= 1<<23:
			t.Errorf("numbering %d, node %d: first QPN %#x outside [%#x, 1<<23)", tc.k, tc.node, b, qpnBase)
		case b != firstQPN(tc.k, tc.node):
			t.Errorf("numbering %d, node %d: first QPN not deterministic", tc.k, tc.node)
		}
	}
	if firstQPN(1, 0) == firstQPN(1, 1) || firstQPN(1, 0) == firstQPN(2, 0) {
		t.Errorf("bases do not vary: numbering 1 nodes 0/1 %#x %#x, numbering 2 node 0 %#x", firstQPN(1, 0), firstQPN(1, 1), firstQPN(2, 0))
	}
	misses := map[int64]bool{}
	var lookups int64 = -1
	for k := uint64(0); k < 6; k++ {
		c := mtCluster(t, Config{Nodes: 2, Seed: 1, SizeOnly: true, Profile: mtProfile(t, "fdr-cx3", nil), QPNumbering: k})
		if _, err := perftest.Run(c, perftest.Config{Test: "read_bw", Size: 32, Iters: 20, QPs: 64, Interleave: true}); err != nil {
			t.Fatalf("numbering %d: %v", k, err)
		}
		for i, n := range c.nodes {
			if want := firstQPN(k, i); n.nic.qps[0].qpn != want {
				t.Errorf("numbering %d node %d: first queue pair %#x, want %#x", k, i, n.nic.qps[0].qpn, want)
			}
			if err := checkCache(&n.nic.cache); err != nil {
				t.Errorf("numbering %d node %d: %v", k, i, err)
			}
		}
		st := c.Stats()
		if l := st.QPCacheHits + st.QPCacheMisses; lookups >= 0 && l != lookups {
			t.Errorf("numbering %d: %d lookups, numbering 0 had %d", k, l, lookups)
		} else {
			lookups = l
		}
		misses[st.QPCacheMisses] = true
	}
	if len(misses) < 2 {
		t.Errorf("six numberings give the same misses (%v): the numbering does not move the conflicts", misses)
	}
}

// TestRxMissBlocks: the two receive-pipeline behaviours on a context miss.
// With 256 queue pairs over a cache of 32, WRITEs arriving at the
// responder miss; overlapping (the default), the pipeline takes later
// packets while a context is fetched, and with rx_miss_blocks it waits,
// so the message rate falls; with every context cached (8 queue pairs)
// the two are the same.
func TestRxMissBlocks(t *testing.T) {
	rate := func(qps, blocks int) float64 {
		p := mtProfile(t, "fdr-cx3", func(p *Profile) {
			p.NIC.QPCacheEntries, p.NIC.QPCacheWays, p.NIC.RxMissBlocks = 32, 4, blocks
		})
		c := mtCluster(t, Config{Nodes: 2, Seed: 1, SizeOnly: true, Profile: p})
		r, err := perftest.Run(c, perftest.Config{Test: "write_bw", Size: 32, Iters: 40, QPs: qps, Interleave: true})
		if err != nil {
			t.Fatal(err)
		}
		return r.MsgRateMpps
	}
	over, block := rate(256, 0), rate(256, 1)
	t.Logf("256 QPs over 32 contexts: %.2f M/s overlapping, %.2f blocking", over, block)
	if !(block < 0.9*over) {
		t.Errorf("256 QPs over 32 contexts: %.2f M/s overlapping, %.2f blocking; want blocking clearly slower", over, block)
	}
	if over, block := rate(8, 0), rate(8, 1); over != block {
		t.Errorf("8 QPs, all cached: %.3f M/s overlapping, %.3f blocking; want the same", over, block)
	}
}

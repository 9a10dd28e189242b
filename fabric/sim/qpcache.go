package sim

import "github.com/rdmashuffle/rdmashuffle/fabric"

// qpCache is the NIC's cache of queue-pair contexts (the QPC part of the
// NIC's on-chip cache of host-resident state). A context that is not on
// the NIC must be fetched from host memory over PCIe before the NIC can
// use the queue pair; see docs/model.md §1, "QP-context cache".
//
// The cache is set-associative: a queue pair's number picks its set, and a
// miss in a full set replaces a way chosen at random (from a deterministic
// per-NIC generator, seeded by the node's number and not by the run's
// seed: docs/model.md, "The fits under other queue-pair numberings"),
// preferring one whose own fetch has completed. Random
// replacement, unlike a strict LRU, keeps part of a cyclic working set
// larger than the cache, so the rate declines gradually past the capacity
// instead of every access missing.
//
// Fetches are DMA reads: up to len(fetch) of them are in flight at once,
// each taking the miss cost. A queue pair whose fetch is under way is
// cached already; a second use waits for the same fetch (readyAt) rather
// than starting another.
//
// A qpCache belongs to one NIC and, like the rest of the simulator, runs on
// the engine's goroutine only.
type qpCache struct {
	ways int
	// The sets, each holding up to ways contexts: nsets of them, set s in
	// flat[s*ways:(s+1)*ways], its first count[s] ways in use (dense), or,
	// for a cache of more than denseSets sets, in sparse by number, as
	// they are first used (a NIC holds memory for the contexts in use,
	// not for every set of a large cache).
	nsets        int
	flat         []uint32 // queue-pair numbers (lookup finds the queue pair)
	count        []uint8
	sparse       map[int][]uint32
	lookup       func(qpn uint32) *qp // the NIC's queue pair of a number (nic.lookupQP)
	n            int                  // contexts cached
	fetch        []fabric.Time        // when each concurrent fetch slot is free
	miss         fabric.Duration
	rng          uint64 // xorshift64 state for victim choice
	hits, misses int64
}

// cacheLink is the part of a qp that belongs to its NIC's qpCache.
type cacheLink struct {
	readyAt fabric.Time // when the context is on the NIC (its fetch may be under way); qp.cached says whether it is cached
}

// newQPCache makes a cache of entries contexts in sets of ways (0, or more
// than entries: one fully associative set), with fetches concurrent
// context fetches (at least one) of miss each; seed varies the victims.
func newQPCache(entries, ways, fetches int, miss fabric.Duration, seed uint64) qpCache {
	entries = max(entries, 1)
	if ways <= 0 || ways > entries {
		ways = entries
	}
	c := qpCache{ways: ways, nsets: max(entries/ways, 1), fetch: make([]fabric.Time, max(fetches, 1)),
		miss: miss, rng: seed*0x9e3779b97f4a7c15 | 1}
	if c.nsets <= denseSets && ways <= maxDenseWays {
		c.flat, c.count = make([]uint32, c.nsets*ways), make([]uint8, c.nsets)
	} else {
		c.sparse = map[int][]uint32{}
	}
	return c
}

// denseSets is the most sets, and maxDenseWays the most ways, of a cache
// kept in one array (5 bytes per direct-mapped set: 20 KiB per NIC at
// most); a larger one keeps the sets in use in a map.
const (
	denseSets    = 4096
	maxDenseWays = 255 // a set's count is a byte
)

// set returns set s's contexts, by queue-pair number. Appending to it
// stays within the set's ways (setSet then records the new length).
func (c *qpCache) set(s int) []uint32 {
	if c.flat != nil {
		at := s * c.ways
		return c.flat[at : at+int(c.count[s]) : at+c.ways]
	}
	return c.sparse[s]
}

// setSet makes v, set(s) appended to or shortened, set s's contexts.
func (c *qpCache) setSet(s int, v []uint32) {
	if c.flat != nil {
		c.count[s] = uint8(len(v))
	} else {
		c.sparse[s] = v
	}
}

// capacity is the number of contexts the cache can hold.
func (c *qpCache) capacity() int { return c.ways * c.nsets }

// setOf hashes q's number to its set. The hash mixes all the number's
// bits, so queue pairs with consecutive numbers land in sets as if at
// random: some sets conflict before the cache is full, and the rate
// declines from below the capacity rather than at one point.
func (c *qpCache) setOf(q *qp) int {
	x := q.qpn
	x ^= x >> 16
	x *= 0x7feb352d
	x ^= x >> 15
	x *= 0x846ca68b
	x ^= x >> 16
	return int(x % uint32(c.nsets))
}

// touch records a use of q's context at time at. It returns when the
// context is on the NIC (at, on a hit whose fetch is done) and whether the
// use missed and started a fetch.
func (c *qpCache) touch(q *qp, at fabric.Time) (ready fabric.Time, miss bool) {
	if q.cached {
		c.hits++
		return max(at, q.cache.readyAt), false
	}
	c.misses++
	s := c.setOf(q)
	if len(c.set(s)) == c.ways {
		c.replace(s, at)
	}
	c.setSet(s, append(c.set(s), q.qpn))
	c.n++
	done := c.fetchAt(at)
	q.cached, q.cache.readyAt = true, done
	return done, true
}

// fetchAt reads one piece of host-resident state (a context, or a work
// request the NIC did not keep: wrCache) needed at time at, in the earliest free
// fetch slot, and returns when it is on the NIC.
func (c *qpCache) fetchAt(at fabric.Time) fabric.Time {
	slot := 0
	for i, f := range c.fetch {
		if f < c.fetch[slot] {
			slot = i
		}
	}
	done := max(at, c.fetch[slot]).Add(c.miss)
	c.fetch[slot] = done
	return done
}

// replace evicts a random way of set s, preferring one whose fetch has
// completed by at (evicting a context still on its way in would waste the
// fetch and could starve its queue pair).
func (c *qpCache) replace(s int, at fabric.Time) {
	set := c.set(s)
	c.rng ^= c.rng << 13
	c.rng ^= c.rng >> 7
	c.rng ^= c.rng << 17
	first := int(c.rng % uint64(len(set)))
	v := first
	for i := range set {
		if w := (first + i) % len(set); c.lookup(set[w]).cache.readyAt <= at {
			v = w
			break
		}
	}
	c.drop(s, v)
}

// drop removes way w of set s.
func (c *qpCache) drop(s, w int) {
	set := c.set(s)
	c.lookup(set[w]).cached = false
	last := len(set) - 1
	set[w], set[last] = set[last], 0
	c.setSet(s, set[:last])
	c.n--
}

// evict drops q (destroyed or reset).
func (c *qpCache) evict(q *qp) {
	if !q.cached {
		return
	}
	s := c.setOf(q)
	for w, e := range c.set(s) {
		if e == q.qpn {
			c.drop(s, w)
			return
		}
	}
}

package sim

import "github.com/rdmashuffle/rdmashuffle/fabric"

// The NIC's translation and protection caches (docs/model.md §1, "Address
// translation"). Every DMA the NIC makes on behalf of a memory region needs
// the region's protection entry (MPT: key, access, bounds and where its
// page list lives) and the translations of the 4 KiB pages it touches (MTT:
// one 8-byte entry per page, mlx5's struct mlx5_mtt). The NIC caches both;
// on a miss it reads the entry from host memory over PCIe. MTT entries are
// fetched a 64-byte line at a time, eight consecutive pages of one region,
// so the cache below holds lines. A lookup that misses the MPT and then
// the MTT waits for two round trips (the MPT says where the MTT is); the
// lines of one lookup are read in parallel, one round trip for all.

// mttLinePages is the number of page translations in one 64-byte MTT read
// (8-byte entries).
const mttLinePages = 8

// lru is a least-recently-used set of uint64 keys of fixed capacity: an
// index from key to slot and a doubly linked list through the slots, most
// recent first. Only lookups go through the map, never iteration, so its
// behaviour is deterministic.
type lru struct {
	cap    int
	idx    map[uint64]int32
	nodes  []lruNode
	head   int32 // most recently used, -1 if empty
	tail   int32 // least recently used, -1 if empty
	free   []int32
	hits   int64
	misses int64
}

type lruNode struct {
	key        uint64
	prev, next int32
}

func newLRU(capacity int) lru {
	return lru{cap: capacity, idx: make(map[uint64]int32), head: -1, tail: -1}
}

// touch records a use of k and reports whether it missed; a miss inserts
// k, evicting the least recently used key when the set is full.
func (c *lru) touch(k uint64) (miss bool) {
	if c.use(k) {
		c.hits++
		return false
	}
	c.misses++
	return true
}

// use makes k the most recently used key, inserting it if absent, and
// reports whether it was present. It counts nothing (registration warms
// the cache through it).
func (c *lru) use(k uint64) (present bool) {
	if c.cap <= 0 {
		return false
	}
	if i, ok := c.idx[k]; ok {
		if c.head != i {
			c.unlink(i)
			c.pushFront(i)
		}
		return true
	}
	var i int32
	switch {
	case len(c.idx) == c.cap:
		i = c.tail
		c.unlink(i)
		delete(c.idx, c.nodes[i].key)
	case len(c.free) > 0:
		i = c.free[len(c.free)-1]
		c.free = c.free[:len(c.free)-1]
	default:
		c.nodes = append(c.nodes, lruNode{})
		i = int32(len(c.nodes) - 1)
	}
	c.nodes[i].key = k
	c.idx[k] = i
	c.pushFront(i)
	return false
}

// drop removes every key for which gone is true, walking from the most
// recently used end.
func (c *lru) drop(gone func(uint64) bool) {
	for i := c.head; i >= 0; {
		next := c.nodes[i].next
		if gone(c.nodes[i].key) {
			c.unlink(i)
			delete(c.idx, c.nodes[i].key)
			c.free = append(c.free, i)
		}
		i = next
	}
}

// keys lists the keys from most to least recently used (tests).
func (c *lru) keys() []uint64 {
	var out []uint64
	for i := c.head; i >= 0; i = c.nodes[i].next {
		out = append(out, c.nodes[i].key)
	}
	return out
}

func (c *lru) pushFront(i int32) {
	c.nodes[i].prev, c.nodes[i].next = -1, c.head
	if c.head >= 0 {
		c.nodes[c.head].prev = i
	}
	c.head = i
	if c.tail < 0 {
		c.tail = i
	}
}

func (c *lru) unlink(i int32) {
	n := &c.nodes[i]
	if n.prev >= 0 {
		c.nodes[n.prev].next = n.next
	} else {
		c.head = n.next
	}
	if n.next >= 0 {
		c.nodes[n.next].prev = n.prev
	} else {
		c.tail = n.prev
	}
	n.prev, n.next = -1, -1
}

// tpt is a NIC's translation and protection caches and the engine that
// fetches their misses, one at a time.
type tpt struct {
	on    bool
	mpt   lru // memory-region keys
	mtt   lru // (region key, line) pairs
	rtt   fabric.Duration
	free  fabric.Time // the fetch engine is busy until
	stall int64       // lookups that waited for a fetch
}

func newTPT(p *Profile) tpt {
	return tpt{on: p.NIC.MTTCacheEntries > 0, rtt: ns(p.PCIe.RTTNS),
		mpt: newLRU(p.NIC.MPTCacheEntries), mtt: newLRU(p.NIC.MTTCacheEntries / mttLinePages)}
}

func mttKey(m *mr, line uint64) uint64 { return uint64(m.Key)<<32 | line&(1<<32-1) }

// lines returns the first and last MTT line of [addr, addr+n) in m, and
// false when the range is empty or not inside the region (the access
// check fails elsewhere; no translation is charged for it).
func (m *mr) lines(addr uint64, n int) (first, last uint64, ok bool) {
	if m == nil || n <= 0 {
		return 0, 0, false
	}
	if _, ok := m.offset(addr, uint64(n)); !ok {
		return 0, 0, false
	}
	base := m.Base / pageSize
	return (addr/pageSize - base) / mttLinePages, ((addr+uint64(n)-1)/pageSize - base) / mttLinePages, true
}

// translate returns when the translations of [addr, addr+n) in m are on
// the NIC, for a lookup at time at: at once when the caches hold them,
// else after one fetch round trip for the MPT and one for the MTT lines,
// as each missed, on the NIC's fetch engine (one fetch at a time).
func (n *nic) translate(m *mr, addr uint64, length int, at fabric.Time) fabric.Time {
	t := &n.tpt
	if !t.on {
		return at
	}
	first, last, ok := m.lines(addr, length)
	if !ok {
		return at
	}
	trips := 0
	if t.mpt.touch(uint64(m.Key)) {
		trips++
	}
	mttMiss := false
	for l := first; l <= last; l++ {
		if t.mtt.touch(mttKey(m, l)) {
			mttMiss = true
		}
	}
	if mttMiss {
		trips++
	}
	if trips == 0 {
		return at
	}
	t.stall++
	t.free = max(t.free, at).Add(t.rtt * fabric.Duration(trips))
	return t.free
}

// warm puts a newly registered region in the caches: registration writes
// its MPT entry and page list through the NIC's command interface, so the
// NIC holds them afterwards (E). Only the lines that would survive are
// inserted; nothing is counted.
func (n *nic) warm(m *mr) {
	t := &n.tpt
	if !t.on {
		return
	}
	t.mpt.use(uint64(m.Key))
	lines := (uint64(len(m.buf)) + pageSize*mttLinePages - 1) / (pageSize * mttLinePages)
	from := uint64(0)
	if c := uint64(t.mtt.cap); lines > c {
		from = lines - c
	}
	for l := from; l < lines; l++ {
		t.mtt.use(mttKey(m, l))
	}
}

// forget drops a deregistered region's entries.
func (n *nic) forget(m *mr) {
	t := &n.tpt
	if !t.on {
		return
	}
	k := uint64(m.Key)
	t.mpt.drop(func(x uint64) bool { return x == k })
	t.mtt.drop(func(x uint64) bool { return x>>32 == k })
}

// rxTarget returns the region and address where the receive pipeline will
// write p's payload, as the NIC can tell when p arrives: an RDMA Write's
// first packet names it (rkey and address), later packets continue it; a
// send goes to the next receive the pipeline has not yet given to an
// earlier message (UD: after the 40-byte GRH); a read response goes to the
// local buffer of the read it answers. It returns nil when p carries no
// payload or the target is unknown or invalid (the access check that fails
// on delivery charges nothing here).
func (q *qp) rxTarget(p *packet) (*mr, uint64) {
	if !q.nic.tpt.on {
		return nil, 0
	}
	if q.rx == nil {
		q.rx = &rxState{}
	}
	rx := q.rx
	nextRecv := func() (*rqe, bool) {
		if s := q.srq; s != nil || q.typ == fabric.XRCRecv {
			if q.typ == fabric.XRCRecv {
				if s = q.nic.srqNumbered(p.qkey); s == nil {
					return nil, false
				}
			}
			e := s.peek()
			return e, e != nil && !e.has(rqeBad) && e.mr != 0
		}
		i := max(rx.seen, q.rqHead)
		if i >= q.rqTail {
			return nil, false
		}
		rx.seen = i + 1
		e := q.rqPeek(i)
		return e, !e.has(rqeBad) && e.mr != 0
	}
	var cur *rxCursor
	switch p.op {
	case pWrite:
		cur = &rx.write
		if p.first {
			rx.write = rxCursor{}
			if m := q.nic.lookupMR(p.rkey); m != nil {
				rx.write = rxCursor{m, p.raddr}
			}
		}
		if p.last && p.hasImm {
			nextRecv() // the immediate takes a receive (no payload goes there)
		}
	case pSend:
		cur = &rx.send
		if p.first || q.typ == fabric.UD {
			rx.send = rxCursor{}
			if e, ok := nextRecv(); ok {
				m := e.region(q.nic)
				rx.send = rxCursor{m, m.Base + e.off()}
				if q.typ == fabric.UD {
					rx.send.addr += fabric.GRHBytes
				}
			}
		}
	case pReadResp:
		for i := q.sqHead; i < q.sqTx; i++ {
			e := q.sqAt(i)
			if d := p.psn.Sub(e.psn); e.wr.Op == fabric.OpRead && d >= 0 && d < int32(e.npkts) {
				if e.mr == nil {
					return nil, 0
				}
				return e.mr, e.wr.Local.Addr + uint64(d)*uint64(q.mtu)
			}
		}
		return nil, 0
	default:
		return nil, 0
	}
	m, addr := cur.mr, cur.addr
	cur.addr += uint64(p.n)
	if m == nil || p.n == 0 {
		return nil, 0
	}
	return m, addr
}

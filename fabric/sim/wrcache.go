package sim

import "github.com/rdmashuffle/rdmashuffle/fabric"

// wrCache is the NIC's cache of outstanding send work requests: the state
// a requester keeps for a reliable work request from the time it processes
// the request (it reads the WQE at the doorbell) until the request
// completes, so that an ACK can retire it and a read response can be
// scattered into its buffers. A request processed while the cache is full
// is not kept (the ones held stay until they complete, so the kept
// fraction, and with it the rate, falls gradually as more are
// outstanding); an ACK or read response for a request not kept waits in
// the receive pipeline while the request is read again from host memory,
// through the same fetch slots as queue-pair contexts (qpCache.fetchAt:
// both are the NIC's cache of host-resident state). See docs/model.md,
// "Outstanding work-request cache".
//
// Keys are a queue pair's number and the request's position in its send
// queue (low 32 bits), so a destroyed queue pair's requests hold no
// pointer; forget drops them. A wrCache with no capacity is off: every
// method is then a no-op.
//
// A wrCache belongs to one NIC and runs on the engine's goroutine only.
type wrCache struct {
	capacity     int
	held         int             // requests kept on the NIC
	where        map[uint64]bool // outstanding requests: kept on the NIC or not
	hits, misses int64
}

// newWRCache makes a cache of entries requests (0 or less: off).
func newWRCache(entries int) wrCache {
	if entries <= 0 {
		return wrCache{}
	}
	return wrCache{capacity: entries, where: make(map[uint64]bool)}
}

func wrKey(qpn uint32, i uint64) uint64 { return uint64(qpn)<<32 | i&0xffffffff }

// on reports whether the cache is modelled.
func (c *wrCache) on() bool { return c.capacity > 0 }

// insert records a request the NIC has just processed.
func (c *wrCache) insert(k uint64) {
	if !c.on() || c.where[k] {
		return // off, or a retransmission's request is still kept
	}
	kept := c.held < c.capacity // full: not kept, read again when needed
	c.where[k] = kept
	if kept {
		c.held++
	}
}

// retire is the use of request k by its ACK or read response, which
// completes it: it reports whether the request was not kept (the NIC
// must read it again). A key that is not outstanding (a duplicate ACK, a
// request posted before the cache knew it) costs nothing.
func (c *wrCache) retire(k uint64) (miss bool) {
	if !c.on() {
		return false
	}
	kept, ok := c.where[k]
	if !ok {
		return false
	}
	c.forgetKey(k, kept)
	if !kept {
		c.misses++
		return true
	}
	c.hits++
	return false
}

// forgetKey drops outstanding request k.
func (c *wrCache) forgetKey(k uint64, kept bool) {
	delete(c.where, k)
	if kept {
		c.held--
	}
}

// drop forgets request k, which needs no more state on the NIC.
func (c *wrCache) drop(k uint64) {
	if !c.on() {
		return
	}
	if kept, ok := c.where[k]; ok {
		c.forgetKey(k, kept)
	}
}

// forget drops every request of queue pair qpn (destroyed, reset or in
// error).
func (c *wrCache) forget(qpn uint32) {
	if !c.on() {
		return
	}
	for k, kept := range c.where {
		if uint32(k>>32) == qpn {
			c.forgetKey(k, kept)
		}
	}
}

// holdWR records, in its NIC's wrCache, send work request i of q (an RC
// queue pair), which the NIC has just processed: the NIC holds its state
// until its ACK or read response. An RDMA Read is taken up only while
// fewer than max_rd_atomic of the queue pair's reads are held: the NIC
// stops reading a queue pair's requests at a read it may not issue yet,
// and takes the read up when an earlier one's response arrives.
func (q *qp) holdWR(i uint64, e *sqe) {
	if e.wr.Op == fabric.OpRead {
		if q.rdHeld >= max(q.attr.MaxRdAtomic, 1) {
			return
		}
		e.rdHeld = true
		q.rdHeld++
	}
	q.nic.wrc.insert(wrKey(q.qpn, i))
}

// retiresUncached looks up, in its NIC's wrCache, the send work requests
// that p (arriving at q, the requester) completes: the read a first read
// response answers, or the requests an ACK acknowledges. It reports
// whether one of them was not kept, so that the receive pipeline
// fetches it before p can be handled.
func (q *qp) retiresUncached(p *packet) bool {
	c := &q.nic.wrc
	miss := false
	switch p.op {
	case pReadResp:
		if !p.first {
			return false
		}
		for i := q.sqHead; i < q.sqTx; i++ {
			if e := q.sqAt(i); e.wr.Op == fabric.OpRead && e.psn == p.psn {
				miss = c.retire(wrKey(q.qpn, i))
				if e.rdHeld {
					// Its slot goes to the next read the NIC has not
					// taken up yet.
					e.rdHeld = false
					q.rdHeld--
					for j := i + 1; j < q.sqVisible; j++ {
						if f := q.sqAt(j); f.wr.Op == fabric.OpRead && !f.rdHeld {
							q.holdWR(j, f)
							break
						}
					}
				}
				return miss
			}
		}
	case pAck:
		for i := q.sqHead; i < q.sqTx; i++ {
			e := q.sqAt(i)
			if p.psn.Sub(e.psn.Add(max(e.npkts, 1)-1)) < 0 {
				break
			}
			if e.wr.Op != fabric.OpRead && c.retire(wrKey(q.qpn, i)) {
				miss = true
			}
		}
	}
	return miss
}

package sim

import (
	"unsafe"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// nic is a node's network adapter. It owns the node's queue pairs and
// memory regions, and one transmit engine that serves queue pairs with
// something to send in round-robin order, one packet at a time, as fast as
// the uplink allows.
type nic struct {
	c    *Cluster
	node *node

	qps      []*qp  // by qpn - firstQPN
	firstQPN uint32 // the number of the NIC's first queue pair (Config.QPNumbering)
	liveQPs  int    // queue pairs created and not destroyed (nic.max_qp)
	srqs     []*srq // shared receive queues, in creation order (number - 1)
	nextXRCD int
	tgts     map[*qp]*xrcTarget // XRC target queue pairs' state (xrc.go)
	dcs      map[*qp]any        // DC queue pairs' state: *dcInit or *dcTarget (dc.go)
	mrs      []*mr              // by key>>8 - 1 (mr.num), deregistered ones too (dead: a posted receive may still name one)
	nextAddr uint64

	ready       fifo[*qp] // queue pairs with output
	stepPending bool
	inStep      bool        // handle is running: kick must not re-enter it
	stepAt      fabric.Time // when the queued step fires
	txLat       fabric.Duration

	// Performance model.
	cache         qpCache         // queue-pair contexts on the NIC
	wrc           wrCache         // outstanding send work requests on the NIC
	tpt           tpt             // memory-region translation and protection caches
	puFree        []fabric.Time   // when each processing unit is free
	wqeCost       fabric.Duration // processing one work request
	pcieRFree     fabric.Time     // DMA reads (payload fetch) are busy until
	rxFree        fabric.Time     // the receive pipeline is busy until
	creditBlocked bool            // the uplink has no credit; the switch wakes us
	upIn          *swIn           // the switch input buffer the uplink feeds (network.linkNICs)
	up            *port           // the uplink
	maxBlocks     int             // credit needed before sending any packet
	rxPkt         fabric.Duration // the receive pipeline's least time per packet
	rxMissBlocks  bool            // a packet waiting for a fetch holds the pipeline (NIC.RxMissBlocks)
	readReq       int             // payload read request size (PCIe.ReadRequestBytes)
	oooWindow     int32           // RC packets taken up to this many PSNs ahead of a gap (NIC.OOOWindow; 0: none)
	pcieNS        float64         // ns per byte of DMA
	dbs           *doorbells      // the context's doorbell registers when shared (host.shared_doorbells; nil: one per thread)
	use           nicUse          // what the NIC's units were busy with (Cluster.Usage)
}

// nicUse is the time a NIC's units spent working and waiting.
type nicUse struct {
	units     []fabric.Duration // each processing unit's time processing work requests
	unitsWait []fabric.Duration // each unit's time held waiting for a context or translation fetch
	rx        fabric.Duration   // the receive pipeline moving packets to host memory
	pcieRead  fabric.Duration   // DMA reads of payload
}

const (
	qpnBase  = 0x100 // the first queue-pair number under numbering 0
	addrBase = 0x7f0000000000
	pageSize = 4096
)

const evStep uint64 = 1

func newNIC(c *Cluster, n *node) *nic {
	p := c.prof
	nc := &nic{c: c, node: n, nextAddr: addrBase + uint64(n.id)<<36, txLat: ns(p.NIC.TxLatencyNS),
		cache:   newQPCache(p.NIC.QPCacheEntries, p.NIC.QPCacheWays, p.NIC.QPCacheFetches, ns(p.NIC.QPCacheMissNS), uint64(n.id)+1),
		wrc:     newWRCache(p.NIC.WRCacheEntries),
		puFree:  make([]fabric.Time, p.NIC.ProcessingUnits),
		wqeCost: ns(p.NIC.WQENS), maxBlocks: maxPacketBlocks(p), tpt: newTPT(p),
		rxPkt: ns(p.NIC.RxPacketNS), pcieNS: 1 / p.PCIe.GBps, rxMissBlocks: p.NIC.RxMissBlocks == 1, readReq: p.PCIe.ReadRequestBytes,
		oooWindow: int32(p.NIC.OOOWindow), dbs: newDoorbells(p)}
	nc.use.units, nc.use.unitsWait = make([]fabric.Duration, len(nc.puFree)), make([]fabric.Duration, len(nc.puFree))
	nc.cache.lookup = nc.lookupQP
	nc.firstQPN = firstQPN(c.cfg.QPNumbering, n.id)
	return nc
}

// firstQPN is the number of node's first queue pair under numbering k
// (Config.QPNumbering): qpnBase under numbering 0, otherwise a base drawn
// from k and node in [qpnBase, 1<<23), which leaves at least 2^23 numbers
// for the NIC's queue pairs within the 24-bit field.
func firstQPN(k uint64, node int) uint32 {
	if k == 0 {
		return qpnBase
	}
	x := k*0x9e3779b97f4a7c15 ^ uint64(node)<<32 ^ 0x51ed27
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	x ^= x >> 31
	return qpnBase + uint32(x%(1<<23-qpnBase))
}

// creditReturned tells a NIC waiting for uplink credit when some returns.
func (n *nic) creditReturned(at fabric.Time) {
	if n.creditBlocked { // small enough to inline: most returns find the NIC sending
		n.creditWake(at)
	}
}

func (n *nic) creditWake(at fabric.Time) {
	// Returns can arrive out of order (the switch drains per output), so an
	// earlier one may come after a later step was queued: queue another.
	if !n.stepPending || at < n.stepAt {
		n.stepPending, n.stepAt = true, at
		n.c.schedule(at, n, evStep, nil)
	}
}

// contextAt returns when q's context is on the NIC for a use at time at:
// at once on a hit, later on a miss or while the context's fetch is under
// way (qpCache). Fetches overlap up to the profile's qp_cache_fetches, so
// a NIC that thrashes its cache is limited to about that many operations
// per fetch time, shared by the send and receive sides.
func (n *nic) contextAt(q *qp, at fabric.Time) fabric.Time {
	t, _ := n.cache.touch(q, at)
	return t
}

// respondAt returns when the transmit side can start answering an RDMA
// Read on q that arrived now: it looks q's context up again (contextAt)
// and, like a work request, takes q's processing unit for the profile's
// per-request time, since building the responses is the work of a send.
func (n *nic) respondAt(q *qp) fabric.Time {
	u := int(q.qpn) % len(n.puFree)
	pu := &n.puFree[u]
	free := max(*pu, n.c.now)
	at := n.contextAt(q, free)
	*pu = at.Add(n.wqeCost)
	n.use.units[u] += n.wqeCost
	n.use.unitsWait[u] += at.Sub(free)
	return *pu
}

// dmaRead fetches bytes of payload over PCIe, starting no earlier than
// notBefore (when the data became available); reads are serialized, and a
// read may run ahead of the link (the NIC prefetches). It returns when the
// data is on the NIC.
func (n *nic) dmaRead(bytes int, notBefore fabric.Time) fabric.Time {
	start := max(n.pcieRFree, notBefore)
	d := fabric.Duration(float64(bytes)*n.pcieNS*1000 + 0.5)
	n.pcieRFree = start.Add(d)
	n.use.pcieRead += d
	return n.pcieRFree
}

// fetchBytes is how many bytes of a message of length bytes the NIC
// reads from host memory before it sends the packet of n bytes at offset
// off, when it reads in requests of unit bytes and a packet waits for the
// whole request that holds its last byte: from where the requests of the
// packets before it ended (resent: from off, the NIC reading again what it
// sends again) to the end of that request. A unit of 0 or 1 is the
// packet's own bytes.
func fetchBytes(off, n, length, unit int, resent bool) int {
	if unit <= 1 {
		return n
	}
	end := min(length, (off+n+unit-1)/unit*unit)
	done := off
	if !resent {
		done = min(length, (off+unit-1)/unit*unit)
	}
	return max(end-done, 0)
}

// fetchPayload returns when the payload of the packet of n bytes at off in
// a message of length bytes is on the NIC (resent: the first packet sent
// again after a rewind, fetchBytes). *at is when the message's data could
// first be fetched; once a read request covers later packets too, it
// becomes that request's completion, which those packets then wait for.
func (n *nic) fetchPayload(off, bytes, length int, resent bool, at *fabric.Time) fabric.Time {
	k := fetchBytes(off, bytes, length, n.readReq, resent)
	if k == 0 {
		return *at
	}
	done := n.dmaRead(k, *at)
	if k > bytes {
		*at = done
	}
	return done
}

// alignedBytes returns n zero bytes whose first is aligned to
// fabric.MRAlign, with cap n (the checker finds a slice's offset in its
// region from the caps).
func alignedBytes(n int) []byte {
	b := make([]byte, n+fabric.MRAlign-1)
	pad := (fabric.MRAlign - int(uintptr(unsafe.Pointer(unsafe.SliceData(b)))%fabric.MRAlign)) % fabric.MRAlign
	return b[pad : pad+n : pad+n]
}

func (n *nic) newMR(p *pd, length int, access fabric.Access) *mr {
	idx := len(n.mrs) + 1
	key := uint32(idx)<<8 | uint32(idx*151+n.node.id*7)&0xff
	m := &mr{sigbase: sigbase{c: n.c}, Region: fabric.Region{Node: n.node.id, Key: key, Base: n.nextAddr, Access: access, Domain: &p.Domain}, nic: n, pd: p}
	if n.c.cfg.SizeOnly {
		m.buf, m.zero = zeroView(length)
	} else {
		m.buf = m.newRegionBytes(length)
	}
	n.nextAddr += (uint64(length) + 2*pageSize - 1) / pageSize * pageSize // a guard page between regions
	n.mrs = append(n.mrs, m)
	n.warm(m)
	return m
}

// lookupMR returns the live region with key, or nil.
func (n *nic) lookupMR(key uint32) *mr {
	i := int(key>>8) - 1
	if i < 0 || i >= len(n.mrs) {
		return nil
	}
	m := n.mrs[i]
	if m.Key != key || m.Dead() {
		return nil
	}
	return m
}

// localBuf resolves a local SGE for pd with the access needed; ok is false
// on a protection error.
func (n *nic) localBuf(p *pd, s fabric.SGE, need fabric.Access) (*mr, []byte, bool) {
	if s.Length == 0 {
		return nil, nil, true
	}
	m := n.lookupMR(s.LKey)
	if m == nil || m.pd != p || m.Access&need != need {
		return nil, nil, false
	}
	off, ok := m.offset(s.Addr, uint64(s.Length))
	if !ok {
		return nil, nil, false
	}
	return m, m.buf[off : off+uint64(s.Length)], true
}

// findByAddr finds the region containing [addr, addr+n) (inline sends name
// memory by address only).
func (n *nic) findByAddr(addr uint64, length int) []byte {
	for _, m := range n.mrs {
		if m.Dead() {
			continue
		}
		if off, ok := m.offset(addr, uint64(length)); ok {
			return m.buf[off : off+uint64(length)]
		}
	}
	return nil
}

// remoteBuf resolves an incoming RDMA access; nil on any violation.
func (n *nic) remoteBuf(q *qp, rkey uint32, addr uint64, length uint32, need fabric.Access) (*mr, []byte) {
	m := n.lookupMR(rkey)
	if m == nil || m.pd != q.pd || m.Access&need != need || q.attr.Access&need != need {
		return nil, nil
	}
	off, ok := m.offset(addr, uint64(length))
	if !ok {
		return nil, nil
	}
	return m, m.buf[off : off+uint64(length)]
}

func (n *nic) lookupQP(qpn uint32) *qp {
	i := int(qpn) - int(n.firstQPN)
	if i < 0 || i >= len(n.qps) {
		return nil
	}
	return n.qps[i]
}

// activate puts q on the transmit ring if it has output, and makes sure the
// transmit engine will run.
func (n *nic) activate(q *qp) {
	if q.inReady || !q.hasOutput() {
		return
	}
	q.inReady = true
	n.ready.push(q)
	n.kick()
}

func (n *nic) kick() {
	if n.stepPending && n.creditBlocked && n.c.net.vls > 1 && n.stepAt > n.c.now && !n.inStep {
		// Waiting for one lane's credit: a queue pair that has just become
		// ready may be on a lane that has credit now.
		n.stepAt = max(n.c.now, n.c.net.up[n.node.id].freeAt)
		n.c.schedule(n.stepAt, n, evStep, nil)
		return
	}
	if n.stepPending || n.inStep {
		return
	}
	n.stepPending = true
	at := n.c.now
	if f := n.up.freeAt; f > at {
		at = f
		n.stepAt = at
	} else {
		// The link is idle: transmit now rather than through an event.
		n.handle(evStep, nil)
		return
	}
	n.c.schedule(at, n, evStep, nil)
}

func (n *nic) handle(_ uint64, _ *packet) {
	n.stepPending = false
	now := n.c.now
	// inStep is set where a queue pair's calls could kick the engine (no
	// defer: a panic here ends the run).
	if n.c.net.vls > 1 {
		n.inStep = true
		n.stepVL(now)
		n.inStep = false
		return
	}
	cr := &n.upIn.cr
	if cr.avail(now) < n.maxBlocks {
		// No room in the switch's input buffer: wait for credit.
		n.creditBlocked = true
		if t, ok := cr.next(); ok {
			n.stepPending, n.stepAt = true, t
			n.c.schedule(t, n, evStep, nil)
		}
		return
	}
	n.creditBlocked = false
	n.inStep = true
	for n.ready.len() > 0 {
		q := n.ready.pop()
		q.inReady = false
		if at := q.gate(now); at > now {
			q.readyAt(at) // its work request is still being processed
			continue
		}
		if q.readsPending() && q.rd.reads[q.rd.head].at > now {
			q.readyAt(q.rd.reads[q.rd.head].at) // see notYet
			continue
		}
		if n.send(q, now) {
			break
		}
	}
	n.inStep = false
	if n.ready.len() == 0 {
		return
	}
	n.kick()
}

// accept takes a packet whose last bit reaches the NIC at arrive into the
// receive pipeline and returns when the pipeline has moved it on (its
// receive-buffer credit can go back then).
//
// The receive pipeline takes one packet at a time, in arrival order, once
// its last bit is in (store-and-forward), and writes its payload to host
// memory at PCIe speed; data and completion are visible rx_latency_ns
// after that write. A packet whose queue-pair context or translation is
// not on the NIC waits for its fetch in the receive buffer (holding its
// credit) while the pipeline goes on with later packets: fetches overlap
// (qpCache), and delivery stays in order on the port (network.toPort), so
// a queue pair's packets are never reordered. With the profile's
// rx_miss_blocks the pipeline instead waits for the fetch before it takes
// the packet, and every later packet waits with it (no source says which a
// ConnectX does: the two are a mechanism control of the sensitivity
// analysis). docs/model.md §1, "NIC receive side" and "QP-context cache".
func (n *nic) accept(p *packet, arrive fabric.Time) fabric.Time {
	start := max(arrive, n.rxFree)
	ready := start
	if q := n.lookupQP(p.dstQPN); q != nil {
		ready = n.contextAt(q, start)
		if n.wrc.on() && q.retiresUncached(p) {
			ready = n.cache.fetchAt(ready)
		}
		if n.tpt.on { // rxTarget's own first test, asked here without the call
			if m, addr := q.rxTarget(p); m != nil {
				ready = n.translate(m, addr, p.n, ready)
			}
		}
	}
	svc := max(n.rxPkt, fabric.Duration(float64(p.n)*n.pcieNS*1000+0.5))
	if n.rxMissBlocks {
		start = ready
	}
	n.rxFree = start.Add(svc)
	n.use.rx += svc
	return ready.Add(svc)
}

// notYet reports whether q cannot send at now, and has it come back to
// the transmit ring when it can: its work request is still being
// processed, or a read response waits for its context and translations
// (without holding the link for the others).
func (n *nic) notYet(q *qp, now fabric.Time) bool {
	if at := q.gate(now); at > now {
		q.readyAt(at)
		return true
	}
	if q.readsPending() && q.rd.reads[q.rd.head].at > now {
		q.readyAt(q.rd.reads[q.rd.head].at)
		return true
	}
	return false
}

// send puts q's next packet on the uplink once its payload is fetched,
// and puts q back on the ring if it has more; false when it had none.
func (n *nic) send(q *qp, now fabric.Time) bool {
	p := q.nextPacket()
	if p == nil {
		return false
	}
	dma := now
	if p.n > 0 && !p.noDMA {
		dma = p.dataAt // nextPacket fetched the payload (fetchPayload)
	}
	free := n.c.net.transmit(p, dma)
	q.sent(free)
	if q.hasOutput() {
		q.inReady = true
		n.ready.push(q)
	}
	return true
}

// receive hands an arriving packet to its queue pair.
func (n *nic) receive(p *packet) {
	q := n.lookupQP(p.dstQPN)
	switch {
	case q == nil || q.destroyed || q.state == fabric.StateReset || q.state == fabric.StateInit:
		if p.qpType == fabric.UD {
			n.c.stats.UDDropsNoRecv++
		}
	case q.state == fabric.StateError:
	case !peers(q.typ, p.qpType):
	case q.typ.DC():
		n.dcReceive(q, p)
	case q.typ != fabric.UD && (p.src != int(q.destNode) || p.srcQPN != q.attr.DestQPN):
		// not from the connected peer: silently dropped, as on hardware
	default:
		q.receive(p)
		n.activate(q) // an ACK or response may have opened the send window
	}
	n.c.freePacket(p)
}

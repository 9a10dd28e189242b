package sim

import "github.com/rdmashuffle/rdmashuffle/fabric"

// swtch is the single switch: input-buffered with virtual output queues,
// one data virtual lane, link-level credit flow control on every link.
//
// A NIC may put a packet on its uplink only while the switch input buffer
// at the other end has room for it (credits, in 64-byte blocks); the buffer
// is shared by all destinations. Inside, packets wait per output (so a
// packet for an idle output never waits behind one for a busy output), and
// each output serves the inputs that have packets for it in round-robin
// order. An output sends only while the destination NIC's receive buffer
// has room, and that buffer drains at the pace of the NIC's receive
// pipeline. So an oversubscribed output fills the input buffers that feed
// it; once an input buffer is full its uplink stops for every destination
// (head-of-line blocking across the link, InfiniBand's congestion
// spreading), and the stall propagates to the senders: incast and
// all-to-all contention emerge from buffers and credits, not from a factor.
type swtch struct {
	in  []swIn
	out []swOut
	// work lists outputs to serve; handled iteratively so that one
	// departure freeing the next head does not recurse.
	work []int
}

// swIn is one input port's buffer (fed by one node's uplink), kept as one
// queue per output.
type swIn struct {
	voq []fifo[*packet] // by output port; allocated on first use
	cr  credits         // the upstream NIC's view of this buffer
}

// swOut is one output port (to one node's downlink).
type swOut struct {
	freeAt  fabric.Time
	waiting fifo[int]   // inputs with packets for this port, in round-robin order
	queued  bool        // in swtch.work
	evAt    fabric.Time // pending wake-up, 0 if none
	cr      credits     // the destination NIC's receive buffer
}

func newSwitch(nodes int, p *Profile) swtch {
	s := swtch{in: make([]swIn, nodes), out: make([]swOut, nodes)}
	for i := range s.in {
		s.in[i].cr = newCredits(p.Switch.InputBufferBytes)
		s.out[i].cr = newCredits(p.NIC.RxBufferBytes)
	}
	return s
}

// maxPacketBlocks is the credit a NIC needs before it may send any packet.
func maxPacketBlocks(p *Profile) int { return blocksOf(p.Link.MTU + maxHeaderBytes) }

// transmit puts p on its source node's uplink no earlier than notBefore
// (its payload's DMA) and no earlier than the uplink is free. The caller
// has checked the uplink's credits. It returns when the link is free again.
func (n *network) transmit(p *packet, notBefore fabric.Time) fabric.Time {
	c := n.c
	up := &n.up[p.src]
	start := max(c.now, up.freeAt, notBefore)
	ser := n.serialization(p.wire)
	up.freeAt = start.Add(ser)
	c.stats.PacketsSent++
	c.stats.WireBytes += int64(p.wire)
	b := blocksOf(p.wire)
	in := &n.sw.in[p.src]
	in.cr.take(b)
	if up.faults.any() && n.lossy(up, p) {
		in.cr.give(up.freeAt.Add(n.prop), b) // never reached the buffer
		return up.freeAt
	}
	// Cut-through: the switch can forward once the header has arrived.
	c.schedule(start.Add(n.prop+n.swLat), n, evSwitch, p)
	return up.freeAt
}

// arrive queues a packet in its input buffer.
func (n *network) arrive(p *packet) {
	in := &n.sw.in[p.src]
	if in.voq == nil {
		in.voq = make([]fifo[*packet], len(n.sw.out))
	}
	v := &in.voq[p.dst]
	v.push(p)
	if v.len() == 1 {
		n.request(p.dst, p.src)
	}
	n.drain()
}

// request makes input i a contender for output o.
func (n *network) request(o, i int) {
	out := &n.sw.out[o]
	out.waiting.push(i)
	n.enqueue(o)
}

func (n *network) enqueue(o int) {
	if out := &n.sw.out[o]; !out.queued {
		out.queued = true
		n.sw.work = append(n.sw.work, o)
	}
}

// drain serves every output with pending work.
func (n *network) drain() {
	for len(n.sw.work) > 0 {
		o := n.sw.work[len(n.sw.work)-1]
		n.sw.work = n.sw.work[:len(n.sw.work)-1]
		n.sw.out[o].queued = false
		n.serve(o)
	}
}

// serve sends from output o while it is free, has contenders and has
// credit at the destination NIC.
func (n *network) serve(o int) {
	c := n.c
	out := &n.sw.out[o]
	for out.waiting.len() > 0 {
		if out.freeAt > c.now {
			n.wakeOut(o, out.freeAt)
			break
		}
		i := out.waiting.peek()
		v := &n.sw.in[i].voq[o]
		p := v.peek()
		b := blocksOf(p.wire)
		if out.cr.avail(c.now) < b {
			if t, ok := out.cr.next(); ok {
				n.wakeOut(o, t)
			}
			break
		}
		out.waiting.pop()
		v.pop()
		if v.len() > 0 { // back of the round-robin line
			out.waiting.push(i)
		}
		n.forward(p, o, b)
	}
	n.drain()
}

// wakeOut makes sure output o is served again at t.
func (n *network) wakeOut(o int, t fabric.Time) {
	out := &n.sw.out[o]
	if out.evAt != 0 && out.evAt <= t {
		return
	}
	out.evAt = t
	n.c.schedule(t, n, evOutFree|uint64(o)<<8, nil)
}

// forward sends p from its input buffer out of port o now. The input
// buffer's credit goes back to the sending NIC as the packet leaves; the
// destination NIC's receive pipeline takes it in order, and its buffer's
// credit goes back to the switch once the pipeline has moved it on.
func (n *network) forward(p *packet, o, b int) {
	c := n.c
	out := &n.sw.out[o]
	ser := n.serialization(p.wire)
	out.freeAt = c.now.Add(ser)
	left := out.freeAt.Add(n.prop)
	n.sw.in[p.src].cr.give(left, b)
	c.nodes[p.src].nic.creditReturned(left)
	arrive := left // the tail reaches the NIC
	dn := &n.down[o]
	dup := false
	if n.filter != nil {
		switch n.filter(p.info()) {
		case Drop:
			c.stats.PacketsLost++
			c.freePacket(p)
			return
		case Hold:
			n.held = append(n.held, p)
			return
		case Duplicate:
			dup = true
		}
	}
	var delay fabric.Duration
	if in := c.inj; in != nil {
		lost, d, dl := in.verdict(c, p, c.now)
		if lost {
			c.stats.PacketsLost++
			c.freePacket(p)
			return
		}
		dup, delay = dup || d, dl
	}
	if dn.faults.any() {
		if n.lossy(dn, p) {
			return
		}
		dup = dup || dn.faults.Duplicate > 0 && dn.rng.Float64() < dn.faults.Duplicate
	}
	// The receive pipeline takes one packet at a time, in arrival order,
	// once its last bit is in (store-and-forward), and writes its payload
	// to host memory at PCIe speed; data and completion are visible
	// rx_latency_ns after that write. A packet whose queue-pair context or
	// translation is not on the NIC waits for its fetch in the receive
	// buffer (holding its credit) while the pipeline goes on with later
	// packets: fetches overlap (qpCache), and delivery stays in order on
	// the port (toPort), so a queue pair's packets are never reordered.
	// docs/model.md §1, "NIC receive side" and "QP-context cache".
	nc := c.nodes[o].nic
	start := max(arrive, nc.rxFree)
	ready := start
	if q := nc.lookupQP(p.dstQPN); q != nil {
		ready = nc.contextAt(q, start)
		if nc.wrc.on() && q.retiresUncached(p) {
			ready = nc.cache.fetchAt(ready)
		}
		if m, addr := q.rxTarget(p); m != nil {
			ready = nc.translate(m, addr, p.n, ready)
		}
	}
	svc := max(n.rxPkt, fabric.Duration(float64(p.n)*n.pcieNS*1000+0.5))
	nc.rxFree = start.Add(svc)
	done := ready.Add(svc)
	out.cr.take(b)
	out.cr.give(done.Add(n.prop), b)
	deliver := done.Add(n.rxLat)
	if delay > 0 { // a plan's reordering: overtaken by later packets
		c.stats.PacketsReordered++
		c.schedule(deliver.Add(delay), n, evDeliver, p)
		if dup {
			c.stats.PacketsDuplicated++
			c.schedule(deliver.Add(delay+ser), n, evDeliver, c.clonePacket(p))
		}
		return
	}
	if dn.faults.Reorder > 0 && dn.rng.Float64() < dn.faults.Reorder {
		d := dn.faults.ReorderDelay
		if d == 0 {
			d = 2 * fabric.Microsecond
		}
		c.stats.PacketsReordered++
		c.schedule(deliver.Add(d), n, evDeliver, p)
		return
	}
	n.toPort(o, deliver, p)
	if dup { // the copy arrives right behind the original
		c.stats.PacketsDuplicated++
		n.toPort(o, deliver.Add(ser), c.clonePacket(p))
	}
}

// toPort queues p for delivery to node o's NIC at t (times on one port
// never decrease).
func (n *network) toPort(o int, t fabric.Time, p *packet) {
	dn := &n.down[o]
	if dn.fifo.len() > 0 && dn.fifo.last().at > t {
		t = dn.fifo.last().at
	}
	dn.fifo.push(arrival{t, p})
	if dn.fifo.len() == 1 {
		n.c.schedule(t, n, evPort|uint64(o)<<8, nil)
	}
}

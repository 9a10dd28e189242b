package sim

import "github.com/rdmashuffle/rdmashuffle/fabric"

// swtch is one switch: input-buffered with virtual output queues, one data
// virtual lane, link-level credit flow control on every link. Without a
// Fabric (Config.Fabric) the cluster has one switch with a port per node,
// port i cabled to node i: an ideal crossbar of any radix.
//
// A transmitter (a NIC's uplink, or another switch's output) may put a
// packet on a link only while the switch input buffer at the other end has
// room for it (credits, in 64-byte blocks); the buffer is shared by all
// destinations. Inside, packets wait per output (so a packet for an idle
// output never waits behind one for a busy output), and each output serves
// the inputs that have packets for it in round-robin order. An output
// sends only while the buffer at the other end of its link has room: the
// next switch's input buffer, or the destination NIC's receive buffer,
// which drains at the pace of the NIC's receive pipeline. So an
// oversubscribed output fills the input buffers that feed it; once an
// input buffer is full its link stops for every destination (head-of-line
// blocking across the link, InfiniBand's congestion spreading), and the
// stall propagates hop by hop to the senders: incast, all-to-all contention
// and tree saturation emerge from buffers and credits, not from a factor.
type swtch struct {
	id   int
	base int // global number of port 0: ports are numbered across switches for events
	in   []swIn
	out  []swOut
	// work lists outputs to serve; handled iteratively so that one
	// departure freeing the next head does not recurse.
	work []int
	// lft is the linear forwarding table by destination node: the output
	// port (0-based) for node d is lft[d]. nil on the default crossbar,
	// where node d is on port d.
	lft []uint8
	// alt lists, per destination leaf (fabric.leafOf), the minimal ports
	// adaptive routing may choose among; nil without adaptive routing.
	alt [][]uint8
	// altNext is, per destination leaf, where the next tie-break starts
	// among alt's ports (switch.ar_ties 1); nil otherwise.
	altNext []uint8
}

// swIn is one input port's buffer, kept as one queue per output.
type swIn struct {
	voq []fifo[*packet] // by VL and output port (vl*outputs + port); allocated on first use
	cr  credits         // the upstream transmitter's view of this buffer (VL 0's part with several VLs)
	crv []credits       // VLs 1 and up (vl.go); nil with one data VL
	// The transmitter feeding it: node upNode's NIC, or (upNode < 0) the
	// output of another switch with global port number upOut.
	upNode int
	upOut  int
	upNIC  *nic // node upNode's NIC (network.linkNICs); nil from a switch
}

// swOut is one output port.
type swOut struct {
	freeAt  fabric.Time
	rate    float64         // bits/s of its cable
	busy    fabric.Duration // time spent sending (Cluster.Usage)
	waiting fifo[int]       // inputs with packets for this port, in round-robin order
	queued  bool            // in swtch.work
	evAt    fabric.Time     // pending wake-up, 0 if none
	// What the port is cabled to: node toNode's NIC (its receive buffer's
	// credits are cr), or (toNode < 0) input port toIn of switch toSw,
	// whose buffer's credits the downstream switch keeps.
	toNode        int
	toSw, toIn    int
	toNIC         *nic // node toNode's NIC and its downlink (network.linkNICs); nil to a switch
	down          *port
	cr            credits
	creditBlocked bool     // waits for the downstream switch to free buffer space
	backlog       int      // packets queued for this port in the switch's inputs (adaptive routing)
	downs         []window // when its cable is down (a plan's CableDown rules)
	// Several data VLs (vl.go): the other VLs' contenders and NIC-buffer
	// credits, and the output's place in the arbitration tables.
	waitv []fifo[int]
	crv   []credits
	arb   *arbState
}

func newSwitch(id, base, ports int, p *Profile) swtch {
	s := swtch{id: id, base: base, in: make([]swIn, ports), out: make([]swOut, ports)}
	rate := p.DataRateBps()
	for i := range s.in {
		s.out[i].rate = rate
		s.in[i].cr = newCredits(p.Switch.InputBufferBytes)
		s.out[i].cr = newCredits(p.NIC.RxBufferBytes) // used when cabled to a node
		s.in[i].upNode, s.in[i].upOut = -1, -1
		s.out[i].toNode, s.out[i].toSw, s.out[i].toIn = -1, -1, -1
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
	ser := serialization(p.wire, up.rate)
	up.freeAt = start.Add(ser)
	if n.mixed {
		p.tailAt = up.freeAt.Add(n.prop)
	}
	up.busy += ser
	c.stats.PacketsSent++
	c.stats.WireBytes += int64(p.wire)
	if p.vl != 0 {
		c.stats.LanePackets[p.vl]++ // VL 0's count is the rest (Cluster.Stats)
	}
	b := blocksOf(p.wire)
	cr := n.uplinkIn(p.src).credit(p.vl)
	cr.take(b)
	if up.faulty && n.lossy(up, p) {
		cr.give(up.freeAt.Add(n.prop), b) // never reached the buffer
		return up.freeAt
	}
	// Cut-through: the switch can forward once the header has arrived.
	c.schedule(start.Add(n.prop+n.swLat), n, evSwitch, p)
	return up.freeAt
}

// uplinkIn is the switch input buffer node's uplink feeds.
func (n *network) uplinkIn(node int) *swIn { return n.upIn[node] }

// arrive queues a packet in input buffer i of switch s.
func (n *network) arrive(s *swtch, i int, p *packet) {
	in := &s.in[i]
	if in.voq == nil {
		in.voq = make([]fifo[*packet], len(s.out)*max(n.vls, 1))
	}
	n.c.stats.SwitchHops++
	o := p.dst // the default crossbar: node d on port d
	if s.lft != nil {
		o = n.route(s, p)
	}
	v := &in.voq[int(p.vl)*len(s.out)+o]
	v.push(p)
	if s.alt != nil {
		s.out[o].backlog++
	}
	if v.len() == 1 {
		if p.vl == 0 {
			n.request(s, o, i)
		} else {
			s.out[o].waitingOf(p.vl).push(i)
			n.enqueue(s, o)
		}
	}
	n.drain(s)
}

// route picks p's output port at switch s: the node's port on the default
// crossbar, the forwarding table's entry, or under adaptive routing the
// least backlogged of the minimal ports (the table's entry on a tie).
func (n *network) route(s *swtch, p *packet) int {
	if s.lft == nil {
		return p.dst
	}
	lft := s.lft
	if n.cables != nil {
		lft = n.lftAt(s)
	}
	o := int(lft[p.dst])
	if s.alt == nil || (p.qpType != fabric.UD && !n.adaptRC) {
		return o
	}
	leaf := n.leafOf[p.dst]
	alt := s.alt[leaf]
	if len(alt) < 2 {
		return o
	}
	if n.arTurns {
		return n.routeInTurn(s, leaf, alt, o)
	}
	// A port whose cable is down is no choice: adaptive routing goes
	// around it at once, without waiting for the subnet manager.
	best, load := o, n.load(&s.out[o])
	if n.cables != nil && s.out[o].isDown(n.c.now) {
		load = int(^uint(0) >> 1)
	}
	for _, a := range alt {
		if l := n.load(&s.out[a]); l < load && (n.cables == nil || !s.out[a].isDown(n.c.now)) {
			best, load = int(a), l
		}
	}
	return best
}

// routeInTurn is adaptive routing under switch.ar_ties 1: the least
// loaded of the minimal ports alt toward the destination's leaf, ties
// going to the first in turn from where the last choice for that leaf
// left off; a port whose cable is down is no choice (o, the static
// table's port, when every one is down).
func (n *network) routeInTurn(s *swtch, leaf int32, alt []uint8, o int) int {
	start := int(s.altNext[leaf])
	best, at, load := o, -1, int(^uint(0)>>1)
	for j := range alt {
		k := (start + j) % len(alt)
		a := int(alt[k])
		if n.cables != nil && s.out[a].isDown(n.c.now) {
			continue
		}
		if l := n.load(&s.out[a]); l < load {
			best, at, load = a, k, l
		}
	}
	if at >= 0 {
		s.altNext[leaf] = uint8((at + 1) % len(alt))
	}
	return best
}

// load is how busy an output is for adaptive routing: the packets queued
// for it, plus one while it sends.
func (n *network) load(out *swOut) int {
	l := out.backlog
	if out.freeAt > n.c.now {
		l++
	}
	return l
}

// request makes input i a contender for output o of switch s.
func (n *network) request(s *swtch, o, i int) {
	out := &s.out[o]
	out.waiting.push(i)
	n.enqueue(s, o)
}

func (n *network) enqueue(s *swtch, o int) {
	if out := &s.out[o]; !out.queued {
		out.queued = true
		s.work = append(s.work, o)
	}
}

// drain serves every output of s with pending work.
func (n *network) drain(s *swtch) {
	for len(s.work) > 0 {
		o := s.work[len(s.work)-1]
		s.work = s.work[:len(s.work)-1]
		s.out[o].queued = false
		n.serve(s, o)
	}
}

// serve sends from output o while it is free, has contenders and has
// credit at the other end of its link.
func (n *network) serve(s *swtch, o int) {
	if n.vls > 1 {
		n.serveVL(s, o)
		return
	}
	c := n.c
	out := &s.out[o]
	for out.waiting.len() > 0 {
		if out.freeAt > c.now {
			n.wakeOut(s, o, out.freeAt)
			break
		}
		i := out.waiting.peek()
		v := &s.in[i].voq[o]
		p := v.peek()
		b := blocksOf(p.wire)
		if out.downs != nil && out.isDown(c.now) {
			// The cable is down: the switch discards what it routed
			// there, and the input's buffer space is free again.
			out.waiting.pop()
			v.pop()
			if s.alt != nil {
				out.backlog--
			}
			if v.len() > 0 {
				out.waiting.push(i)
			}
			n.release(s, i, 0, b, c.now)
			n.cables.drops++
			c.stats.PacketsLost++
			c.freePacket(p)
			continue
		}
		cr := &out.cr
		if out.toNode < 0 {
			cr = &n.sws[out.toSw].in[out.toIn].cr
		}
		if cr.avail(c.now) < b {
			if t, ok := cr.next(); ok {
				n.wakeOut(s, o, t)
			}
			// A switch downstream also wakes it when a packet leaves
			// the buffer (forward).
			out.creditBlocked = out.toNode < 0
			break
		}
		out.creditBlocked = false
		out.waiting.pop()
		v.pop()
		if s.alt != nil {
			out.backlog--
		}
		if v.len() > 0 { // back of the round-robin line
			out.waiting.push(i)
		}
		n.forward(s, i, p, o, b)
	}
	n.drain(s)
}

// wakeOut makes sure output o of s is served again at t.
func (n *network) wakeOut(s *swtch, o int, t fabric.Time) {
	out := &s.out[o]
	if out.evAt != 0 && out.evAt <= t {
		return
	}
	out.evAt = t
	n.c.schedule(t, n, evOutFree|uint64(s.base+o)<<8, nil)
}

// forward sends p from input buffer i of s out of port o now. The input
// buffer's credit goes back to its transmitter as the packet leaves. Out
// of a port cabled to a switch, the packet reaches that switch's input
// buffer; out of a port cabled to a node, the node's NIC takes it in
// (nic.accept), and its buffer's credit goes back to the switch once the
// NIC has moved it on.
func (n *network) forward(s *swtch, i int, p *packet, o, b int) {
	c := n.c
	out := &s.out[o]
	ser := serialization(p.wire, out.rate)
	start := c.now
	if n.mixed {
		// Cut-through onto a faster link than the packet came in on
		// starts late enough that its last byte has arrived when it is
		// to leave: a switch does not run out of a packet mid-way.
		start = max(start, p.tailAt.Add(-ser))
	}
	out.freeAt = start.Add(ser)
	out.busy += ser
	left := out.freeAt.Add(n.prop)
	if n.mixed {
		p.tailAt = left
	}
	if in := &s.in[i]; p.vl == 0 && in.upNode >= 0 {
		in.cr.give(left, b)
		in.upNIC.creditReturned(left)
	} else {
		n.release(s, i, p.vl, b, left)
	}
	if out.toNode < 0 {
		// Cut-through to the next switch.
		n.sws[out.toSw].in[out.toIn].credit(p.vl).take(b)
		c.schedule(start.Add(n.prop+n.swLat), n, evHop|uint64(n.sws[out.toSw].base+out.toIn)<<8, p)
		return
	}
	dst, dn := out.toNode, out.down
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
	if dn.faulty {
		if n.lossy(dn, p) {
			return
		}
		dup = dup || dn.faults.Duplicate > 0 && dn.rng.Float64() < dn.faults.Duplicate
	}
	done := out.toNIC.accept(p, left)
	rx := out.credit(p.vl)
	rx.take(b)
	rx.give(done.Add(n.prop), b)
	deliver := done.Add(n.rxLat)
	if delay == 0 && dn.faulty && dn.faults.Reorder > 0 && dn.rng.Float64() < dn.faults.Reorder {
		delay = dn.faults.ReorderDelay
		if delay == 0 {
			delay = 2 * fabric.Microsecond
		}
	}
	if delay > 0 { // reordered (by the plan or the link's faults): overtaken by later packets
		c.stats.PacketsReordered++
		c.schedule(deliver.Add(delay), n, evDeliver, p)
		if dup { // the copy arrives right behind it, just as late
			c.stats.PacketsDuplicated++
			c.schedule(deliver.Add(delay+ser), n, evDeliver, c.clonePacket(p))
		}
		return
	}
	n.toPort(dst, deliver, p)
	if dup { // the copy arrives right behind the original
		c.stats.PacketsDuplicated++
		n.toPort(dst, deliver.Add(ser), c.clonePacket(p))
	}
}

// release gives the b blocks a packet held in input buffer i of s back to
// the buffer's transmitter at t, waking it if it waits for them.
func (n *network) release(s *swtch, i int, vl uint8, b int, t fabric.Time) {
	in := &s.in[i]
	in.credit(vl).give(t, b)
	if in.upNode >= 0 {
		in.upNIC.creditReturned(t)
	} else if us, uo := n.portOf(in.upOut); us.out[uo].creditBlocked {
		n.wakeOut(us, uo, t)
	}
}

// portOf finds a switch port from its global number.
func (n *network) portOf(g int) (*swtch, int) {
	if n.swOfPort == nil {
		return &n.sws[0], g
	}
	s := &n.sws[n.swOfPort[g]]
	return s, g - s.base
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

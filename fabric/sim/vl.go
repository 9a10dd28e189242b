package sim

import (
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// Virtual lanes. With one data VL (the default, and the only choice on
// the single switch) none of this runs: every packet is on VL 0 and the
// switch's code paths are those of switch.go alone.
//
// With more (Fabric.VLs), every link's receive buffer (a switch input's,
// a NIC's) is split evenly between the data VLs, each with credits of its
// own, so that a VL whose packets cannot move does not stop another's;
// a packet's VL is its service level through the SL-to-VL table; and each
// switch output chooses the next VL to send by the IBA's VL arbitration:
// a high-priority and a low-priority table of (VL, weight) entries,
// weights in 64-byte units, each table served in turn from its current
// entry, and at most HighLimit x 4 KiB of high-priority data (at least one
// packet) before a waiting low-priority packet is sent. A NIC sends the
// next packet of the first ready queue pair whose VL has credit.

// VLWeight is one entry of a VL arbitration table.
type VLWeight struct {
	VL     uint8
	Weight uint8 // in 64-byte units; 0 skips the entry
}

// VLArbitration is a port's VL arbitration: the two tables and the limit
// of high-priority data (in 4 KiB units; 255: no limit).
type VLArbitration struct {
	High, Low []VLWeight
	HighLimit uint8
}

// DefaultVLArbitration is OpenSM's default when quality of service is on,
// restricted to vls data VLs (docs/topology.md, "Virtual lanes"): VL 0
// alone in the high-priority table with weight 4, every other VL in the
// low-priority table with weight 4, high limit 0 (one high-priority
// packet, then a waiting low-priority one).
func DefaultVLArbitration(vls int) VLArbitration {
	a := VLArbitration{High: []VLWeight{{0, 4}}}
	for v := 1; v < vls; v++ {
		a.Low = append(a.Low, VLWeight{uint8(v), 4})
	}
	return a
}

// DefaultSL2VL is OpenSM's default SL-to-VL table with quality of service
// on (SL i to VL i, SL 15 to VL 7), each VL past the port's data VLs
// folded onto them (VL mod vls).
func DefaultSL2VL(vls int) [16]uint8 {
	var t [16]uint8
	for sl := range t {
		v := sl
		if sl == 15 {
			v = 7
		}
		t[sl] = uint8(v % vls)
	}
	return t
}

// maxVLs is the most data VLs a port has (IBA: VL 0-14).
const maxVLs = 15

// wireVLs checks the fabric's VL settings and sizes the per-VL state.
func (n *network) wireVLs(f *Fabric, p *Profile) error {
	vls := max(f.VLs, 1)
	if vls > maxVLs {
		return fmt.Errorf("%w: %d data VLs; a port has at most %d", ErrFabric, f.VLs, maxVLs)
	}
	if vls == 1 {
		return nil
	}
	inCap, rxCap := p.Switch.InputBufferBytes/vls, p.NIC.RxBufferBytes/vls
	if need := maxPacketBlocks(p) * creditBlock; inCap < need || rxCap < need {
		return fmt.Errorf("%w: %d data VLs split the switch's %d-byte input buffer and the NIC's %d-byte receive buffer into %d and %d bytes a VL, less than one packet of the MTU (%d bytes)",
			ErrFabric, vls, p.Switch.InputBufferBytes, p.NIC.RxBufferBytes, inCap, rxCap, need)
	}
	n.vls = vls
	n.sl2vl = f.SL2VL
	if f.SL2VL == ([16]uint8{}) {
		n.sl2vl = DefaultSL2VL(vls)
	}
	for sl, v := range n.sl2vl {
		if int(v) >= vls {
			return fmt.Errorf("%w: SL %d maps to VL %d; the ports have VLs 0..%d", ErrFabric, sl, v, vls-1)
		}
	}
	n.arb = f.Arbitration
	if n.arb.High == nil && n.arb.Low == nil {
		n.arb = DefaultVLArbitration(vls)
	}
	served := make([]bool, vls)
	for _, e := range append(append([]VLWeight(nil), n.arb.High...), n.arb.Low...) {
		if int(e.VL) >= vls {
			return fmt.Errorf("%w: the VL arbitration names VL %d; the ports have VLs 0..%d", ErrFabric, e.VL, vls-1)
		}
		served[e.VL] = served[e.VL] || e.Weight > 0
	}
	for v, ok := range served {
		if !ok {
			return fmt.Errorf("%w: VL %d has no weight in the VL arbitration tables: its packets would never leave a switch", ErrFabric, v)
		}
	}
	for s := range n.sws {
		sw := &n.sws[s]
		for i := range sw.in {
			sw.in[i].cr = newCredits(inCap)
			sw.in[i].crv = make([]credits, vls-1)
			for v := range sw.in[i].crv {
				sw.in[i].crv[v] = newCredits(inCap)
			}
			out := &sw.out[i]
			out.cr = newCredits(rxCap)
			out.crv = make([]credits, vls-1)
			for v := range out.crv {
				out.crv[v] = newCredits(rxCap)
			}
			out.waitv = make([]fifo[int], vls-1)
			out.arb = &arbState{}
		}
	}
	return nil
}

// vlOf maps a service level to its virtual lane.
func (n *network) vlOf(sl uint8) uint8 {
	if n.vls <= 1 {
		return 0
	}
	return n.sl2vl[sl&15]
}

// credit is the credits of VL vl of an input buffer.
func (in *swIn) credit(vl uint8) *credits {
	if vl == 0 {
		return &in.cr
	}
	return &in.crv[vl-1]
}

// credit is the credits of VL vl of the NIC buffer an output feeds.
func (out *swOut) credit(vl uint8) *credits {
	if vl == 0 {
		return &out.cr
	}
	return &out.crv[vl-1]
}

// waiting is the inputs with packets of VL vl for the output.
func (out *swOut) waitingOf(vl uint8) *fifo[int] {
	if vl == 0 {
		return &out.waiting
	}
	return &out.waitv[vl-1]
}

// downCredit is the credits the packet at the head of VL vl needs at the
// other end of output o's link.
func (n *network) downCredit(out *swOut, vl uint8) *credits {
	if out.toNode < 0 {
		return n.sws[out.toSw].in[out.toIn].credit(vl)
	}
	return out.credit(vl)
}

// arbState is an output's place in the VL arbitration tables.
type arbState struct {
	hi, lo         int // current entry of each table
	hiLeft, loLeft int // weight left of the current entries, 64-byte blocks
	hiSent         int // high-priority blocks sent since the last low-priority packet
}

// headBlocks is the size in blocks of the head packet of VL vl at output
// o of s, and whether there is one.
func (n *network) headBlocks(s *swtch, o int, vl uint8) (int, bool) {
	w := s.out[o].waitingOf(vl)
	if w.len() == 0 {
		return 0, false
	}
	i := w.peek()
	return blocksOf(s.in[i].voq[int(vl)*len(s.out)+o].peek().wire), true
}

// pick chooses the VL output o of s sends next among those with a packet
// and credit for it, by the arbitration tables, and charges its weight;
// ok is false when none can send.
func (n *network) pick(s *swtch, o int) (vl uint8, ok bool) {
	out := &s.out[o]
	now := n.c.now
	ready := func(v uint8) bool {
		b, has := n.headBlocks(s, o, v)
		return has && (out.downs != nil && out.isDown(now) || n.downCredit(out, v).avail(now) >= b)
	}
	// serve walks a table from its current entry to the first ready VL
	// with weight.
	serve := func(tab []VLWeight, cur, left *int) (uint8, bool) {
		for k := 0; k < len(tab); k++ {
			j := (*cur + k) % len(tab)
			if e := tab[j]; e.Weight > 0 && ready(e.VL) {
				if j != *cur || *left <= 0 {
					*cur, *left = j, int(e.Weight)
				}
				return e.VL, true
			}
		}
		return 0, false
	}
	a := out.arb
	limit := int(n.arb.HighLimit) * 64 // 4 KiB units, in blocks
	hiV, hiOK := serve(n.arb.High, &a.hi, &a.hiLeft)
	loV, loOK := serve(n.arb.Low, &a.lo, &a.loLeft)
	switch {
	case hiOK && (!loOK || n.arb.HighLimit == 255 || a.hiSent == 0 || a.hiSent < limit):
		b, _ := n.headBlocks(s, o, hiV)
		a.hiLeft -= b
		if a.hiLeft <= 0 {
			a.hi = (a.hi + 1) % len(n.arb.High)
		}
		a.hiSent += b
		return hiV, true
	case loOK:
		b, _ := n.headBlocks(s, o, loV)
		a.loLeft -= b
		if a.loLeft <= 0 {
			a.lo = (a.lo + 1) % len(n.arb.Low)
		}
		a.hiSent = 0
		return loV, true
	}
	return 0, false
}

// serveVL is serve with several data VLs.
func (n *network) serveVL(s *swtch, o int) {
	c := n.c
	out := &s.out[o]
	for {
		if out.freeAt > c.now {
			if n.contended(out) {
				n.wakeOut(s, o, out.freeAt)
			}
			break
		}
		vl, ok := n.pick(s, o)
		if !ok {
			// Packets wait for credit: wake when the first returns
			// (or, for a switch downstream, when it forwards one).
			next := fabric.Forever
			for v := uint8(0); int(v) < n.vls; v++ {
				if out.waitingOf(v).len() == 0 {
					continue
				}
				if t, ok := n.downCredit(out, v).next(); ok {
					next = min(next, t)
				}
				out.creditBlocked = out.toNode < 0
			}
			if next < fabric.Forever {
				n.wakeOut(s, o, next)
			}
			break
		}
		out.creditBlocked = false
		w := out.waitingOf(vl)
		i := w.peek()
		v := &s.in[i].voq[int(vl)*len(s.out)+o]
		p := v.peek()
		b := blocksOf(p.wire)
		w.pop()
		v.pop()
		if s.alt != nil {
			out.backlog--
		}
		if v.len() > 0 {
			w.push(i)
		}
		if out.downs != nil && out.isDown(c.now) {
			n.release(s, i, p.vl, b, c.now)
			n.cables.drops++
			c.stats.PacketsLost++
			c.freePacket(p)
			continue
		}
		n.forward(s, i, p, o, b)
	}
	n.drain(s)
}

// contended reports whether some input has a packet for out.
func (n *network) contended(out *swOut) bool {
	if out.waiting.len() > 0 {
		return true
	}
	for i := range out.waitv {
		if out.waitv[i].len() > 0 {
			return true
		}
	}
	return false
}

// stepVL is the NIC's transmit step with several data VLs: the first
// ready queue pair whose next packet's VL has credit at the switch sends.
func (nc *nic) stepVL(now fabric.Time) {
	in := nc.c.net.uplinkIn(nc.node.id)
	blocked, wake := false, fabric.Forever
	sent := false
	for k := nc.ready.len(); k > 0 && !sent; k-- {
		q := nc.ready.pop()
		q.inReady = false
		if nc.notYet(q, now) {
			continue
		}
		cr := in.credit(q.nextVL())
		if cr.avail(now) < nc.maxBlocks {
			blocked = true
			if t, ok := cr.next(); ok {
				wake = min(wake, t)
			}
			q.inReady = true
			nc.ready.push(q)
			continue
		}
		sent = nc.send(q, now)
	}
	nc.creditBlocked = blocked && !sent
	if nc.creditBlocked && wake < fabric.Forever {
		nc.stepPending, nc.stepAt = true, wake
		nc.c.schedule(wake, nc, evStep, nil)
		return
	}
	if !sent || nc.ready.len() == 0 {
		return
	}
	nc.inStep = false
	nc.kick()
}

package sim

import (
	"fmt"
	"math/rand/v2"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// Faults are seeded fault probabilities for one direction of one link.
// The zero value is a healthy link.
type Faults struct {
	Loss      float64 // probability a packet is lost
	Duplicate float64 // probability a packet is delivered twice
	Reorder   float64 // probability a packet is held back by ReorderDelay
	// ReorderDelay is how long a reordered packet is held back; 0 means
	// 2 microseconds, enough for several later packets to overtake it.
	ReorderDelay fabric.Duration
}

func (f Faults) validate() error {
	for _, v := range []struct {
		name string
		p    float64
	}{{"Loss", f.Loss}, {"Duplicate", f.Duplicate}, {"Reorder", f.Reorder}} {
		if !(v.p >= 0 && v.p <= 1) {
			return fmt.Errorf("sim: fault %s must be a probability in [0, 1], got %v", v.name, v.p)
		}
	}
	if f.ReorderDelay < 0 {
		return fmt.Errorf("sim: fault ReorderDelay must not be negative, got %v", f.ReorderDelay)
	}
	return nil
}

func (f Faults) any() bool { return f.Loss > 0 || f.Duplicate > 0 || f.Reorder > 0 }

// Verdict is a Filter's decision about a packet.
type Verdict uint8

// Verdicts.
const (
	Pass      Verdict = iota // deliver normally
	Drop                     // lose the packet
	Hold                     // keep it until the test calls Release or DropHeld
	Duplicate                // deliver it twice
)

// Filter inspects every packet as it leaves the switch towards its
// destination. Tests use it to lose a chosen packet or to hold packets and
// deliver them by hand in any order.
type Filter func(PacketInfo) Verdict

// port is one direction of one link: its transmitter and its faults.
// Packets leaving a switch port arrive in the order they left, so they
// wait in a FIFO with only its head in the event queue.
type port struct {
	freeAt fabric.Time
	rate   float64         // bits/s of the node's cable
	busy   fabric.Duration // time spent sending (Cluster.Usage)
	faults Faults
	faulty bool // faults.any(), kept with faults: every packet asks
	rng    *rand.Rand
	fifo   fifo[arrival]
}

// arrival is a packet on its way down a link and when it will be delivered.
type arrival struct {
	at fabric.Time
	p  *packet
}

// network holds the links of every node and the switches between them.
type network struct {
	c        *Cluster
	up, down []port // node -> its switch, its switch -> node
	rate     float64
	prop     fabric.Duration
	swLat    fabric.Duration
	rxLat    fabric.Duration
	filter   Filter
	held     []*packet
	sws      []swtch
	attach   []portRef    // each node's switch port
	upIn     []*swIn      // the switch input buffer each node's uplink feeds
	upTo     []swPort     // the same as a switch and its input port (attach, resolved)
	swOfPort []int32      // the switch of each global port number (multi-switch fabrics)
	leafOf   []int32      // each node's leaf, indexing swtch.alt (adaptive routing)
	adaptRC  bool         // RC and UC packets adapt too (Fabric.AdaptiveRC)
	arTurns  bool         // equally loaded minimal ports are taken in turn (switch.ar_ties 1)
	cables   *cableFaults // a plan's cable faults and reroutes; nil without
	vls      int          // data VLs (vl.go); 0 or 1: one
	sl2vl    [16]uint8
	arb      VLArbitration
	pcieRTT  fabric.Duration // a DMA read's round trip: a payload's first byte reaches the NIC this long after the fetch starts
	// mixed: some cables run at another rate than the profile's (a fabric
	// file's widths and speeds), so a packet leaving a faster link than it
	// came in on waits until its last byte can follow (packet.tailAt).
	mixed bool
}

// portRef is a switch's port: switch index and 0-based port.
type portRef struct{ sw, port int }

// swPort is a switch's port as a pointer to the switch and a 0-based port.
type swPort struct {
	s *swtch
	i int
}

const (
	evSwitch  uint64 = iota + 1
	evDeliver        // a packet reaches its destination NIC
	evDirect         // a packet built outside the transmit engine (a responder's last NAK) leaves
	evPort           // the head of a switch port's FIFO arrives; the port is arg>>8
	evOutFree        // a switch output may be able to send again; its global port number is arg>>8
	evHop            // a packet's header reaches a switch input from another switch; its global port number is arg>>8
)

func newNetwork(c *Cluster) (*network, error) {
	p := c.prof
	n := &network{c: c, rate: p.DataRateBps(), prop: ns(p.Link.PropagationNS), swLat: ns(p.Switch.LatencyNS),
		rxLat: ns(p.NIC.RxLatencyNS)}
	n.up = make([]port, c.cfg.Nodes)
	n.down = make([]port, c.cfg.Nodes)
	for i := range n.up {
		n.up[i].rate = n.rate
		n.up[i].rng = c.rng(fmt.Sprintf("link/%d/up", i))
		n.down[i].rng = c.rng(fmt.Sprintf("link/%d/down", i))
	}
	n.pcieRTT = ns(p.PCIe.RTTNS)
	if c.cfg.Fabric == nil {
		// One ideal crossbar: port i cabled to node i.
		n.sws = []swtch{newSwitch(0, 0, c.cfg.Nodes, p)}
		n.attach = make([]portRef, c.cfg.Nodes)
		for i := range n.attach {
			n.attach[i] = portRef{0, i}
			n.sws[0].in[i].upNode = i
			n.sws[0].out[i].toNode = i
		}
		n.linkUplinks()
		return n, nil
	}
	if err := n.wire(c.cfg.Fabric, c.cfg.Nodes, p); err != nil {
		return n, err
	}
	n.linkUplinks()
	return n, nil
}

// linkUplinks notes the switch input each node's uplink feeds (the
// switches are in place: their slices no longer move).
func (n *network) linkUplinks() {
	n.upIn = make([]*swIn, len(n.attach))
	n.upTo = make([]swPort, len(n.attach))
	for i, a := range n.attach {
		n.upIn[i] = &n.sws[a.sw].in[a.port]
		n.upTo[i] = swPort{&n.sws[a.sw], a.port}
	}
}

// linkNICs notes, once the nodes exist, the NIC at the end of every
// switch port cabled to a node, and each NIC's uplink, so that a packet's
// path follows pointers instead of looking the graph up.
func (n *network) linkNICs() {
	for s := range n.sws {
		sw := &n.sws[s]
		for i := range sw.in {
			if in := &sw.in[i]; in.upNode >= 0 {
				in.upNIC = n.c.nodes[in.upNode].nic
			}
			if out := &sw.out[i]; out.toNode >= 0 {
				out.toNIC, out.down = n.c.nodes[out.toNode].nic, &n.down[out.toNode]
			}
		}
	}
	for i, nd := range n.c.nodes {
		nd.nic.upIn, nd.nic.up = n.upIn[i], &n.up[i]
	}
}

// serialization is the time a packet of wire bytes occupies a link of
// rate bits/s.
func serialization(wire int, rate float64) fabric.Duration {
	return fabric.Duration(float64(wire)*8e12/rate + 0.5)
}

// SetFaults sets the fault probabilities of node's link, both directions.
func (c *Cluster) SetFaults(node int, f Faults) error {
	if node < 0 || node >= len(c.nodes) {
		return fmt.Errorf("sim: SetFaults: no node %d (cluster has %d)", node, len(c.nodes))
	}
	if err := f.validate(); err != nil {
		return err
	}
	c.net.up[node].faults, c.net.up[node].faulty = f, f.any()
	c.net.down[node].faults, c.net.down[node].faulty = f, f.any()
	return nil
}

// SetFilter installs a filter on every packet leaving the switch; nil
// removes it.
func (c *Cluster) SetFilter(f Filter) { c.net.filter = f }

// Held lists the packets a Filter has held, oldest first.
func (c *Cluster) Held() []PacketInfo {
	out := make([]PacketInfo, len(c.net.held))
	for i, p := range c.net.held {
		out[i] = p.info()
	}
	return out
}

// Release delivers a held packet now (plus the receiving NIC's latency).
func (c *Cluster) Release(id uint64) error {
	p, err := c.net.unhold(id)
	if err != nil {
		return err
	}
	c.schedule(c.now.Add(c.net.rxLat), c.net, evDeliver, p)
	return nil
}

// DropHeld loses a held packet.
func (c *Cluster) DropHeld(id uint64) error {
	p, err := c.net.unhold(id)
	if err != nil {
		return err
	}
	c.stats.PacketsLost++
	c.freePacket(p)
	return nil
}

func (n *network) unhold(id uint64) (*packet, error) {
	for i, p := range n.held {
		if p.id == id {
			n.held = append(n.held[:i], n.held[i+1:]...)
			return p, nil
		}
	}
	return nil, fmt.Errorf("sim: no held packet with id %d", id)
}

// lossy applies a port's random loss; true means the packet is gone.
func (n *network) lossy(pt *port, p *packet) bool {
	if pt.faults.Loss > 0 && pt.rng.Float64() < pt.faults.Loss {
		n.c.stats.PacketsLost++
		n.c.freePacket(p)
		return true
	}
	return false
}

func (n *network) handle(kind uint64, p *packet) {
	switch kind & 0xff {
	case evSwitch:
		a := n.upTo[p.src]
		n.arrive(a.s, a.i, p)
	case evHop:
		s, i := n.portOf(int(kind >> 8))
		n.arrive(s, i, p)
	case evOutFree:
		s, o := n.portOf(int(kind >> 8))
		s.out[o].evAt = 0
		n.serve(s, o)
	case evDirect:
		n.transmit(p, n.c.now)
	case evDeliver:
		n.c.mix(p.id)
		if n.c.tracer != nil {
			n.c.traceDelivery(p)
		}
		n.c.nodes[p.dst].nic.receive(p)
	case evPort:
		dn := &n.down[kind>>8]
		a := dn.fifo.pop()
		if dn.fifo.len() > 0 {
			n.c.schedule(dn.fifo.peek().at, n, evPort|kind&^0xff, nil)
		}
		n.c.mix(a.p.id)
		if n.c.tracer != nil {
			n.c.traceDelivery(a.p)
		}
		n.c.nodes[a.p.dst].nic.receive(a.p)
	}
}

// Stats counts what happened in the network and the NICs.
type Stats struct {
	PacketsSent       int64
	LanePackets       [maxVLs]int64 // PacketsSent by the virtual lane they left their NIC on
	SwitchHops        int64         // packets taken into a switch's input buffer: one per switch a packet passes
	WireBytes         int64
	PacketsLost       int64
	PacketsDuplicated int64
	PacketsReordered  int64
	UDDropsNoRecv     int64 // UD messages dropped: no receive posted
	UDDropsQKey       int64 // UD messages dropped: wrong Q_Key
	UCDrops           int64 // UC messages dropped (no receive, bad rkey, lost packets; a message lost whole is not seen)
	RCRetransmits     int64 // RC go-back-N rewinds (ACK timeouts, NAKs, missing read responses); each resends every unacknowledged packet
	RNRNaks           int64
	RCSeqNaks         int64           // RC sequence-error NAKs sent: a responder found a gap in the PSNs it could not hold
	RCHeldAhead       int64           // RC packets held past a gap in their PSNs and taken when it filled (nic.ooo_window)
	RCPlacedAhead     int64           // of those, RDMA Write packets whose payload was written to memory on arrival, before the gap filled
	CQOverruns        int64           // completions lost to full CQs
	LockHandoffs      int64           // a thread took a QP's or CQ's lock from another thread
	LockWait          fabric.Duration // threads' time spent taking provider locks from other threads (spinning, and the cache-line hand-off)
	DoorbellLocks     int64           // doorbells rung on a register shared with other queue pairs, under its lock (host.shared_doorbells 1; hand-offs counted in LockHandoffs)
	MutexWait         fabric.Duration // threads' time waiting for a Mutex (or sleeping mutex) another thread held: a shared endpoint's lock, MPI's
	FutexWakes        int64           // sleeping mutexes: FUTEX_WAKE calls that woke a sleeper
	FutexEmptyWakes   int64           // FUTEX_WAKE calls that found nobody asleep (the word stayed contended)
	FutexRetries      int64           // woken sleepers that found the lock taken again and slept again
	QPCacheHits       int64           // NIC queue-pair context lookups that hit, all nodes
	QPCacheMisses     int64           // lookups that had to fetch the context over PCIe
	WRCacheHits       int64           // ACKs and read responses whose work request was on the NIC (0 when wr_cache_entries is 0)
	WRCacheMisses     int64           // ones whose work request had been evicted and was read again over PCIe
	MPTHits           int64           // memory-region protection lookups that hit, all nodes (0 when translation is not modelled)
	MPTMisses         int64
	MTTHits           int64 // page-translation line lookups that hit
	MTTMisses         int64
	TPTStalls         int64 // DMAs that waited for a translation fetch over PCIe
	ReadResourceNaks  int64 // RDMA Read requests refused: the responder's max_dest_rd_atomic resources were in use
	DCConnectRetries  int64 // DC connect requests sent again after the DCI's ACK timer expired (a lost request or response)
}

// QPCacheMissRate is the fraction of context lookups that missed.
func (s Stats) QPCacheMissRate() float64 {
	if t := s.QPCacheHits + s.QPCacheMisses; t > 0 {
		return float64(s.QPCacheMisses) / float64(t)
	}
	return 0
}

// Stats returns the counters so far.
func (c *Cluster) Stats() Stats {
	s := c.stats
	s.LanePackets[0] = s.PacketsSent // the network counts the other lanes only (transmit)
	for _, k := range s.LanePackets[1:] {
		s.LanePackets[0] -= k
	}
	for _, n := range c.nodes {
		s.QPCacheHits += n.nic.cache.hits
		s.QPCacheMisses += n.nic.cache.misses
		s.WRCacheHits += n.nic.wrc.hits
		s.WRCacheMisses += n.nic.wrc.misses
		t := &n.nic.tpt
		s.MPTHits, s.MPTMisses = s.MPTHits+t.mpt.hits, s.MPTMisses+t.mpt.misses
		s.MTTHits, s.MTTMisses = s.MTTHits+t.mtt.hits, s.MTTMisses+t.mtt.misses
		s.TPTStalls += t.stall
	}
	return s
}

// kindOf gives the trace hash a stable id per handler type: 1 for a
// thread, 2 the network, 3 a NIC, 4 a queue pair (9 for any other, a
// test's).
func kindOf(h handler) uint8 { return h.kind() }

func (th *thread) kind() uint8 { return 1 }
func (n *network) kind() uint8 { return 2 }
func (n *nic) kind() uint8     { return 3 }
func (q *qp) kind() uint8      { return 4 }

package sim

import (
	"errors"
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric/route"
	"github.com/rdmashuffle/rdmashuffle/fabric/topo"
)

// Fabric wires a cluster as a network of switches (Config.Fabric): a
// topology, its switches' forwarding tables and the host each node runs
// on. Every switch and link has the profile's parameters (switch latency
// and input buffer, link rate and propagation), except a cable whose
// width and speed the topology gives (topo.Peer.Link), which runs at
// their rate: a host's cable no faster than the profile's port, a cable
// between switches at any speed.
type Fabric struct {
	Topology *topo.Topology
	Tables   *topo.Tables
	// Hosts gives the host each node (rank) runs on; one entry per node,
	// no host twice. Hosts without a node carry no traffic.
	Hosts []int
	// Adaptive turns on per-packet adaptive routing: a switch sends a
	// packet out of the least backlogged of the ports on a shortest path
	// to its destination (the forwarding table's port on a tie), as
	// InfiniBand switches with adaptive routing do. Only UD packets adapt
	// unless AdaptiveRC is set: reliable-connected traffic stays on its
	// table's path, as a traffic class without adaptive routing does.
	Adaptive bool
	// AdaptiveRC lets RC and UC packets adapt too. On a profile with
	// out-of-order placement (nic.ooo_window, ConnectX-5 on) an RC packet
	// that overtakes an earlier one of its queue pair is held and placed
	// when the gap fills (ooo.go); without it, it is answered with a
	// sequence NAK and go-back-N retransmission, as on a NIC without
	// out-of-order placement. UC has no such placement: a gap drops the
	// message it falls in.
	AdaptiveRC bool
	// Engine is the routing engine the subnet manager reroutes with when
	// a cable fails (Plan's CableDown rules): the one Tables came from
	// (MinHop, OpenSM's default, for tables read from a dump).
	Engine route.Engine
	// VLs is the number of data virtual lanes of every port (0 or 1: one,
	// as on a subnet without quality of service configured); SL2VL maps
	// service levels to them and Arbitration orders them at switch
	// outputs (zero values: OpenSM's defaults with quality of service on,
	// DefaultSL2VL and DefaultVLArbitration). vl.go.
	VLs         int
	SL2VL       [16]uint8
	Arbitration VLArbitration
}

// ErrFabric is returned by New for a Fabric that does not fit the cluster.
var ErrFabric = errors.New("sim: invalid fabric")

// wire builds the switches, their cabling, forwarding tables and the
// nodes' attachment from f.
func (n *network) wire(f *Fabric, nodes int, p *Profile) error {
	t := f.Topology
	if t == nil || f.Tables == nil {
		return fmt.Errorf("%w: a Fabric needs a Topology and its Tables", ErrFabric)
	}
	if err := t.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrFabric, err)
	}
	if err := t.CheckTables(f.Tables); err != nil {
		return fmt.Errorf("%w: %w", ErrFabric, err)
	}
	if len(f.Hosts) != nodes {
		return fmt.Errorf("%w: %d nodes placed on hosts, cluster has %d nodes", ErrFabric, len(f.Hosts), nodes)
	}
	nodeOf := make([]int, len(t.Hosts))
	for i := range nodeOf {
		nodeOf[i] = -1
	}
	for r, h := range f.Hosts {
		if h < 0 || h >= len(t.Hosts) {
			return fmt.Errorf("%w: node %d placed on host %d; the fabric has hosts 0..%d", ErrFabric, r, h, len(t.Hosts)-1)
		}
		if nodeOf[h] >= 0 {
			return fmt.Errorf("%w: nodes %d and %d both placed on host %d (%s)", ErrFabric, nodeOf[h], r, h, t.Hosts[h].Name)
		}
		nodeOf[h] = r
	}
	base := 0
	for s := range t.Switches {
		sw := &t.Switches[s]
		n.sws = append(n.sws, newSwitch(s, base, len(sw.Ports), p))
		for range sw.Ports {
			n.swOfPort = append(n.swOfPort, int32(s))
		}
		base += len(sw.Ports)
	}
	n.attach = make([]portRef, nodes)
	for r, h := range f.Hosts {
		n.attach[r] = portRef{t.Hosts[h].Switch, t.Hosts[h].Port - 1}
	}
	if err := n.wireRates(t, f.Hosts, p); err != nil {
		return err
	}
	for s := range t.Switches {
		sw, ss := &t.Switches[s], &n.sws[s]
		for i, pe := range sw.Ports {
			switch pe.Kind {
			case topo.ToHost:
				ss.in[i].upNode = nodeOf[pe.Index] // -1: no node, no traffic
				ss.out[i].toNode = nodeOf[pe.Index]
			case topo.ToSwitch:
				ss.in[i].upOut = n.sws[pe.Index].base + pe.Port - 1
				ss.out[i].toSw, ss.out[i].toIn = pe.Index, pe.Port-1
			}
		}
		ss.lft = make([]uint8, nodes)
		for r, h := range f.Hosts {
			ss.lft[r] = uint8(f.Tables.Port(s, h) - 1)
		}
	}
	if f.Adaptive {
		n.adaptRC = f.AdaptiveRC
		n.wireAdaptive(t, f.Hosts)
	}
	return n.wireVLs(f, p)
}

// ErrLinkRate is returned by New for a host's cable faster than the
// profile's port.
var ErrLinkRate = errors.New("sim: a host's cable is faster than the profile's port")

// LinkRateBps is the data rate of a cable of width and speed l (the
// profile's port rate when l is not given), computed as a profile's
// DataRateBps is, so that a cable of the profile's own width and speed
// has exactly its rate.
func LinkRateBps(l topo.Link, p *Profile) float64 {
	if l.IsZero() {
		return p.DataRateBps()
	}
	return float64(l.Width) * l.Speed.LaneGbaud() * 1e9 * codeRate(l.Speed.Encoding())
}

// wireRates gives every switch output and every node's uplink its cable's
// rate, and notes whether any differs from the profile's.
func (n *network) wireRates(t *topo.Topology, hosts []int, p *Profile) error {
	for _, h := range hosts { // a host without a node carries no traffic
		l := t.HostLink(h)
		if r := LinkRateBps(l, p); r > n.rate*(1+1e-12) {
			return fmt.Errorf("%w: host %q is cabled at %s (%.1f Gb/s), faster than profile %s's port (%.1f Gb/s): choose a profile of that generation, or give the network speeds=profile to run every cable at the profile's rate", ErrLinkRate, t.Hosts[h].Name, l, r/1e9, p.Name, n.rate/1e9)
		}
	}
	for s := range t.Switches {
		for i, pe := range t.Switches[s].Ports {
			if r := LinkRateBps(pe.Link, p); r != n.rate {
				n.sws[s].out[i].rate = r
				n.mixed = true
			}
		}
	}
	for r, h := range hosts {
		n.up[r].rate = LinkRateBps(t.HostLink(h), p)
	}
	return nil
}

// wireAdaptive gives every switch, for each leaf that has a node, the
// ports on a shortest path toward that leaf.
func (n *network) wireAdaptive(t *topo.Topology, hosts []int) {
	leafIdx := make(map[int]int32)
	n.leafOf = make([]int32, len(hosts))
	var leaves []int // a host on each leaf
	for r, h := range hosts {
		l := t.Hosts[h].Switch
		k, ok := leafIdx[l]
		if !ok {
			k = int32(len(leaves))
			leafIdx[l] = k
			leaves = append(leaves, h)
		}
		n.leafOf[r] = k
	}
	n.arTurns = n.c.prof.Switch.ARTies == 1
	for s := range n.sws {
		n.sws[s].alt = make([][]uint8, len(leaves))
		if n.arTurns {
			n.sws[s].altNext = make([]uint8, len(leaves))
		}
	}
	m := route.Minimal(t)
	for k, h := range leaves {
		for s := range t.Switches {
			if s == t.Hosts[h].Switch {
				continue // the leaf itself: its host ports are the only way
			}
			ports := m.Ports(s, h) // numbered from 1; the switch's outputs from 0
			alt := make([]uint8, len(ports))
			for i, p := range ports {
				alt[i] = p - 1
			}
			n.sws[s].alt[k] = alt
		}
	}
}

// ForwardingPort is the port (numbered from 1, as IB numbers ports) out
// of which switch sw sends packets for node under static routing: the
// forwarding table the cluster was built with, as the simulated switch
// holds it. ok is false on the default crossbar or for a switch that
// does not exist.
func (c *Cluster) ForwardingPort(sw, node int) (port int, ok bool) {
	n := c.net
	if sw < 0 || sw >= len(n.sws) || n.sws[sw].lft == nil || node < 0 || node >= len(c.nodes) {
		return 0, false
	}
	return int(n.sws[sw].lft[node]) + 1, true
}

// ProfileLink is the width and speed of the profile's port as the subnet
// manager would report it (4xEDR for edr-cx4); false for a profile whose
// lanes run at no InfiniBand speed (an Ethernet profile).
func ProfileLink(p *Profile) (topo.Link, bool) {
	if !topo.ValidWidth(p.Link.Lanes) {
		return topo.Link{}, false
	}
	for s := topo.SDR; s <= topo.XDR; s++ {
		if s.LaneGbaud() == p.Link.LaneGbaud && s.Encoding() == p.Link.Encoding {
			l := topo.Link{Width: uint8(p.Link.Lanes), Speed: s}
			return l, LinkRateBps(l, p) == p.DataRateBps()
		}
	}
	return topo.Link{}, false
}

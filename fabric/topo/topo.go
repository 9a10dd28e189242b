// Package topo describes the network a cluster is wired with: hosts (one
// channel-adapter port each), switches and the cables between their ports,
// with the LIDs the subnet manager gave them. It is plain data: the
// simulator builds its switches and links from a Topology, the routing
// engines (package fabric/route) fill its switches' forwarding tables, and
// the readers of real fabrics (package fabric/topo/ibnet) build one from
// the files users already have. Nothing here runs a simulation.
package topo

import (
	"errors"
	"fmt"
)

// LID is an InfiniBand local identifier: the address a switch's linear
// forwarding table is indexed by. Unicast LIDs are 1..0xBFFF.
type LID uint16

// MaxUnicastLID is the largest unicast LID (IBA vol. 1, 4.1.3).
const MaxUnicastLID LID = 0xBFFF

// PeerKind says what a switch port is cabled to.
type PeerKind uint8

// Peer kinds.
const (
	None     PeerKind = iota // not cabled (or not in use)
	ToHost                   // a host's channel-adapter port
	ToSwitch                 // a port of another switch
)

// Peer is what one switch port is cabled to.
type Peer struct {
	Kind  PeerKind
	Index int // the host's or the switch's index in the Topology
	Port  int // the peer switch's port number (ToSwitch only)
	// Link is the cable's active width and speed (both ends of a cable
	// between switches give the same); zero: not given, the profile's.
	Link Link
}

// Host is one channel-adapter port and the switch port it is cabled to.
// A dual-ported adapter with both ports cabled is two hosts.
type Host struct {
	Name   string // the node description (ibnetdiscover's quoted name)
	GUID   uint64 // the port GUID (0 when unknown)
	LID    LID
	Switch int // the switch it is cabled to
	Port   int // that switch's port number (1-based, as IB numbers ports)
}

// Switch is one switch. Ports[p-1] is what port p is cabled to; port 0
// (the management port) is not a data port and is not listed.
type Switch struct {
	Name  string
	GUID  uint64
	LID   LID
	Level int // 0 for a leaf (hosts attached), rising toward the spines; -1 when not known
	Ports []Peer
}

// Radix is the switch's number of data ports.
func (s *Switch) Radix() int { return len(s.Ports) }

// Topology is a fabric: every host, every switch and every cable between
// them. Hosts are numbered 0..len(Hosts)-1 and switches 0..len(Switches)-1
// in the order they are listed; a placement maps a run's nodes (ranks)
// onto hosts.
type Topology struct {
	Name     string // what it is, for records and reports ("single switch", "fat-tree 2-level radix 36 1:1", a file name)
	Hosts    []Host
	Switches []Switch
}

// Errors of Validate and of the generators.
var (
	ErrNoHosts     = errors.New("topo: the fabric has no hosts")
	ErrBadLink     = errors.New("topo: inconsistent cabling")
	ErrDuplicateID = errors.New("topo: duplicate LID")
	ErrTooLarge    = errors.New("topo: fabric too large")
	ErrBadSpec     = errors.New("topo: invalid topology specification")
	ErrUnreachable = errors.New("topo: a host cannot reach another")
)

// Validate checks that every cable is listed at both of its ends, that
// every host is cabled to an existing switch port, that LIDs are unique
// unicast LIDs (0 means unassigned and is allowed only when every LID is
// 0: the readers assign LIDs then), and that every host can reach every
// other through the switches.
func (t *Topology) Validate() error {
	if len(t.Hosts) == 0 {
		return ErrNoHosts
	}
	if len(t.Switches) == 0 {
		return fmt.Errorf("%w: %d hosts and no switch (hosts cabled back to back are not modelled)", ErrBadLink, len(t.Hosts))
	}
	for h, host := range t.Hosts {
		if host.Switch < 0 || host.Switch >= len(t.Switches) {
			return fmt.Errorf("%w: host %d (%q) is cabled to switch %d, which does not exist", ErrBadLink, h, host.Name, host.Switch)
		}
		sw := &t.Switches[host.Switch]
		if host.Port < 1 || host.Port > len(sw.Ports) {
			return fmt.Errorf("%w: host %d (%q) is cabled to port %d of switch %q, which has ports 1..%d", ErrBadLink, h, host.Name, host.Port, sw.Name, len(sw.Ports))
		}
		if pe := sw.Ports[host.Port-1]; pe.Kind != ToHost || pe.Index != h {
			return fmt.Errorf("%w: host %d (%q) is cabled to port %d of switch %q, but that port does not list it", ErrBadLink, h, host.Name, host.Port, sw.Name)
		}
	}
	for s := range t.Switches {
		sw := &t.Switches[s]
		if len(sw.Ports) > 255 {
			return fmt.Errorf("%w: switch %q has %d ports; IB port numbers stop at 255", ErrTooLarge, sw.Name, len(sw.Ports))
		}
		for i, pe := range sw.Ports {
			switch pe.Kind {
			case None:
			case ToHost:
				if pe.Index < 0 || pe.Index >= len(t.Hosts) || t.Hosts[pe.Index].Switch != s || t.Hosts[pe.Index].Port != i+1 {
					return fmt.Errorf("%w: port %d of switch %q lists host %d, which is not cabled there", ErrBadLink, i+1, sw.Name, pe.Index)
				}
			case ToSwitch:
				if pe.Index < 0 || pe.Index >= len(t.Switches) || pe.Port < 1 || pe.Port > len(t.Switches[pe.Index].Ports) {
					return fmt.Errorf("%w: port %d of switch %q lists switch %d port %d, which does not exist", ErrBadLink, i+1, sw.Name, pe.Index, pe.Port)
				}
				if pe.Index == s {
					return fmt.Errorf("%w: port %d of switch %q is cabled to the same switch", ErrBadLink, i+1, sw.Name)
				}
				back := t.Switches[pe.Index].Ports[pe.Port-1]
				if back.Kind != ToSwitch || back.Index != s || back.Port != i+1 {
					return fmt.Errorf("%w: port %d of switch %q lists port %d of switch %q, which does not list it back", ErrBadLink, i+1, sw.Name, pe.Port, t.Switches[pe.Index].Name)
				}
				if back.Link != pe.Link {
					return fmt.Errorf("%w: the cable from port %d of switch %q to port %d of switch %q runs at %s at one end and %s at the other; an active link has one width and speed", ErrBadLink, i+1, sw.Name, pe.Port, t.Switches[pe.Index].Name, linkName(pe.Link), linkName(back.Link))
				}
			default:
				return fmt.Errorf("%w: port %d of switch %q has peer kind %d", ErrBadLink, i+1, sw.Name, pe.Kind)
			}
			if l := pe.Link; !l.IsZero() && (!widths[l.Width] || l.Speed == SpeedUnknown || int(l.Speed) >= len(lanes)) {
				return fmt.Errorf("%w: port %d of switch %q: width %d and speed %v (widths 1x, 2x, 4x, 8x, 12x; speeds SDR to XDR)", ErrLink, i+1, sw.Name, l.Width, l.Speed)
			}
			if pe.Kind == None && !pe.Link.IsZero() {
				return fmt.Errorf("%w: port %d of switch %q has a link speed but no cable", ErrBadLink, i+1, sw.Name)
			}
		}
	}
	if err := t.checkLIDs(); err != nil {
		return err
	}
	return t.checkConnected()
}

func (t *Topology) checkLIDs() error {
	zero, set := 0, 0
	seen := make(map[LID]string, len(t.Hosts)+len(t.Switches))
	check := func(l LID, what string) error {
		if l == 0 {
			zero++
			return nil
		}
		set++
		if l > MaxUnicastLID {
			return fmt.Errorf("%w: %s has LID %#x, above the unicast range (1..%#x)", ErrBadSpec, what, uint16(l), uint16(MaxUnicastLID))
		}
		if other, ok := seen[l]; ok {
			return fmt.Errorf("%w: %d is both %s's and %s's", ErrDuplicateID, l, other, what)
		}
		seen[l] = what
		return nil
	}
	for i := range t.Hosts {
		if err := check(t.Hosts[i].LID, fmt.Sprintf("host %q", t.Hosts[i].Name)); err != nil {
			return err
		}
	}
	for i := range t.Switches {
		if err := check(t.Switches[i].LID, fmt.Sprintf("switch %q", t.Switches[i].Name)); err != nil {
			return err
		}
	}
	if zero > 0 && set > 0 {
		return fmt.Errorf("%w: %d devices have a LID and %d have none; give all or none", ErrBadSpec, set, zero)
	}
	return nil
}

func (t *Topology) checkConnected() error {
	seen := make([]bool, len(t.Switches))
	stack := []int{t.Hosts[0].Switch}
	seen[stack[0]] = true
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, pe := range t.Switches[s].Ports {
			if pe.Kind == ToSwitch && !seen[pe.Index] {
				seen[pe.Index] = true
				stack = append(stack, pe.Index)
			}
		}
	}
	for h := range t.Hosts {
		if !seen[t.Hosts[h].Switch] {
			return fmt.Errorf("%w: host %q (on switch %q) is not connected to host %q", ErrUnreachable, t.Hosts[h].Name, t.Switches[t.Hosts[h].Switch].Name, t.Hosts[0].Name)
		}
	}
	return nil
}

// AssignLIDs gives every device a LID when none has one, as OpenSM does on
// a fresh subnet: switches first (1..), then hosts, in listing order.
func (t *Topology) AssignLIDs() {
	for i := range t.Hosts {
		if t.Hosts[i].LID != 0 {
			return
		}
	}
	for i := range t.Switches {
		if t.Switches[i].LID != 0 {
			return
		}
	}
	next := LID(1)
	for i := range t.Switches {
		t.Switches[i].LID = next
		next++
	}
	for i := range t.Hosts {
		t.Hosts[i].LID = next
		next++
	}
}

// HostByLID maps every host LID to its host index.
func (t *Topology) HostByLID() map[LID]int {
	m := make(map[LID]int, len(t.Hosts))
	for i, h := range t.Hosts {
		m[h.LID] = i
	}
	return m
}

// SwitchHops returns, for one destination host, each switch's distance in
// switch-to-switch hops to the switch the host is cabled to (-1 where it
// cannot be reached). A port whose peer switch is one hop closer is a
// minimal (shortest-path) port toward the host.
func (t *Topology) SwitchHops(host int) []int {
	d := make([]int, len(t.Switches))
	for i := range d {
		d[i] = -1
	}
	start := t.Hosts[host].Switch
	d[start] = 0
	queue := []int{start}
	for len(queue) > 0 {
		s := queue[0]
		queue = queue[1:]
		for _, pe := range t.Switches[s].Ports {
			if pe.Kind == ToSwitch && d[pe.Index] < 0 {
				d[pe.Index] = d[s] + 1
				queue = append(queue, pe.Index)
			}
		}
	}
	return d
}

// Tables are the switches' linear forwarding tables, indexed by destination
// host rather than LID: Out[s][h] is the port number (1-based) switch s
// sends packets for host h out of. Tables of a real subnet manager, which
// are indexed by LID, are mapped through each host's LID.
type Tables struct {
	Out [][]uint8
}

// Port is switch s's output port for host h.
func (tb *Tables) Port(s, h int) int { return int(tb.Out[s][h]) }

// ErrBadRoute is returned by CheckTables for a table that does not deliver.
var ErrBadRoute = errors.New("topo: forwarding tables do not deliver")

// CheckTables verifies that tb has an entry for every switch and host,
// that each entry names a cabled port, and that following the tables from
// every switch reaches every host without a loop.
func (t *Topology) CheckTables(tb *Tables) error {
	if len(tb.Out) != len(t.Switches) {
		return fmt.Errorf("%w: tables for %d switches, fabric has %d", ErrBadRoute, len(tb.Out), len(t.Switches))
	}
	for s := range tb.Out {
		if len(tb.Out[s]) != len(t.Hosts) {
			return fmt.Errorf("%w: switch %q has %d entries, fabric has %d hosts", ErrBadRoute, t.Switches[s].Name, len(tb.Out[s]), len(t.Hosts))
		}
	}
	for h := range t.Hosts {
		for s := range t.Switches {
			cur, steps := s, 0
			for {
				p := int(tb.Out[cur][h])
				sw := &t.Switches[cur]
				if p < 1 || p > len(sw.Ports) || sw.Ports[p-1].Kind == None {
					return fmt.Errorf("%w: switch %q sends host %q's packets to port %d, which is not cabled", ErrBadRoute, sw.Name, t.Hosts[h].Name, p)
				}
				pe := sw.Ports[p-1]
				if pe.Kind == ToHost {
					if pe.Index != h {
						return fmt.Errorf("%w: switch %q sends host %q's packets to host %q", ErrBadRoute, sw.Name, t.Hosts[h].Name, t.Hosts[pe.Index].Name)
					}
					break
				}
				cur = pe.Index
				if steps++; steps > len(t.Switches) {
					return fmt.Errorf("%w: packets for host %q loop from switch %q", ErrBadRoute, t.Hosts[h].Name, t.Switches[s].Name)
				}
			}
		}
	}
	return nil
}

// LeafHops returns each switch's distance in switch-to-switch hops to the
// nearest switch with a host (0 for those; -1 where none can be reached)
// and the largest distance. On a fat tree these are its levels (leaf,
// spine, core). Cables that name switches out of range are skipped, so
// that readers can call it before Validate.
func (t *Topology) LeafHops() (dist []int, far int) {
	dist = make([]int, len(t.Switches))
	for i := range dist {
		dist[i] = -1
	}
	queue := make([]int, 0, len(t.Switches))
	for _, h := range t.Hosts {
		if h.Switch >= 0 && h.Switch < len(dist) && dist[h.Switch] < 0 {
			dist[h.Switch] = 0
			queue = append(queue, h.Switch)
		}
	}
	for i := 0; i < len(queue); i++ {
		s := queue[i]
		far = max(far, dist[s])
		for _, pe := range t.Switches[s].Ports {
			if pe.Kind == ToSwitch && pe.Index >= 0 && pe.Index < len(dist) && dist[pe.Index] < 0 {
				dist[pe.Index] = dist[s] + 1
				queue = append(queue, pe.Index)
			}
		}
	}
	return dist, far
}

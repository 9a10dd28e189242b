package route

import (
	"github.com/rdmashuffle/rdmashuffle/fabric/topo"
)

// noHops marks a switch that cannot reach a destination.
const noHops = ^uint16(0)

// portSets holds, for every switch and every destination switch (a switch
// with hosts), a set of output ports toward that destination: the
// shortest-path ports (Minimal), or the legal up/down ports (UpDn). A
// host's own switch sends to the host's port. Sets depend on the
// destination's switch only, so they are stored once per destination
// switch rather than once per host:
//
//	ports[off[d*nsw+s]:off[d*nsw+s+1]]   the ports of switch s toward destination switch d, ascending
//	hops[d*nsw+s]                        switch-to-switch hops of those ports' paths (noHops: none)
//
// At 400 switches, all of them with hosts, and 64-port switches with
// every port a candidate this is under 12 MB; a fat tree needs far less.
type portSets struct {
	nsw      int
	hostSw   []int32 // per host: its switch (-1 when the host is not cabled to one)
	hostPort []uint8 // per host: its switch's port
	dest     []int32 // per host: its switch's destination slot (-1 as hostSw)
	dsw      []int32 // per destination slot: the switch
	off      []uint32
	ports    []uint8
	hops     []uint16
}

// newPortSets maps t's hosts to destination slots, in order of the first
// host on each switch; the sets themselves are filled by the caller with
// add, destination slot by destination slot.
func newPortSets(t *topo.Topology) *portSets {
	ps := &portSets{
		nsw:      len(t.Switches),
		hostSw:   make([]int32, len(t.Hosts)),
		hostPort: make([]uint8, len(t.Hosts)),
		dest:     make([]int32, len(t.Hosts)),
	}
	slot := make(map[int]int32)
	for h, host := range t.Hosts {
		if host.Switch < 0 || host.Switch >= len(t.Switches) || host.Port < 1 || host.Port > 255 {
			ps.hostSw[h], ps.dest[h] = -1, -1
			continue
		}
		ps.hostSw[h] = int32(host.Switch)
		ps.hostPort[h] = uint8(host.Port)
		d, ok := slot[host.Switch]
		if !ok {
			d = int32(len(ps.dsw))
			slot[host.Switch] = d
			ps.dsw = append(ps.dsw, int32(host.Switch))
		}
		ps.dest[h] = d
	}
	ps.off = make([]uint32, 1, len(ps.dsw)*ps.nsw+1)
	ps.hops = make([]uint16, 0, len(ps.dsw)*ps.nsw)
	return ps
}

// add appends the set of the next switch of the destination slot being
// filled (switches in index order, destination slots in order).
func (ps *portSets) add(hops uint16, ports []uint8) {
	ps.ports = append(ps.ports, ports...)
	ps.off = append(ps.off, uint32(len(ps.ports)))
	ps.hops = append(ps.hops, hops)
}

// set is switch s's set toward host h; nil when s cannot reach h (or
// either index is out of range). It aliases internal storage.
func (ps *portSets) set(s, h int) []uint8 {
	if h < 0 || h >= len(ps.dest) || s < 0 || s >= ps.nsw || ps.dest[h] < 0 {
		return nil
	}
	if int(ps.hostSw[h]) == s {
		return ps.hostPort[h : h+1 : h+1]
	}
	i := int(ps.dest[h])*ps.nsw + s
	if i+1 >= len(ps.off) {
		return nil
	}
	return ps.ports[ps.off[i]:ps.off[i+1]:ps.off[i+1]]
}

// hopCount is the switch-to-switch hop count of s's routes toward h, -1
// when there are none.
func (ps *portSets) hopCount(s, h int) int {
	if h < 0 || h >= len(ps.dest) || s < 0 || s >= ps.nsw || ps.dest[h] < 0 {
		return -1
	}
	i := int(ps.dest[h])*ps.nsw + s
	if i >= len(ps.hops) || ps.hops[i] == noHops {
		return -1
	}
	return int(ps.hops[i])
}

// size is the memory the sets hold, in bytes.
func (ps *portSets) size() int {
	return 4*len(ps.hostSw) + len(ps.hostPort) + 4*len(ps.dest) + 4*len(ps.dsw) +
		4*cap(ps.off) + cap(ps.ports) + 2*cap(ps.hops)
}

// MinimalPorts is, for every switch and every host, the set of the
// switch's output ports that lie on a shortest path to the host (the
// ports whose peer switch is one hop closer, or the host's own port on
// its switch): the choices an adaptive-routing switch has. Build it with
// Minimal; it is read-only and safe to share.
type MinimalPorts struct {
	sets *portSets
}

// Minimal computes the shortest-path ports of every switch toward every
// host of t, by one breadth-first search per switch that has hosts. t
// should be valid (topo.Topology.Validate); cabling it cannot follow is
// skipped, and a switch that cannot reach a host has no ports for it.
func Minimal(t *topo.Topology) *MinimalPorts {
	ps := newPortSets(t)
	ns := len(t.Switches)
	dist := make([]uint16, ns)
	queue := make([]int32, 0, ns)
	var buf []uint8
	for _, d := range ps.dsw {
		bfsHops(t, int(d), dist, queue)
		for s := 0; s < ns; s++ {
			buf = buf[:0]
			if dist[s] != noHops && dist[s] > 0 {
				for p, pe := range t.Switches[s].Ports {
					if pe.Kind == topo.ToSwitch && pe.Index >= 0 && pe.Index < ns && dist[pe.Index] == dist[s]-1 && p < 255 {
						buf = append(buf, uint8(p+1))
					}
				}
			}
			ps.add(dist[s], buf)
		}
	}
	return &MinimalPorts{sets: ps}
}

// bfsHops fills dist with every switch's hop count to switch d (noHops
// where it cannot reach d).
func bfsHops(t *topo.Topology, d int, dist []uint16, queue []int32) {
	for i := range dist {
		dist[i] = noHops
	}
	dist[d] = 0
	queue = append(queue[:0], int32(d))
	for i := 0; i < len(queue); i++ {
		s := int(queue[i])
		for _, pe := range t.Switches[s].Ports {
			if pe.Kind == topo.ToSwitch && pe.Index >= 0 && pe.Index < len(dist) && dist[pe.Index] == noHops {
				dist[pe.Index] = dist[s] + 1
				queue = append(queue, int32(pe.Index))
			}
		}
	}
}

// Ports is switch s's set of shortest-path output ports (1-based port
// numbers, ascending) toward host h: the host's port when h is cabled to
// s, nil when s cannot reach h or an index is out of range. The slice
// aliases m's storage: do not modify it.
func (m *MinimalPorts) Ports(s, h int) []uint8 { return m.sets.set(s, h) }

// Hops is the number of switch-to-switch hops from switch s to host h's
// switch (0 on h's own switch), or -1 when s cannot reach h.
func (m *MinimalPorts) Hops(s, h int) int { return m.sets.hopCount(s, h) }

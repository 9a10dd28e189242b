package route

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/rdmashuffle/rdmashuffle/fabric/topo"
)

// updnRoots picks the root switches of up/down routing: the top-level
// switches when every switch's Level is known (>= 0), else the switches
// farthest (in switch hops) from any switch with hosts. OpenSM instead
// takes roots from a GUID file (-a) or detects them from a histogram of
// hop counts to the channel adapters (updn_find_root_nodes_by_min_hop in
// opensm/osm_ucast_updn.c); see docs/routing.md.
func updnRoots(t *topo.Topology) []bool {
	ns := len(t.Switches)
	roots := make([]bool, ns)
	known, top := true, 0
	for i := range t.Switches {
		if t.Switches[i].Level < 0 {
			known = false
			break
		}
		top = max(top, t.Switches[i].Level)
	}
	if known {
		for i := range t.Switches {
			roots[i] = t.Switches[i].Level == top
		}
		return roots
	}
	dist, far := t.LeafHops()
	for i := range roots {
		roots[i] = dist[i] == far
	}
	return roots
}

// updnOrder ranks every switch by its BFS distance from the roots (0 for
// a root) and returns each switch's position in the total order "higher
// up first": by rank, then by GUID (OpenSM breaks a tie of ranks by node
// GUID, the smaller one being up), then by index. A step from switch a to
// switch b goes up when pos[b] < pos[a].
func updnOrder(t *topo.Topology, roots []bool) []int {
	ns := len(t.Switches)
	rank := make([]int, ns)
	var queue []int
	for s := range rank {
		rank[s] = -1
		if roots[s] {
			rank[s] = 0
			queue = append(queue, s)
		}
	}
	for i := 0; i < len(queue); i++ {
		s := queue[i]
		for _, pe := range t.Switches[s].Ports {
			if pe.Kind == topo.ToSwitch && rank[pe.Index] < 0 {
				rank[pe.Index] = rank[s] + 1
				queue = append(queue, pe.Index)
			}
		}
	}
	byPos := make([]int, ns)
	for i := range byPos {
		byPos[i] = i
	}
	slices.SortFunc(byPos, func(a, b int) int {
		if c := cmp.Compare(rank[a], rank[b]); c != 0 {
			return c
		}
		if c := cmp.Compare(t.Switches[a].GUID, t.Switches[b].GUID); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	pos := make([]int, ns)
	for i, s := range byPos {
		pos[s] = i
	}
	return pos
}

// updnPlan computes the up/down order and port sets of t. When the roots
// updnRoots picks are not connected to one another within the up/down
// rules (every switch has hosts, say, so that every switch is a root), it
// falls back to a single root, the first of them in GUID (then index)
// order: with one root every switch climbs to it and it descends to every
// switch, so every pair is connected.
func updnPlan(t *topo.Topology) (*portSets, []int, error) {
	roots := updnRoots(t)
	pos := updnOrder(t, roots)
	sets, err := updnSets(t, pos)
	if err == nil {
		return sets, pos, nil
	}
	first, n := -1, 0
	for _, s := range switchOrder(t) {
		if roots[s] {
			n++
			if first < 0 {
				first = s
			}
		}
	}
	if n < 2 {
		return nil, nil, err
	}
	clear(roots)
	roots[first] = true
	pos = updnOrder(t, roots)
	sets, err = updnSets(t, pos)
	if err != nil {
		return nil, nil, err
	}
	return sets, pos, nil
}

// updnSets computes, for every switch and destination switch, the ports
// of the shortest legal up/down routes: a route climbs zero or more
// times, then descends zero or more times, and never climbs after a
// descent.
//
// Tables route by destination only, so a switch cannot tell a packet that
// arrived going down from one that arrived going up. A switch is therefore
// either down-only for a destination (its route only descends, so a
// packet may enter it from above) or not (its route climbs first; no
// switch above sends it packets for that destination). A breadth-first
// search from the destination's switch over reversed steps assigns each
// switch its hop count and kind: a switch reached at distance k is
// down-only when one of its lower neighbours at distance k-1 is down-only,
// and it may use an upper neighbour at distance k-1 of either kind; a
// down-only switch uses only down-only lower neighbours. Preferring
// down-only at equal distance keeps every route the shortest legal one.
//
// OpenSM computes its up/down hop matrix with one BFS per switch that
// keeps a single direction per switch (updn_bfs_by_node): see
// docs/routing.md for where that differs.
func updnSets(t *topo.Topology, pos []int) (*portSets, error) {
	ps := newPortSets(t)
	ns := len(t.Switches)
	dist := make([]uint16, ns)
	downOnly := make([]bool, ns)
	var frontier, next []int
	var buf []uint8
	for _, d32 := range ps.dsw {
		d := int(d32)
		for i := range dist {
			dist[i], downOnly[i] = noHops, false
		}
		dist[d], downOnly[d] = 0, true
		frontier = append(frontier[:0], d)
		for len(frontier) > 0 {
			next = next[:0]
			for _, u := range frontier {
				for _, pe := range t.Switches[u].Ports {
					if pe.Kind != topo.ToSwitch {
						continue
					}
					s := pe.Index // a switch that could forward to u
					if dist[s] != noHops && dist[s] != dist[u]+1 {
						continue
					}
					down := pos[u] > pos[s] // the step s -> u descends
					if down && !downOnly[u] {
						continue // s -> u would climb again after this descent
					}
					if dist[s] == noHops {
						dist[s] = dist[u] + 1
						next = append(next, s)
					}
					if down {
						downOnly[s] = true
					}
				}
			}
			frontier, next = next, frontier
		}
		for s := 0; s < ns; s++ {
			if dist[s] == noHops {
				return nil, fmt.Errorf("%w: up/down routing: switch %q has no path to switch %q that never climbs after descending ",
					ErrUnroutable, t.Switches[s].Name, t.Switches[d].Name)
			}
			buf = buf[:0]
			for p, pe := range t.Switches[s].Ports {
				if pe.Kind != topo.ToSwitch || dist[s] == 0 || dist[pe.Index] != dist[s]-1 {
					continue
				}
				u := pe.Index
				if downOnly[s] {
					if pos[u] > pos[s] && downOnly[u] {
						buf = append(buf, uint8(p+1))
					}
				} else if pos[u] < pos[s] {
					buf = append(buf, uint8(p+1))
				}
			}
			ps.add(dist[s], buf)
		}
	}
	return ps, nil
}

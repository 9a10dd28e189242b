package route

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/rdmashuffle/rdmashuffle/fabric/topo"
)

// Fat-tree routing after OpenSM's ftree engine (opensm/osm_ucast_ftree.c,
// doc/current-routing.txt), rewritten; docs/routing.md says where it
// differs.
//
// The fabric is ranked from the hosts up: switches with hosts are the
// leaves, the switches farthest from them the roots (rank 0), and every
// switch's rank is its distance from the roots. A cable between switches
// of adjacent ranks goes up from the lower one; the cables from one switch
// to one neighbour are a port group. Switches are indexed by a BFS from
// the first leaf, and every switch's groups are kept in the order of their
// remote switch's index.
//
// Destinations are routed leaf by leaf (in index order) and, on a leaf,
// host by host (in port order). For one destination the route is built
// from its leaf upward: each switch on the way picks, among its up-going
// groups, the one that carries the fewest down-going routes so far (ties
// to the lowest index) and, within it, the least loaded port; the switch
// above then sends the destination down that cable. That chain to a root
// is the main path, the only one whose routes are counted. Every switch
// that learns a route also hands it down to the switches below it (each
// of them sends the destination up to it, through the least loaded cable
// of the group, counting the up-going routes there), and up to its other
// upper neighbours (secondary paths, not counted); a switch that already
// has a route at least as short keeps it. A leaf with fewer hosts than the
// fullest leaf routes as many "dummy" destinations as it lacks, so that
// every leaf's counters advance alike.
//
// On a leaf with u up-going groups the i-th host's destination thus takes
// the (i mod u)-th group, and on a full tree with contiguously placed
// ranks every shift permutation puts at most one flow on each link.

// ftGroup is the cables from one switch to one neighbour switch.
type ftGroup struct {
	remote  int32
	ports   []uint8 // this switch's ports, ascending
	rports  []uint8 // the neighbour's port at the other end of each
	counter uint32  // routes counted on the group: down-going for an up-going group, up-going for a down-going one
}

// ftSwitch is one switch of the tree.
type ftSwitch struct {
	rank  int
	up    []ftGroup
	down  []ftGroup
	hosts []ftHost // leaves: the hosts, by port
}

type ftHost struct {
	host int
	port uint8
}

// ftree is the fabric as fat-tree routing sees it, and its routing state.
type ftree struct {
	t     *topo.Topology
	sw    []ftSwitch
	index []int      // BFS index of each switch
	cnt   [][]uint32 // per switch, per port: routes counted on the port
	hop   []uint16   // hops to the current destination, valid where stamp == cur
	stamp []uint32
	cur   uint32
	host  int // the current destination host; -1 for a dummy
	out   *topo.Tables
}

func notFatTree(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrNotFatTree}, args...)...)
}

// fatTree computes fat-tree tables for a valid topology, or an error
// wrapping ErrNotFatTree that says why t is not one.
func fatTree(t *topo.Topology) (*topo.Tables, error) {
	f, leaves, maxHosts, err := buildFTree(t)
	if err != nil {
		return nil, err
	}
	f.out = newTables(t)
	for _, l := range leaves {
		routed := 0
		for _, h := range f.sw[l].hosts {
			f.route(l, h.host, h.port)
			routed++
		}
		for ; routed < maxHosts; routed++ {
			f.route(l, -1, 0)
		}
	}
	for s := range t.Switches {
		if f.sw[s].rank < 0 {
			continue // not connected to the hosts: not in the subnet, no table
		}
		for h := range t.Hosts {
			if f.out.Out[s][h] == 0 {
				return nil, notFatTree("switch %q is given no up/down route to host %q", t.Switches[s].Name, t.Hosts[h].Name)
			}
		}
	}
	return f.out, nil
}

// switchOrder is the order OpenSM's tables of switches keep (by node
// GUID), here by GUID then index.
func switchOrder(t *topo.Topology) []int {
	order := make([]int, len(t.Switches))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		if c := cmp.Compare(t.Switches[a].GUID, t.Switches[b].GUID); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	return order
}

// buildFTree ranks, checks and indexes t; it returns the routing state,
// the leaves in routing order and the most hosts on one leaf.
func buildFTree(t *topo.Topology) (*ftree, []int, int, error) {
	ns := len(t.Switches)
	if ns < 2 {
		return nil, nil, 0, notFatTree("the fabric has %d switch: a tree needs at least two levels of switches", ns)
	}
	if len(t.Hosts) < 2 {
		return nil, nil, 0, notFatTree("the fabric has %d host: at least two are needed", len(t.Hosts))
	}
	// Rank from the hosts up, then again from the roots down, as OpenSM
	// does (fabric_rank_from_hcas, fabric_rerank_using_root).
	fromHosts, top := t.LeafHops()
	if top == 0 {
		return nil, nil, 0, notFatTree("every one of the %d switches has hosts: there is no level of switches above the leaves", ns)
	}
	f := &ftree{t: t, sw: make([]ftSwitch, ns)}
	for s := range f.sw {
		f.sw[s].rank = -1
	}
	queue := make([]int, 0, ns)
	for s := range f.sw {
		if fromHosts[s] == top {
			f.sw[s].rank = 0
			queue = append(queue, s)
		}
	}
	leafRank := 0
	for i := 0; i < len(queue); i++ {
		s := queue[i]
		leafRank = max(leafRank, f.sw[s].rank)
		for _, pe := range t.Switches[s].Ports {
			if pe.Kind == topo.ToSwitch && f.sw[pe.Index].rank < 0 {
				f.sw[pe.Index].rank = f.sw[s].rank + 1
				queue = append(queue, pe.Index)
			}
		}
	}
	if leafRank+1 > 8 {
		return nil, nil, 0, notFatTree("the tree has %d levels of switches; fat-tree routing handles 2 to 8", leafRank+1)
	}
	for _, h := range t.Hosts {
		if r := f.sw[h.Switch].rank; r != leafRank {
			return nil, nil, 0, notFatTree("host %q is cabled to switch %q at level %d, but the leaves are at level %d (levels counted from the roots, 0): hosts are not all on leaves",
				h.Name, t.Switches[h.Switch].Name, r, leafRank)
		}
	}

	// Port groups and per-port counters.
	f.cnt = make([][]uint32, ns)
	groupOf := make([]int, ns) // remote switch -> group position + 1, for the switch being built
	for s := range t.Switches {
		sw := &f.sw[s]
		f.cnt[s] = make([]uint32, len(t.Switches[s].Ports)+1)
		if sw.rank < 0 {
			// A switch no host can reach (every cable of it down) is not
			// in the subnet the subnet manager discovers: it gets no
			// table, as in OpenSM, where it would not be swept at all.
			continue
		}
		for p, pe := range t.Switches[s].Ports {
			switch pe.Kind {
			case topo.ToHost:
				sw.hosts = append(sw.hosts, ftHost{host: pe.Index, port: uint8(p + 1)})
			case topo.ToSwitch:
				r := pe.Index
				var groups *[]ftGroup
				switch rr := f.sw[r].rank; {
				case rr < sw.rank:
					groups = &sw.up
				case rr > sw.rank:
					groups = &sw.down
				default:
					return nil, nil, 0, notFatTree("switches %q and %q are both at level %d (counted from the roots, 0) and cabled to each other: links within a level are not supported",
						t.Switches[s].Name, t.Switches[r].Name, sw.rank)
				}
				if groupOf[r] == 0 {
					*groups = append(*groups, ftGroup{remote: int32(r)})
					groupOf[r] = len(*groups)
				}
				g := &(*groups)[groupOf[r]-1]
				g.ports = append(g.ports, uint8(p+1))
				g.rports = append(g.rports, uint8(pe.Port))
			}
		}
		for _, g := range sw.up {
			groupOf[g.remote] = 0
		}
		for _, g := range sw.down {
			groupOf[g.remote] = 0
		}
	}
	if err := f.validate(leafRank); err != nil {
		return nil, nil, 0, err
	}
	leaves, maxHosts, err := f.makeIndexing(leafRank)
	if err != nil {
		return nil, nil, 0, err
	}
	f.hop = make([]uint16, ns)
	f.stamp = make([]uint32, ns)
	return f, leaves, maxHosts, nil
}

// validate applies OpenSM's checks of a "pure" fat tree
// (fabric_validate_topology) level by level against the first switch of
// the level: the same number of up-going groups, the same number of
// cables in each up-going group and in each down-going group above the
// leaves. Unlike OpenSM it accepts switches of one level with different
// numbers of down-going groups (a partially populated tree's last pod),
// as OpenSM does when given the roots in a file.
func (f *ftree) validate(leafRank int) error {
	t := f.t
	ref := make([]int, leafRank+1)
	for i := range ref {
		ref[i] = -1
	}
	for _, s := range switchOrder(t) {
		sw := &f.sw[s]
		if sw.rank < 0 {
			continue // not connected to the hosts (buildFTree)
		}
		r := ref[sw.rank]
		if r < 0 {
			ref[sw.rank] = s
			r = s
		}
		rs := &f.sw[r]
		if sw.rank > 0 && len(sw.up) == 0 {
			return notFatTree("switch %q has no cable to the level above", t.Switches[s].Name)
		}
		if len(sw.up) != len(rs.up) {
			return notFatTree("switches %q and %q are on the same level but have %d and %d upper neighbours",
				t.Switches[r].Name, t.Switches[s].Name, len(rs.up), len(sw.up))
		}
		for _, g := range sw.up {
			if len(g.ports) != len(rs.up[0].ports) {
				return notFatTree("switch %q has %d cable(s) to upper neighbour %q, but switch %q has %d to upper neighbour %q: groups of parallel cables differ",
					t.Switches[s].Name, len(g.ports), t.Switches[g.remote].Name, t.Switches[r].Name, len(rs.up[0].ports), t.Switches[rs.up[0].remote].Name)
			}
		}
		if sw.rank != leafRank && len(rs.down) > 0 {
			for _, g := range sw.down {
				if len(g.ports) != len(rs.down[0].ports) {
					return notFatTree("switch %q has %d cable(s) to lower neighbour %q, but switch %q has %d to lower neighbour %q: groups of parallel cables differ",
						t.Switches[s].Name, len(g.ports), t.Switches[g.remote].Name, t.Switches[r].Name, len(rs.down[0].ports), t.Switches[rs.down[0].remote].Name)
				}
			}
		}
	}
	return nil
}

// makeIndexing numbers the switches by a BFS from the first leaf (as
// OpenSM's bfs_fabric_indexing, which numbers by tuples), sorts every
// switch's groups by their remote switch's number and returns the leaf
// switches in that order (from the first to the last with hosts, as
// fabric_create_leaf_switch_array) and the most hosts on one of them.
func (f *ftree) makeIndexing(leafRank int) ([]int, int, error) {
	t := f.t
	ns := len(f.sw)
	order := switchOrder(t)
	f.index = make([]int, ns)
	for i := range f.index {
		f.index[i] = -1
	}
	first := -1
	for _, s := range order {
		if len(f.sw[s].hosts) > 0 {
			first = s
			break
		}
	}
	next := 0
	f.index[first] = next
	next++
	queue := []int{first}
	for i := 0; i < len(queue); i++ {
		sw := &f.sw[queue[i]]
		if sw.rank < leafRank {
			for _, g := range sw.down {
				if f.index[g.remote] < 0 {
					f.index[g.remote] = next
					next++
					queue = append(queue, int(g.remote))
				}
			}
		}
		if sw.rank > 0 {
			for _, g := range sw.up {
				if f.index[g.remote] < 0 {
					f.index[g.remote] = next
					next++
					queue = append(queue, int(g.remote))
				}
			}
		}
	}
	for _, s := range order { // none in a connected fabric
		if f.index[s] < 0 {
			f.index[s] = next
			next++
		}
	}
	byIndex := func(a, b ftGroup) int { return cmp.Compare(f.index[a.remote], f.index[b.remote]) }
	var atLeafRank []int
	for s := range f.sw {
		slices.SortFunc(f.sw[s].up, byIndex)
		slices.SortFunc(f.sw[s].down, byIndex)
		if f.sw[s].rank == leafRank {
			atLeafRank = append(atLeafRank, s)
		}
	}
	slices.SortFunc(atLeafRank, func(a, b int) int { return cmp.Compare(f.index[a], f.index[b]) })
	lo, hi := -1, -1
	maxHosts := 0
	for i, s := range atLeafRank {
		if n := len(f.sw[s].hosts); n > 0 {
			if lo < 0 {
				lo = i
			}
			hi = i
			maxHosts = max(maxHosts, n)
		}
	}
	if lo >= hi {
		return nil, 0, notFatTree("all hosts are on one leaf switch, %q", t.Switches[atLeafRank[lo]].Name)
	}
	return atLeafRank[lo : hi+1], maxHosts, nil
}

// route gives every switch its route to one destination: host h on port
// port of leaf l, or (h = -1) a dummy destination that only advances the
// counters.
func (f *ftree) route(l, h int, port uint8) {
	f.cur++
	f.host = h
	f.set(l, port, 1)
	f.downByGoingUp(l, -1, true, 1)
}

func (f *ftree) isSet(s int) bool { return f.stamp[s] == f.cur }

// set records that switch s sends the current destination out of port p,
// hops switches away from it (its leaf counts 1).
func (f *ftree) set(s int, p uint8, hops uint16) {
	f.stamp[s] = f.cur
	f.hop[s] = hops
	if f.host >= 0 {
		f.out.Out[s][f.host] = p
	}
}

// leastLoaded is the position in g of the port of switch s with the
// fewest counted routes, ties to the first.
func (f *ftree) leastLoaded(s int, g *ftGroup) int {
	best := 0
	for k := 1; k < len(g.ports); k++ {
		if f.cnt[s][g.ports[k]] < f.cnt[s][g.ports[best]] {
			best = k
		}
	}
	return best
}

// sortByLoad orders groups by counted routes, then by their remote
// switch's index: an insertion sort, as the groups are nearly in order
// already (OpenSM uses a bubble sort for the same reason).
func (f *ftree) sortByLoad(gs []ftGroup) {
	less := func(a, b *ftGroup) bool {
		if a.counter != b.counter {
			return a.counter < b.counter
		}
		return f.index[a.remote] < f.index[b.remote]
	}
	for i := 1; i < len(gs); i++ {
		for j := i; j > 0 && less(&gs[j], &gs[j-1]); j-- {
			gs[j], gs[j-1] = gs[j-1], gs[j]
		}
	}
}

// downByGoingUp: switch s (hops from the destination) has its route; the
// switches below it get theirs (upByGoingDown), then the switch above on
// the main path is told to send the destination down to s, and the other
// upper neighbours likewise unless they have a route as short
// (fabric_route_downgoing_by_going_up). It reports whether a route to a
// host was created below.
func (f *ftree) downByGoingUp(s, prev int, main bool, hops uint16) bool {
	created := f.upByGoingDown(s, prev, hops)
	sw := &f.sw[s]
	if sw.rank == 0 || len(sw.up) == 0 {
		return created
	}
	f.sortByLoad(sw.up)
	first := 0
	if main {
		g := &sw.up[0]
		k := f.leastLoaded(s, g)
		g.counter++
		f.cnt[s][g.ports[k]]++
		r := int(g.remote)
		if !f.isSet(r) || hops+1 < f.hop[r] {
			f.set(r, g.rports[k], hops+1)
		}
		if f.downByGoingUp(r, s, true, hops+1) {
			created = true
		}
		first = 1
	}
	for i := first; i < len(sw.up); i++ {
		g := &sw.up[i]
		r := int(g.remote)
		if f.isSet(r) && hops+1 >= f.hop[r] {
			continue
		}
		k := f.leastLoaded(s, g)
		f.set(r, g.rports[k], hops+1)
		if f.downByGoingUp(r, s, false, hops+1) {
			created = true
		}
	}
	return created
}

// upByGoingDown: switch s has its route; every lower neighbour but prev
// that has no route as short sends the destination up to s through the
// least loaded cable of the group, and hands the route further down
// (fabric_route_upgoing_by_going_down). Up-going routes are counted on
// the cables they leave s's neighbours by (on s's ports) when the route
// reaches a host below. It reports whether s has hosts or such a route
// was created.
func (f *ftree) upByGoingDown(s, prev int, hops uint16) bool {
	sw := &f.sw[s]
	created := len(sw.hosts) > 0
	if len(sw.down) == 0 {
		return created
	}
	f.sortByLoad(sw.down)
	for i := range sw.down {
		g := &sw.down[i]
		r := int(g.remote)
		if r == prev {
			continue
		}
		k := f.leastLoaded(s, g)
		if f.isSet(r) && hops+1 >= f.hop[r] {
			continue
		}
		f.set(r, g.rports[k], hops+1)
		if f.upByGoingDown(r, -1, hops+1) {
			created = true
			f.cnt[s][g.ports[k]]++
			g.counter++
		}
	}
	return created
}

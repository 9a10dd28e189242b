package route

import (
	"cmp"
	"math/bits"
	"math/rand/v2"
	"slices"

	"github.com/rdmashuffle/rdmashuffle/fabric/topo"
)

// opensmOrder is the order OpenSM's MinHop and UpDn engines give
// destinations their routes in (ucast_mgr_build_lfts in
// opensm/osm_ucast_mgr.c): switches by the number of end ports cabled to
// them, most first (sort_ports_by_switch_load), ties in the order of
// OpenSM's switch table (by node GUID; here by GUID, then by index, so
// switches without GUIDs keep their listing order), and on each switch
// its hosts by port number. Hosts are all cabled to switches in a valid
// topology; the others (OpenSM's remaining ports, in port GUID order)
// would be switches' own LIDs, which are not destinations here.
func opensmOrder(t *topo.Topology) []int {
	ns := len(t.Switches)
	count := make([]int, ns)
	for _, h := range t.Hosts {
		count[h.Switch]++
	}
	sw := make([]int, ns)
	for i := range sw {
		sw[i] = i
	}
	slices.SortStableFunc(sw, func(a, b int) int {
		if c := cmp.Compare(count[b], count[a]); c != 0 {
			return c
		}
		if c := cmp.Compare(t.Switches[a].GUID, t.Switches[b].GUID); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	order := make([]int, 0, len(t.Hosts))
	for _, s := range sw {
		for _, pe := range t.Switches[s].Ports {
			if pe.Kind == topo.ToHost {
				order = append(order, pe.Index)
			}
		}
	}
	return order
}

// balance fills tables the way OpenSM's LFT builder does once a hop
// matrix exists (osm_switch_recommend_path in opensm/osm_switch.c): each
// switch, independently, visits the destinations in order and gives each
// the candidate port that carries the fewest destinations so far,
// ties to the lowest port number, then counts the destination on that
// port. The candidates are sets' ports (least-hop ports for MinHop,
// least-hop legal ports for UpDn). A switch with no candidate for a host
// keeps port 0 (no route).
func balance(t *topo.Topology, sets *portSets, order []int) *topo.Tables {
	tb := newTables(t)
	var count [256]uint32
	for s := range t.Switches {
		clear(count[:])
		out := tb.Out[s]
		for _, h := range order {
			cand := sets.set(s, h)
			if len(cand) == 0 {
				continue
			}
			best := cand[0]
			for _, p := range cand[1:] {
				if count[p] < count[best] {
					best = p
				}
			}
			out[h] = best
			count[best]++
		}
	}
	return tb
}

// randomTables gives every (switch, host) a uniformly random port among
// its candidates, drawn from a PCG generator seeded from seed, switches in
// index order and on each switch hosts in index order.
func randomTables(t *topo.Topology, sets *portSets, seed uint64) *topo.Tables {
	tb := newTables(t)
	src := rand.NewPCG(seed, 0x726f757465) // "route"
	for s := range t.Switches {
		out := tb.Out[s]
		for h := range t.Hosts {
			cand := sets.set(s, h)
			switch len(cand) {
			case 0:
			case 1:
				out[h] = cand[0]
			default:
				out[h] = cand[below(src, uint64(len(cand)))]
			}
		}
	}
	return tb
}

// below draws a uniform integer in [0, n) from src (n > 0) by Lemire's
// multiply-and-reject, on 64-bit arithmetic on every architecture so that
// a seed gives the same tables on 32- and 64-bit machines (math/rand/v2's
// IntN takes a 32-bit path on 32-bit machines).
func below(src *rand.PCG, n uint64) uint64 {
	hi, lo := bits.Mul64(src.Uint64(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(src.Uint64(), n)
		}
	}
	return hi
}

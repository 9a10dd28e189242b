package ibnet

import "github.com/rdmashuffle/rdmashuffle/fabric/topo"

// setLevels infers the switches' levels, which none of the files record:
// 0 for a switch with hosts (a leaf), otherwise the number of
// switch-to-switch hops to the nearest leaf, -1 when no leaf can be
// reached. On a fat tree these are its levels (leaf, spine, core).
func setLevels(t *topo.Topology) {
	dist, _ := t.LeafHops()
	for i, d := range dist {
		t.Switches[i].Level = d
	}
}

package algos

import (
	"fmt"
	"strconv"
	"strings"
)

// Pattern is a shuffle's communication pattern (Liu17 §4.1).
type Pattern string

// Patterns.
const (
	Repartition Pattern = "repartition" // each tuple to one node, by modulo on its key
	Broadcast   Pattern = "broadcast"   // every tuple to every node
	// Multicast is the prefix of "multicast:K": each tuple goes to K
	// consecutive nodes, group i being nodes i, i+1, ..., i+K-1 (modulo the
	// cluster size), chosen by modulo on the key as for repartition. It
	// stands for the paper's multicast transmission groups (a replicated
	// join input, say); K = 1 is repartition and K = nodes is broadcast
	// with nodes groups.
	Multicast Pattern = "multicast"
)

// Groups are the transmission groups of a pattern: a tuple goes to every
// member of group Of(key).
type Groups struct {
	pattern Pattern
	members [][]int
}

// NewGroups builds the groups of a pattern over nodes nodes.
func NewGroups(p Pattern, nodes int) (Groups, error) {
	g := Groups{pattern: p}
	switch p {
	case Repartition:
		for i := 0; i < nodes; i++ {
			g.members = append(g.members, []int{i})
		}
	case Broadcast:
		all := make([]int, nodes)
		for i := range all {
			all[i] = i
		}
		g.members = [][]int{all}
	default:
		k, err := multicastFanout(p, nodes)
		if err != nil {
			return g, err
		}
		for i := 0; i < nodes; i++ {
			m := make([]int, k)
			for j := range m {
				m[j] = (i + j) % nodes
			}
			g.members = append(g.members, m)
		}
	}
	return g, nil
}

// multicastFanout parses "multicast:K" and checks 1 <= K <= nodes.
func multicastFanout(p Pattern, nodes int) (int, error) {
	bad := fmt.Errorf("%w: pattern %q: choose %s, %s or %s:K (each tuple to K nodes, 1 <= K <= %d)",
		ErrConfig, p, Repartition, Broadcast, Multicast, nodes)
	rest, ok := strings.CutPrefix(string(p), string(Multicast)+":")
	if !ok {
		return 0, bad
	}
	k, err := strconv.Atoi(rest)
	if err != nil || k < 1 || k > nodes {
		return 0, bad
	}
	return k, nil
}

// Len is the number of groups.
func (g Groups) Len() int { return len(g.members) }

// Of returns the group of a key: the low 32 bits of the key modulo the
// number of groups (Liu19 repartitions by modulo; a 32-bit division is
// cheaper than a 64-bit one). Partitioner.Scatter computes the same
// remainder by direct computation (a precomputed multiply), measured
// faster there.
func (g Groups) Of(key uint64) int {
	return int(uint32(key) % uint32(len(g.members)))
}

// Overlapping reports whether some node belongs to more than one group
// (multicast): its end of stream cannot ride on a group's last buffer.
func (g Groups) Overlapping() bool {
	seen := map[int]bool{}
	for _, m := range g.members {
		for _, d := range m {
			if seen[d] {
				return true
			}
			seen[d] = true
		}
	}
	return false
}

// Members lists a group's nodes.
func (g Groups) Members(i int) []int { return g.members[i] }

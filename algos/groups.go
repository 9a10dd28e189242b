package algos

import "fmt"

// Pattern is a shuffle's communication pattern (seed 000 §4.1).
type Pattern string

// Patterns.
const (
	Repartition Pattern = "repartition" // each tuple to one node, by modulo on its key
	Broadcast   Pattern = "broadcast"   // every tuple to every node
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
		return g, fmt.Errorf("%w: pattern %q: choose %s or %s", ErrConfig, p, Repartition, Broadcast)
	}
	return g, nil
}

// Len is the number of groups.
func (g Groups) Len() int { return len(g.members) }

// Of returns the group of a key: the low 32 bits of the key modulo the
// number of groups (seed 001 repartitions by modulo; a 32-bit division is
// cheaper than a 64-bit one, and measured faster here than a
// multiply-based remainder). Partitioner.Scatter computes the same.
func (g Groups) Of(key uint64) int {
	return int(uint32(key) % uint32(len(g.members)))
}

// Members lists a group's nodes.
func (g Groups) Members(i int) []int { return g.members[i] }

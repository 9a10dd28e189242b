package sweep

import (
	"testing"

	"github.com/rdmashuffle/rdmashuffle/algos"
)

// FuzzParseNodeCycles: --node-cycles never panics, and what it accepts is
// non-negative.
func FuzzParseNodeCycles(f *testing.F) {
	for _, s := range []string{"21,95", "", " 5 , 6 ", "-1", "1,,2", "9999999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseNodeCycles(s)
		if err != nil {
			return
		}
		for _, c := range v {
			if c < 0 {
				t.Fatalf("%q gave a negative cost %d", s, c)
			}
		}
	})
}

// FuzzParseShard: --shard never panics, and an accepted shard is i/n with
// 1 <= i <= n.
func FuzzParseShard(f *testing.F) {
	for _, s := range []string{"1/3", "3/3", "0/3", "4/3", "x", "1/0", "-1/2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if _, err := ParseShard(s); err != nil {
			return
		}
	})
}

// FuzzPattern: --pattern (repartition, broadcast, multicast:K) never
// panics, and accepted groups name only nodes of the cluster.
func FuzzPattern(f *testing.F) {
	for _, s := range []string{"repartition", "broadcast", "multicast:3", "multicast:0", "multicast:-1", "multicast:99999999999", "sideways"} {
		f.Add(s, 4)
	}
	f.Fuzz(func(t *testing.T, s string, nodes int) {
		if nodes < 1 || nodes > 64 {
			return
		}
		g, err := algos.NewGroups(algos.Pattern(s), nodes)
		if err != nil {
			return
		}
		for i := 0; i < g.Len(); i++ {
			for _, d := range g.Members(i) {
				if d < 0 || d >= nodes {
					t.Fatalf("%q on %d nodes: group %d names node %d", s, nodes, i, d)
				}
			}
		}
	})
}

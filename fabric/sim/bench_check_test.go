package sim_test

import (
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// BenchmarkAllToAll8NoCheck is BenchmarkAllToAll8 with the verbs-usage
// checker off: the ratio of the two is the checker's cost
// (docs/reliability.md).
func BenchmarkAllToAll8NoCheck(b *testing.B) {
	benchAllToAll(b, sim.Config{Nodes: 8, NoCheck: true}, 500, 4096)
}

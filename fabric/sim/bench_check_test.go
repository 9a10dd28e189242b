package sim_test

import (
	"testing"

	"github.com/rdmashuffle/rdmashuffle/algos/perftest"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// BenchmarkAllToAll8NoCheck is BenchmarkAllToAll8 with the verbs-usage
// checker off: the ratio of the two is the checker's cost
// (docs/reliability.md).
func BenchmarkAllToAll8NoCheck(b *testing.B) {
	var pkts int64
	for i := 0; i < b.N; i++ {
		c, err := sim.New(sim.Config{Nodes: 8, Seed: uint64(i + 1), SizeOnly: true, NoCheck: true})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := perftest.Run(c, perftest.Config{Test: "alltoall_bw", Size: 4096, Iters: 500}); err != nil {
			b.Fatal(err)
		}
		pkts += c.Stats().PacketsSent
	}
	b.ReportMetric(float64(pkts)/b.Elapsed().Seconds(), "packets/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(pkts), "ns/packet")
}

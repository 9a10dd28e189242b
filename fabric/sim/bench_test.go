package sim_test

import (
	"fmt"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/algos/perftest"
	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// BenchmarkAllToAll8 measures simulated packets per wall-second for an
// 8-node all-to-all of 4 KiB RC sends (size-only mode).
func BenchmarkAllToAll8(b *testing.B) { benchAllToAll(b, 8, 500) }

// BenchmarkAllToAll16 is the same on 16 nodes.
func BenchmarkAllToAll16(b *testing.B) { benchAllToAll(b, 16, 200) }

func benchAllToAll(b *testing.B, nodes, iters int) {
	var pkts int64
	for i := 0; i < b.N; i++ {
		c, err := sim.New(sim.Config{Nodes: nodes, Seed: uint64(i + 1), SizeOnly: true})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := perftest.Run(c, perftest.Config{Test: "alltoall_bw", Size: 4096, Iters: iters}); err != nil {
			b.Fatal(err)
		}
		pkts += c.Stats().PacketsSent
	}
	b.ReportMetric(float64(pkts)/b.Elapsed().Seconds(), "packets/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(pkts), "ns/packet")
}

// BenchmarkAllGather256 measures the out-of-band all-gather of connection
// setup at 256 nodes: every node contributes 255 queue pairs' addresses
// (about 15 KiB, as perftest's mesh does) and receives everyone's.
func BenchmarkAllGather256(b *testing.B) {
	const nodes, bytes = 256, 255 * (4 + fabric.QPInfoWireBytes)
	for i := 0; i < b.N; i++ {
		c, err := sim.New(sim.Config{Nodes: nodes, Seed: 1, SizeOnly: true})
		if err != nil {
			b.Fatal(err)
		}
		err = c.Run(func(th fabric.Thread) error {
			blob := make([]byte, bytes)
			blob[0] = byte(th.Node().ID())
			all, err := th.Node().OOB().AllGather("addresses", blob)
			if err != nil {
				return err
			}
			for j, d := range all {
				if len(d) != bytes || d[0] != byte(j) {
					return fmt.Errorf("node %d: contribution %d garbled", th.Node().ID(), j)
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

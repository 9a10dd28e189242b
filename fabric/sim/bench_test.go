package sim_test

import (
	"fmt"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/perftest"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// BenchmarkAllToAll8 measures simulated packets per wall-second for an
// 8-node all-to-all of 4 KiB RC sends (size-only mode): one 4 KiB packet
// per message, so every data packet also costs an ACK, a completion, a
// receiver wake-up and a reposted receive.
func BenchmarkAllToAll8(b *testing.B) { benchAllToAll(b, sim.Config{Nodes: 8}, 500, 4096) }

// BenchmarkAllToAll16 is the same on 16 nodes.
func BenchmarkAllToAll16(b *testing.B) { benchAllToAll(b, sim.Config{Nodes: 16}, 200, 4096) }

// BenchmarkAllToAll16Shuffle is a 16-node all-to-all of 512 KiB messages
// (Roediger15's all-to-all message size), 32 per peer: 128 packets of 4 KiB
// per message, the way a shuffle moves its data, so that per-packet work
// dominates rather than per-message work.
func BenchmarkAllToAll16Shuffle(b *testing.B) { benchAllToAll(b, sim.Config{Nodes: 16}, 32, 512<<10) }

// benchAllToAll reports packets per wall-second counting every packet on
// the wire (packets/s, ACKs included) and counting only the payload
// packets of the MTU (data-packets/s), cluster setup included in the time.
// cfg gives the cluster's size and options; every run is in size-only mode
// with its own seed.
func benchAllToAll(b *testing.B, cfg sim.Config, iters, size int) {
	var pkts, data int64
	nodes := cfg.Nodes
	for i := 0; i < b.N; i++ {
		cfg.Seed, cfg.SizeOnly = uint64(i+1), true
		c, err := sim.New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := perftest.Run(c, perftest.Config{Test: "alltoall_bw", Size: size, Iters: iters}); err != nil {
			b.Fatal(err)
		}
		pkts += c.Stats().PacketsSent
		mtu := c.Profile().Link.MTU
		data += int64(nodes*(nodes-1)*iters) * int64((size+mtu-1)/mtu)
	}
	b.ReportMetric(float64(pkts)/b.Elapsed().Seconds(), "packets/s")
	b.ReportMetric(float64(data)/b.Elapsed().Seconds(), "data-packets/s")
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

package netbuild_test

import (
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric/netbuild"

	"github.com/rdmashuffle/rdmashuffle/fabric/netspec"
	"github.com/rdmashuffle/rdmashuffle/fabric/perftest"
	"github.com/rdmashuffle/rdmashuffle/fabric/route"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// The 16-node all-to-all of 512 KiB messages of fabric/sim's
// BenchmarkAllToAll16Shuffle, on multi-switch networks, so that the cost
// of a switch hop can be read off against the single switch: a two-level
// tree of 8-port switches (4 leaves, 4 spines: 1 or 3 switches on a
// packet's way) and a three-level tree of 4-port switches (8 leaves, 8
// aggregation and 4 core switches: 1, 3 or 5).
func BenchmarkAllToAll16ShuffleFatTree2(b *testing.B) {
	benchTree(b, netspec.Spec{Kind: netspec.FatTree, Radix: 8, Levels: 2, Engine: route.FTree})
}

// BenchmarkAllToAll16ShuffleFatTree3: see BenchmarkAllToAll16ShuffleFatTree2.
func BenchmarkAllToAll16ShuffleFatTree3(b *testing.B) {
	benchTree(b, netspec.Spec{Kind: netspec.FatTree, Radix: 4, Levels: 3, Engine: route.FTree})
}

// BenchmarkAllToAll16ShuffleSingle is the same through netspec on the
// single switch (fabric/sim's benchmark, for a ratio in one invocation).
func BenchmarkAllToAll16ShuffleSingle(b *testing.B) { benchTree(b, netspec.Spec{}) }

func benchTree(b *testing.B, s netspec.Spec) {
	const nodes, iters, size = 16, 32, 512 << 10
	prof, err := sim.LoadProfile("edr-cx4")
	if err != nil {
		b.Fatal(err)
	}
	var pkts, hops, events int64
	for i := 0; i < b.N; i++ {
		built, err := netbuild.Build(s, nodes, prof, 1)
		if err != nil {
			b.Fatal(err)
		}
		c, err := sim.New(sim.Config{Nodes: nodes, Profile: prof, Seed: uint64(i + 1), SizeOnly: true, Fabric: built.Fabric})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := perftest.Run(c, perftest.Config{Test: "alltoall_bw", Size: size, Iters: iters}); err != nil {
			b.Fatal(err)
		}
		st := c.Stats()
		pkts, hops, events = pkts+st.PacketsSent, hops+st.SwitchHops, events+int64(c.Events())
		c.Close()
	}
	b.ReportMetric(float64(pkts)/b.Elapsed().Seconds(), "packets/s")
	b.ReportMetric(float64(hops)/float64(pkts), "hops/packet")
	b.ReportMetric(float64(events)/float64(pkts), "events/packet")
}

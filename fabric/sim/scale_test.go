package sim_test

import (
	"flag"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rdmashuffle/rdmashuffle/fabric/perftest"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// BenchmarkScale runs all-to-all shuffles of 4 KiB RC sends at growing
// cluster sizes and lengths and reports, per run: simulated time (all of
// it, connection setup included, and the data phase alone: perftest's
// measured interval, slowest node), wall time, packets, packets per
// wall-second, the Go heap in use at the end of the run (the model's live
// state) and the process's peak resident memory so far. Queue depths are
// small (-t 16 -r 16) so that 256 nodes (65,280 queue pairs) fit. At 256
// nodes, one message per peer shows the cost of setup alone, and 100 give
// a data phase of about 10 simulated milliseconds. docs/performance.md
// shows the results.
func BenchmarkScale(b *testing.B) {
	for _, tc := range []struct{ nodes, iters int }{
		{16, 200}, {16, 400}, {64, 50}, {64, 100}, {256, 1}, {256, 10}, {256, 20}, {256, 100},
	} {
		b.Run(fmt.Sprintf("nodes=%d/iters=%d", tc.nodes, tc.iters), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				runtime.GC()
				c, err := sim.New(sim.Config{Nodes: tc.nodes, Seed: 1, SizeOnly: true})
				if err != nil {
					b.Fatal(err)
				}
				t0 := time.Now()
				r, err := perftest.Run(c, perftest.Config{Test: "alltoall_bw", Size: 4096, Iters: tc.iters, TxDepth: 16, RxDepth: 16, CQMod: 8})
				if err != nil {
					b.Fatal(err)
				}
				wall := time.Since(t0)
				runtime.GC() // live state only
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				var ru syscall.Rusage
				syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
				pk := c.Stats().PacketsSent
				b.ReportMetric(c.Now().Seconds()*1e3, "sim-ms")
				b.ReportMetric(r.DurationUS/1e3, "data-ms")
				b.ReportMetric(wall.Seconds(), "wall-s")
				b.ReportMetric(float64(pk), "packets")
				b.ReportMetric(float64(pk)/wall.Seconds(), "packets/s")
				b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
				b.ReportMetric(float64(ru.Maxrss)/1024, "maxrss-MiB")
				b.ReportMetric(r.BWAvgGbps, "Gb/s")
				c.Close()
			}
		})
	}
}

var qpMemNodes = flag.String("qpmem-nodes", "64,128,256", "BenchmarkQPMemory: the cluster sizes, comma-separated")

// BenchmarkQPMemory reports the simulator's live heap per queue pair after
// the setup of an all-to-all of 4 KiB RC sends (-t 16 -r 16 -n 1): the Go
// heap in use after the run and a garbage collection, over the cluster's
// n*(n-1) queue pairs (so per-node state is included, spread over them).
// Write -memprofile to see what it is made of. docs/performance.md
// ("Scale") shows the results. -qpmem-nodes chooses the cluster sizes
// (2048 nodes take minutes and about 5 GB).
func BenchmarkQPMemory(b *testing.B) {
	var sizes []int
	for _, f := range strings.Split(*qpMemNodes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 2 {
			b.Fatalf("-qpmem-nodes %q: want a comma-separated list of node counts of at least 2", *qpMemNodes)
		}
		sizes = append(sizes, n)
	}
	for _, nodes := range sizes {
		b.Run(fmt.Sprintf("nodes=%d", nodes), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				runtime.GC()
				var before runtime.MemStats
				runtime.ReadMemStats(&before)
				c, err := sim.New(sim.Config{Nodes: nodes, Seed: 1, SizeOnly: true})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := perftest.Run(c, perftest.Config{Test: "alltoall_bw", Size: 4096, Iters: 1, TxDepth: 16, RxDepth: 16, CQMod: 8}); err != nil {
					b.Fatal(err)
				}
				runtime.GC()
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				b.ReportMetric(float64(ms.HeapInuse-before.HeapInuse)/float64(nodes*(nodes-1)), "heap-B/QP")
				runtime.KeepAlive(c)
				c.Close()
			}
		})
	}
}

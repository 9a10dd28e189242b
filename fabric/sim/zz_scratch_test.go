package sim_test

import (
	"os"
	"runtime"
	"runtime/pprof"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric/perftest"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

func TestZZHeap(t *testing.T) {
	runtime.MemProfileRate = 256
	c, err := sim.New(sim.Config{Nodes: 128, Seed: 1, SizeOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := perftest.Run(c, perftest.Config{Test: "alltoall_bw", Size: 4096, Iters: 1, TxDepth: 16, RxDepth: 16, CQMod: 8}); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	f, _ := os.Create("/tmp/heap.prof")
	pprof.Lookup("heap").WriteTo(f, 0)
	f.Close()
	runtime.KeepAlive(c)
}

package experiments

import (
	"errors"
	"fmt"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/fabric/host"
)

// TestTCPDesign shuffles over real TCP sockets on loopback between nodes
// hosted in this process, in payload mode (every byte checked), for
// repartition and broadcast, with one endpoint per thread.
func TestTCPDesign(t *testing.T) {
	for _, pat := range []algos.Pattern{algos.Repartition, algos.Broadcast} {
		for _, threads := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/threads=%d", pat, threads), func(t *testing.T) {
				f, err := host.OpenLocal(host.Config{Cores: 16}, 3)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				rec, err := RunOn(f, RunConfig{Design: "TCP", Nodes: 3, Threads: threads, Pattern: pat, MsgBytes: 4096,
					BytesPerNode: 1 << 20, Seed: 2, Payload: true})
				if err != nil {
					t.Fatal(err)
				}
				if rec.Integrity != "ok" || rec.TuplesSent == 0 || rec.Backend != "host" {
					t.Fatalf("%+v", rec)
				}
			})
		}
	}
	if _, err := Run(RunConfig{Design: "TCP", Nodes: 2, Profile: "edr-cx4"}); err == nil || !errors.Is(err, ErrUnsupported) {
		t.Fatalf("TCP on the simulator: %v", err)
	}
}

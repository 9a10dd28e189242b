package experiments

import (
	"fmt"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/algos"
)

func TestRunIntegrity(t *testing.T) {
	for _, design := range Designs {
		for _, pat := range []algos.Pattern{algos.Repartition, algos.Broadcast} {
			for _, seed := range []uint64{1, 2} {
				t.Run(fmt.Sprintf("%s/%s/seed=%d", design, pat, seed), func(t *testing.T) {
					rec, err := Run(RunConfig{Design: design, Nodes: 4, Threads: 2, Pattern: pat, Profile: "edr-cx4",
						MsgBytes: 4096, Buffers: 2, CreditEvery: 2, BytesPerNode: 256 << 10, Seed: seed, Payload: true})
					if err != nil {
						t.Fatal(err)
					}
					if rec.Integrity != "ok" || rec.TuplesSent == 0 || rec.TuplesReceived != rec.TuplesSent {
						t.Fatalf("integrity %s: sent %d received %d", rec.Integrity, rec.TuplesSent, rec.TuplesReceived)
					}
					t.Logf("%.2f GiB/s, setup %.2f ms, %d QPs, %d credit writes", rec.ThroughputGiBs, rec.SetupMS, rec.QPsPerNode, rec.CreditWrites)
				})
			}
		}
	}
}

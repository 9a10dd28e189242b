package experiments

import (
	"fmt"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/algos"
)

// TestPeerIntegrity: every peer design delivers exactly the sent multiset
// in payload mode, for repartition and broadcast, several seeds, 1 and 3
// threads per node.
func TestPeerIntegrity(t *testing.T) {
	for _, d := range []string{"HyPer", "HyPer/unsched", "HyPer-TCP", "RDMA-MW", "RDMA-MW/siw", "Sockets-MW"} {
		for _, pat := range []algos.Pattern{algos.Repartition, algos.Broadcast} {
			for _, threads := range []int{1, 3} {
				for _, seed := range []uint64{1, 2, 3} {
					t.Run(fmt.Sprintf("%s/%s/t=%d/seed=%d", d, pat, threads, seed), func(t *testing.T) {
						rec, err := Run(RunConfig{Design: d, Nodes: 4, Threads: threads, Pattern: pat, Profile: "edr-cx4",
							MsgBytes: 8192, BytesPerNode: 192 << 10, Seed: seed, Payload: true})
						if err != nil {
							t.Fatal(err)
						}
						if rec.Integrity != "ok" || rec.TuplesSent == 0 || rec.TuplesReceived != rec.TuplesSent {
							t.Fatalf("integrity %s: sent %d received %d", rec.Integrity, rec.TuplesSent, rec.TuplesReceived)
						}
					})
				}
			}
		}
	}
}

// TestPeerConnections: the multiplexer and the middleware use one queue
// pair per other node, n(n-1) in the cluster.
func TestPeerConnections(t *testing.T) {
	for _, d := range []string{"HyPer", "RDMA-MW"} {
		rec, err := Run(RunConfig{Design: d, Nodes: 6, Threads: 2, Profile: "edr-cx4", BytesPerNode: 64 << 10, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		if rec.QPsPerNode*rec.Nodes != 30 {
			t.Errorf("%s: %d queue pairs per node at 6 nodes, want 5 (30 in the cluster)", d, rec.QPsPerNode)
		}
	}
}

// TestPeerBadKnobs: configurations a peer design cannot run fail with an
// error that says why.
func TestPeerBadKnobs(t *testing.T) {
	// The endpoints' own refusals are all algos.ErrConfig: the words tell
	// which of their checks refused.
	for _, tc := range []struct {
		cfg  RunConfig
		want refusal
	}{
		{RunConfig{Design: "HyPer", Nodes: 2, Adaptive: true}, refusal{setting: "Adaptive"}},
		{RunConfig{Design: "RDMA-MW", Nodes: 2, MsgBytes: 1000}, refusal{is: algos.ErrConfig, words: "multiple of 64"}},
		{RunConfig{Design: "RDMA-MW", Nodes: 2, MsgBytes: 64}, refusal{is: algos.ErrConfig, words: "use a message size of at least 192"}},
		{RunConfig{Design: "RDMA-MW", Nodes: 2, MsgBytes: 128}, refusal{is: algos.ErrConfig, words: "ring of 128 bytes (the message size) too small"}},
		{RunConfig{Design: "HyPer", Nodes: 2, MsgBytes: 16}, refusal{is: algos.ErrConfig, words: "cannot hold the"}},
		{RunConfig{Design: "HyPer", Nodes: 2, Buffers: 1, CreditEvery: 16}, refusal{is: algos.ErrConfig, words: "credit every"}},
	} {
		tc.cfg.Profile, tc.cfg.BytesPerNode = "edr-cx4", 64<<10
		_, err := Run(tc.cfg)
		if lack := tc.want.check(err); lack != "" {
			t.Errorf("%+v: got %v: %s", tc.cfg.Design, err, lack)
		}
	}
}

// TestMWSizeOnlyManyRings: in size-only mode (only 64 bytes at each end of
// a message move) the middleware's notices still arrive whole, with 4 rings
// per connection and 8 nodes (a notice batch then exceeds one message).
func TestMWSizeOnlyManyRings(t *testing.T) {
	rec, err := Run(RunConfig{Design: "RDMA-MW", Nodes: 8, Threads: 4, Pattern: algos.Broadcast, Profile: "edr-cx4", BytesPerPair: 256 << 10, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Integrity != "ok" {
		t.Fatalf("integrity %s", rec.Integrity)
	}
}

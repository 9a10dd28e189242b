package experiments

import (
	"errors"
	"fmt"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/experiments/results"
)

// TestStarJoinPayload: the remote-read plan and the shuffle plan over
// several designs give the single-node reference's answer for 2-, 3- and
// 4-table joins (payload mode: every byte moves).
func TestStarJoinPayload(t *testing.T) {
	for _, tables := range []int{2, 3, 4} {
		for _, d := range []string{IStoreDesign, IStoreUnicastDesign, "MESQ/SR", "MEMQ/RD", "HyPer"} {
			t.Run(fmt.Sprintf("%d/%s", tables, d), func(t *testing.T) {
				r, err := RunStarJoin(StarJoinConfig{Tables: tables, SF: 0.004, Design: d, Nodes: 4, Threads: 2, Profile: "edr-cx4", Seed: 2, Payload: true})
				if err != nil {
					t.Fatal(err)
				}
				if r.Integrity != "ok" || r.Answer == nil || r.ResponseS <= 0 {
					t.Fatalf("integrity %s, answer %v, response %v", r.Integrity, r.Answer != nil, r.ResponseS)
				}
			})
		}
	}
}

// TestStarJoinBadKnobs: what cannot run says why.
func TestStarJoinBadKnobs(t *testing.T) {
	for _, tc := range []struct {
		cfg  StarJoinConfig
		want refusal
	}{
		{StarJoinConfig{Tables: 5, SF: 0.01, Design: IStoreDesign, Nodes: 4}, refusal{words: "5-table"}},
		{StarJoinConfig{Tables: 3, SF: 0.01, Design: "nope", Nodes: 4}, refusal{words: "design \"nope\""}},
		{StarJoinConfig{Tables: 3, SF: 0.01, Design: "qperf", Nodes: 4}, refusal{words: "design \"qperf\""}},
		{StarJoinConfig{Tables: 3, SF: 0.01, Design: IStoreDesign, Nodes: 4, Threads: 50}, refusal{setting: "Threads"}},
		{StarJoinConfig{Tables: 3, SF: 100, Design: "MESQ/SR", Nodes: 4}, refusal{words: "scale factor"}},
	} {
		tc.cfg.Profile = "edr-cx4"
		if _, err := RunStarJoin(tc.cfg); tc.want.check(err) != "" {
			t.Errorf("%+v: %v: %s", tc.cfg, err, tc.want.check(err))
		}
	}
	for _, w := range []results.Workload{{Kind: results.IStoreJoin, Tables: 3}, {Kind: results.IStoreMicro}, {Kind: results.IStoreJoin, Tables: 1, SF: 1}, {Kind: "istore-spin", Blocks: 3}} {
		if _, err := Run(RunConfig{Workload: w, Profile: "edr-cx4", Nodes: 2, Design: IStoreReadDesign}); !errors.Is(err, results.ErrWorkload) {
			t.Errorf("workload %+v: %v, want ErrWorkload", w, err)
		}
	}
	if _, err := Run(RunConfig{Workload: results.Workload{Kind: results.IStoreMicro, Blocks: 10}, Profile: "edr-cx4", Nodes: 2, Design: "MESQ/SR", Buffers: 1, Threads: 1}); err == nil {
		t.Error("a microbenchmark ran a shuffle design")
	}
}

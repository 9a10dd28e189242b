package experiments

import (
	"fmt"
	"slices"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/tpch"
)

// TestQueriesMatchReference runs Q3, Q4 and Q10 in payload mode over every
// design of Liu19 and the MPI and IPoIB baselines (on 2 and 3 nodes in
// turn, so that Q10 takes both of its plans), and Q4's local-data plan,
// and compares each answer row for row with the single-node reference.
func TestQueriesMatchReference(t *testing.T) {
	const sf, seed = 0.01, 7
	g := tpch.Gen{Seed: seed, SF: sf}
	refs := map[tpch.Query]*tpch.Answer{}
	for _, q := range tpch.Queries {
		refs[q] = tpch.Reference(g, q)
		if len(refs[q].Lines()) < 5 {
			t.Fatalf("%s: reference answer too small to compare: %v", q, refs[q].Lines())
		}
	}
	designs := append(PaperDesigns(), "MPI", "IPoIB", LocalData)
	for i, d := range designs {
		for _, q := range tpch.Queries {
			if d == LocalData && q != tpch.Q4 {
				continue
			}
			nodes := 2 + i%2
			t.Run(fmt.Sprintf("%s/%s/%d", q, d, nodes), func(t *testing.T) {
				rec, err := RunQuery(QueryConfig{Query: q, SF: sf, Design: d, Nodes: nodes, Profile: "edr-cx4", Seed: seed, Payload: true})
				if err != nil {
					t.Fatal(err)
				}
				if rec.Integrity != "ok" || rec.Mode != "payload" || rec.ResponseS <= 0 {
					t.Fatalf("integrity %s, mode %s, response %v", rec.Integrity, rec.Mode, rec.ResponseS)
				}
				if !rec.Result().Equal(refs[q]) {
					t.Fatalf("answer\n%v\nwant\n%v", rec.Answer, refs[q].Lines())
				}
			})
		}
	}
}

// TestQuerySizeOnly: in size-only mode no answer is computed, but every
// step moves exactly the tuples the payload run moved (the local probes
// evaluate the broadcast side with the generator), and time is charged.
func TestQuerySizeOnly(t *testing.T) {
	for _, q := range tpch.Queries {
		for _, nodes := range []int{2, 4} {
			cfg := QueryConfig{Query: q, SF: 0.01, Design: "MESQ/SR", Nodes: nodes, Profile: "fdr-cx3", Seed: 3, Payload: true}
			pay, err := RunQuery(cfg)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Payload = false
			so, err := RunQuery(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if so.Mode != "size-only" || so.Answer != nil || so.Integrity != "ok" {
				t.Fatalf("%s: size-only record: mode %s, answer %v, integrity %s", q, so.Mode, so.Answer, so.Integrity)
			}
			if !slices.Equal(so.Steps, pay.Steps) {
				t.Fatalf("%s on %d nodes: size-only steps %+v, payload %+v", q, nodes, so.Steps, pay.Steps)
			}
			if d := so.ResponseS/pay.ResponseS - 1; d > 0.25 || d < -0.25 {
				t.Errorf("%s on %d nodes: size-only response %.3g s vs payload %.3g s", q, nodes, so.ResponseS, pay.ResponseS)
			}
		}
	}
}

func TestQueryBadInput(t *testing.T) {
	for _, c := range []QueryConfig{
		{Query: tpch.Q3, SF: 0.01, Design: LocalData, Nodes: 2},
		{Query: tpch.Q4, SF: 0.01, Design: "qperf", Nodes: 2},
		{Query: tpch.Q4, SF: 0, Design: "MESQ/SR", Nodes: 2},
		{Query: tpch.Q4, SF: 0.01, Design: "MESQ/SR", Nodes: 0},
		{Query: tpch.Q3, SF: 0.01, Design: "MESQ/SR", Nodes: 40},
		{Query: "Q5", SF: 0.01, Design: "MESQ/SR", Nodes: 2},
	} {
		if _, err := RunQuery(c); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}

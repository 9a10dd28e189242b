package figures

import (
	"testing"

	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/tpch"
)

// TestQueryPointAndJudges: a figure point names its query in the label;
// the judges read such records and reject plain shuffle records.
func TestQueryPointAndJudges(t *testing.T) {
	cfg := queryBase(tpch.Q4, false, 0.005, "edr-cx4", 2)
	cfg.Threads = 2
	r, err := experiments.RunQueryPoint(cfg)
	if err != nil || r.Experiment != "tpch" || r.ResponseS <= 0 || r.Pattern != "broadcast+repartition" {
		t.Fatalf("%+v %v", r, err)
	}
	if v := judgeC21([]*experiments.Record{{Experiment: "run"}}, nil); v.Verdict != Fail || v.Reason == "" {
		t.Errorf("C21 on non-query records: %+v", v)
	}
	mk := func(q tpch.Query, local bool, design, profile string, nodes int, ms float64) *experiments.Record {
		return &experiments.Record{Experiment: "tpch", Label: experiments.TPCHLabel(q, local, 0.1), Design: design, Profile: profile, Nodes: nodes, ResponseS: ms / 1e3}
	}
	rs := []*experiments.Record{
		mk(tpch.Q4, false, "MESQ/SR", "fdr-cx3", 8, 1.5), mk(tpch.Q4, false, "MPI", "fdr-cx3", 8, 2.6), mk(tpch.Q4, true, "MESQ/SR", "fdr-cx3", 8, 1.4),
		mk(tpch.Q4, false, "MESQ/SR", "edr-cx4", 8, 1.0), mk(tpch.Q4, false, "MPI", "edr-cx4", 8, 2.0), mk(tpch.Q4, true, "MESQ/SR", "edr-cx4", 8, 0.95),
	}
	if v := judgeC21(rs, nil); v.Verdict != Pass {
		t.Errorf("C21: %+v", v)
	}
	var rs22 []*experiments.Record
	for q, f := range map[tpch.Query]float64{tpch.Q4: 1.7, tpch.Q3: 1.55, tpch.Q10: 2} {
		rs22 = append(rs22, mk(q, false, "MESQ/SR", "edr-cx4", 2, 1), mk(q, false, "MPI", "edr-cx4", 2, 1.1),
			mk(q, false, "MESQ/SR", "edr-cx4", 16, 1), mk(q, false, "MPI", "edr-cx4", 16, f))
	}
	if v := judgeC22(rs22, nil); v.Verdict != Pass {
		t.Errorf("C22: %+v", v)
	}
}

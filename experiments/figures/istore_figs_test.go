package figures

import (
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
)

// TestIStorePoints: a micro point and a join point through the figures'
// runner give records the judges read.
func TestIStorePoints(t *testing.T) {
	c := experiments.DefaultConfig()
	c.Profile, c.Nodes, c.Threads, c.Buffers, c.Design = "fdr-cx3", 3, 2, 4, experiments.IStoreMulticastDesign
	c.Workload = results.Workload{Kind: results.IStoreMicro, Blocks: 300}
	r, err := experiments.Run(c)
	if err != nil || r.Integrity != "ok" || mblocks(r) <= 0 {
		t.Fatalf("micro: %+v %v", r, err)
	}
	c.Nodes, c.Design, c.Workload = 4, "MESQ/SR", results.Workload{Kind: results.IStoreJoin, Tables: 3, SF: 0.004}
	if r, err = experiments.Run(c); err != nil || r.Integrity != "ok" || r.ResponseS <= 0 || istoreTables(r) != 3 {
		t.Fatalf("join: %+v %v", r, err)
	}
}

// TestIStoreJudges checks C27-C29's rules on hand-made records.
func TestIStoreJudges(t *testing.T) {
	micro := func(design string, nodes, threads, depth int, mb float64) *results.Record {
		return &results.Record{Experiment: "istore-micro", Design: design, Nodes: nodes, Threads: threads, Buffers: depth, ThroughputGiBs: mb * 1e6 * 2048 / (1 << 30)}
	}
	// C27 is judged on one stream per reader; the fitted stream count is
	// only reported.
	var pre, fitted []*results.Record
	for d := 1; d <= 16; d++ {
		pre = append(pre, micro(experiments.IStoreReadDesign, 2, istoreStreams, d, min(float64(d)/3, 3)), micro(experiments.IStoreReadDesign, 2, 1, d, min(float64(d), 3)))
		fitted = append(fitted, micro(experiments.IStoreReadDesign, 2, istoreStreams, d, min(float64(d), 3)), micro(experiments.IStoreReadDesign, 2, 1, d, min(float64(d)/3, 3)))
	}
	if v := judgeC27(pre, nil); v.Verdict != Pass {
		t.Errorf("C27: %+v", v)
	}
	if v := judgeC27(fitted, nil); v.Verdict == Pass {
		t.Errorf("C27 passes on the fitted stream count alone: %+v", v)
	}
	if v := judgeC27(pre[:2], nil); v.Verdict != Fail {
		t.Errorf("C27 without data: %+v", v)
	}
	var fan []*results.Record
	for _, k := range []int{1, 2, 4, 6, 8} {
		fan = append(fan, micro(experiments.IStoreReadDesign, k+1, 3, 10, 3/float64(k)), micro(experiments.IStoreMulticastDesign, k+1, 3, 10, 2.8))
	}
	if v := judgeC28(fan, nil); v.Verdict != Pass {
		t.Errorf("C28: %+v", v)
	}
	fan[len(fan)-1].ThroughputGiBs /= 4
	if v := judgeC28(fan, nil); v.Verdict != Partial {
		t.Errorf("C28 falling multicast: %+v", v)
	}
	join := func(design string, tables int, ms float64) *results.Record {
		return &results.Record{Experiment: "istore-join", Label: results.Workload{Kind: results.IStoreJoin, Tables: tables, SF: 1}.Label(), Design: design, ResponseS: ms / 1e3}
	}
	js := []*results.Record{join(experiments.IStoreDesign, 2, 10), join("MESQ/SR", 2, 11), join(experiments.IStoreDesign, 3, 10), join("MESQ/SR", 3, 20),
		join(experiments.IStoreDesign, 4, 10), join("MESQ/SR", 4, 30), join("MEMQ/SR", 4, 28)}
	if v := judgeC29(js, nil); v.Verdict != Pass || !strings.Contains(v.Measured, "2.80x") {
		t.Errorf("C29: %+v", v)
	}
	js[5].ResponseS, js[6].ResponseS = 0.015, 0.015
	if v := judgeC29(js, nil); v.Verdict != Partial {
		t.Errorf("C29 small gain: %+v", v)
	}
	js[3].ResponseS = 0.005
	if v := judgeC29(js, nil); v.Verdict != Fail {
		t.Errorf("C29 slower: %+v", v)
	}
}

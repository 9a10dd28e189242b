package experiments

import (
	"math"
	"slices"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/fabric/netspec"
)

// TestCrossRackSkew: the same shuffle (MEMQ/SR, 8 nodes, 4 MiB each) on
// the single switch and on a two-level fat tree of 8-port switches at
// 2:1 (4 hosts and 2 uplinks a leaf), four nodes on leaf 0 and one on
// each of four other leaves, routed by ftree and at random. Every node's
// finish time is recorded and the slowest is the response time; the
// nodes are grouped by the leaf the placement put them on; on the trees
// the skew is larger than on the single switch; and, with ftree routing,
// the nodes alone on their leaves, all of whose traffic crosses the
// spines, finish later on average than the four that share a leaf and
// keep a third of their peers in the rack.
func TestCrossRackSkew(t *testing.T) {
	base := goldenBase()
	base.Design, base.Nodes, base.BytesPerNode = "MEMQ/SR", 8, 4<<20
	run := func(network string) *results.Record {
		t.Helper()
		cfg := base
		if network != "" {
			spec, err := netspec.Parse(network)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Network = spec
		}
		rec, err := Run(cfg)
		if err != nil {
			t.Fatalf("%s: %v", network, err)
		}
		if len(rec.NodeFinishMS) != cfg.Nodes || slices.Max(rec.NodeFinishMS) != rec.ResponseS*1e3 {
			t.Errorf("%s: node finish times %v, response %v s", network, rec.NodeFinishMS, rec.ResponseS)
		}
		if rec.FinishSkew != results.FinishSkew(rec.NodeFinishMS) || rec.FinishSkew < 1 {
			t.Errorf("%s: finish skew %v of %v", network, rec.FinishSkew, rec.NodeFinishMS)
		}
		t.Logf("%q: response %.3f ms, skew %.4f, by leaf %.3f", network, rec.ResponseS*1e3, rec.FinishSkew, rec.LeafFinishMS)
		return rec
	}
	single := run("")
	if single.NodeLeaf != nil || single.LeafFinishMS != nil {
		t.Errorf("leaves on the single switch: %v %v", single.NodeLeaf, single.LeafFinishMS)
	}
	placed := []int{0, 0, 0, 0, 1, 2, 3, 4}
	for _, routing := range []string{"ftree", "random"} {
		network := "fat-tree radix=8 levels=2 oversub=2:1 hosts=32 routing=" + routing + " placement=list:0,1,2,3,4,8,12,16"
		tree := run(network)
		if tree.FinishSkew <= single.FinishSkew {
			t.Errorf("%s routing: skew %.4f, no more than the single switch's %.4f", routing, tree.FinishSkew, single.FinishSkew)
		}
		if !slices.Equal(tree.NodeLeaf, placed) || len(tree.LeafFinishMS) != 5 {
			t.Fatalf("%s routing: nodes on leaves %v (placed on %v), leaf means %v", routing, tree.NodeLeaf, placed, tree.LeafFinishMS)
		}
		sum, count := make([]float64, 5), make([]float64, 5)
		for i, l := range tree.NodeLeaf {
			sum[l], count[l] = sum[l]+tree.NodeFinishMS[i], count[l]+1
		}
		for l := range sum {
			if m := sum[l] / count[l]; math.Abs(m-tree.LeafFinishMS[l]) > 1e-12 {
				t.Errorf("%s routing: leaf %d's mean %v, want %v", routing, l, tree.LeafFinishMS[l], m)
			}
		}
		if routing == "ftree" && tree.LeafFinishMS[0] >= slices.Min(tree.LeafFinishMS[1:]) {
			t.Errorf("ftree routing: the shared leaf's nodes finish at %.4f ms on average, no sooner than the lone nodes' %.4f",
				tree.LeafFinishMS[0], tree.LeafFinishMS[1:])
		}
	}
}

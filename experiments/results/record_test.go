package results_test

import (
	"encoding/csv"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/fabric/netspec"
)

// TestNoBackend: the package is data: reading records pulls in no
// backend (neither the simulator nor the hardware path) and no run
// layer.
func TestNoBackend(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, bad := range []string{"/fabric/sim", "/fabric/ibv", "/fabric/loopback", "/fabric/host", "/experiments", "/tcpshuffle"} {
			if strings.HasSuffix(dep, bad) || strings.Contains(dep, bad+"/") {
				if !strings.HasSuffix(dep, "/experiments/results") {
					t.Errorf("results depends on %s", dep)
				}
			}
		}
	}
}

// TestRecordJSONRoundTrip: a record with every kind of field survives
// JSON (the form sweeps and figures store), network and software costs
// included.
func TestRecordJSONRoundTrip(t *testing.T) {
	net, err := netspec.Parse("fat-tree radix=8 routing=ftree placement=random:3")
	if err != nil {
		t.Fatal(err)
	}
	mpi := algos.DefaultMPICosts
	rec := results.Record{Experiment: "run", Design: "MEMQ/SR", Nodes: 8, Network: net, Payload: true, TimeoutS: 0.25,
		Software: &results.SoftwareCosts{MPI: &mpi, PollLineCycles: 3}, NodeCycles: []int64{1, 2}, ThroughputGiBs: 1.5,
		NodeFinishMS: []float64{1.5, 2, 1.75}, FinishSkew: 2 / 1.75, NodeLeaf: []int{0, 1, 0}, LeafFinishMS: []float64{1.625, 2}}
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	var back results.Record
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rec, back) {
		t.Fatalf("round trip:\n%+v\n%+v", rec, back)
	}
	if strings.Contains(string(mustMarshal(t, results.Record{})), "network") {
		t.Errorf("the single switch is written: %s", mustMarshal(t, results.Record{}))
	}
	for _, f := range []string{"node_finish_ms", "finish_skew", "node_leaf", "leaf_finish_ms"} {
		if strings.Contains(string(mustMarshal(t, results.Record{})), f) {
			t.Errorf("%s is written when empty: %s", f, mustMarshal(t, results.Record{}))
		}
	}
}

// TestRecordWithoutFinishTimes: a record written before per-node finish
// times reads without them, and describes no skew.
func TestRecordWithoutFinishTimes(t *testing.T) {
	var r results.Record
	if err := json.Unmarshal([]byte(`{"experiment":"run","design":"MEMQ/SR","nodes":4,"response_s":0.5}`), &r); err != nil {
		t.Fatal(err)
	}
	if r.NodeFinishMS != nil || r.FinishSkew != 0 || r.NodeLeaf != nil || r.LeafFinishMS != nil || results.SkewLine(&r) != "" {
		t.Errorf("an old record has finish times: %+v", r)
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCSVWritesValuesAsRecordsDo: a record's network is written in its
// text form (empty for the single switch, not the struct's fields), a
// service level as a number and an absent pointer field as nothing.
func TestCSVWritesValuesAsRecordsDo(t *testing.T) {
	tree, err := netspec.Parse("fat-tree radix=8 routing=ftree")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "r.csv")
	rs := []results.Result{{Point: 0, Record: &results.Record{Design: "MESQ/SR", Network: tree, SL: 3}}, {Point: 1, Record: &results.Record{Design: "MESQ/SR"}}}
	if err := results.WriteCSV(path, rs); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := func(name string) int { return slices.Index(rows[0], name) }
	if got := rows[1][col("network")]; got != tree.String() {
		t.Errorf("network %q, want %q", got, tree.String())
	}
	if got := rows[2][col("network")]; got != "" {
		t.Errorf("single switch's network %q, want empty", got)
	}
	if rows[1][col("sl")] != "3" || rows[1][col("control_sl")] != "" {
		t.Errorf("sl %q, control_sl %q", rows[1][col("sl")], rows[1][col("control_sl")])
	}
}

package soak

import (
	"testing"

	"github.com/rdmashuffle/rdmashuffle/algos"
)

// TestSoakDC: randomized fault schedules over the DC designs on more
// nodes than an endpoint has DC initiators, so that connects (and lost
// connects) happen throughout; no run may fail silently, hang or break
// the verbs contract.
func TestSoakDC(t *testing.T) {
	designs := []string{algos.NameMEMQSRDC, algos.NameMEMQWRDC}
	res, err := Run(Config{Seeds: 12, Nodes: 6, BytesPerNode: 128 << 10, Payload: true, Designs: designs, Workloads: []Workload{ShuffleWorkload}})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res)
	if !res.OK() || res.Runs != int64(12*len(designs)) || res.Injected == 0 {
		for _, f := range res.Failures {
			t.Errorf("%+v", f)
		}
		t.Fatalf("soak: %v", res)
	}
}

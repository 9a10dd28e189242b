package results

import (
	"errors"
	"testing"
)

// TestWorkloadLabels: every workload's label reads back as the workload,
// labels of old records included, and bad ones are refused.
func TestWorkloadLabels(t *testing.T) {
	for _, w := range []Workload{
		{Kind: TPCH, Query: "Q4", SFPerNode: 0.005}, {Kind: TPCH, Query: "Q4", Local: true, SFPerNode: 1},
		{Kind: TPCH, Query: "Q10", SFPerNode: 0.1}, {Kind: IStoreMicro, Blocks: 64}, {Kind: IStoreJoin, Tables: 3, SF: 0.02},
	} {
		if err := w.Validate(); err != nil {
			t.Fatalf("%+v: %v", w, err)
		}
		got, ok, err := ParseLabel(w.Label())
		if !ok || err != nil || got != w {
			t.Errorf("%q reads as %+v, %v, %v; want %+v", w.Label(), got, ok, err, w)
		}
	}
	for _, l := range []string{"", "bdp", "memory runs"} {
		if _, ok, err := ParseLabel(l); ok || err != nil {
			t.Errorf("%q: a mark taken for a workload (%v, %v)", l, ok, err)
		}
	}
	for _, l := range []string{"tpch Q4", "tpch Q5 sfpn=1", "tpch Q3 local sfpn=1", "tpch Q4 sfpn=x", "istore micro", "istore join tables=1 sf=1",
		"istore micro blocks=3 extra=1", "istore spin blocks=3", "tpch Q4 sfpn=-1"} {
		if _, ok, err := ParseLabel(l); !ok || !errors.Is(err, ErrWorkload) {
			t.Errorf("%q: %v, %v; want ErrWorkload", l, ok, err)
		}
	}
	if err := (Workload{Kind: "spin"}).Validate(); !errors.Is(err, ErrWorkload) {
		t.Errorf("unknown kind: %v", err)
	}
}

func FuzzParseLabel(f *testing.F) {
	f.Add("tpch Q4 local sfpn=0.5")
	f.Add("istore join tables=3 sf=0.02")
	f.Fuzz(func(t *testing.T, label string) {
		w, ok, err := ParseLabel(label)
		if ok && err == nil {
			if back, ok2, err2 := ParseLabel(w.Label()); !ok2 || err2 != nil || back != w {
				t.Fatalf("%q -> %+v -> %q -> %+v, %v", label, w, w.Label(), back, err2)
			}
		}
	})
}

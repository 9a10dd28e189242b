package algos

import (
	"strings"
	"testing"
)

// TestCostNames: every named software cost reads and writes the field it
// names, in a copy of the defaults only; bad names and values are refused
// with the name.
func TestCostNames(t *testing.T) {
	for i, name := range CostNames() {
		mpi, ipoib := DefaultMPICosts, DefaultIPoIBCosts
		was, err := Cost(mpi, ipoib, name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		v := was + int64(100+i)
		if err := SetCost(&mpi, &ipoib, name, v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got, _ := Cost(mpi, ipoib, name); got != v {
			t.Errorf("%s: set %d, read %d", name, v, got)
		}
		if mpi == DefaultMPICosts && ipoib == DefaultIPoIBCosts {
			t.Errorf("%s: nothing changed", name)
		}
		for _, other := range CostNames() {
			if got, _ := Cost(mpi, ipoib, other); other != name && got != mustCost(t, other) {
				t.Errorf("setting %s moved %s", name, other)
			}
		}
	}
	if was := mustCost(t, "mpi.call_cycles"); was != DefaultMPICosts.CallCycles {
		t.Errorf("mpi.call_cycles reads %d, the default is %d", was, DefaultMPICosts.CallCycles)
	}
	mpi, ipoib := DefaultMPICosts, DefaultIPoIBCosts
	for _, tt := range []struct {
		name string
		v    int64
		err  string
	}{
		{"mpi.no_such", 1, `no software cost "mpi.no_such": choose one of mpi.call_cycles`},
		{"ipoib.syscall_cycles", -1, "is negative"},
		{"mpi.eager_bytes", HeaderBytes - 1, "cannot hold a message header"},
	} {
		if err := SetCost(&mpi, &ipoib, tt.name, tt.v); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("SetCost(%s, %d): %v, want %q", tt.name, tt.v, err, tt.err)
		}
	}
	if mpi != DefaultMPICosts || ipoib != DefaultIPoIBCosts {
		t.Error("a refused SetCost changed the costs")
	}
}

func mustCost(t *testing.T, name string) int64 {
	t.Helper()
	v, err := Cost(DefaultMPICosts, DefaultIPoIBCosts, name)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

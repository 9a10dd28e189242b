package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/experiments"
)

func TestQueryCommand(t *testing.T) {
	cmd := queryCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"--query", "Q4", "--sf", "0.02", "--design", "MESQ/SR", "--nodes", "3", "--payload"})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"response time", "1-URGENT", "equals the single-node reference", "matched-orders"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	cmd = queryCmd()
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"--query", "Q5"})
	if err := cmd.Execute(); err == nil {
		t.Error("Q5: no error")
	}
	// A figure runs its own points: one query's flags beside it are refused.
	cmd = queryCmd()
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"--figure", "fig26", "--qp-numbering", "2", "--seed", "3"})
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "--seed, --qp-numbering") {
		t.Errorf("--figure with --seed and --qp-numbering: %v, want a refusal naming both", err)
	}
}

// TestQueryRefusesBeyondMemory: a query whose estimated memory exceeds
// what the machine has is refused before it starts, naming the estimate
// and the flag that runs it anyway.
func TestQueryRefusesBeyondMemory(t *testing.T) {
	if _, ok := experiments.AvailableMemory(); !ok {
		t.Skip("the system does not say how much memory is available (no /proc/meminfo): nothing is refused")
	}
	cmd := queryCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"--query", "Q3", "--sf", "1000000", "--design", "MPI", "--nodes", "16", "--threads", "14"})
	err := cmd.Execute()
	if err == nil {
		t.Fatal("SF 1,000,000 on 16 nodes: no error")
	}
	for _, want := range []string{"--sf 1e+06", "GiB of memory", "--no-memory-check"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// TestQueryBadScale: scale factors past TPC-H's largest (or not numbers)
// and --threads 0 are refused naming the flag; they used to overflow the
// row counts or mean 2.
func TestQueryBadScale(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"query", "--sf", "1e13"}, "--sf 1e+13: above TPC-H's largest scale factor"},
		{[]string{"query", "--sf", "Inf"}, "--sf +Inf: above TPC-H's largest scale factor"},
		{[]string{"query", "--sf", "NaN"}, "--sf NaN: must be above 0"},
		{[]string{"query", "--threads", "0"}, "--threads 0: want at least 1"},
	} {
		if _, err := run(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("explore %v: %v, want %q", tc.args, err, tc.want)
		}
	}
}

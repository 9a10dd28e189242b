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

// TestQueryFaultFlags: explore query takes explore run's fault flags and
// --no-check; a faulted query's error names its first cause and the
// faults injected, with or without --json; a figure refuses them. Before,
// query had none of these flags.
func TestQueryFaultFlags(t *testing.T) {
	q3 := []string{"query", "--query", "Q3", "--sf", "0.02", "--design", "MEMQ/SR", "--nodes", "4", "--payload", "--seed", "5"}
	crash := append(append([]string(nil), q3...), "--fault-crash", "node=2,at=8.786ms")
	cause := "node 3's queue pair 270 failed (its SEND to node 2 ended in transport retry exceeded); after it: "
	for _, tc := range []struct {
		name string
		args []string
		err  []string // the error holds these (none: no error)
		out  []string // the output holds these
	}{
		{"crash", crash, []string{cause, "[faults injected: node 2 crashed at 8.786ms"}, nil},
		{"crash, --json", append(crash, "--json"), []string{cause, "[faults injected: node 2 crashed at 8.786ms"}, nil},
		{"no fault, --no-check --json", append(append([]string(nil), q3...), "--no-check", "--json"), nil, []string{`"verbs_check":"off"`, `"integrity":"ok"`}},
		{"a node outside the cluster", append(append([]string(nil), q3...), "--fault-crash", "node=9,at=1ms"), []string{"node 9 outside the 4-node cluster"}, nil},
		{"a figure", []string{"query", "--figure", "fig26", "--fault-loss", "0.1", "--no-check"}, []string{"--no-check, --fault-loss set(s) one query"}, nil},
	} {
		out, err := run(t, tc.args...)
		if len(tc.err) == 0 && err != nil {
			t.Errorf("%s: %v\n%s", tc.name, err, out)
			continue
		}
		for _, w := range tc.err {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %v, want it to hold %q", tc.name, err, w)
			}
		}
		for _, w := range tc.out {
			if !strings.Contains(out, w) {
				t.Errorf("%s: output lacks %q:\n%s", tc.name, w, out)
			}
		}
	}
}

package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func TestSoakCommand(t *testing.T) {
	var out bytes.Buffer
	cmd := soakCmd()
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--seeds", "1", "--nodes", "3", "--designs", "MESQ/SR,MEMQ/SR", "--scenarios", "ud-loss", "--bytes-per-node", "65536"})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "ud-loss") || !strings.Contains(out.String(), "1 seeds from 1, 3 nodes") {
		t.Fatalf("output:\n%s", out.String())
	}
	for _, tc := range []struct{ args, want string }{
		{"--seeds 0", "--seeds 0: need at least 1"},
		{"--designs XX", `--designs "XX": not a design to soak`},
		{"--scenarios meteor", `--scenarios "meteor": not one of`},
		{"--wall-limit-s 0", "--wall-limit-s 0: must be positive"},
		{"--workloads tpch,films", `--workloads "films": not one of shuffle, tpch, star-join`},
		{"--designs I-Store --workloads shuffle,tpch", "I-Store's remote-read plans run only in star joins"},
	} {
		cmd := soakCmd()
		cmd.SetOut(&out)
		cmd.SetArgs(strings.Fields(tc.args))
		if err := execWords(cmd); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.args, err, tc.want)
		}
	}
}

// TestSoakJSON: soak --json prints the soak record of docs/results.md,
// with the high-UD-loss family.
func TestSoakJSON(t *testing.T) {
	var out bytes.Buffer
	cmd := soakCmd()
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"--seeds", "1", "--nodes", "3", "--designs", "MESQ/SR,MEMQ/SR", "--bytes-per-node", "65536", "--json"})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	var rec map[string]any
	if err := json.Unmarshal(out.Bytes(), &rec); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, out.String())
	}
	for _, f := range []string{"experiment", "runs", "faults_injected", "exact_deliveries", "clean_errors", "silent_failures", "hangs",
		"checker_findings", "masked_errors", "unrecovered", "by_design", "by_fault", "by_workload", "seeds", "nodes", "wall_s"} {
		if _, ok := rec[f]; !ok {
			t.Errorf("record lacks %q: %s", f, out.String())
		}
	}
	// Four shuffles (MESQ/SR with and without recovery, MEMQ/SR, and
	// MESQ/SR under high UD loss), a TPC-H query and a star join.
	if rec["experiment"] != "soak" || rec["runs"] != 6.0 || rec["nodes"] != 3.0 {
		t.Errorf("record %s", out.String())
	}
	if _, ok := rec["by_fault"].(map[string]any)["ud-loss-high"]; !ok {
		t.Errorf("no ud-loss-high runs: %s", out.String())
	}
	if _, ok := rec["by_design"].(map[string]any)["MESQ/SR+recovery"]; !ok {
		t.Errorf("no per-design counts: %s", out.String())
	}
}

func TestFaultFlags(t *testing.T) {
	cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil }}
	apply := faultFlags(cmd)
	cmd.SetArgs([]string{"--fault-loss", "0.001", "--fault-transport", "UD", "--fault-drop", "src=2,dst=0,kind=eos", "--fault-crash", "node=1,at=2ms"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	opt, err := apply(4)
	if err != nil {
		t.Fatal(err)
	}
	if opt.Plan == nil || len(opt.Plan.Rules) != 3 || !opt.InjectsFaults() {
		t.Fatalf("plan %+v", opt.Plan)
	}
	if _, err := apply(2); err == nil || !strings.Contains(err.Error(), "drop[0].src: node 2 outside the 2-node cluster") {
		t.Fatalf("on 2 nodes: %v", err)
	}
}

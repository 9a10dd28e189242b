package main

import (
	"os"
	"strings"
	"testing"
)

// asMain makes the test binary act as explore when launch re-executes it.
const asMain = "EXPLORE_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMain) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestLaunchTCPJob runs a real multi-process shuffle: four processes, one
// node each, over TCP sockets on loopback, with integrity checked across
// the processes.
func TestLaunchTCPJob(t *testing.T) {
	t.Setenv(asMain, "1")
	launchExecutable = func() (string, error) { return os.Args[0], nil }
	out, err := run(t, "launch", "--nodes", "4", "--", "run", "--backend", "tcp", "--design", "TCP", "--nodes", "4",
		"--threads", "2", "--bytes-per-node", "4194304", "--json")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, `"integrity":"ok"`) || !strings.Contains(out, `"design":"TCP"`) {
		t.Fatalf("node 0 printed:\n%s", out)
	}
	// A node that fails is reported with its output.
	out, err = run(t, "launch", "--nodes", "2", "--", "run", "--backend", "tcp", "--design", "TCP", "--nodes", "3")
	if err == nil || !strings.Contains(err.Error(), "node") {
		t.Fatalf("a mismatched job should fail naming the node: %v\n%s", err, out)
	}
}

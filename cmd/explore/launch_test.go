package main

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rdmashuffle/rdmashuffle/fabric/host"
)

// asMain makes the test binary act as explore when launch re-executes it.
const asMain = "EXPLORE_TEST_AS_MAIN"

// failOne makes the re-executed test binary stand in for a broken job:
// node 1 fails at once, every other node hangs.
const failOne = "EXPLORE_TEST_FAIL_ONE"

func TestMain(m *testing.M) {
	if os.Getenv(asMain) == "1" {
		if os.Getenv(failOne) == "1" {
			if os.Getenv(host.EnvRank) == "1" {
				fmt.Println("node 1: failing at once")
				os.Exit(3)
			}
			time.Sleep(10 * time.Minute)
		}
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

// TestLaunchStopsTheJobWhenANodeFails: when one node fails, launch kills
// the nodes still running after a grace period instead of leaving them to
// the job's timeout, and says which node failed first. (The timeout here is
// long enough that reaching it would fail the test with its own message.)
func TestLaunchStopsTheJobWhenANodeFails(t *testing.T) {
	t.Setenv(asMain, "1")
	t.Setenv(failOne, "1")
	launchExecutable = func() (string, error) { return os.Args[0], nil }
	out, err := run(t, "launch", "--nodes", "3", "--timeout", "2m", "--", "overview")
	if err == nil {
		t.Fatalf("a job with a failed node succeeded:\n%s", out)
	}
	msg := err.Error()
	for _, want := range []string{"node 1: exit status 3", "node 0: killed 3s after node 1 failed", "node 2: killed 3s after node 1 failed"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not contain %q", msg, want)
		}
	}
	if strings.Contains(msg, "still running after") {
		t.Errorf("the job ran into its timeout: %q", msg)
	}
	if !strings.Contains(out, "node 1: failing at once") {
		t.Errorf("the failed node's output is missing:\n%s", out)
	}
}

package experiments

import (
	"errors"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// TestCrashDuringSetupLeavesNothingOpen: when a node crashes before the
// endpoints' connection exchange, every other node's open fails, and each
// must free what it had created: the run is a clean error (the crash,
// named), not a checker finding for objects left open. Before the
// endpoints freed what they created on a failed open, every design left
// its queue pairs and regions behind (the soak's `crash` findings).
func TestCrashDuringSetupLeavesNothingOpen(t *testing.T) {
	for _, design := range SoakDesigns() {
		for _, recovery := range []bool{false, true} {
			if recovery && !IsUD(design) {
				continue
			}
			name := design
			if recovery {
				name += "+recovery"
			}
			t.Run(name, func(t *testing.T) {
				rc := RunConfig{Design: design, Nodes: 3, Threads: 1, Profile: "edr-cx4", BytesPerNode: 128 << 10, Seed: 1,
					Payload: true, UDRecovery: recovery}
				_, err, _ := runSchedule(t, rc, "crash:\n  - node: 1\n    at: 1us\n")
				if err == nil || !strings.Contains(err.Error(), "node 1 crashed") || errors.Is(err, sim.ErrVerbsUsage) ||
					classify(nil, err) != CleanError {
					t.Fatalf("crash before the exchange: %v (want a clean error naming node 1's crash)", err)
				}
			})
		}
	}
}

// TestLeaksAfterFailureNamesNodesThatCouldClose: after a failed run, the
// objects left open count only on nodes whose driver ended (and could
// close them), not on nodes the run's end stopped.
func TestLeaksAfterFailureNamesNodesThatCouldClose(t *testing.T) {
	c, err := sim.New(sim.Config{Nodes: 3, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, n := range []int{0, 2} {
		if _, err := c.Node(n).Device().CreateCQ(16); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name  string
		ended []bool
		want  string // "" for no finding
	}{
		{"none ended", []bool{false, false, false}, ""},
		{"node without objects ended", []bool{false, true, false}, ""},
		{"node 2 ended", []bool{false, false, true}, "1 objects still open after the failure on nodes that could close them: CQ(node 2"},
		{"all ended", []bool{true, true, true}, "2 objects still open after the failure"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := leaksAfterFailure(c, tc.ended)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("got %v, want no finding", err)
			case tc.want != "" && (!errors.Is(err, sim.ErrVerbsUsage) || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("got %v, want a checker finding with %q", err, tc.want)
			}
		})
	}
}

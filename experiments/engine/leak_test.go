package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

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

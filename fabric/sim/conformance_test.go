package sim_test

import (
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/fabrictest"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

func factory(t fabrictest.TB, nodes int) fabric.Fabric {
	c, err := sim.New(sim.Config{Nodes: nodes, Seed: 1, TimeLimit: 10 * fabric.Second})
	if err != nil {
		t.Fatalf("sim.New: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestConformance(t *testing.T) { fabrictest.Run(t, factory) }

package experiments

import (
	"testing"

	"github.com/rdmashuffle/rdmashuffle/experiments/engine"
	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// TestRunConfigAtItsLimits walks the numeric settings of a run (what
// explore run's flags and a sweep spec's parameters set) at the ends of
// their ranges and one step past: Validate, which runs nothing, accepts
// each end and refuses one step past naming the setting. The golden base
// runs 4 edr-cx4 nodes (28 cores: 14 threads at most).
func TestRunConfigAtItsLimits(t *testing.T) {
	sl := func(v uint8) *uint8 { return &v }
	for _, tc := range []struct {
		setting  string
		at, past func(*RunConfig)
	}{
		{"Threads", func(c *RunConfig) { c.Threads = 14 }, func(c *RunConfig) { c.Threads = 15 }},
		{"Threads", func(c *RunConfig) { c.Threads = 1 }, func(c *RunConfig) { c.Threads = -1 }},
		{"Nodes", func(c *RunConfig) { c.Nodes = 1 }, func(c *RunConfig) { c.Nodes = 0 }},
		{"SL", func(c *RunConfig) { c.SL = fabric.MaxSL }, func(c *RunConfig) { c.SL = fabric.MaxSL + 1 }},
		{"ControlSL", func(c *RunConfig) { c.Design, c.ControlSL = "MESQ/SR", sl(fabric.MaxSL) }, func(c *RunConfig) { c.Design, c.ControlSL = "MESQ/SR", sl(fabric.MaxSL+1) }},
		{"MsgBytes", func(c *RunConfig) { c.MsgBytes = 1 }, func(c *RunConfig) { c.MsgBytes = -1 }},
		{"BytesPerNode", func(c *RunConfig) { c.BytesPerNode = 1 }, func(c *RunConfig) { c.BytesPerNode = -1 }},
		{"BytesPerPair", func(c *RunConfig) { c.BytesPerPair = 1 }, func(c *RunConfig) { c.BytesPerPair = -1 }},
		{"CyclesPerTuple", func(c *RunConfig) { c.CyclesPerTuple = 0 }, func(c *RunConfig) { c.CyclesPerTuple = -1 }},
		{"PinnedCapMiB", func(c *RunConfig) { c.Adaptive, c.PinnedCapMiB = true, engine.MaxPinnedCapMiB }, func(c *RunConfig) { c.Adaptive, c.PinnedCapMiB = true, engine.MaxPinnedCapMiB+1 }},
		{"PinnedCapMiB", func(c *RunConfig) { c.Adaptive, c.PinnedCapMiB = true, 0 }, func(c *RunConfig) { c.Adaptive, c.PinnedCapMiB = true, -1 }},
		{"Buffers", func(c *RunConfig) { c.Buffers = 1 }, func(c *RunConfig) { c.Buffers = -1 }},
		{"CreditEvery", func(c *RunConfig) { c.CreditEvery = 1 }, func(c *RunConfig) { c.CreditEvery = -1 }},
		{"MaxBuffers", func(c *RunConfig) { c.Adaptive, c.Buffers, c.MaxBuffers = true, 4, 4 }, func(c *RunConfig) { c.Adaptive, c.Buffers, c.MaxBuffers = true, 4, 3 }},
	} {
		at, past := goldenBase(), goldenBase()
		at.Design, past.Design = "MEMQ/SR", "MEMQ/SR"
		tc.at(&at)
		tc.past(&past)
		if err := at.Validate(); err != nil {
			t.Errorf("%s at its limit (%+v): %v", tc.setting, at, err)
		}
		if err := past.Validate(); !refuses(err, tc.setting) {
			t.Errorf("%s one step past its limit: %v, want it refused naming %s", tc.setting, err, tc.setting)
		}
	}
}

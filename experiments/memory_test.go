package experiments

import (
	"strings"
	"testing"
)

// TestCheckMemory: runs far beyond the machine's memory are refused with
// the estimate before they start (run --nodes 1000 grew to 6 GB without
// output); ordinary ones pass.
func TestCheckMemory(t *testing.T) {
	const gib = 1 << 30
	for _, tc := range []struct {
		cfg       RunConfig
		available int64
		want      string // "" for accepted
	}{
		{RunConfig{Design: "MEMQ/SR", Nodes: 8, Threads: 2, Buffers: 2}, 1 * gib, ""},
		{RunConfig{Design: "MEMQ/SR", Nodes: 128, Threads: 2, Buffers: 2}, 4 * gib, ""},
		{RunConfig{Design: "MEMQ/SR", Nodes: 1000, Threads: 2, Buffers: 2}, 23 * gib, "about 133.6 GiB of memory"},
		{RunConfig{Design: "MESQ/SR", Nodes: 128, Threads: 2, Buffers: 2}, 1 * gib, "--nodes 128: the simulated cluster would need about 2.2 GiB"},
		{RunConfig{Design: "MEMQ/SR", Nodes: 64, Threads: 2, Buffers: 2, Payload: true}, 1 * gib, "--no-memory-check"},
	} {
		err := CheckMemory(tc.cfg, tc.available)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s, %d nodes, %d GiB: got %v, want %q", tc.cfg.Design, tc.cfg.Nodes, tc.available/gib, err, tc.want)
		}
	}
	// The estimate covers the measured peaks (the comment on MemoryEstimate).
	for _, m := range []struct {
		cfg RunConfig
		mib int64
	}{
		{RunConfig{Design: "MESQ/SR", Nodes: 128, Threads: 2, Buffers: 2}, 2237},
		{RunConfig{Design: "MEMQ/SR", Nodes: 64, Threads: 2, Buffers: 8}, 836},
		{RunConfig{Design: "MEMQ/SR", Nodes: 64, Threads: 4, Buffers: 2}, 733},
		{RunConfig{Design: "MEMQ/SR", Nodes: 64, Threads: 2, Buffers: 2, Payload: true}, 1307},
	} {
		if est := MemoryEstimate(m.cfg); est < m.mib<<20 {
			t.Errorf("%+v: estimate %d MiB below the measured %d MiB", m.cfg, est>>20, m.mib)
		}
	}
}

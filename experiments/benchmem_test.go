package experiments

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/perftest"
)

// TestEstimateBenchMemory: queue pairs by test, rings by depth, and
// registered memory only where it is backed.
func TestEstimateBenchMemory(t *testing.T) {
	a2a := perftest.Config{Test: "alltoall_bw", Size: 4096, TxDepth: 16, RxDepth: 16, CQMod: 8, Iters: 1}
	with := func(c perftest.Config, f func(*perftest.Config)) perftest.Config { f(&c); return c }
	for _, tc := range []struct {
		name       string
		cfg        perftest.Config
		nodes      int
		payload    bool
		qps, perQP int64
		registered int64
	}{
		{"all-to-all, shallow queues, one message", a2a, 1024, false, 1024 * 1023, 736 + 1*256 + 2*24, 0},
		{"all-to-all, 8 messages", with(a2a, func(c *perftest.Config) { c.Iters = 8 }), 16, false, 16 * 15, 736 + 8*256 + 16*24, 0},
		{"all-to-all, two queue pairs per peer", with(a2a, func(c *perftest.Config) { c.QPs = 2 }), 8, false, 8 * 7 * 2, 736 + 256 + 2*24, 0},
		{"all-to-all, payload", a2a, 8, true, 56, 736 + 256 + 2*24, 56 * 2 * 4096},
		{"all-to-all, UD payload", with(a2a, func(c *perftest.Config) { c.Conn = fabric.UD }), 4, true, 12, 736 + 256 + 2*24, 12 * 2 * (4096 + 40)},
		{"perftest defaults", perftest.Config{Test: "alltoall_bw"}, 4, false, 12, 736 + 128*256 + 512*24, 0},
		{"depths rounded to rings", with(a2a, func(c *perftest.Config) { c.TxDepth, c.RxDepth, c.Iters = 5, 20, 100 }), 4, false, 12, 736 + 8*256 + 32*24, 0},
		{"duration mode: a full window of sends", with(a2a, func(c *perftest.Config) { c.Iters, c.Duration = 0, fabric.Millisecond }), 4, false, 12, 736 + 16*256 + 16*24, 0},
		{"write_bw: no receives", perftest.Config{Test: "write_bw", TxDepth: 16}, 8, false, 8, 736 + 16*256, 0},
		{"incast", with(a2a, func(c *perftest.Config) { c.Test = "incast_bw" }), 9, false, 16, 736 + 256 + 2*24, 0},
		{"latency tests write their buffers", perftest.Config{Test: "send_lat"}, 2, false, 2, 736 + 128*256 + 512*24, 2 * 2 * 2},
	} {
		est, err := EstimateBenchMemory(tc.cfg, tc.nodes, tc.payload)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if est.QPs != tc.qps || est.PerQP != tc.perQP || est.Registered != tc.registered {
			t.Errorf("%s: %+v, want %d queue pairs of %d bytes, %d registered", tc.name, est, tc.qps, tc.perQP, tc.registered)
		}
		live := int64(tc.nodes)*benchPerNode + tc.qps*tc.perQP + tc.registered
		gc, headroom := 0, int64(100)
		if live >= benchTightGCBytes {
			gc, headroom = benchGCPercent, benchGCPercent
		}
		if want := benchBase + live + live*headroom/100; est.Bytes != want || est.GCPercent != gc {
			t.Errorf("%s: %d bytes, GC at %d%%, want %d, %d%%", tc.name, est.Bytes, est.GCPercent, want, gc)
		}
	}
	if _, err := EstimateBenchMemory(perftest.Config{Test: "nope"}, 4, false); err == nil {
		t.Error("an unknown test was estimated")
	}
}

// TestEstimateNearMeasured: the estimate is within 25% of the peak
// resident size measured for the runs in testdata/benchmem.txt (each line:
// nodes, -n, peak in KiB as /usr/bin/time -v reports it; the command and
// the tree are in the file's comments and docs/performance.md "Scale").
func TestEstimateNearMeasured(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "benchmem.txt"))
	if err != nil {
		t.Fatal(err)
	}
	a2a := perftest.Config{Test: "alltoall_bw", Size: 4096, TxDepth: 16, RxDepth: 16, CQMod: 8}
	seen := 0
	for i, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var nodes, iters int
		var kib int64
		if _, err := fmt.Sscan(line, &nodes, &iters, &kib); err != nil {
			t.Fatalf("line %d: %q: %v", i+1, line, err)
		}
		cfg := a2a
		cfg.Iters = iters
		est, err := EstimateBenchMemory(cfg, nodes, false)
		if err != nil {
			t.Fatal(err)
		}
		if measured := kib << 10; est.Bytes < measured*3/4 || est.Bytes > measured*5/4 {
			t.Errorf("%d nodes, -n %d: estimate %d MiB, measured %d MiB (%+.0f%%)", nodes, iters, est.Bytes>>20, measured>>20,
				100*(float64(est.Bytes)/float64(measured)-1))
		}
		seen++
	}
	if seen == 0 {
		t.Error("no measurements")
	}
}

// TestCheckBenchMemory: runs beyond the machine's memory are refused with
// the estimate, what it is made of and the flag that runs them anyway;
// others, and any run where the memory is unknown, pass.
func TestCheckBenchMemory(t *testing.T) {
	const gib = 1 << 30
	a2a := perftest.Config{Test: "alltoall_bw", Size: 4096, TxDepth: 16, RxDepth: 16, CQMod: 8, Iters: 1}
	for _, tc := range []struct {
		cfg      perftest.Config
		nodes    int
		payload  bool
		physical int64
		want     []string // nil: accepted
	}{
		{a2a, 256, false, 8 * gib, nil},
		{a2a, 1024, false, 23 * gib, nil},
		{a2a, 4096, false, 0, nil}, // unknown
		{a2a, 4096, false, 23 * gib, nil},
		{a2a, 4096, false, 16 * gib, []string{"Nodes 4096: the simulated alltoall_bw would need about 20.0 GiB", "16773120 queue pairs of about 1.0 KiB", "16.0 GiB"}},
		{perftest.Config{Test: "alltoall_bw", Size: 65536}, 1024, false, 23 * gib, []string{"shallower queues", "about 53.7 GiB"}},
		{perftest.Config{Test: "write_bw", Size: 1 << 30}, 16, true, 23 * gib, []string{"and 32.0 GiB of registered memory"}},
	} {
		err := CheckBenchMemory(tc.cfg, tc.nodes, tc.payload, tc.physical)
		switch {
		case tc.want == nil && err != nil:
			t.Errorf("%s on %d nodes refused: %v", tc.cfg.Test, tc.nodes, err)
		case tc.want != nil && err == nil:
			t.Errorf("%s on %d nodes with %d GiB accepted", tc.cfg.Test, tc.nodes, tc.physical/gib)
		}
		for _, w := range tc.want {
			if err != nil && !strings.Contains(err.Error(), w) {
				t.Errorf("%s on %d nodes: %q lacks %q", tc.cfg.Test, tc.nodes, err, w)
			}
		}
	}
	if err := CheckBenchMemory(perftest.Config{Test: "send_bw"}, 3, false, gib); err == nil || !strings.Contains(err.Error(), "even count") {
		t.Errorf("an invalid configuration: %v", err)
	}
}

func TestMemInfo(t *testing.T) {
	const listing = "MemTotal:       24608176 kB\nMemFree:        23000000 kB\nMemAvailable:   22000000 kB\n"
	for _, tc := range []struct {
		text, field string
		want        int64
		ok          bool
	}{
		{listing, "MemTotal", 24608176 << 10, true},
		{listing, "MemAvailable", 22000000 << 10, true},
		{listing, "SwapTotal", 0, false},
		{"MemTotal: lots kB\n", "MemTotal", 0, false},
		{"MemTotal: 12 MB\n", "MemTotal", 0, false},
		{"", "MemTotal", 0, false},
	} {
		got, ok := memInfo(strings.NewReader(tc.text), tc.field)
		if got != tc.want && tc.ok || ok != tc.ok {
			t.Errorf("%q in %q: %d %v, want %d %v", tc.field, tc.text, got, ok, tc.want, tc.ok)
		}
	}
}

package experiments

import (
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
		{"all-to-all, shallow queues, one message", a2a, 1024, false, 1024 * 1023, 4096 + 1*256 + 16*48, 0},
		{"all-to-all, 8 messages", with(a2a, func(c *perftest.Config) { c.Iters = 8 }), 16, false, 16 * 15, 4096 + 8*256 + 16*48, 0},
		{"all-to-all, two queue pairs per peer", with(a2a, func(c *perftest.Config) { c.QPs = 2 }), 8, false, 8 * 7 * 2, 4096 + 256 + 16*48, 0},
		{"all-to-all, payload", a2a, 8, true, 56, 4096 + 256 + 16*48, 56 * 2 * 4096},
		{"all-to-all, UD payload", with(a2a, func(c *perftest.Config) { c.Conn = fabric.UD }), 4, true, 12, 4096 + 256 + 16*48, 12 * 2 * (4096 + 40)},
		{"perftest defaults", perftest.Config{Test: "alltoall_bw"}, 4, false, 12, 4096 + 128*256 + 512*48, 0},
		{"depths rounded to rings", with(a2a, func(c *perftest.Config) { c.TxDepth, c.RxDepth, c.Iters = 5, 20, 100 }), 4, false, 12, 4096 + 8*256 + 32*48, 0},
		{"duration mode: a full window of sends", with(a2a, func(c *perftest.Config) { c.Iters, c.Duration = 0, fabric.Millisecond }), 4, false, 12, 4096 + 16*256 + 16*48, 0},
		{"write_bw: no receives", perftest.Config{Test: "write_bw", TxDepth: 16}, 8, false, 8, 4096 + 16*256, 0},
		{"incast", with(a2a, func(c *perftest.Config) { c.Test = "incast_bw" }), 9, false, 16, 4096 + 256 + 16*48, 0},
		{"latency tests write their buffers", perftest.Config{Test: "send_lat"}, 2, false, 2, 4096 + 128*256 + 512*48, 2 * 2 * 2},
	} {
		est, err := EstimateBenchMemory(tc.cfg, tc.nodes, tc.payload)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if est.QPs != tc.qps || est.PerQP != tc.perQP || est.Registered != tc.registered {
			t.Errorf("%s: %+v, want %d queue pairs of %d bytes, %d registered", tc.name, est, tc.qps, tc.perQP, tc.registered)
		}
		want := int64(benchBase) + int64(tc.nodes)*benchPerNode + tc.qps*tc.perQP + tc.registered
		if est.Bytes != want {
			t.Errorf("%s: %d bytes, want %d", tc.name, est.Bytes, want)
		}
	}
	if _, err := EstimateBenchMemory(perftest.Config{Test: "nope"}, 4, false); err == nil {
		t.Error("an unknown test was estimated")
	}
}

// TestEstimateCoversMeasured: the estimate is at least the peak resident
// size measured for these runs (docs/performance.md "Scale"), and not
// absurdly more.
func TestEstimateCoversMeasured(t *testing.T) {
	a2a := perftest.Config{Test: "alltoall_bw", Size: 4096, TxDepth: 16, RxDepth: 16, CQMod: 8, Iters: 1}
	for _, m := range []struct {
		nodes int
		iters int
		mib   int64
	}{
		{256, 1, 352},    // 360 MB
		{512, 1, 1307},   // 1.34 GB
		{1024, 1, 3523},  // 3.61 GB (receive entries of 72 bytes)
		{1024, 10, 8346}, // 8.55 GB, a 15.8 ms data phase
	} {
		cfg := a2a
		cfg.Iters = m.iters
		est, err := EstimateBenchMemory(cfg, m.nodes, false)
		if err != nil {
			t.Fatal(err)
		}
		if est.Bytes < m.mib<<20 || est.Bytes > 3*m.mib<<20 {
			t.Errorf("%d nodes, -n %d: estimate %d MiB, measured %d MiB", m.nodes, m.iters, est.Bytes>>20, m.mib)
		}
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
		{a2a, 4096, false, 23 * gib, []string{"Nodes 4096: the simulated alltoall_bw would need about 81.0 GiB", "16773120 queue pairs of about 5.0 KiB", "23.0 GiB"}},
		{perftest.Config{Test: "alltoall_bw", Size: 65536}, 1024, false, 23 * gib, []string{"shallower queues", "about 60.3 GiB"}},
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

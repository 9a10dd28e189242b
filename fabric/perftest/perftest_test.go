package perftest_test

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/perftest"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// run runs cfg on a 4-node simulated cluster of the default profile and
// returns the result and the port's data rate in Gb/s.
func run(t *testing.T, cfg perftest.Config) (*perftest.Result, float64) {
	t.Helper()
	prof, err := sim.LoadProfile(sim.DefaultProfileName)
	if err != nil {
		t.Fatal(err)
	}
	c, err := sim.New(sim.Config{Nodes: 4, Seed: 1, Profile: prof})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := perftest.Run(c, cfg)
	if err != nil {
		t.Fatalf("%+v: %v", cfg, err)
	}
	return r, prof.DataRateBps() / 1e9
}

// TestQuick runs every test and checks what its result must satisfy
// whatever the model's numbers: bandwidth within the port's data rate and
// consistent with the message rate, the peak at or above the average, and
// ordered latency statistics.
func TestQuick(t *testing.T) {
	for _, cfg := range []perftest.Config{
		{Test: "send_bw", Size: 65536, Iters: 200},
		{Test: "write_bw", Size: 4096, Iters: 500, QPs: 4},
		{Test: "read_bw", Size: 65536, Iters: 200},
		{Test: "send_bw", Size: 4096, Iters: 500, Conn: fabric.UD},
		{Test: "send_lat", Size: 8, Iters: 100},
		{Test: "write_lat", Size: 8, Iters: 100},
		{Test: "read_lat", Size: 8, Iters: 100},
		{Test: "alltoall_bw", Size: 4096, Iters: 100},
		{Test: "alltoall_bw", Size: 65536, Iters: 16, Schedule: perftest.ScheduleRandom},
		{Test: "alltoall_bw", Size: 65536, Iters: 16, Schedule: perftest.ScheduleRR, Burst: 4},
		{Test: "incast_bw", Size: 4096, Iters: 100},
		{Test: "read_bw", Size: 32, Iters: 50, QPs: 64, Interleave: true},
		{Test: "reg_mr", Size: 1 << 20},
	} {
		r, linkGbps := run(t, cfg)
		name := r.Test + "/" + r.Conn
		if r.Test != cfg.Test || r.Bytes != cfg.Size || r.Iterations != max(cfg.Iters, 1) && cfg.Iters != 0 {
			t.Errorf("%s: result does not echo its configuration: %+v", name, r)
		}
		if r.DurationUS <= 0 {
			t.Errorf("%s: duration %v us", name, r.DurationUS)
		}
		switch {
		case r.Test == "reg_mr", strings.HasSuffix(r.Test, "_lat"):
			if !(0 < r.TMinUS && r.TMinUS <= r.TTypicalUS && r.TTypicalUS <= r.TP99US && r.TP99US <= r.TMaxUS && r.TMinUS <= r.TAvgUS*(1+1e-9) && r.TAvgUS <= r.TMaxUS*(1+1e-9)) {
				t.Errorf("%s: latency statistics out of order: min %v typical %v avg %v p99 %v max %v", name, r.TMinUS, r.TTypicalUS, r.TAvgUS, r.TP99US, r.TMaxUS)
			}
		default:
			if !(r.BWAvgGbps > 0 && r.BWAvgGbps <= linkGbps*(1+1e-9)) {
				t.Errorf("%s: average %.3f Gb/s outside (0, %.3f], the port's data rate", name, r.BWAvgGbps, linkGbps)
			}
			if r.BWPeakGbps < r.BWAvgGbps {
				t.Errorf("%s: peak %.3f below the average %.3f", name, r.BWPeakGbps, r.BWAvgGbps)
			}
			// Every message carries Size bytes: the two rates are one.
			if want := r.MsgRateMpps * float64(r.Bytes) * 8 / 1e3; math.Abs(want-r.BWAvgGbps) > 1e-6*r.BWAvgGbps {
				t.Errorf("%s: %.4f Mpps of %d B is %.4f Gb/s, but the average is %.4f", name, r.MsgRateMpps, r.Bytes, want, r.BWAvgGbps)
			}
			if r.Dropped != 0 {
				t.Errorf("%s: %d messages dropped with receives posted ahead", name, r.Dropped)
			}
		}
	}
}

// TestMonotone checks two physical orderings: larger messages use the
// link better, and registering more memory takes longer.
func TestMonotone(t *testing.T) {
	small, _ := run(t, perftest.Config{Test: "send_bw", Size: 64, Iters: 500})
	large, _ := run(t, perftest.Config{Test: "send_bw", Size: 65536, Iters: 200})
	if !(small.BWAvgGbps < large.BWAvgGbps && small.MsgRateMpps > large.MsgRateMpps) {
		t.Errorf("send_bw: 64 B gives %.2f Gb/s and %.2f Mpps, 64 KiB %.2f Gb/s and %.2f Mpps; want less bandwidth and more messages at 64 B",
			small.BWAvgGbps, small.MsgRateMpps, large.BWAvgGbps, large.MsgRateMpps)
	}
	reg1, _ := run(t, perftest.Config{Test: "reg_mr", Size: 1 << 20})
	reg16, _ := run(t, perftest.Config{Test: "reg_mr", Size: 16 << 20})
	if !(reg16.TTypicalUS > reg1.TTypicalUS) {
		t.Errorf("reg_mr: 16 MiB takes %.1f us, 1 MiB %.1f us; want longer for more memory", reg16.TTypicalUS, reg1.TTypicalUS)
	}
}

// TestInlineWithinTheTransportsLimit: the inline size asked for (-I) is
// capped by the device's limit for the transport, which is smaller for
// UD than for RC on real NICs.
func TestInlineWithinTheTransportsLimit(t *testing.T) {
	prof, err := sim.LoadProfile(sim.DefaultProfileName)
	if err != nil {
		t.Fatal(err)
	}
	prof.NIC.MaxInlineUD = 64
	for _, size := range []int{32, 128} {
		c, err := sim.New(sim.Config{Nodes: 2, Seed: 1, Profile: prof})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := perftest.Run(c, perftest.Config{Test: "send_bw", Conn: fabric.UD, Size: size, Iters: 50}); err != nil {
			t.Errorf("send_bw -c UD -s %d with a 64-byte UD inline limit: %v", size, err)
		}
		c.Close()
	}
}

// TestReadLatency: an RDMA Read's round trip is longer than a write's
// one-way latency (it crosses the wire twice and the responder fetches
// the data from memory) and shorter than three of them; it grows with the
// size read; UC has no reads.
func TestReadLatency(t *testing.T) {
	w, _ := run(t, perftest.Config{Test: "write_lat", Size: 8, Iters: 200})
	r, _ := run(t, perftest.Config{Test: "read_lat", Size: 8, Iters: 200})
	big, _ := run(t, perftest.Config{Test: "read_lat", Size: 65536, Iters: 50})
	t.Logf("write_lat 8 B %.2f us one way; read_lat 8 B %.2f us, 64 KiB %.2f us round trip", w.TTypicalUS, r.TTypicalUS, big.TTypicalUS)
	if !(r.TTypicalUS > 1.5*w.TTypicalUS && r.TTypicalUS < 3*w.TTypicalUS) {
		t.Errorf("read_lat %.2f us against write_lat %.2f us one way: want 1.5 to 3 times", r.TTypicalUS, w.TTypicalUS)
	}
	if !(big.TTypicalUS > r.TTypicalUS+2) { // 64 KiB take over 5 us on EDR
		t.Errorf("read_lat: 64 KiB %.2f us, 8 B %.2f us", big.TTypicalUS, r.TTypicalUS)
	}
	cfg := perftest.Config{Test: "read_lat", Conn: fabric.UC}
	if err := cfg.Normalize(2); err == nil || !strings.Contains(err.Error(), "RDMA Read needs RC") {
		t.Errorf("read_lat over UC: %v", err)
	}
}

func TestEBBPatternsBounded(t *testing.T) {
	const most = 1 << 14
	c := perftest.Config{Test: "ebb", Iters: most + 1}
	if err := c.Normalize(4); err == nil || !strings.Contains(err.Error(), "at most") {
		t.Errorf("-n %d: %v", c.Iters, err)
	}
	c = perftest.Config{Test: "ebb", Iters: most}
	if err := c.Normalize(4); err != nil {
		t.Errorf("-n %d: %v", c.Iters, err)
	}
}

// TestShiftStages: shift_bw runs every distance by default, spreads -n
// stages over the distances, refuses more stages than distances and a
// time, and on one crossbar every stage gets what one pair gets alone.
func TestShiftStages(t *testing.T) {
	for _, tc := range []struct {
		iters, nodes, want int
		err                string
	}{
		{0, 7, 6, ""},
		{3, 7, 3, ""},
		{7, 7, 0, "7 nodes have 6 shift stages"},
	} {
		c := perftest.Config{Test: "shift_bw", Iters: tc.iters}
		err := c.Normalize(tc.nodes)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("-n %d on %d nodes: %v; want %q", tc.iters, tc.nodes, err, tc.err)
		case tc.err == "" && (err != nil || c.Iters != tc.want || c.Conn != fabric.UD || c.Size != 1<<20):
			t.Errorf("-n %d on %d nodes: %v, %d stages over %v of %d bytes; want %d over UD, 1 MiB", tc.iters, tc.nodes, err, c.Iters, c.Conn, c.Size, tc.want)
		}
	}
	c := perftest.Config{Test: "shift_bw", Duration: fabric.Millisecond}
	if err := c.Normalize(4); err == nil || !strings.Contains(err.Error(), "not for a time") {
		t.Errorf("shift_bw for a time: %v", err)
	}
	cl, err := sim.New(sim.Config{Nodes: 7, Seed: 1, SizeOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	cfg := perftest.Config{Test: "shift_bw", Iters: 3, Size: 64 << 10}
	if err := cfg.Normalize(7); err != nil {
		t.Fatal(err)
	}
	res, err := perftest.Run(cl, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var dist []int
	for _, st := range res.ShiftStages {
		dist = append(dist, st.Distance)
		if st.MinGbps < 0.97*res.PairGbps || st.MinGbps > st.MeanGbps {
			t.Errorf("distance %d on one crossbar: lowest %.2f, mean %.2f Gb/s; one pair %.2f", st.Distance, st.MinGbps, st.MeanGbps, res.PairGbps)
		}
	}
	if !slices.Equal(dist, []int{1, 3, 5}) || res.ShiftLowGbps > res.ShiftHighGbps || res.BWAvgGbps < res.ShiftLowGbps {
		t.Errorf("stages at distances %v (want 1, 3, 5), slowest %.2f, fastest %.2f, mean %.2f", dist, res.ShiftLowGbps, res.ShiftHighGbps, res.BWAvgGbps)
	}
}

// TestSwarm: read_swarm and write_swarm run the two-node swarm with the
// configuration's queue pairs, threads (at most one per queue pair) and
// window; past the context cache the READ rate falls; the threads apply to
// the swarm only, and the swarm runs on 2 nodes.
func TestSwarm(t *testing.T) {
	prof, err := sim.LoadProfile("fdr-cx3")
	if err != nil {
		t.Fatal(err)
	}
	rate := func(test string, qps int) *perftest.Result {
		t.Helper()
		c, err := sim.New(sim.Config{Nodes: 2, Seed: 1, SizeOnly: true, Profile: prof})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		r, err := perftest.Run(c, perftest.Config{Test: test, QPs: qps, Threads: 4, Iters: 400})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	few, many := rate("read_swarm", 16), rate("read_swarm", 512)
	if few.Threads != 4 || few.Window != 16 || few.Bytes != 32 || few.MsgRateMpps <= 0 {
		t.Errorf("read_swarm, 16 QPs: %+v; want 4 threads, a window of 16, 32 bytes and a rate", few)
	}
	if !(many.MsgRateMpps < 0.8*few.MsgRateMpps) {
		t.Errorf("read_swarm on fdr-cx3 (80 contexts): %.2f M/s at 16 QPs, %.2f at 512; want a clear fall", few.MsgRateMpps, many.MsgRateMpps)
	}
	if one := rate("write_swarm", 2); one.Threads != 2 {
		t.Errorf("write_swarm, 2 QPs: %d threads, want 2 (one per queue pair at most)", one.Threads)
	}
	bad := []struct {
		cfg   perftest.Config
		nodes int
		field string
	}{
		{perftest.Config{Test: "read_bw", Threads: 4}, 2, "Threads"},
		{perftest.Config{Test: "read_swarm"}, 4, "Nodes"},
		{perftest.Config{Test: "write_swarm", Conn: fabric.UC}, 2, "Conn"},
	}
	for _, b := range bad {
		if err := b.cfg.Normalize(b.nodes); err == nil || !strings.Contains(err.Error(), b.field) {
			t.Errorf("%+v on %d nodes: %v, want an error naming %s", b.cfg, b.nodes, err, b.field)
		}
	}
}

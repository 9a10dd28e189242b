package evidence

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/perftest"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

func TestLoad(t *testing.T) {
	pts, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) < 60 {
		t.Errorf("%d points; the evidence files hold at least 60", len(pts))
	}
	for _, p := range pts {
		if p.Source == "" || p.URL == "" || p.Unit == "" {
			t.Errorf("%s (%s): needs a source, a URL and a unit", p.ID, p.File)
		}
	}
}

// TestUnits: perftest's MB/sec and IMB 4.x's Mbytes/sec count 2^20 bytes
// (unit MiB/s), OSU's and IMB 2018's 10^6 (MB/s); the same run reported in
// both units differs by exactly 1.048576, and a perftest point in MB/s is
// refused.
func TestUnits(t *testing.T) {
	for _, tc := range []Point{
		{ID: "u-perftest", Metric: "bandwidth_MiBps", Verb: "write", Profile: "edr-cx4", Setup: "perftest ib_write_bw", X: map[string]any{"bytes": 65536, "qps": 1}, Y: 11000, Tolerance: 0.2},
		{ID: "u-pingpong", Metric: "bandwidth_MiBps", Verb: "mpi_pingpong", Profile: "fdr-cx3", Setup: "IMB-MPI1 PingPong", X: map[string]any{"bytes": 65536, "ranks": 2}, Y: 3000, Tolerance: 0.2},
	} {
		dec, bin := tc, tc
		dec.Unit, dec.Setup, bin.Unit = "MB/s", "", "MiB/s"
		rd, rb := Evaluate(dec), Evaluate(bin)
		if !rd.Modelled || !rb.Modelled {
			t.Fatalf("%s: not modelled: %s / %s", tc.ID, rd.How, rb.How)
		}
		if r := rd.Model / rb.Model; math.Abs(r-1.048576) > 1e-9 {
			t.Errorf("%s: MB/s %v over MiB/s %v = %v, want 1.048576", tc.ID, rd.Model, rb.Model, r)
		}
	}
	bad := Point{ID: "u-bad", Metric: "bandwidth_MBps", Verb: "send", Setup: "perftest ib_send_bw", Y: 1, Unit: "MB/s", Tolerance: 0.1}
	if err := bad.check(); err == nil || !strings.Contains(err.Error(), "MiB/s") {
		t.Errorf("a perftest point in MB/s: %v, want a refusal naming MiB/s", err)
	}
	bad.Unit = "MiB/s"
	if err := bad.check(); err != nil {
		t.Errorf("a perftest point in MiB/s: %v", err)
	}
}

func TestEvaluate(t *testing.T) {
	for _, tc := range []struct {
		p        Point
		modelled bool
		how      string
	}{
		{Point{ID: "t-ud", Metric: "bandwidth_MBps", Verb: "send", Profile: "fdr-cx3", Setup: "ib_send_bw over UD", X: map[string]any{"bytes": 1024, "qps": 1}, Y: 800, Unit: "MB/s", Tolerance: 0.2}, true, "send_bw -s 1024 -q 1 -n 1000 -c UD on fdr-cx3"},
		{Point{ID: "t-rate", Metric: "message_rate_mops", Verb: "read", Profile: "hdr-cx6", X: map[string]any{"bytes": 32, "qps": 1}, Y: 2.5, Unit: "Mops/s", Tolerance: 0.2}, true, "read_bw -s 32"},
		{Point{ID: "t-noprof", Verb: "read", X: map[string]any{"bytes": 32}, Y: 1, Unit: "Mops/s", Tolerance: 0.2}, false, "no built-in profile"},
		{Point{ID: "t-swarm", Verb: "read", Profile: "fdr-cx3", X: map[string]any{"bytes": 32, "qps": 88, "threads": 8}, Y: 6.7, Unit: "Mops/s", Tolerance: 0.2}, false, "rc-swarm"},
		{Point{ID: "t-swarm-w", Verb: "read", Profile: "fdr-cx3", X: map[string]any{"bytes": 32, "qps": 16, "threads": 2, "window": 4}, Y: 6.7, Unit: "Mops/s", Tolerance: 0.2}, true, "two-node swarm: read of 32 bytes, 16 QPs"},
		{Point{ID: "t-swarm-bw", Verb: "read", Profile: "fdr-cx3", X: map[string]any{"bytes": 32, "qps": 16, "threads": 2, "window": 4}, Y: 6.7, Unit: "MB/s", Tolerance: 0.2}, false, "operation rates"},
		{Point{ID: "t-large", Verb: "read", Profile: "hdr-cx6", X: map[string]any{"bytes": "large"}, Y: 23, Unit: "GB/s", Tolerance: 0.2}, false, "not stated as a number"},
		{Point{ID: "t-mpi", Verb: "mpi_bw", Profile: "hdr-cx6", X: map[string]any{"bytes": 1 << 20, "ranks": 2}, Y: 21000, Unit: "MB/s", Tolerance: 0.2}, true, "MPI stream node 0 -> node 1: 1 x 50 messages of 1048576 bytes (blocking"},
		{Point{ID: "t-mpi-small", Verb: "mpi_bw", Profile: "hdr-cx6", X: map[string]any{"bytes": 64, "ranks": 2}, Y: 110, Unit: "MB/s", Tolerance: 0.2}, true, "messages of 64 bytes (MPI_Isend, a window of 64 per thread)"},
		{Point{ID: "t-mpi-bibw", Verb: "mpi_bibw", Profile: "hdr-cx6", X: map[string]any{"bytes": 1024, "ranks": 2}, Y: 3300, Unit: "MB/s", Tolerance: 0.15}, true, "MPI stream node 0 <-> node 1 (both directions, summed): 1 x 2000 messages of 1024 bytes (MPI_Isend, a window of 64 per thread)"},
		{Point{ID: "t-mpi-4", Verb: "mpi_bw", Profile: "hdr-cx6", X: map[string]any{"bytes": 64, "ranks": 4}, Y: 110, Unit: "MB/s", Tolerance: 0.2}, false, "only two-rank"},
		{Point{ID: "t-mpi-lat", Verb: "mpi_pingpong", Profile: "fdr-cx3", X: map[string]any{"bytes": 8, "ranks": 2}, Y: 1.7, Unit: "us", Tolerance: 0.2}, true, "MPI ping-pong: 1000 round trips of 8 bytes"},
		{Point{ID: "t-mpi-unit", Verb: "mpi_pingpong", Profile: "fdr-cx3", X: map[string]any{"bytes": 8}, Y: 1.7, Unit: "GB/s", Tolerance: 0.2}, false, "a ping-pong reports us, MB/s or MiB/s"},
		{Point{ID: "t-mt-noprof", Verb: "mpi_msgrate_mt", X: map[string]any{"threads": 4}, Y: 0.7, Unit: "Mops/s", Tolerance: 0.3}, false, "no built-in profile"},
		{Point{ID: "t-mt", Verb: "mpi_msgrate_mt", Profile: "edr-cx4", X: map[string]any{"threads": 4}, Y: 0.7, Unit: "Mops/s", Tolerance: 0.3}, true, "4 x 3200 messages of 8 bytes (MPI_Isend, a window of 64 per thread)"},
		{Point{ID: "t-mt-w", Verb: "mpi_msgrate_mt", Profile: "edr-cx4", X: map[string]any{"threads": 2, "bytes": 64, "window": 16}, Y: 0.7, Unit: "Mops/s", Tolerance: 0.3}, true, "2 x 3200 messages of 64 bytes (MPI_Isend, a window of 16 per thread)"},
		{Point{ID: "t-mt-unit", Verb: "mpi_msgrate_mt", Profile: "edr-cx4", X: map[string]any{"threads": 2}, Y: 0.7, Unit: "MB/s", Tolerance: 0.3}, false, "a message-rate point reports Mops/s"},
		{Point{ID: "t-sendrecv", Verb: "mpi_sendrecv", Profile: "fdr-cx3", X: map[string]any{"bytes": 8}, Y: 1.7, Unit: "MB/s", Tolerance: 0.2}, false, "no model of mpi_sendrecv"},
		{Point{ID: "t-ipoib", Verb: "ipoib_tcp", Profile: "edr-cx4", X: map[string]any{"bytes": 131072, "parallel": 2}, Y: 20, Unit: "Gb/s", Tolerance: 0.5}, true, "IPoIB stream node 0 -> node 1: 2 x 128 messages of 131072 bytes on edr-cx4"},
		{Point{ID: "t-lat", Metric: "latency_us", Verb: "send", Profile: "edr-cx4", X: map[string]any{"bytes": 1024}, Y: 1.6, Unit: "us", Tolerance: 0.15}, true, "send_lat -s 1024 -n 1000 (t_typical"},
		{Point{ID: "t-lat-ud", Metric: "latency_us", Verb: "send", Profile: "edr-cx4", Setup: "ib_send_lat over UD", X: map[string]any{"bytes": 32}, Y: 0.9, Unit: "us", Tolerance: 0.15}, true, "send_lat -s 32 -n 1000 -c UD"},
		{Point{ID: "t-lat-w", Metric: "latency_us", Verb: "write", Profile: "edr-cx4", X: map[string]any{"bytes": 8}, Y: 0.9, Unit: "us", Tolerance: 0.15}, true, "write_lat -s 8"},
		{Point{ID: "t-lat-rd", Metric: "latency_us", Verb: "read", Profile: "edr-cx4", X: map[string]any{"bytes": 8}, Y: 1.9, Unit: "us", Tolerance: 0.15}, true, "read_lat -s 8 -n 1000"},
		{Point{ID: "t-lat-atomic", Metric: "latency_us", Verb: "atomic", Profile: "edr-cx4", X: map[string]any{"bytes": 8}, Y: 1.9, Unit: "us", Tolerance: 0.15}, false, "no model of atomic measurements"},
		{Point{ID: "t-rtt", Metric: "rtt_us", Verb: "send", Profile: "edr-cx4", X: map[string]any{"bytes": 8}, Y: 1.9, Unit: "us", Tolerance: 0.15}, false, "only rates, bandwidths and one-way latencies"},
		{Point{ID: "t-ipoib-dg", Verb: "ipoib_tcp_datagram", Profile: "qdr-cx3", X: map[string]any{"bytes": 131072, "parallel": 1}, Y: 8, Unit: "Gb/s", Tolerance: 0.3}, false, "the IPoIB design models connected mode"},
		{Point{ID: "t-ipoib-unit", Verb: "ipoib_tcp", Profile: "edr-cx4", X: map[string]any{"bytes": 131072}, Y: 20, Unit: "us", Tolerance: 0.5}, false, "a stream reports a rate"},
		{Point{ID: "t-reg", Verb: "reg_mr", Profile: "edr-cx4", X: map[string]any{"megabytes": 4}, Y: 100, Unit: "us", Tolerance: 0.3}, true, "reg_mr of one 4 MiB region, one thread on edr-cx4"},
		{Point{ID: "t-reg-gb", Verb: "dereg_mr", Profile: "fdr-cx3", X: map[string]any{"gigabytes": 1.5}, Y: 1, Unit: "s", Tolerance: 0.3}, true, "dereg_mr of one 1.5 GB region"},
		{Point{ID: "t-reg-par", Verb: "reg_mr", Profile: "edr-cx4", X: map[string]any{"gigabytes": 500, "parallel": true}, Y: 10, Unit: "s", Tolerance: 0.3}, false, "does not state how many"},
		{Point{ID: "t-reg-nosize", Verb: "reg_mr", Profile: "edr-cx4", X: map[string]any{"mrs": 100000}, Y: 28, Unit: "s", Tolerance: 0.3}, false, "size is not stated"},
		{Point{ID: "t-reg-2dev", Verb: "reg_dereg_mr", Profile: "edr-cx4", X: map[string]any{"megabytes": 4, "devices": 2}, Y: 240, Unit: "us", Tolerance: 0.3}, false, "one NIC"},
		{Point{ID: "t-reg-unit", Verb: "reg_mr", Profile: "edr-cx4", X: map[string]any{"megabytes": 4}, Y: 100, Unit: "Mops/s", Tolerance: 0.3}, false, "only s, ms and us"},
		{Point{ID: "t-cq", Verb: "create_cq", Profile: "edr-cx4", X: map[string]any{"cq_entries": 1}, Y: 173, Unit: "us", Tolerance: 0.3}, true, "create_cq of 1 entry, one thread"},
		{Point{ID: "t-cq-nosize", Verb: "create_cq", Profile: "edr-cx4", X: map[string]any{}, Y: 173, Unit: "us", Tolerance: 0.3}, false, "size is not stated"},
		{Point{ID: "t-connect", Verb: "connect_verbs", Profile: "edr-cx4", X: map[string]any{"threads": 1}, Y: 49, Unit: "ms", Tolerance: 0.5}, false, "ibv_open_device"},
		{Point{ID: "t-cm", Verb: "connect_rc", Profile: "edr-cx4", X: map[string]any{"connections": 1000}, Y: 890, Unit: "ms", Tolerance: 0.3}, false, "connection manager"},
		{Point{ID: "t-shift", Metric: "shift_slowest_frac", Verb: "shift_bw", Profile: "edr-cx4", X: map[string]any{"nodes": 16, "bytes": 65536, "network": "fat-tree radix=4 routing=minhop"}, Y: 0.5, Unit: unitOfPair, Tolerance: 0.3}, true, "shift_bw -s 65536 over all 15 stages, the slowest node of any stage over one pair alone on edr-cx4, 16 nodes on fat-tree 3-level radix 4"},
		{Point{ID: "t-shift-nonet", Metric: "shift_slowest_frac", Verb: "shift_bw", Profile: "edr-cx4", X: map[string]any{"nodes": 16, "bytes": 65536}, Y: 0.5, Unit: unitOfPair, Tolerance: 0.3}, false, "needs its network (x.network)"},
		{Point{ID: "t-shift-unit", Metric: "shift_slowest_frac", Verb: "shift_bw", Profile: "edr-cx4", X: map[string]any{"nodes": 16, "bytes": 65536, "network": "fat-tree radix=4"}, Y: 0.5, Unit: "GB/s", Tolerance: 0.3}, false, "gives its slowest stage as shift_slowest_frac"},
		{Point{ID: "t-shift-badnet", Metric: "shift_slowest_frac", Verb: "shift_bw", Profile: "edr-cx4", X: map[string]any{"nodes": 16, "bytes": 65536, "network": "fat-tree radix=4 routing=sideways"}, Y: 0.5, Unit: unitOfPair, Tolerance: 0.3}, false, "sideways"},
	} {
		r := Evaluate(tc.p)
		if r.Modelled != tc.modelled || !strings.Contains(r.How, tc.how) {
			t.Errorf("%s: modelled %v (%s), want %v and %q", tc.p.ID, r.Modelled, r.How, tc.modelled, tc.how)
		}
		if r.Modelled && (r.Model <= 0 || r.Error != (r.Model-tc.p.Y)/tc.p.Y) {
			t.Errorf("%s: model %v, error %v", tc.p.ID, r.Model, r.Error)
		}
	}
	s := Summarize([]Result{{Point: Point{ID: "a-1"}, Modelled: true, Error: 0.1, Within: true}, {Point: Point{ID: "a-2"}, Modelled: true, Error: -0.3},
		{Point: Point{ID: "a-3", FitFor: "fdr-cx3: nic.qp_cache_entries"}, Modelled: true, Error: 0.01, Within: true}, {Point: Point{ID: "b-1"}}})
	if s.Points != 4 || s.Modelled != 3 || s.Within != 2 || s.Sources != 2 || s.MedianAbsError != 0.1 || s.HeldOut != 2 ||
		s.MedianAbsErrorHeldOut < 0.199 || s.MedianAbsErrorHeldOut > 0.201 {
		t.Errorf("summary %+v", s)
	}
}

// TestPathMTU: a point runs at the path MTU its source used (x.mtu), which
// changes a message's latency only once it spans more than one packet; a
// bad x.mtu, or a setup naming an MTU that x.mtu does not carry, is refused.
func TestPathMTU(t *testing.T) {
	lat := func(bytes, mtu int) Result {
		x := map[string]any{"bytes": bytes}
		if mtu != 0 {
			x["mtu"] = mtu
		}
		r := Evaluate(Point{ID: "t-mtu", Metric: "latency_us", Verb: "write", Profile: "qdr-cx3", X: x, Y: 1, Unit: "us", Tolerance: 0.15})
		if !r.Modelled {
			t.Fatalf("%d bytes at MTU %d: %s", bytes, mtu, r.How)
		}
		return r
	}
	if a, b := lat(1024, 0), lat(1024, 2048); a.Model != b.Model || strings.Contains(a.How, "MTU") || !strings.Contains(b.How, "MTU 2048") {
		t.Errorf("1 KiB: %v (%s) at the profile's 4096, %v (%s) at 2048: want the same latency, and the MTU named only where it was set", a.Model, a.How, b.Model, b.How)
	}
	if a, b := lat(4096, 0), lat(4096, 2048); !(b.Model < a.Model) {
		t.Errorf("4 KiB: %v us at MTU 4096, %v at 2048: two packets should pipeline through the store-and-forward stages", a.Model, b.Model)
	}
	for _, tc := range []struct {
		setup string
		x     map[string]any
		want  string
	}{
		{"ib_write_lat, MTU 2048", map[string]any{"bytes": 2, "mtu": 2048}, ""},
		{"ib_write_lat, MTU 2048", map[string]any{"bytes": 2}, "x needs mtu: 2048"},
		{"ib_write_lat, MTU 1024", map[string]any{"bytes": 2, "mtu": 2048}, "x needs mtu: 1024"},
		{"ib_write_lat", map[string]any{"bytes": 2, "mtu": 3000}, "one of 256, 512"},
		{"ib_write_lat", map[string]any{"bytes": 2, "mtu": "2048"}, "one of 256, 512"},
		{"iperf3 over IPoIB in connected mode, MTU 65520", map[string]any{"bytes": 131072}, ""},
	} {
		err := Point{ID: "t", Metric: "m", Verb: "write", Setup: tc.setup, X: tc.x, Y: 1, Tolerance: 0.1}.check()
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q %v: %v, want %q", tc.setup, tc.x, err, tc.want)
		}
	}
}

// TestSwarm: the two-node swarm completes every operation on both nodes,
// and its rate falls once the queue pairs outnumber the NIC's context
// cache (here 16 contexts), gradually rather than at once; a bad
// configuration is an error, not a hang.
func TestSwarm(t *testing.T) {
	rate := func(qps int) float64 {
		return smallCacheSwarm(t, perftest.SwarmConfig{Op: fabric.OpRead, QPs: qps, Threads: 2, Window: 8, Bytes: 32, OpsPerThread: 400})
	}
	r8, r64, r512 := rate(8), rate(64), rate(512)
	t.Logf("8 QPs %.2f, 64 QPs %.2f, 512 QPs %.2f M reads/s per node", r8, r64, r512)
	if !(r64 < 0.8*r8) || !(r512 < r64) || r512 < r8/20 {
		t.Errorf("8, 64, 512 QPs over 16 contexts: %.2f, %.2f, %.2f M reads/s; want a gradual fall", r8, r64, r512)
	}
	c, err := sim.New(sim.Config{Nodes: 2, Seed: 1, SizeOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := perftest.RunSwarm(c, perftest.SwarmConfig{Op: fabric.OpRead, QPs: 1, Threads: 2, Window: 1, Bytes: 32, OpsPerThread: 1}); err == nil {
		t.Error("fewer queue pairs than threads: no error")
	}
}

// TestStream: the baselines' stream and ping-pong runs move every message
// and give plausible figures: IPoIB below the link's rate, several streams
// at least as fast as one, a ping-pong's half round trip above the wire's
// latency and growing with size; a bad configuration is an error.
func TestStream(t *testing.T) {
	cluster := func() *sim.Cluster {
		c, err := sim.New(sim.Config{Nodes: 2, Seed: 1, Profile: mustProfile(t, "edr-cx4"), SizeOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	ipoib, err := baseline("IPoIB")
	if err != nil {
		t.Fatal(err)
	}
	mpi, err := baseline("MPI")
	if err != nil {
		t.Fatal(err)
	}
	rate := func(streams int) float64 {
		r, err := runStream(cluster(), streamConfig{Design: ipoib, Streams: streams, Bytes: 128 << 10, Messages: 40})
		if err != nil {
			t.Fatal(err)
		}
		return r * 8 / 1e9
	}
	one, four := rate(1), rate(4)
	t.Logf("IPoIB on edr-cx4: 1 stream %.1f Gb/s, 4 streams %.1f Gb/s", one, four)
	if !(one > 1 && one < 100 && four >= one && four < 100) {
		t.Errorf("IPoIB: 1 stream %.1f Gb/s, 4 streams %.1f Gb/s; want 1-100 Gb/s, more streams no slower", one, four)
	}
	half := func(bytes int) fabric.Duration {
		d, err := runPingPong(cluster(), streamConfig{Design: mpi, Streams: 1, Bytes: bytes, Messages: 20})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	small, large := half(8), half(256<<10)
	t.Logf("MPI ping-pong on edr-cx4: 8 bytes %v, 256 KiB %v", small, large)
	if !(small > 500*fabric.Nanosecond && large > 4*small) {
		t.Errorf("MPI ping-pong: 8 bytes %v, 256 KiB %v", small, large)
	}
	// Non-blocking sends: a window keeps many 8-byte messages in flight
	// where blocking MPI_Send waits a round trip for each.
	msgRate := func(window int) float64 {
		r, err := runStream(cluster(), streamConfig{Design: mpi, Streams: 1, Bytes: 8, Messages: 500, Window: window})
		if err != nil {
			t.Fatal(err)
		}
		return r / 8 / 1e6
	}
	blocking, windowed := msgRate(0), msgRate(64)
	t.Logf("MPI 8-byte messages, 1 thread on edr-cx4: blocking %.2f M/s, window of 64 %.2f M/s", blocking, windowed)
	if !(windowed > 2*blocking) {
		t.Errorf("MPI 8-byte messages: blocking %.2f M/s, window of 64 %.2f M/s; want the window at least twice as fast", blocking, windowed)
	}
	// Both directions at once (every message of both is taken, or
	// runStream fails): at least one direction's rate and at most twice
	// it; with one thread per node the library's one lock serializes a
	// node's sends and receives, so small messages gain little.
	both, err := runStream(cluster(), streamConfig{Design: mpi, Streams: 1, Bytes: 8, Messages: 500, Window: 64, Both: true})
	if err != nil {
		t.Fatal(err)
	}
	bulk := func(dirs bool) float64 {
		r, err := runStream(cluster(), streamConfig{Design: mpi, Streams: 1, Bytes: 1 << 20, Messages: 20, Both: dirs})
		if err != nil {
			t.Fatal(err)
		}
		return r / 1e9
	}
	oneBulk, bothBulk := bulk(false), bulk(true)
	t.Logf("MPI both ways: 8-byte messages %.2f M/s in all (one way %.2f), 1 MiB %.1f GB/s (one way %.1f)", both/8/1e6, windowed, bothBulk, oneBulk)
	if r := both / 8 / 1e6 / windowed; r < 0.9 || r > 2.1 {
		t.Errorf("MPI 8-byte messages: both ways %.2f M/s, one way %.2f M/s; want between one and two times", both/8/1e6, windowed)
	}
	if r := bothBulk / oneBulk; r < 1.7 || r > 2.1 { // the links, full duplex, limit 1 MiB messages
		t.Errorf("MPI 1 MiB messages: both ways %.1f GB/s, one way %.1f GB/s; want about twice", bothBulk, oneBulk)
	}
	if _, err := runStream(cluster(), streamConfig{Design: ipoib, Streams: 1, Bytes: 8, Messages: 5, Window: 4}); err == nil || !strings.Contains(err.Error(), "for the MPI design only") {
		t.Errorf("a window on IPoIB: error %v", err)
	}
	for _, bad := range []streamConfig{{Design: ipoib, Streams: 0, Bytes: 1, Messages: 1}, {Design: mpi, Streams: 2, Bytes: 8, Messages: 1}} {
		if _, err := runStream(cluster(), bad); bad.Streams == 0 && err == nil {
			t.Errorf("%+v: no error", bad)
		}
		if _, err := runPingPong(cluster(), bad); err == nil {
			t.Errorf("ping-pong %+v: no error", bad)
		}
	}
}

func mustProfile(t *testing.T, name string) *sim.Profile {
	t.Helper()
	p, err := sim.LoadProfile(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSwarmBursts: with one issuing node and bursts per queue pair, the
// context of a queue pair is fetched once for a burst, so past the cache
// the rate of WRITEs in bursts of 32 falls far less than that of WRITEs
// on a random queue pair each; both sides' runs complete.
func TestSwarmBursts(t *testing.T) {
	rate := func(qps int, cfg perftest.SwarmConfig) float64 {
		cfg.Op, cfg.QPs, cfg.Threads, cfg.Bytes, cfg.OneSided = fabric.OpWrite, qps, 2, 64, true
		cfg.OpsPerThread = 32 * qps / 2 * 4
		return smallCacheSwarm(t, cfg)
	}
	burst8, burst256 := rate(8, perftest.SwarmConfig{Burst: 32, Window: 32 * 4}), rate(256, perftest.SwarmConfig{Burst: 32, Window: 32 * 128})
	rand8, rand256 := rate(8, perftest.SwarmConfig{Window: 32}), rate(256, perftest.SwarmConfig{Window: 32})
	t.Logf("bursts: 8 QPs %.2f, 256 QPs %.2f; random: %.2f, %.2f M writes/s", burst8, burst256, rand8, rand256)
	if !(burst256 > 0.7*burst8) || !(burst256/burst8 > rand256/rand8) {
		t.Errorf("8 -> 256 QPs over 16 contexts: bursts %.2f -> %.2f, random %.2f -> %.2f M writes/s; want bursts to keep most of their rate and more of it than random choice", burst8, burst256, rand8, rand256)
	}
}

// smallCacheSwarm runs cfg on two fdr-cx3 nodes whose context cache holds
// 16 queue pairs and returns its rate.
func smallCacheSwarm(t *testing.T, cfg perftest.SwarmConfig) float64 {
	t.Helper()
	prof, err := sim.LoadProfile("fdr-cx3")
	if err != nil {
		t.Fatal(err)
	}
	prof.NIC.QPCacheEntries = 16
	c, err := sim.New(sim.Config{Nodes: 2, Seed: 1, Profile: prof, SizeOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := perftest.RunSwarm(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestWRCacheOutstanding: with the NIC's cache of outstanding requests
// on, a requester with more requests outstanding than it holds reads some
// again and issues fewer per second (docs/model.md, "Outstanding
// work-request cache"); with it off, the same run has no such lookups.
func TestWRCacheOutstanding(t *testing.T) {
	run := func(entries int, op fabric.Opcode) (float64, sim.Stats) {
		t.Helper()
		prof, err := sim.LoadProfile("hdr-cx6")
		if err != nil {
			t.Fatal(err)
		}
		prof.NIC.WRCacheEntries = entries
		c, err := sim.New(sim.Config{Nodes: 2, Seed: 1, Profile: prof, SizeOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		r, err := perftest.RunSwarm(c, perftest.SwarmConfig{Op: op, QPs: 32, Threads: 32, Window: 32, PerQP: 32, Bytes: 8, OpsPerThread: 400, OneSided: true})
		if err != nil {
			t.Fatal(err)
		}
		return r, c.Stats()
	}
	for _, op := range []fabric.Opcode{fabric.OpRead, fabric.OpWrite} {
		off, stOff := run(0, op)
		on, stOn := run(64, op)
		if stOff.WRCacheHits+stOff.WRCacheMisses != 0 {
			t.Errorf("%v, cache off: %d hits and %d misses counted", op, stOff.WRCacheHits, stOff.WRCacheMisses)
		}
		if stOn.WRCacheMisses == 0 || stOn.WRCacheHits == 0 {
			t.Errorf("%v, 64 entries for 32 x 32 outstanding: %d hits, %d misses; want both", op, stOn.WRCacheHits, stOn.WRCacheMisses)
		}
		if on >= off {
			t.Errorf("%v: %.1f M/s with 64 entries, %.1f with the cache off; want fewer with it", op, on, off)
		}
	}
}

// TestOutsidePointsHaveFindings runs every point, as explore evidence
// does, and requires a finding (why the model misses it) on each point
// outside its tolerance: a change that moves a point outside must say why.
func TestOutsidePointsHaveFindings(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every evidence point (about 10 s)")
	}
	pts, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	var rs []Result
	for _, p := range pts {
		rs = append(rs, Evaluate(p))
	}
	s := Summarize(rs)
	for _, id := range s.Unexplained {
		t.Errorf("%s is outside its tolerance with no finding: add one (experiments/evidence/README.md, 'finding') or fix the model", id)
	}
}

// TestSummarizeUnexplained: a point outside its tolerance is unexplained
// until it carries a finding; points within, or not run, never are.
func TestSummarizeUnexplained(t *testing.T) {
	rs := []Result{
		{Point: Point{ID: "a-in"}, Modelled: true, Within: true},
		{Point: Point{ID: "b-out"}, Modelled: true},
		{Point: Point{ID: "c-out", Finding: "why"}, Modelled: true},
		{Point: Point{ID: "d-notrun"}},
	}
	s := Summarize(rs)
	if len(s.Unexplained) != 1 || s.Unexplained[0] != "b-out" || s.Modelled != 3 || s.Within != 1 {
		t.Errorf("unexplained %v, %d modelled, %d within; want [b-out], 3, 1", s.Unexplained, s.Modelled, s.Within)
	}
}

// TestSetupCosts: a set-up point's model value is its profile's cost of
// the calls it times (registration by pages, deregistration, both, one
// completion queue), in the point's unit.
func TestSetupCosts(t *testing.T) {
	prof, err := sim.LoadProfile("edr-cx4")
	if err != nil {
		t.Fatal(err)
	}
	st := prof.Setup
	pages := float64(4 << 20 / 4096)
	reg := st.RegMRUS + st.RegMRPerPageNS*pages/1000
	dereg := st.DeregMRUS + st.DeregPerPageNS*pages/1000
	for _, tc := range []struct {
		verb, unit string
		x          map[string]any
		want       float64
	}{
		{"reg_mr", "us", map[string]any{"megabytes": 4}, reg},
		{"dereg_mr", "us", map[string]any{"megabytes": 4}, dereg},
		{"reg_dereg_mr", "ms", map[string]any{"megabytes": 4}, (reg + dereg) / 1e3},
		{"reg_mr", "s", map[string]any{"gigabytes": 1}, (st.RegMRUS + st.RegMRPerPageNS*math.Ceil(1e9/4096)/1000) / 1e6},
		{"create_cq", "us", map[string]any{"cq_entries": 16}, st.CreateCQUS},
	} {
		r := Evaluate(Point{ID: "t-" + tc.verb, Verb: tc.verb, Profile: "edr-cx4", X: tc.x, Y: 1, Unit: tc.unit, Tolerance: 0.3})
		if !r.Modelled || math.Abs(r.Model-tc.want) > 1e-6*tc.want {
			t.Errorf("%s %v: model %v %s (%s), want %v", tc.verb, tc.x, r.Model, tc.unit, r.How, tc.want)
		}
	}
}

func TestCheckRefusesInfinity(t *testing.T) {
	p := Point{ID: "x", File: "f.yaml", Metric: "bw", Verb: "send_bw", Y: 1, Tolerance: math.Inf(1)}
	if err := p.check(); err == nil || !strings.Contains(err.Error(), "finite") {
		t.Errorf("tolerance +Inf: %v", err)
	}
	p.Tolerance, p.Y = 0.2, math.Inf(1)
	if err := p.check(); err == nil {
		t.Error("value +Inf accepted")
	}
}

// setupWindow finds the window a point's setup states ("window 8", "at
// most 32 outstanding").
var setupWindow = regexp.MustCompile(`\bwindow (\d+)\b|at most (\d+) outstanding`)

// TestSwarmWindowsMatchSetups: a swarm point's x.window is the window its
// setup states (one RC WRITE point once carried 32 where the source ran 8).
func TestSwarmWindowsMatchSetups(t *testing.T) {
	pts, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pts {
		w, ok := p.X["window"].(int)
		m := setupWindow.FindStringSubmatch(p.Setup)
		if !ok || m == nil {
			continue
		}
		if s := m[1] + m[2]; s != strconv.Itoa(w) {
			t.Errorf("%s: x.window %d, its setup says %s", p.ID, w, s)
		}
	}
}

// TestConnectIBThreadSweepsRun: Connect-IB's RC WRITE and READ sweeps
// against threads run on edr-cx4, as its READ sweep against QPs does, and
// are held out (nothing was fitted to them).
func TestConnectIBThreadSweepsRun(t *testing.T) {
	pts, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range pts {
		if !strings.HasPrefix(p.ID, "rcswarm-netapp-rcwrite32-") && !strings.HasPrefix(p.ID, "rcswarm-netapp-read32-threads-") {
			continue
		}
		n++
		if p.Profile != "edr-cx4" || p.FitFor != "" {
			t.Errorf("%s: profile %q, fit_for %q; want edr-cx4, held out", p.ID, p.Profile, p.FitFor)
		}
		if testing.Short() {
			continue
		}
		if r := Evaluate(p); !r.Modelled {
			t.Errorf("%s not modelled: %s", p.ID, r.How)
		}
	}
	if n != 10 {
		t.Errorf("%d Connect-IB thread-sweep points, want 10", n)
	}
}

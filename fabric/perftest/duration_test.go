package perftest_test

import (
	"errors"
	"github.com/rdmashuffle/rdmashuffle/internal/setting"
	"math"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/perftest"
)

// TestDurationMatchesIterations: a test run for a duration (perftest's
// -D) measures the same steady rate as the same test run for a number of
// messages, over exactly the interval between the margins, and reports
// what perftest's duration mode reports (no peak; round trips per second
// for latency tests).
func TestDurationMatchesIterations(t *testing.T) {
	const ms = fabric.Millisecond
	for _, tc := range []struct {
		name     string
		cfg      perftest.Config // duration mode
		iters    int             // the iteration-mode run to compare with
		tolerate float64         // relative difference allowed
	}{
		{"send_bw", perftest.Config{Test: "send_bw", Size: 65536, Duration: 4 * ms}, 600, 0.02},
		{"send_bw no margin", perftest.Config{Test: "send_bw", Size: 65536, Duration: 4 * ms, Margin: perftest.NoMargin}, 600, 0.03},
		{"write_bw -q 4", perftest.Config{Test: "write_bw", Size: 4096, QPs: 4, Duration: 2 * ms}, 1500, 0.02},
		{"read_bw interleaved", perftest.Config{Test: "read_bw", Size: 32, QPs: 64, Interleave: true, Duration: 2 * ms}, 300, 0.03},
		{"send_bw UD", perftest.Config{Test: "send_bw", Size: 4096, Conn: fabric.UD, Duration: 2 * ms}, 6000, 0.02},
		{"alltoall_bw", perftest.Config{Test: "alltoall_bw", Size: 4096, Duration: 2 * ms}, 2000, 0.03},
		{"incast_bw", perftest.Config{Test: "incast_bw", Size: 4096, Duration: 2 * ms}, 2000, 0.03},
		{"send_lat", perftest.Config{Test: "send_lat", Size: 8, Duration: 1 * ms}, 1000, 0.02},
		{"write_lat", perftest.Config{Test: "write_lat", Size: 8, Duration: 1 * ms}, 1000, 0.02},
		{"send_lat UD", perftest.Config{Test: "send_lat", Size: 8, Conn: fabric.UD, Duration: 1 * ms}, 1000, 0.02},
		{"read_lat", perftest.Config{Test: "read_lat", Size: 8, Duration: 1 * ms}, 500, 0.02},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, linkGbps := run(t, tc.cfg)
			it := tc.cfg
			it.Duration, it.Margin, it.Iters = 0, 0, tc.iters
			n, _ := run(t, it)
			margin := tc.cfg.Duration / 4
			if tc.cfg.Margin == perftest.NoMargin {
				margin = 0
			}
			want := (tc.cfg.Duration - 2*margin).Microseconds()
			if math.Abs(d.DurationUS-want) > 1e-6 || d.RunS != tc.cfg.Duration.Seconds() || d.MarginS != margin.Seconds() {
				t.Errorf("measured %v us of a %v s run with %v s margins; want %v us", d.DurationUS, d.RunS, d.MarginS, want)
			}
			if d.Iterations <= 0 {
				t.Fatalf("no messages counted in the measured interval: %+v", d)
			}
			if strings.HasSuffix(d.Test, "_lat") {
				if rel := math.Abs(d.TAvgUS-n.TAvgUS) / n.TAvgUS; rel > tc.tolerate {
					t.Errorf("t_avg %.4f us in duration mode, %.4f us for -n %d (%.1f%% apart)", d.TAvgUS, n.TAvgUS, tc.iters, 100*rel)
				}
				per := 2.0 // a ping-pong's t is half a round trip
				if d.Test == "read_lat" {
					per = 1 // a read's t is its whole round trip
				}
				if tps := 1e6 / (per * d.TAvgUS); math.Abs(tps-d.TPS) > 1e-6*tps {
					t.Errorf("tps %.1f, want 1/(%g t_avg) = %.1f", d.TPS, per, tps)
				}
				return
			}
			if d.BWPeakGbps != 0 {
				t.Errorf("BW peak %.2f Gb/s in duration mode; perftest does not measure it (0)", d.BWPeakGbps)
			}
			if !(d.BWAvgGbps > 0 && d.BWAvgGbps <= linkGbps*(1+1e-9)) {
				t.Errorf("average %.3f Gb/s outside (0, %.3f], the port's data rate", d.BWAvgGbps, linkGbps)
			}
			if rel := math.Abs(d.BWAvgGbps-n.BWAvgGbps) / n.BWAvgGbps; rel > tc.tolerate {
				t.Errorf("%.3f Gb/s in duration mode, %.3f Gb/s for -n %d (%.1f%% apart)", d.BWAvgGbps, n.BWAvgGbps, tc.iters, 100*rel)
			}
			if d.Dropped != 0 {
				t.Errorf("%d messages dropped with receives posted ahead", d.Dropped)
			}
		})
	}
}

// TestDurationConfig: duration-mode settings that cannot work are refused
// with an ErrConfig naming the setting.
func TestDurationConfig(t *testing.T) {
	const ms = fabric.Millisecond
	for _, tc := range []struct {
		cfg  perftest.Config
		want string // the setting refused
	}{
		{perftest.Config{Test: "send_bw", Duration: ms, Iters: 10}, "Iters"},
		{perftest.Config{Test: "reg_mr", Duration: ms}, "Duration"},
		{perftest.Config{Test: "alltoall_bw", Duration: ms, Schedule: perftest.ScheduleRR}, "Duration"},
		{perftest.Config{Test: "send_bw", Duration: ms, Margin: ms / 2}, "Duration"},
		{perftest.Config{Test: "send_bw", Duration: ms, Margin: -5}, "Margin"},
		{perftest.Config{Test: "send_bw", Duration: -ms}, "Duration"},
		{perftest.Config{Test: "send_bw", Margin: ms}, "Margin"},
	} {
		err := tc.cfg.Normalize(4)
		if se, ok := setting.As(err); !errors.Is(err, perftest.ErrConfig) || !ok || se.Setting != tc.want {
			t.Errorf("%+v: %v, want an ErrConfig refusing %s", tc.cfg, err, tc.want)
		}
	}
}

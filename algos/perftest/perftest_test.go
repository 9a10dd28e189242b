package perftest_test

import (
	"testing"

	"github.com/rdmashuffle/rdmashuffle/algos/perftest"
	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

func TestQuick(t *testing.T) {
	for _, cfg := range []perftest.Config{
		{Test: "send_bw", Size: 65536, Iters: 200},
		{Test: "write_bw", Size: 4096, Iters: 500, QPs: 4},
		{Test: "read_bw", Size: 65536, Iters: 200},
		{Test: "send_bw", Size: 4096, Iters: 500, Conn: fabric.UD},
		{Test: "send_lat", Size: 8, Iters: 100},
		{Test: "write_lat", Size: 8, Iters: 100},
		{Test: "alltoall_bw", Size: 4096, Iters: 100},
		{Test: "alltoall_bw", Size: 65536, Iters: 16, Schedule: perftest.ScheduleRandom},
		{Test: "alltoall_bw", Size: 65536, Iters: 16, Schedule: perftest.ScheduleRR, Burst: 4},
		{Test: "incast_bw", Size: 4096, Iters: 100},
		{Test: "read_bw", Size: 32, Iters: 50, QPs: 64, Interleave: true},
		{Test: "reg_mr", Size: 1 << 20},
	} {
		c, err := sim.New(sim.Config{Nodes: 4, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		r, err := perftest.Run(c, cfg)
		if err != nil {
			t.Fatalf("%+v: %v", cfg, err)
		}
		t.Logf("%s s=%d q=%d %v: avg %.2f Gb/s peak %.2f, %.2f Mpps, lat min %.3f typ %.3f us, dropped %d",
			r.Test, r.Bytes, r.QPs, r.Conn, r.BWAvgGbps, r.BWPeakGbps, r.MsgRateMpps, r.TMinUS, r.TTypicalUS, r.Dropped)
	}
}

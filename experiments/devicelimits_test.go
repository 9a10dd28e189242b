package experiments

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/host"
	"github.com/rdmashuffle/rdmashuffle/fabric/loopback"
	"github.com/rdmashuffle/rdmashuffle/internal/setting"
)

// runOnLimits runs cfg on nodes loopback nodes with the device limits lim,
// with real bytes and a small input.
func runOnLimits(t *testing.T, nodes int, lim loopback.Limits, cfg RunConfig) (*results.Record, error) {
	t.Helper()
	f, err := loopback.OpenLimits(host.Config{Seed: 5, TimeLimit: 2 * time.Minute}, nodes, lim)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg.Nodes, cfg.Threads, cfg.Seed, cfg.Payload = nodes, 2, 5, true
	if cfg.BytesPerNode == 0 {
		cfg.BytesPerNode = 96 << 10
	}
	cfg.Timeout = 20 * fabric.Second
	return RunOn(f, cfg)
}

// TestRunOnSizesUDToMTU: on a port whose active MTU is below the UD
// designs' 4096 bytes (RoCE on 1500-byte frames: 1024), a UD design whose
// message size is left to it sends messages of one MTU; a size set above
// the MTU is refused, naming it. Before, the design's 4096 bytes were
// refused by every SQ/SR endpoint. RC designs keep their size.
func TestRunOnSizesUDToMTU(t *testing.T) {
	for _, c := range []struct {
		design  string
		mtu     int
		msg     int
		want    int    // the record's message size
		refusal string // or the refusal's words
	}{
		{"MESQ/SR", 1024, 0, 1024, ""},
		{"SESQ/SR", 1024, 0, 1024, ""},
		{"MESQ/SR", 2048, 0, 2048, ""},
		{"MESQ/SR", 4096, 0, 4096, ""},
		{"MESQ/SR", 1024, 512, 512, ""},
		{"MEMQ/SR", 1024, 0, 64 << 10, ""},
		{"MESQ/SR", 1024, 4096, 0,
			"MsgBytes 4096: above the active MTU of loopback0, 1024 bytes: a MESQ/SR message travels in one packet; use at most 1024 (0 sizes messages to the MTU)"},
	} {
		t.Run(fmt.Sprintf("%s/mtu=%d/msg=%d", strings.ReplaceAll(c.design, "/", "-"), c.mtu, c.msg), func(t *testing.T) {
			rec, err := runOnLimits(t, 3, loopback.Limits{MTU: c.mtu}, RunConfig{Design: c.design, Pattern: algos.Repartition, MsgBytes: c.msg})
			if c.refusal != "" {
				if se, ok := setting.As(err); !ok || se.Setting != "MsgBytes" || err.Error() != c.refusal {
					t.Fatalf("MTU %d, MsgBytes %d: %v\nwant %s", c.mtu, c.msg, err, c.refusal)
				}
				return
			}
			if err != nil {
				t.Fatalf("MTU %d, MsgBytes %d: %v", c.mtu, c.msg, err)
			}
			if rec.MsgBytes != c.want || rec.Integrity != "ok" || rec.TuplesReceived == 0 {
				t.Errorf("MTU %d, MsgBytes %d: messages of %d bytes (want %d), integrity %q, %d tuples", c.mtu, c.msg, rec.MsgBytes, c.want, rec.Integrity, rec.TuplesReceived)
			}
		})
	}
}

// TestRunOnWithinSendQueueLimits runs MESQ/SR and MEMQ/RD on devices whose
// send queues are mlx5's, scaled down (max_qp_wr 256: 128 UD requests and
// 64 RC requests a queue; 128: 64 and 32) so that 8 nodes meet the limits
// that 1024 nodes meet at max_qp_wr 32768. The designs create their queues
// within the limits or refuse with a device-limit error that names the
// setting. SQ/SR's data send queue is then shallower than its sends in
// flight can be: broadcasting 64 send buffers to 8 nodes at max_qp_wr 128
// finds it full, and a send waits for completions. Before, both designs
// asked for deeper queues than the device accepts.
func TestRunOnWithinSendQueueLimits(t *testing.T) {
	for _, c := range []struct {
		design  string
		pattern algos.Pattern
		maxQPWR int
		buffers int
		bytes   int64 // per node (0: 96 KiB)
		refusal string
	}{
		{"MESQ/SR", algos.Repartition, 256, 3, 0, ""},
		{"MESQ/SR", algos.Broadcast, 256, 3, 0, ""},
		{"MESQ/SR", algos.Broadcast, 128, 8, 1 << 20, ""},
		{"SESQ/SR", algos.Broadcast, 128, 2, 1 << 20, ""},
		{"MEMQ/RD", algos.Repartition, 256, 2, 0, ""},
		{"MEMQ/RD", algos.Broadcast, 256, 2, 0, ""},
		{"MEMQ/SR", algos.Repartition, 256, 2, 0, ""},
		{"MEMQ/RD", algos.Repartition, 256, 3, 0,
			"Buffers 3: MQ/RD's queue pair per peer needs a send queue of at least 70 requests at 8 nodes, above the 64 its device accepts " +
				"(loopback0's send queues hold 256 blocks of 64 bytes (max_qp_wr), 4 per RC request); at most 2 fits"},
	} {
		t.Run(fmt.Sprintf("%s/%s/wr=%d/buffers=%d", strings.ReplaceAll(c.design, "/", "-"), c.pattern, c.maxQPWR, c.buffers), func(t *testing.T) {
			lim := loopback.Limits{MaxQPWR: c.maxQPWR, SendQueue: fabric.MLX5SendQueue(c.maxQPWR)}
			rec, err := runOnLimits(t, 8, lim, RunConfig{Design: c.design, Pattern: c.pattern, Buffers: c.buffers, BytesPerNode: c.bytes})
			if c.refusal != "" {
				// The first node to refuse names its device.
				msg := regexp.MustCompile(`loopback[0-9]+'s`).ReplaceAllString(fmt.Sprint(err), "loopback0's")
				if se, ok := setting.As(err); !ok || se.Setting != "Buffers" || !errors.Is(err, fabric.ErrLimit) || !strings.HasSuffix(msg, c.refusal) {
					t.Fatalf("%v\nwant an error ending %s", err, c.refusal)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if rec.Integrity != "ok" || rec.TuplesReceived == 0 {
				t.Errorf("integrity %q, %d tuples", rec.Integrity, rec.TuplesReceived)
			}
		})
	}
}

package algos

import (
	"errors"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/internal/setting"
)

// mlx5Accepts is the mlx5 provider's send-queue check as docs/hardware.md
// states it, apart from package fabric's: depth entries of entry bytes,
// rounded up to a power of two, in at most maxQPWR 64-byte blocks.
func mlx5Accepts(depth, entry, maxQPWR int) bool {
	b := 1
	for b < depth*entry {
		b *= 2
	}
	return b/64 <= maxQPWR
}

// TestQueueSizingAt1024Nodes sizes the queue pairs of MESQ/SR and MEMQ/RD
// (and their shared-endpoint and adaptive forms) for 1024 nodes on an
// mlx5 device with max_qp_wr 32768, where a UD request takes 2 blocks (128
// bytes) and an RC one 4 (256): each is created within the provider's
// limits or refused with a device-limit error that names the setting.
// Before, MESQ/SR asked for a send queue of min(1024 x 1024 x 2 + 40,
// max_qp_wr) = 32768 UD requests (65536 blocks) and MEMQ/RD with 4 buffers
// for 8232 RC requests (65536 blocks once rounded), which the provider
// refuses.
func TestQueueSizingAt1024Nodes(t *testing.T) {
	const n, maxQPWR = 1024, 32768
	mlx5 := fabric.DeviceAttr{Name: "mlx5_0", MaxQPWR: maxQPWR, SendQueue: fabric.MLX5SendQueue(maxQPWR)}
	buffers := func(v int) lever { return lever{name: "Buffers", value: v} }
	for _, c := range []struct {
		name    string
		lev     lever
		send    []int  // the send depths created
		refusal string // or the refusal
	}{
		{"MESQ/SR", sqsrLever(n, 1, 2, 2, buffers(2)), []int{16384, 40}, ""},
		{"MESQ/SR 8 buffers", sqsrLever(n, 1, 8, 8, buffers(8)), []int{16384, 40}, ""},
		{"SESQ/SR 14 threads", sqsrLever(n, 14, 28, 28, buffers(2)), []int{16384, 40}, ""},
		{"SESQ/SR 16 threads", sqsrLever(n, 16, 32, 32, buffers(2)), nil,
			"Buffers 2: SQ/SR's credit queue pair needs a receive queue of 34824 requests at 1024 nodes, above 32768 (max_qp_wr of mlx5_0); at most 1 fits"},
		{"MESQ/SR adaptive", sqsrLever(n, 1, 15, 15, lever{name: "MaxBuffers", value: 15}), []int{16384, 40}, ""},
		{"MESQ/SR adaptive 64", sqsrLever(n, 1, 64, 64, lever{name: "MaxBuffers", value: 64}), nil,
			"MaxBuffers 64: SQ/SR's data queue pair needs a receive queue of 65536 requests at 1024 nodes, above 32768 (max_qp_wr of mlx5_0); at most 29 fits"},
		{"MEMQ/RD", mqrdLever(n, 1, 2, n*2, false, buffers(2)), []int{4136}, ""},
		{"MEMQ/RD 4 buffers", mqrdLever(n, 1, 4, n*4, false, buffers(4)), []int{8192}, ""},
		{"MEMQ/RD 8 buffers", mqrdLever(n, 1, 8, n*8, false, buffers(8)), nil,
			"Buffers 8: MQ/RD's queue pair per peer needs a send queue of at least 8248 requests at 1024 nodes, above the 8192 its device accepts " +
				"(mlx5_0's send queues hold 32768 blocks of 64 bytes (max_qp_wr), 4 per RC request); at most 7 fits"},
		{"SEMQ/RD 14 threads", mqrdLever(n, 14, 28, n*28, false, buffers(2)), nil,
			"Buffers 2: MQ/RD's queue pair per peer needs a send queue of at least 28768 requests at 1024 nodes, above the 8192 its device accepts " +
				"(mlx5_0's send queues hold 32768 blocks of 64 bytes (max_qp_wr), 4 per RC request); no Buffers fits at 1024 nodes"},
		{"MEMQ/RD adaptive", mqrdLever(n, 1, 2, n*7, true, lever{name: "MaxBuffers", value: 7}), []int{8192}, ""},
		{"MEMQ/RD adaptive 15", mqrdLever(n, 1, 2, n*15, true, lever{name: "MaxBuffers", value: 15}), nil,
			"MaxBuffers 15: MQ/RD's queue pair per peer needs a send queue of at least 15404 requests at 1024 nodes, above the 8192 its device accepts " +
				"(mlx5_0's send queues hold 32768 blocks of 64 bytes (max_qp_wr), 4 per RC request); at most 7 fits"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := fitQueues(mlx5, n, c.lev)
			if c.refusal != "" {
				se, ok := setting.As(err)
				if !ok || !errors.Is(err, fabric.ErrLimit) || se.Setting != c.lev.name || err.Error() != c.refusal {
					t.Fatalf("got %v, %v\nwant %s", got, err, c.refusal)
				}
				return
			}
			if err != nil || len(got) != len(c.send) {
				t.Fatalf("got %v, %v; want %v", got, err, c.send)
			}
			for i, q := range c.lev.ask(c.lev.value) {
				entry := map[fabric.QPType]int{fabric.UD: 128, fabric.RC: 256}[q.typ]
				if got[i] != c.send[i] || !mlx5Accepts(got[i], entry, maxQPWR) || q.recv > maxQPWR || got[i] < q.least {
					t.Errorf("%s: send depth %d (want %d, least %d), receive %d: outside mlx5's limits", q.what, got[i], c.send[i], q.least, q.recv)
				}
			}
		})
	}
}

// TestQueueSizingPlainDevice: on a device that counts requests (the
// simulator's, max_qp_wr alone) the depths are what they were before the
// send-queue layout: the wanted depth up to max_qp_wr.
func TestQueueSizingPlainDevice(t *testing.T) {
	plain := fabric.DeviceAttr{Name: "sim0", MaxQPWR: 16351}
	for _, c := range []struct {
		lev  lever
		want int
	}{
		{sqsrLever(4, 2, 4, 4, lever{name: "Buffers", value: 2}), 4*4*4 + 40},
		{sqsrLever(64, 1, 4, 4, lever{name: "Buffers", value: 4}), 16351},
		{mqrdLever(16, 14, 28, 71*14*16, true, lever{name: "MaxBuffers", value: 71}), 16351},
		{mqrdLever(8, 2, 4, 32, false, lever{name: "Buffers", value: 2}), 2*32 + 40},
	} {
		got, err := fitQueues(plain, 0, c.lev)
		if err != nil || got[0] != c.want {
			t.Errorf("%s: %v, %v; want %d", c.lev.ask(c.lev.value)[0].what, got, err, c.want)
		}
	}
}

package algos_test

import (
	"errors"
	"fmt"
	"testing"
	"unsafe"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// TestPollersUseOrderedLoads runs every design that polls memory a remote
// NIC writes, with a message size that is a multiple of 8 and one that is
// not, and checks that its pollers read the polled words through the
// ordered load (loadWord: an atomic, acquire load), each word 8-byte
// aligned. On x86 a plain load is as ordered as an atomic one, so no test
// here can see a reordering; this pins that the designs use the load a
// weakly ordered CPU (arm64) needs. The set-up of each design also checks
// its polled rings against the cache lines on the real addresses
// (polledAt), which the odd message size exercises.
func TestPollersUseOrderedLoads(t *testing.T) {
	hyper := func(th fabric.Thread, c algos.Config) (algos.Endpoint, error) {
		return algos.OpenHyPer(th, c, algos.HyPerOptions{PhaseMessages: 2})
	}
	cases := []struct {
		name   string
		open   func(fabric.Thread, algos.Config) (algos.Endpoint, error)
		notify algos.Notify
	}{
		{"MQ/WR poll-queue", algos.OpenMQWR, algos.NotifyQueue},
		{"MQ/WR poll-buffers", algos.OpenMQWR, algos.NotifyBuffers},
		{"MQ/WR poll-CQ (FreeArr words)", algos.OpenMQWR, algos.NotifyCQ},
		{"MQ/WR+cw poll-queue", algos.OpenMQWRCW, algos.NotifyQueue},
		{"MQ/WR+cw poll-buffers", algos.OpenMQWRCW, algos.NotifyBuffers},
		{"MQ/WR+cw poll-CQ (credit words)", algos.OpenMQWRCW, ""},
		{"MQ/SR (credit words)", algos.OpenMQSR, ""},
		{"MQ/RD (descriptor and FreeArr rings)", algos.OpenMQRD, ""},
		{"HyPer (credit and barrier words)", hyper, ""},
	}
	for _, tc := range cases {
		for _, msg := range []int{4096, 4098} {
			t.Run(fmt.Sprintf("%s/msg=%d", tc.name, msg), func(t *testing.T) {
				loads, misaligned := 0, 0
				algos.SetWordLoaded(func(mem []byte) {
					loads++
					if uintptr(unsafe.Pointer(&mem[0]))%8 != 0 {
						misaligned++
					}
				})
				defer algos.SetWordLoaded(nil)
				runDesign(t, tc.open, algos.Config{Buffers: 2, CreditEvery: 2, Threads: 1, MsgBytes: msg, Notify: tc.notify}, 0)
				if loads == 0 {
					t.Fatal("no polled word was read with the ordered load")
				}
				if misaligned > 0 {
					t.Errorf("%d of %d polled words were not 8-byte aligned", misaligned, loads)
				}
			})
		}
	}
}

// TestPolledAt: polled entries must be 8-byte aligned, lie within one
// 64-byte line, and fit the region.
func TestPolledAt(t *testing.T) {
	raw := make([]byte, 4096+64)
	pad := (64 - int(uintptr(unsafe.Pointer(&raw[0]))%64)) % 64
	mem := raw[pad : pad+4096]
	cases := []struct {
		off, size, count int
		ok               bool
	}{
		{0, 8, 10, true},
		{16, 16, 4, true},
		{32, 32, 8, true},
		{64, 64, 2, true},
		{8, 16, 4, false},  // a 16-byte entry at 8 mod 16: the fourth straddles a line
		{48, 32, 1, false}, // a 32-byte entry across the line at 64
		{4, 8, 1, false},   // a word not 8-byte aligned
		{0, 24, 2, false},  // 24 does not divide a line
		{0, 128, 1, false}, // larger than a line
		{4088, 16, 1, false},
		{100, 8, 0, true}, // nothing to poll
	}
	for _, c := range cases {
		err := algos.PolledAt("ring", mem, c.off, c.size, c.count)
		if (err == nil) != c.ok {
			t.Errorf("PolledAt(off %d, size %d, count %d) = %v, want ok %v", c.off, c.size, c.count, err, c.ok)
		}
		if err != nil && c.size <= 64 && c.off+c.size*c.count <= len(mem) && !errors.Is(err, fabric.ErrInvalidArg) {
			t.Errorf("PolledAt(off %d, size %d): %v does not wrap ErrInvalidArg", c.off, c.size, err)
		}
	}
}

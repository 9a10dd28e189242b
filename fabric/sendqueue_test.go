package fabric

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// providerAccepts is the mlx5 provider's check as docs/hardware.md states
// it: depth entries of entry bytes, rounded up to a power of two, in at
// most blocks 64-byte blocks.
func providerAccepts(depth, entry, blocks int) bool {
	b := 1
	for b < depth*entry {
		b *= 2
	}
	return b/64 <= blocks
}

func TestSendQueueLayout(t *testing.T) {
	mlx5 := func(wr int) DeviceAttr { return DeviceAttr{Name: "mlx5_0", MaxQPWR: wr, SendQueue: MLX5SendQueue(wr)} }
	for _, c := range []struct {
		name         string
		attr         DeviceAttr
		typ          QPType
		sges, inline int
		entry, depth int
	}{
		{"plain device", DeviceAttr{Name: "sim0", MaxQPWR: 32768}, RC, 1, 32, 0, 32768},
		{"mlx5 UD", mlx5(32768), UD, 1, 0, 128, 16384},
		{"mlx5 UD inline 24", mlx5(32768), UD, 1, 24, 128, 16384},
		{"mlx5 UD inline 60", mlx5(32768), UD, 1, 60, 128, 16384},
		{"mlx5 UD inline 61", mlx5(32768), UD, 1, 61, 192, 10922},
		{"mlx5 RC", mlx5(32768), RC, 1, 0, 256, 8192},
		{"mlx5 UC as RC", mlx5(32768), UC, 1, 0, 256, 8192},
		{"mlx5 RC inline 32", mlx5(32768), RC, 1, 32, 256, 8192},
		{"mlx5 RC inline 64", mlx5(32768), RC, 1, 64, 320, 6553},
		{"mlx5 RC 4 SGEs", mlx5(32768), RC, 4, 0, 256, 8192},
		{"mlx5 RC 5 SGEs", mlx5(32768), RC, 5, 0, 320, 6553},
		{"mlx5 max_qp_wr not a power of two", mlx5(16351), UD, 1, 0, 128, 4096},
		{"mlx5 small", mlx5(256), RC, 1, 32, 256, 64},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.attr.SendQueue.EntryBytes(c.typ, c.sges, c.inline); got != c.entry {
				t.Errorf("EntryBytes = %d, want %d", got, c.entry)
			}
			got := c.attr.MaxSendWR(c.typ, c.sges, c.inline)
			if got != c.depth {
				t.Errorf("MaxSendWR = %d, want %d", got, c.depth)
			}
			if c.entry > 0 && (!providerAccepts(got, c.entry, c.attr.MaxQPWR) || got < c.attr.MaxQPWR && providerAccepts(got+1, c.entry, c.attr.MaxQPWR)) {
				t.Errorf("MaxSendWR = %d is not the provider's deepest queue", got)
			}
			why := c.attr.SendLimitReason(c.typ, c.sges, c.inline)
			if !strings.Contains(why, c.attr.Name) || !strings.Contains(why, "max_qp_wr") {
				t.Errorf("SendLimitReason = %q", why)
			}
		})
	}
	if got := mlx5(32768).SendLimitReason(RC, 1, 0); got != "mlx5_0's send queues hold 32768 blocks of 64 bytes (max_qp_wr), 4 per RC request" {
		t.Errorf("SendLimitReason = %q", got)
	}
}

// TestCheckSendCaps: a send queue deeper than the device's limit for the
// type, empty, or with a negative inline size is refused with ErrLimit
// naming the limit; one within it passes.
func TestCheckSendCaps(t *testing.T) {
	a := DeviceAttr{Name: "mlx5_0", MaxQPWR: 32768, SendQueue: MLX5SendQueue(32768)}
	most := a.MaxSendWR(RC, 1, 64)
	for _, tc := range []struct {
		caps QPCaps
		want string // "" accepted
	}{
		{QPCaps{MaxSendWR: most, MaxInline: 64}, ""},
		{QPCaps{MaxSendWR: most + 1, MaxInline: 64}, fmt.Sprintf("send queue depth %d must be in 1..%d (mlx5_0's send queues", most+1, most)},
		{QPCaps{MaxSendWR: 0}, "send queue depth 0 must be in 1.."},
		{QPCaps{MaxSendWR: 16, MaxInline: -1}, "max inline -1 bytes is negative"},
	} {
		err := a.CheckSendCaps(RC, tc.caps)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%+v refused: %v", tc.caps, err)
		case tc.want != "" && (!errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%+v: %v, want ErrLimit with %q", tc.caps, err, tc.want)
		}
	}
}

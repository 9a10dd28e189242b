package sim

import (
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// TestCheckerSumSeesEveryMovedByte flips each byte of buffers of several
// sizes, one at a time, and checks that the checker's sum changes exactly
// when the flipped byte is one the NIC moves: every byte in payload mode,
// only the two size-only windows otherwise.
func TestCheckerSumSeesEveryMovedByte(t *testing.T) {
	const w = fabric.SizeOnlyWindow
	for _, tc := range []struct {
		name    string
		payload bool
		size    int
	}{
		{"payload 1 B", true, 1},
		{"payload 4 KiB", true, 4096},
		{"size-only 7 B", false, 7},
		{"size-only 2 windows", false, 2 * w},
		{"size-only 2 windows + 1", false, 2*w + 1},
		{"size-only 4 KiB", false, 4096},
		{"size-only 4 KiB + 3", false, 4099},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ch := &checker{payload: tc.payload}
			b := make([]byte, tc.size)
			for i := range b {
				b[i] = byte(i*7 + 3)
			}
			base := ch.sum(b)
			for i := range b {
				moved := tc.payload || len(b) <= 2*w || i < w || i >= len(b)-w
				for _, flip := range []byte{0x01, 0x80, 0xff} {
					b[i] ^= flip
					changed := ch.sum(b) != base
					b[i] ^= flip
					if changed != moved {
						t.Fatalf("byte %d of %d flipped by %#x: sum changed = %v, want %v", i, len(b), flip, changed, moved)
					}
				}
			}
			if ch.sum(b) != base {
				t.Fatal("sum is not a function of the bytes")
			}
		})
	}
}

// TestCheckerSumLengthMatters: buffers of different lengths with the same
// windows have different sums (the length seeds the hash).
func TestCheckerSumLengthMatters(t *testing.T) {
	ch := &checker{}
	a, b := make([]byte, 4096), make([]byte, 8192)
	if ch.sum(a) == ch.sum(b) {
		t.Fatal("zero buffers of 4 and 8 KiB have the same size-only sum")
	}
}

package tcpshuffle

import (
	"testing"

	"github.com/rdmashuffle/rdmashuffle/algos"
)

// FuzzParseHeader: any 24 bytes either decode to a sane frame or are
// refused; never a panic, never a payload beyond the buffer.
func FuzzParseHeader(f *testing.F) {
	var h [frameHeader]byte
	putHeader(h[:], 3, &algos.Buffer{N: 32, Tuples: 2, Sum: 7}, algos.Depleted)
	f.Add(h[:])
	f.Add(make([]byte, frameHeader))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := parseHeader(b, 4096)
		if err == nil && (d.N < 0 || d.N > 4096 || d.N%algos.TupleBytes != 0) {
			t.Fatalf("accepted %+v", d)
		}
	})
}

func TestHeaderRoundTrip(t *testing.T) {
	var h [frameHeader]byte
	putHeader(h[:], 5, &algos.Buffer{N: 48, Tuples: 3, Sum: 99}, algos.MoreData)
	d, err := parseHeader(h[:], 1024)
	if err != nil || d.Src != 5 || d.N != 48 || d.Tuples != 3 || d.Sum != 99 || d.State != algos.MoreData {
		t.Fatalf("%+v %v", d, err)
	}
	for _, bad := range [][]byte{h[:10], append([]byte{0}, h[1:]...)} {
		if _, err := parseHeader(bad, 1024); err == nil {
			t.Errorf("accepted %x", bad)
		}
	}
	if _, err := parseHeader(h[:], 32); err == nil {
		t.Error("accepted a payload larger than the buffer")
	}
}

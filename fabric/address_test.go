package fabric_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

func TestQPInfoRoundTrip(t *testing.T) {
	in := fabric.QPInfo{Node: 7, LID: 0x1234, QPN: 0xabcdef, PSN: 0x123456, QKey: 0x11111111,
		Addr: 0x7f00_0000_1000, RKey: 0xdeadbeef, Bytes: 1 << 40}
	in.GID[0], in.GID[15] = 0xfe, 0x42
	b, err := in.MarshalBinary()
	if err != nil || len(b) != fabric.QPInfoWireBytes {
		t.Fatalf("MarshalBinary: %d bytes, %v", len(b), err)
	}
	var out fabric.QPInfo
	if err := out.UnmarshalBinary(b); err != nil || out != in {
		t.Fatalf("round trip: %+v, %v; want %+v", out, err, in)
	}
}

func TestQPInfoRejects(t *testing.T) {
	good, _ := fabric.QPInfo{QPN: 5}.MarshalBinary()
	mod := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"short", good[:10]},
		{"long", append(append([]byte(nil), good...), 0)},
		{"magic", mod(func(b []byte) []byte { b[0] ^= 0xff; return b })},
		{"version", mod(func(b []byte) []byte { b[2] = 99; return b })},
		{"qpn-over-24-bits", mod(func(b []byte) []byte { b[3+22] = 1; return b })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var q fabric.QPInfo
			if err := q.UnmarshalBinary(tc.b); !errors.Is(err, fabric.ErrBadQPInfo) {
				t.Fatalf("got %v, want ErrBadQPInfo", err)
			}
		})
	}
}

func FuzzQPInfo(f *testing.F) {
	good, _ := fabric.QPInfo{Node: 1, LID: 2, QPN: 3, PSN: 4}.MarshalBinary()
	f.Add(good)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var q fabric.QPInfo
		if err := q.UnmarshalBinary(b); err != nil {
			return
		}
		again, _ := q.MarshalBinary()
		var r fabric.QPInfo
		if err := r.UnmarshalBinary(again); err != nil || r != q {
			t.Fatalf("re-encoding a decoded QPInfo changed it: %+v vs %+v (%v)", q, r, err)
		}
	})
}

func TestTimeUnits(t *testing.T) {
	if fabric.AckTimeout(14) != 67108864*fabric.Nanosecond {
		t.Errorf("AckTimeout(14) = %v, want 67.108864ms", fabric.AckTimeout(14))
	}
	if fabric.AckTimeout(0) != 0 {
		t.Errorf("AckTimeout(0) must be infinite (0)")
	}
	if fabric.RNRTimerDuration(12) != 640*fabric.Microsecond || fabric.RNRTimerDuration(0) != 655360*fabric.Microsecond {
		t.Errorf("RNR timer table wrong: 12 -> %v, 0 -> %v", fabric.RNRTimerDuration(12), fabric.RNRTimerDuration(0))
	}
	if got := fabric.Time(1500).Add(fabric.Forever.Sub(0)); got != fabric.Forever {
		t.Errorf("Time.Add must saturate at Forever, got %v", got)
	}
	if s := (1500 * fabric.Nanosecond).String(); s != "1.500us" {
		t.Errorf("Duration.String = %q", s)
	}
}

func TestPSNArithmetic(t *testing.T) {
	for _, tc := range []struct {
		p    fabric.PSN
		n    int
		want fabric.PSN
	}{
		{0, 1, 1},
		{fabric.MaxPSN, 1, 0},
		{0, -1, fabric.MaxPSN},
		{fabric.MaxPSN - 2, 5, 2},
		{5, -1 << 24, 5},
	} {
		if got := tc.p.Add(tc.n); got != tc.want {
			t.Errorf("%#x.Add(%d) = %#x, want %#x", tc.p, tc.n, got, tc.want)
		}
		if d := tc.want.Sub(tc.p); int(d) != ((tc.n%(1<<24))+(1<<24)+(1<<23))%(1<<24)-(1<<23) {
			t.Errorf("%#x.Sub(%#x) = %d, want %d modulo 2^24", tc.want, tc.p, d, tc.n)
		}
	}
	if fabric.PSNOf(1<<40|0x123456) != 0x123456 {
		t.Error("PSNOf keeps more than 24 bits")
	}
	if d := fabric.PSN(2).Sub(fabric.MaxPSN - 1); d != 4 {
		t.Errorf("across the wrap: %d, want 4", d)
	}
	if d := (fabric.MaxPSN - 1).Sub(2); d != -4 {
		t.Errorf("back across the wrap: %d, want -4", d)
	}
}

func TestQPAttrCheck(t *testing.T) {
	ok := fabric.QPAttr{Dest: fabric.Address{QPN: 0x10}, MaxDestRdAtomic: 16}
	for _, tc := range []struct {
		name      string
		a         fabric.QPAttr
		to        fabric.QPState
		typ       fabric.QPType
		mtu, maxR int
		want      string // "" for accepted
	}{
		{"good RTR", ok, fabric.StateRTR, fabric.RC, 4096, 16, ""},
		{"UD RTR has no destination", fabric.QPAttr{}, fabric.StateRTR, fabric.UD, 4096, 16, ""},
		{"no destination QPN", fabric.QPAttr{}, fabric.StateRTR, fabric.RC, 4096, 16, "destination QPN 0x0"},
		{"odd MTU", fabric.QPAttr{Dest: ok.Dest, PathMTU: 1500}, fabric.StateRTR, fabric.UC, 4096, 16, "path MTU 1500 is not one of"},
		{"MTU above the port's", fabric.QPAttr{Dest: ok.Dest, PathMTU: 4096}, fabric.StateRTR, fabric.RC, 2048, 16, "above the port's active MTU 2048"},
		{"RNR timer", fabric.QPAttr{Dest: ok.Dest, MinRNRTimer: 32}, fabric.StateRTR, fabric.RC, 4096, 16, "min RNR timer code 32"},
		{"read depth above the device's", fabric.QPAttr{Dest: ok.Dest, MaxDestRdAtomic: 17}, fabric.StateRTR, fabric.RC, 4096, 16, "max_dest_rd_atomic 17 outside 0..16"},
		{"read depth clamped later", fabric.QPAttr{Dest: ok.Dest, MaxDestRdAtomic: 17}, fabric.StateRTR, fabric.RC, 4096, 0, ""},
		{"negative read depth", fabric.QPAttr{MaxRdAtomic: -1}, fabric.StateRTS, fabric.RC, 4096, 0, "max_rd_atomic -1 is negative"},
		{"retries", fabric.QPAttr{RetryCnt: 8}, fabric.StateRTS, fabric.RC, 4096, 16, "retry_cnt 8"},
		{"timeout", fabric.QPAttr{Timeout: 32}, fabric.StateRTS, fabric.RC, 4096, 16, "timeout code 32"},
		{"INIT checks nothing here", fabric.QPAttr{Timeout: 32}, fabric.StateInit, fabric.RC, 4096, 16, ""},
	} {
		got := tc.a.Check(tc.to, tc.typ, tc.mtu, tc.maxR)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

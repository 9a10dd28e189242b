package host

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"testing"
)

func frameBytes(typ byte, body []byte) []byte {
	var b bytes.Buffer
	if err := writeFrame(&b, typ, body); err != nil {
		panic(err)
	}
	return b.Bytes()
}

func TestWireRoundTrip(t *testing.T) {
	msgs := []struct {
		typ byte
		msg any
		enc []byte
	}{
		{frameHello, helloMsg{Rank: 3, Size: 8, Signature: "sqsr/threads=4/v1", Host: "node03"}, nil},
		{frameHello, helloMsg{Job: "slurm/4711.0", Rank: 3, Size: 8, Signature: "s", Host: "node03"}, nil},
		{frameAck, ackMsg{OK: true}, nil},
		{frameAck, ackMsg{Msg: "node 3 runs x, expected y"}, nil},
		{frameGather, gatherMsg{Seq: 7, Key: "connect-RC", Data: []byte{1, 2, 3}}, nil},
		{frameGather, gatherMsg{Seq: 1 << 40, Key: "b", Barrier: true}, nil},
		{frameResult, resultMsg{Seq: 7, Key: "connect-RC", Data: [][]byte{{1}, nil, {2, 3}}}, nil},
		{frameAbort, abortMsg{Node: 2, Msg: "n2/main: boom"}, nil},
		{frameExchange, exchangeMsg{Seq: 9, Key: "mqsr/0", Data: [][]byte{{1, 2}, nil, {3}}}, nil},
		{frameExchange, exchangeMsg{Seq: 9, Key: "none", Data: [][]byte{}}, nil},
	}
	for _, m := range msgs {
		var body []byte
		switch v := m.msg.(type) {
		case helloMsg:
			body = v.encode()
		case ackMsg:
			body = v.encode()
		case gatherMsg:
			body = v.encode()
		case resultMsg:
			body = v.encode()
		case abortMsg:
			body = v.encode()
		case exchangeMsg:
			body = v.encode()
		}
		typ, got, err := readFrame(bytes.NewReader(frameBytes(m.typ, body)))
		if err != nil || typ != m.typ || !bytes.Equal(got, body) {
			t.Fatalf("frame round trip of %T: %v", m.msg, err)
		}
		dec, err := decodeBody(typ, got)
		if err != nil {
			t.Fatalf("decode %T: %v", m.msg, err)
		}
		want := m.msg
		if r, ok := want.(resultMsg); ok { // empty entries decode as nil
			for i := range r.Data {
				if len(r.Data[i]) == 0 {
					r.Data[i] = nil
				}
			}
		}
		if x, ok := want.(exchangeMsg); ok {
			for _, d := range x.Data {
				if d != nil && cap(d) != len(d) {
					t.Errorf("exchange entry %q not capped", d)
				}
			}
		}
		if g, ok := want.(gatherMsg); ok && len(g.Data) == 0 {
			g.Data = nil
			want = g
		}
		if !reflect.DeepEqual(dec, want) {
			t.Errorf("decoded %+v, want %+v", dec, want)
		}
	}
	if _, err := decodeBody(frameBye, nil); err != nil {
		t.Error(err)
	}
}

func TestWireRejects(t *testing.T) {
	hello := helloMsg{Rank: 1, Size: 2, Signature: "s", Host: "h"}.encode()
	bad := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), hello...)) }
	for name, tc := range map[string]struct {
		body []byte
		want error
	}{
		"magic":    {bad(func(b []byte) []byte { b[0] = 'X'; return b }), errNotPeer},
		"version":  {bad(func(b []byte) []byte { b[5] = 9; return b }), errVersion},
		"short":    {hello[:9], errWire},
		"trailing": {append(bad(func(b []byte) []byte { return b }), 0), errWire},
		"strlen":   {bad(func(b []byte) []byte { b[16] = 0xff; return b }), errWire}, // the signature's length (no job)
		"empty":    {nil, errWire},
	} {
		if _, err := decodeHello(tc.body); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", name, err, tc.want)
		}
	}
	// A hello of another version says whose it is when its version has a
	// job (3 on), so that node 0 can refuse another job's process alone.
	for _, tc := range []struct {
		version uint16
		job     string
	}{{wireVersion + 1, "slurm/9.0"}, {3, "slurm/9.0"}, {2, ""}, {1, ""}} {
		b := helloMsg{Job: "slurm/9.0", Rank: 1, Size: 2}.encode()
		b[4], b[5] = byte(tc.version>>8), byte(tc.version)
		if tc.version == wireVersion {
			continue
		}
		if h, err := decodeHello(b); !errors.Is(err, errVersion) || h.Job != tc.job {
			t.Errorf("a hello of version %d: job %q, %v; want %q and a version mismatch", tc.version, h.Job, err, tc.job)
		}
	}
	// A result claiming more entries than bytes allow is rejected before
	// allocating them.
	r := resultMsg{Seq: 1, Key: "k", Data: [][]byte{{1}}}.encode()
	r[8+2+1+3] = 0xff // count's low byte: 255 entries
	r[8+2+1] = 0x7f   // and high byte: ~2 billion
	if _, err := decodeResult(r); !errors.Is(err, errWire) {
		t.Errorf("huge count: %v", err)
	}
	for _, b := range [][]byte{{0, 0, 0, 0, 1}, {0xff, 0xff, 0xff, 0xff, 1}} {
		if _, _, err := readFrame(bytes.NewReader(b)); !errors.Is(err, errWire) {
			t.Errorf("frame length %x: %v", b[:4], err)
		}
	}
	// Before the hello is checked, a frame is small: a longer length is
	// refused as it is read, its body never allocated.
	if _, _, err := readFrameMax(bytes.NewReader([]byte{0, 0, 0x40, 0x01, frameHello}), maxHello); !errors.Is(err, errWire) {
		t.Errorf("a hello of %d bytes: %v", maxHello+1, err)
	}
	if _, _, err := readFrame(bytes.NewReader([]byte{0, 0, 0, 9, 1, 2})); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("truncated frame: %v", err)
	}
	if _, _, err := readFrame(bytes.NewReader(nil)); err != io.EOF {
		t.Errorf("no frame: %v", err)
	}
	if _, err := decodeBody(99, nil); !errors.Is(err, errWire) {
		t.Error("unknown type accepted")
	}
	if _, err := decodeAck([]byte{2, 0, 0}); !errors.Is(err, errWire) {
		t.Error("ack flag 2 accepted")
	}
	if _, err := decodeGather(gatherMsg{Key: "k"}.encode()[:5]); !errors.Is(err, errWire) {
		t.Error("short gather accepted")
	}
	// An exchange whose lengths do not add up to its bytes, or whose
	// count cannot fit, is rejected before anything is allocated for it.
	x := exchangeMsg{Seq: 1, Key: "k", Data: [][]byte{{1}, {2, 3}}}.encode()
	for name, body := range map[string][]byte{
		"short":      x[:len(x)-1],
		"long":       append(append([]byte(nil), x...), 0),
		"huge count": append(append([]byte(nil), x[:11]...), 0x7f, 0xff, 0xff, 0xff),
		"huge entry": func() []byte { b := append([]byte(nil), x...); b[15] = 0xff; return b }(),
	} {
		if _, err := decodeExchange(body); !errors.Is(err, errWire) {
			t.Errorf("exchange, %s: %v", name, err)
		}
	}
}

// FuzzFrame feeds arbitrary bytes to the frame reader and the decoders: they
// must never panic or allocate beyond the input, and whatever decodes must
// re-encode to the same body.
func FuzzFrame(f *testing.F) {
	f.Add(frameBytes(frameHello, helloMsg{Rank: 1, Size: 4, Signature: "sig", Host: "h"}.encode()))
	f.Add(frameBytes(frameGather, gatherMsg{Seq: 3, Key: "k", Data: []byte("abc")}.encode()))
	f.Add(frameBytes(frameResult, resultMsg{Seq: 3, Key: "k", Data: [][]byte{{1}, {2}}}.encode()))
	f.Add(frameBytes(frameAbort, abortMsg{Node: 1, Msg: "x"}.encode()))
	f.Add(frameBytes(frameAck, ackMsg{OK: true}.encode()))
	f.Add(frameBytes(frameExchange, exchangeMsg{Seq: 3, Key: "k", Data: [][]byte{{1}, nil, {2, 3}}}.encode()))
	f.Add([]byte{0, 0, 0, 1, frameBye})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		typ, body, err := readFrame(bytes.NewReader(b))
		if err != nil {
			return
		}
		if len(body) > len(b) {
			t.Fatalf("body of %d bytes from %d input bytes", len(body), len(b))
		}
		m, err := decodeBody(typ, body)
		if err != nil {
			return
		}
		var again []byte
		switch v := m.(type) {
		case helloMsg:
			again = v.encode()
		case ackMsg:
			again = v.encode()
		case gatherMsg:
			again = v.encode()
		case resultMsg:
			again = v.encode()
		case abortMsg:
			again = v.encode()
		case exchangeMsg:
			again = v.encode()
		case struct{}:
			again = nil
		default:
			t.Fatalf("decoded %T", m)
		}
		if !bytes.Equal(again, body) {
			t.Fatalf("type %d: re-encoding %+v gives %x, want %x", typ, m, again, body)
		}
	})
}

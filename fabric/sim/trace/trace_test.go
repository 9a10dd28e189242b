package trace

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

func sampleEvents() []Event {
	return []Event{
		{At: 0, Source: Thread, Arg: 3, Node: 0, Unit: 1, Name: "n0/main", What: "wake", Value: 3},
		{At: 1500, Source: QP, Arg: 1<<56 | 7, Node: 2, Unit: 0x105, What: "doorbell", Value: 7},
		{At: 1500, Source: Network, Arg: 5<<8 | 1, Node: -1, Unit: 5, What: "switch-in",
			Pkt: Packet{ID: 9, Src: 2, Dst: 3, DstQPN: 0x100, Op: "SEND", PSN: 4, Bytes: 4096}},
		{At: 2_000_000, Source: Delivery, Node: 3, Unit: 0x100, What: "rx", Pkt: Packet{ID: 9, Src: 2, Dst: 3, DstQPN: 0x100, Op: "SEND", PSN: 4, Bytes: 4096}},
		{At: 2_000_001, Source: Deadline, Node: 1, Unit: 4, Name: "n1/send0", What: "wait-deadline"},
	}
}

func write(t *testing.T, h Header, evs []Event) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, h)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		w.Event(e)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func readAll(r *Reader) ([]Event, error) {
	var out []Event
	for {
		e, err := r.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, e)
	}
}

// TestRoundTrip: every field of every kind of event survives the file,
// and the writer's hash is the hash of the events read back.
func TestRoundTrip(t *testing.T) {
	evs := sampleEvents()
	file := write(t, Header{Run: map[string]any{"seed": 7.0}}, evs)
	r, err := NewReader(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	if r.Header.Run["seed"] != 7.0 {
		t.Errorf("header %v", r.Header)
	}
	got, err := readAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(evs) {
		t.Fatalf("read %d events, wrote %d", len(got), len(evs))
	}
	h := NewHasher()
	for i := range evs {
		if got[i] != evs[i] {
			t.Errorf("event %d: got %+v, want %+v", i, got[i], evs[i])
		}
		h.Add(&got[i])
	}
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, Header{})
	for _, e := range evs {
		w.Event(e)
	}
	if w.Hash() != h.Sum() || w.Events() != uint64(len(evs)) {
		t.Errorf("writer hash %x over %d, read back %x", w.Hash(), w.Events(), h.Sum())
	}
}

// TestWriterRefusesFallingTime: events must come in time order; the first
// violation is Close's error.
func TestWriterRefusesFallingTime(t *testing.T) {
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, Header{})
	w.Event(Event{At: 10})
	w.Event(Event{At: 5})
	if err := w.Close(); err == nil || !strings.Contains(err.Error(), "must not fall") {
		t.Errorf("Close: %v", err)
	}
}

// TestBadFiles: what is not a trace, and a trace cut short, give errors
// that say so, never a panic.
func TestBadFiles(t *testing.T) {
	file := write(t, Header{}, sampleEvents())
	var plain bytes.Buffer
	zw := gzip.NewWriter(&plain)
	zw.Write([]byte("hello world, not a trace"))
	zw.Close()
	for _, tc := range []struct {
		name string
		data []byte
		want error
	}{
		{"empty", nil, ErrNotTrace},
		{"text", []byte("run 1 2 3\n"), ErrNotTrace},
		{"gzip of something else", plain.Bytes(), ErrNotTrace},
	} {
		if _, err := NewReader(bytes.NewReader(tc.data)); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	// Cut the uncompressed stream short inside the last event.
	zr, _ := gzip.NewReader(bytes.NewReader(file))
	raw, _ := io.ReadAll(zr)
	var cut bytes.Buffer
	zw = gzip.NewWriter(&cut)
	zw.Write(raw[:len(raw)-3])
	zw.Close()
	r, err := NewReader(bytes.NewReader(cut.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := readAll(r); !errors.Is(err, ErrCorrupt) {
		t.Errorf("cut trace: %v, want ErrCorrupt", err)
	}
}

// TestDiffOfEdits: Diff finds an event changed in the middle, and names
// what differs.
func TestDiffOfEdits(t *testing.T) {
	evs := sampleEvents()
	edited := append([]Event(nil), evs...)
	edited[3].Pkt.PSN = 5
	ra, _ := NewReader(bytes.NewReader(write(t, Header{}, evs)))
	rb, _ := NewReader(bytes.NewReader(write(t, Header{}, edited)))
	d, err := Diff(ra, rb, 2)
	if err != nil {
		t.Fatal(err)
	}
	if d.Index != 4 || d.Events != 3 || len(d.Before) != 2 || len(d.A) != 2 || len(d.B) != 2 {
		t.Fatalf("divergence %+v", d)
	}
	var out strings.Builder
	d.Format(&out, "a", "b")
	if !strings.Contains(out.String(), "part at event 4 (differs in packet)") {
		t.Errorf("format:\n%s", out.String())
	}
}

func TestMicroseconds(t *testing.T) {
	for _, tc := range []struct {
		ps   int64
		want string
	}{{0, "0.000000us"}, {1, "0.000001us"}, {1314210345, "1314.210345us"}, {-2500000, "-2.500000us"}} {
		if got := Microseconds(fabricTime(tc.ps)); got != tc.want {
			t.Errorf("%d ps: %s, want %s", tc.ps, got, tc.want)
		}
	}
}

// FuzzReader: no input makes the reader panic or loop; what it reads
// back from a file it accepts is written again identically.
func FuzzReader(f *testing.F) {
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, Header{Run: map[string]any{"x": 1}})
	for _, e := range sampleEvents() {
		w.Event(e)
	}
	w.Close()
	f.Add(buf.Bytes())
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := NewReader(bytes.NewReader(data))
		if err != nil {
			return
		}
		evs, _ := readAll(r)
		if len(evs) > 1<<12 {
			evs = evs[:1<<12]
		}
		r2, err := NewReader(bytes.NewReader(write(t, r.Header, evs)))
		if err != nil {
			t.Fatalf("rewritten: %v", err)
		}
		again, err := readAll(r2)
		if err != nil || len(again) != len(evs) {
			t.Fatalf("rewritten: %d of %d events, %v", len(again), len(evs), err)
		}
		for i := range evs {
			if again[i] != evs[i] {
				t.Fatalf("event %d: %+v rewritten as %+v", i, evs[i], again[i])
			}
		}
	})
}

func fabricTime(ps int64) fabric.Time { return fabric.Time(ps) }

package trace

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// File format: the whole file is one gzip stream holding
//
//	magic line   "rdmashuffle trace 1\n"
//	header       uvarint length, then that many bytes of JSON (Header)
//	records      until the end of the stream
//
// A record starts with a tag byte. Tag 0 defines the next string of the
// file's string table (uvarint length, bytes); strings are numbered from
// 1 in order of definition and events refer to them (0: the empty
// string). Tag 1 is an event:
//
//	uvarint time since the previous event (picoseconds; times never fall)
//	byte    source
//	uvarint argument
//	varint  node
//	uvarint unit
//	uvarint name, what (string numbers)
//	uvarint value
//	uvarint packet id, and when it is not 0:
//	        varint src, varint dst, uvarint qpn, uvarint op (string
//	        number), uvarint psn, uvarint bytes
const magic = "rdmashuffle trace 1\n"

const (
	tagString byte = 0
	tagEvent  byte = 1
)

// Header describes the run a trace comes from.
type Header struct {
	// Run is what made the trace, as its maker describes it (a run's
	// configuration, say); Diff shows the fields in which two headers
	// differ.
	Run map[string]any `json:"run,omitempty"`
}

// Errors of reading a trace.
var (
	ErrNotTrace = errors.New("not a trace file (no rdmashuffle trace header)")
	ErrCorrupt  = errors.New("corrupt trace file")
)

// Writer writes a trace file. Its Event method is the simulator's tracer
// hook (sim.Config.Trace); it cannot return an error, so the first one is
// kept and returned by Close.
type Writer struct {
	zw      *gzip.Writer
	w       *bufio.Writer
	strs    map[string]uint64
	prev    int64
	buf     []byte
	events  uint64
	err     error
	hasher  *Hasher
	closed  bool
	closeTo io.Closer
}

// NewWriter starts a trace on w with the header. If w is an io.Closer,
// Close closes it.
func NewWriter(w io.Writer, h Header) (*Writer, error) {
	hdr, err := json.Marshal(h)
	if err != nil {
		return nil, fmt.Errorf("trace header: %w", err)
	}
	zw, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
	tw := &Writer{zw: zw, w: bufio.NewWriterSize(zw, 1<<16), strs: map[string]uint64{"": 0}, hasher: NewHasher()}
	if c, ok := w.(io.Closer); ok {
		tw.closeTo = c
	}
	tw.w.WriteString(magic)
	tw.buf = binary.AppendUvarint(tw.buf[:0], uint64(len(hdr)))
	tw.w.Write(tw.buf)
	tw.w.Write(hdr)
	return tw, nil
}

// str returns s's number, defining it first if it is new.
func (t *Writer) str(s string) uint64 {
	if id, ok := t.strs[s]; ok {
		return id
	}
	id := uint64(len(t.strs))
	t.strs[s] = id
	t.buf = append(t.buf[:0], tagString)
	t.buf = binary.AppendUvarint(t.buf, uint64(len(s)))
	t.w.Write(t.buf)
	t.w.WriteString(s)
	return id
}

// Event appends one event.
func (t *Writer) Event(e Event) {
	if t.err != nil || t.closed {
		return
	}
	if int64(e.At) < t.prev {
		t.err = fmt.Errorf("trace: event at %v after one at %v: times must not fall", e.At, t.prev)
		return
	}
	name, what := t.str(e.Name), t.str(e.What)
	var op uint64
	if e.Pkt.ID != 0 {
		op = t.str(e.Pkt.Op)
	}
	b := append(t.buf[:0], tagEvent)
	b = binary.AppendUvarint(b, uint64(int64(e.At)-t.prev))
	b = append(b, byte(e.Source))
	b = binary.AppendUvarint(b, e.Arg)
	b = binary.AppendVarint(b, int64(e.Node))
	b = binary.AppendUvarint(b, e.Unit)
	b = binary.AppendUvarint(b, name)
	b = binary.AppendUvarint(b, what)
	b = binary.AppendUvarint(b, e.Value)
	b = binary.AppendUvarint(b, e.Pkt.ID)
	if e.Pkt.ID != 0 {
		p := e.Pkt
		b = binary.AppendVarint(b, int64(p.Src))
		b = binary.AppendVarint(b, int64(p.Dst))
		b = binary.AppendUvarint(b, uint64(p.DstQPN))
		b = binary.AppendUvarint(b, op)
		b = binary.AppendUvarint(b, uint64(p.PSN))
		b = binary.AppendUvarint(b, uint64(p.Bytes))
	}
	t.buf = b
	if _, err := t.w.Write(b); err != nil {
		t.err = err
	}
	t.prev = int64(e.At)
	t.events++
	t.hasher.Add(&e)
}

// Events is the number of events written so far.
func (t *Writer) Events() uint64 { return t.events }

// Hash is the trace hash of the events written so far (it equals the
// simulator's TraceHash for a complete run).
func (t *Writer) Hash() uint64 { return t.hasher.Sum() }

// Close flushes the trace, and closes the underlying writer if it is a
// Closer. It returns the first error met while writing.
func (t *Writer) Close() error {
	if t.closed {
		return t.err
	}
	t.closed = true
	err := t.err
	if e := t.w.Flush(); err == nil {
		err = e
	}
	if e := t.zw.Close(); err == nil {
		err = e
	}
	if t.closeTo != nil {
		if e := t.closeTo.Close(); err == nil {
			err = e
		}
	}
	return err
}

// Reader reads a trace file.
type Reader struct {
	r      *bufio.Reader
	Header Header
	strs   []string
	prev   int64
	n      uint64
}

// NewReader reads a trace's magic line and header.
func NewReader(r io.Reader) (*Reader, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotTrace, err)
	}
	br := bufio.NewReaderSize(zr, 1<<16)
	m := make([]byte, len(magic))
	if _, err := io.ReadFull(br, m); err != nil || string(m) != magic {
		return nil, ErrNotTrace
	}
	n, err := binary.ReadUvarint(br)
	if err != nil || n > 1<<24 {
		return nil, fmt.Errorf("%w: header length", ErrCorrupt)
	}
	hdr := make([]byte, n)
	if _, err := io.ReadFull(br, hdr); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrCorrupt, err)
	}
	tr := &Reader{r: br, strs: []string{""}}
	if err := json.Unmarshal(hdr, &tr.Header); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrCorrupt, err)
	}
	return tr, nil
}

// Open opens the trace file at path; close it with the returned Closer.
func Open(path string) (*Reader, io.Closer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	r, err := NewReader(f)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, f, nil
}

// Read returns the next event; io.EOF after the last.
func (t *Reader) Read() (Event, error) {
	for {
		tag, err := t.r.ReadByte()
		if err == io.EOF {
			return Event{}, io.EOF
		}
		if err != nil {
			return Event{}, fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		switch tag {
		case tagString:
			s, err := t.readString()
			if err != nil {
				return Event{}, err
			}
			t.strs = append(t.strs, s)
		case tagEvent:
			e, err := t.readEvent()
			if err != nil {
				return Event{}, fmt.Errorf("%w: event %d: %v", ErrCorrupt, t.n+1, err)
			}
			t.n++
			return e, nil
		default:
			return Event{}, fmt.Errorf("%w: unknown record tag %d after event %d", ErrCorrupt, tag, t.n)
		}
	}
}

func (t *Reader) readString() (string, error) {
	n, err := binary.ReadUvarint(t.r)
	if err != nil || n > 1<<20 {
		return "", fmt.Errorf("%w: string length", ErrCorrupt)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(t.r, b); err != nil {
		return "", fmt.Errorf("%w: string: %v", ErrCorrupt, err)
	}
	return string(b), nil
}

// fields reads a record's integers, keeping the first error.
type fields struct {
	r   *bufio.Reader
	err error
}

func (f *fields) u() uint64 {
	if f.err != nil {
		return 0
	}
	v, err := binary.ReadUvarint(f.r)
	f.err = err
	return v
}

func (f *fields) i() int64 {
	if f.err != nil {
		return 0
	}
	v, err := binary.ReadVarint(f.r)
	f.err = err
	return v
}

func (f *fields) b() byte {
	if f.err != nil {
		return 0
	}
	v, err := f.r.ReadByte()
	f.err = err
	return v
}

func (t *Reader) str(f *fields) string {
	id := f.u()
	if f.err == nil && id >= uint64(len(t.strs)) {
		f.err = fmt.Errorf("string %d not defined", id)
	}
	if f.err != nil {
		return ""
	}
	return t.strs[id]
}

func (t *Reader) readEvent() (Event, error) {
	f := &fields{r: t.r}
	var e Event
	dt := f.u()
	if dt > 1<<62 || t.prev+int64(dt) < t.prev {
		return e, errors.New("time out of range")
	}
	t.prev += int64(dt)
	e.At = fabric.Time(t.prev)
	e.Source = Source(f.b())
	e.Arg = f.u()
	e.Node = int(f.i())
	e.Unit = f.u()
	e.Name = t.str(f)
	e.What = t.str(f)
	e.Value = f.u()
	e.Pkt.ID = f.u()
	if e.Pkt.ID != 0 {
		e.Pkt.Src, e.Pkt.Dst = int(f.i()), int(f.i())
		e.Pkt.DstQPN = uint32(f.u())
		e.Pkt.Op = t.str(f)
		e.Pkt.PSN = uint32(f.u())
		e.Pkt.Bytes = int(f.u())
	}
	if f.err == io.EOF {
		f.err = io.ErrUnexpectedEOF
	}
	return e, f.err
}

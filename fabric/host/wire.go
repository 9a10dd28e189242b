package host

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
)

// The out-of-band wire format (TCP between the processes of a distributed
// job; hardware-free, so the default build tests it). Every integer is
// big-endian. A frame is
//
//	u32 length of what follows (1..maxFrame) | u8 type | body
//
// and the bodies are:
//
//	hello    u32 magic "RSHF" | u16 version | str job | u32 rank | u32 size | str signature | str host
//	ack      u8 ok | str message
//	gather   u64 seq | str key | u8 barrier | bytes data
//	result   u64 seq | str key | u32 n | n x bytes
//	abort    u32 node | str message
//	bye      (empty)
//	exchange u64 seq | str key | u32 n | n x u32 length | the n entries' bytes
//
// where str is u16 length + UTF-8 bytes and bytes is u32 length + bytes.
// Decoders reject trailing bytes, over-long fields and unknown types, so a
// peer speaking anything else is reported, never misread.
//
// The job follows the version (since version 3) so that node 0 can tell a
// process of another job from one of its own whatever release it runs; a
// hello is at most maxHello bytes, read before anything larger. An
// exchange frame carries a node's slices for every node to node 0 and,
// from node 0, the slices every node gave one node (its column): node 0
// relays each node only what is addressed to it. Its entries follow their
// lengths so that a frame is written straight from the slices it carries
// (writev), and read into one allocation that they share.

// Frame types.
const (
	frameHello    = 1
	frameAck      = 2
	frameGather   = 3
	frameResult   = 4
	frameAbort    = 5
	frameBye      = 6
	frameExchange = 7 // since version 2
)

const (
	frameHeader = 5          // the length and the type
	wireMagic   = 0x52534846 // "RSHF"
	wireVersion = 3
	// maxFrame bounds a frame so that a corrupt length cannot make a
	// reader allocate without limit. An all-gather result of every
	// node's contribution must fit.
	maxFrame = 256 << 20
	// maxHello bounds the hello node 0 reads from a connection before
	// anything says that the peer is a node of this job: a stray
	// connection's length prefix cannot make node 0 allocate more.
	maxHello = 16 << 10
	// maxAck bounds the answer a node reads back (an ack's message is a
	// str): whatever listens on the coordinator's port cannot make it
	// allocate more.
	maxAck = 1 + 1 + 2 + 0xffff
)

// errWire reports a malformed frame.
var errWire = errors.New("malformed out-of-band frame")

type helloMsg struct {
	Job        string // Bootstrap.Job
	Rank, Size uint32
	Signature  string
	Host       string
}

type ackMsg struct {
	OK  bool
	Msg string
}

type gatherMsg struct {
	Seq     uint64
	Key     string
	Barrier bool
	Data    []byte
}

type resultMsg struct {
	Seq  uint64
	Key  string
	Data [][]byte
}

type exchangeMsg struct {
	Seq  uint64
	Key  string
	Data [][]byte
}

type abortMsg struct {
	Node uint32
	Msg  string
}

// writeFrame writes one frame whose body is the concatenation of parts,
// without copying them (one writev on a connection).
func writeFrame(w io.Writer, typ byte, parts ...[]byte) error {
	size := 1
	for _, p := range parts {
		size += len(p)
	}
	if size > maxFrame {
		return fmt.Errorf("%w: frame of %d bytes exceeds %d", errWire, size, maxFrame)
	}
	b := make(net.Buffers, 1, 1+len(parts))
	b[0] = binary.BigEndian.AppendUint32(make([]byte, 0, frameHeader), uint32(size))
	b[0] = append(b[0], typ)
	for _, p := range parts {
		if len(p) > 0 {
			b = append(b, p)
		}
	}
	_, err := b.WriteTo(w)
	return err
}

// readFrame reads one frame of at most maxFrame bytes.
func readFrame(r io.Reader) (byte, []byte, error) { return readFrameMax(r, maxFrame) }

// readFrameMax reads one frame of at most limit bytes (type and body): a
// longer length is refused before anything is allocated for it.
func readFrameMax(r io.Reader, limit uint32) (byte, []byte, error) {
	var h [5]byte
	if _, err := io.ReadFull(r, h[:4]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(h[:4])
	if n < 1 || n > limit {
		return 0, nil, fmt.Errorf("%w: frame length %d outside 1..%d (is the peer an rdmashuffle process?)", errWire, n, limit)
	}
	if _, err := io.ReadFull(r, h[4:5]); err != nil {
		return 0, nil, unexpectedEOF(err)
	}
	body := make([]byte, n-1)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, nil, unexpectedEOF(err)
	}
	return h[4], body, nil
}

func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// enc appends big-endian fields.
type enc []byte

func (e enc) u8(v uint8) enc   { return append(e, v) }
func (e enc) u16(v uint16) enc { return binary.BigEndian.AppendUint16(e, v) }
func (e enc) u32(v uint32) enc { return binary.BigEndian.AppendUint32(e, v) }
func (e enc) u64(v uint64) enc { return binary.BigEndian.AppendUint64(e, v) }
func (e enc) str(s string) enc {
	if len(s) > 0xffff {
		s = s[:0xffff]
	}
	return append(e.u16(uint16(len(s))), s...)
}
func (e enc) bytes(b []byte) enc { return append(e.u32(uint32(len(b))), b...) }

// dec reads big-endian fields; the first failure sticks.
type dec struct {
	b   []byte
	err error
}

func (d *dec) take(n int, what string) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b) {
		d.err = fmt.Errorf("%w: %s needs %d bytes, %d left", errWire, what, n, len(d.b))
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *dec) u8(what string) uint8 {
	if b := d.take(1, what); b != nil {
		return b[0]
	}
	return 0
}

func (d *dec) u16(what string) uint16 {
	if b := d.take(2, what); b != nil {
		return binary.BigEndian.Uint16(b)
	}
	return 0
}

func (d *dec) u32(what string) uint32 {
	if b := d.take(4, what); b != nil {
		return binary.BigEndian.Uint32(b)
	}
	return 0
}

func (d *dec) u64(what string) uint64 {
	if b := d.take(8, what); b != nil {
		return binary.BigEndian.Uint64(b)
	}
	return 0
}

func (d *dec) str(what string) string {
	return string(d.take(int(d.u16(what+" length")), what))
}

func (d *dec) bytes(what string) []byte {
	n := d.u32(what + " length")
	if d.err == nil && uint64(n) > uint64(len(d.b)) {
		d.err = fmt.Errorf("%w: %s of %d bytes, %d left", errWire, what, n, len(d.b))
		return nil
	}
	return append([]byte(nil), d.take(int(n), what)...)
}

func (d *dec) end(what string) error {
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%w: %d trailing bytes after %s", errWire, len(d.b), what)
	}
	return d.err
}

func (m helloMsg) encode() []byte {
	return enc(nil).u32(wireMagic).u16(wireVersion).str(m.Job).u32(m.Rank).u32(m.Size).str(m.Signature).str(m.Host)
}

// errNotPeer and errVersion tell a hello from something else apart from a
// hello of another release.
var (
	errNotPeer = errors.New("not an rdmashuffle out-of-band hello")
	errVersion = errors.New("out-of-band protocol version mismatch")
)

func decodeHello(b []byte) (helloMsg, error) {
	d := dec{b: b}
	if m := d.u32("magic"); d.err == nil && m != wireMagic {
		return helloMsg{}, fmt.Errorf("%w: magic %#08x, want %#08x", errNotPeer, m, wireMagic)
	}
	v := d.u16("version")
	var m helloMsg
	if v >= 3 {
		m.Job = d.str("job")
	}
	if d.err == nil && v != wireVersion {
		// Job, when the version has one, says whose process it is.
		return helloMsg{Job: m.Job}, fmt.Errorf("%w: the peer speaks version %d, this binary %d (run the same rdmashuffle build on every node)", errVersion, v, wireVersion)
	}
	m.Rank = d.u32("rank")
	m.Size = d.u32("size")
	m.Signature = d.str("signature")
	m.Host = d.str("host")
	return m, d.end("hello")
}

func (m ackMsg) encode() []byte {
	ok := uint8(0)
	if m.OK {
		ok = 1
	}
	return enc(nil).u8(ok).str(m.Msg)
}

func decodeAck(b []byte) (ackMsg, error) {
	d := dec{b: b}
	var m ackMsg
	switch d.u8("ok") {
	case 0:
	case 1:
		m.OK = true
	default:
		if d.err == nil {
			d.err = fmt.Errorf("%w: ack flag not 0 or 1", errWire)
		}
	}
	m.Msg = d.str("message")
	return m, d.end("ack")
}

func (m gatherMsg) encode() []byte {
	bar := uint8(0)
	if m.Barrier {
		bar = 1
	}
	return enc(nil).u64(m.Seq).str(m.Key).u8(bar).bytes(m.Data)
}

func decodeGather(b []byte) (gatherMsg, error) {
	d := dec{b: b}
	var m gatherMsg
	m.Seq = d.u64("sequence")
	m.Key = d.str("key")
	switch d.u8("barrier flag") {
	case 0:
	case 1:
		m.Barrier = true
	default:
		if d.err == nil {
			d.err = fmt.Errorf("%w: barrier flag not 0 or 1", errWire)
		}
	}
	m.Data = d.bytes("data")
	return m, d.end("gather")
}

func (m resultMsg) encode() []byte {
	e := enc(nil).u64(m.Seq).str(m.Key).u32(uint32(len(m.Data)))
	for _, x := range m.Data {
		e = e.bytes(x)
	}
	return e
}

// head decodes the sequence, key and entry count that open result and
// exchange frames. Every entry takes at least its 4-byte length, so the
// count is bounded by what is left before anything is allocated for it.
func (d *dec) head(seq *uint64, key *string) uint32 {
	*seq = d.u64("sequence")
	*key = d.str("key")
	n := d.u32("count")
	if d.err == nil && uint64(n)*4 > uint64(len(d.b)) {
		d.err = fmt.Errorf("%w: %d entries cannot fit in %d bytes", errWire, n, len(d.b))
	}
	return n
}

func decodeResult(b []byte) (resultMsg, error) {
	d := dec{b: b}
	var m resultMsg
	n := d.head(&m.Seq, &m.Key)
	if d.err == nil {
		m.Data = make([][]byte, n)
		for i := range m.Data {
			m.Data[i] = d.bytes("entry")
		}
	}
	return m, d.end("result")
}

// parts is the exchange frame's body as its head (sequence, key, count
// and lengths) followed by the entries themselves, for writeFrame.
func (m exchangeMsg) parts() [][]byte {
	head := enc(nil).u64(m.Seq).str(m.Key).u32(uint32(len(m.Data)))
	for _, x := range m.Data {
		head = head.u32(uint32(len(x)))
	}
	return append([][]byte{head}, m.Data...)
}

func (m exchangeMsg) encode() []byte { return slices.Concat(m.parts()...) }

// decodeExchange decodes an exchange frame's body. Its entries are
// slices of b, each capped at its length (nil when empty): nothing is
// copied.
func decodeExchange(b []byte) (exchangeMsg, error) {
	d := dec{b: b}
	var m exchangeMsg
	n := d.head(&m.Seq, &m.Key)
	if d.err != nil {
		return m, d.err
	}
	lens := d.take(4*int(n), "lengths")
	total := uint64(0)
	for i := uint32(0); i < n; i++ {
		total += uint64(binary.BigEndian.Uint32(lens[4*i:]))
	}
	if total != uint64(len(d.b)) {
		return m, fmt.Errorf("%w: exchange entries of %d bytes in all, %d left", errWire, total, len(d.b))
	}
	m.Data = make([][]byte, n)
	for i := range m.Data {
		if l := int(binary.BigEndian.Uint32(lens[4*i:])); l > 0 {
			m.Data[i] = d.take(l, "entry")
		}
	}
	return m, d.end("exchange")
}

func (m abortMsg) encode() []byte { return enc(nil).u32(m.Node).str(m.Msg) }

func decodeAbort(b []byte) (abortMsg, error) {
	d := dec{b: b}
	var m abortMsg
	m.Node = d.u32("node")
	m.Msg = d.str("message")
	return m, d.end("abort")
}

// decodeBody decodes the body of a frame of type typ (for tests and the
// fuzz target: each reader decodes the types it expects).
func decodeBody(typ byte, body []byte) (any, error) {
	switch typ {
	case frameHello:
		return decodeHello(body)
	case frameAck:
		return decodeAck(body)
	case frameGather:
		return decodeGather(body)
	case frameResult:
		return decodeResult(body)
	case frameAbort:
		return decodeAbort(body)
	case frameExchange:
		return decodeExchange(body)
	case frameBye:
		if len(body) != 0 {
			return nil, fmt.Errorf("%w: bye with %d bytes", errWire, len(body))
		}
		return struct{}{}, nil
	}
	return nil, fmt.Errorf("%w: unknown frame type %d", errWire, typ)
}

package fabric

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// GID is a 128-bit global identifier of a port (used for RoCE and routed IB).
type GID [16]byte

// Address names a remote port and, for connected QPs, a remote queue pair.
type Address struct {
	LID uint16 // InfiniBand local identifier of the port
	GID GID    // global identifier; used when UseGID is set (RoCE)
	// UseGID selects GID addressing (global routing); otherwise LID.
	UseGID bool
	// SL is the service level of the path (InfiniBand, 0..15): switches
	// map it to a virtual lane. 0, the default, is what a subnet without
	// quality of service configured uses for everything.
	SL  uint8
	QPN uint32 // remote queue pair number (connected QPs)
}

// MaxSL is the highest InfiniBand service level.
const MaxSL = 15

// PSN is a packet sequence number: 24 bits that wrap around (IBA vol. 1,
// §9.7). Arithmetic through Add and Sub stays within the 24 bits.
type PSN uint32

// MaxPSN is the largest PSN; the next one is 0.
const MaxPSN PSN = 1<<24 - 1

// PSNOf returns the low 24 bits of v as a PSN.
func PSNOf(v uint64) PSN { return PSN(v) & MaxPSN }

// Add returns p advanced by n packets (n may be negative), wrapping.
func (p PSN) Add(n int) PSN { return (p + PSN(n)) & MaxPSN }

// Sub returns how many packets p comes after q (negative: before), taking
// the shorter way round the 24-bit circle.
func (p PSN) Sub(q PSN) int32 { return int32(uint32(p-q)<<8) >> 8 }

// QPInfo is what one node tells another, out of band, so the other can
// connect to (RC, UC) or address (UD) one of its queue pairs, together with
// an optional remote buffer (address, rkey, length) for one-sided access.
type QPInfo struct {
	Node  uint32 // sender's node id (rank), for error messages and checks
	LID   uint16
	GID   GID
	QPN   uint32
	PSN   PSN
	QKey  uint32 // UD
	Addr  uint64 // optional remote buffer
	RKey  uint32
	Bytes uint64
}

// Address returns the Address of the described queue pair.
func (q QPInfo) Address() Address { return Address{LID: q.LID, GID: q.GID, QPN: q.QPN} }

// QPInfoWireBytes is the encoded size of a QPInfo.
const QPInfoWireBytes = 2 + 1 + 4 + 2 + 16 + 4 + 4 + 4 + 8 + 4 + 8

const qpInfoMagic = 0x5153 // "QS"
const qpInfoVersion = 1

// ErrBadQPInfo reports a malformed QPInfo encoding.
var ErrBadQPInfo = errors.New("fabric: malformed queue-pair info")

// MarshalBinary encodes q in big-endian (network) byte order, with a magic
// number and a version so that a mismatched peer is detected, not misread.
func (q QPInfo) MarshalBinary() ([]byte, error) {
	b := make([]byte, 0, QPInfoWireBytes)
	b = binary.BigEndian.AppendUint16(b, qpInfoMagic)
	b = append(b, qpInfoVersion)
	b = binary.BigEndian.AppendUint32(b, q.Node)
	b = binary.BigEndian.AppendUint16(b, q.LID)
	b = append(b, q.GID[:]...)
	b = binary.BigEndian.AppendUint32(b, q.QPN)
	b = binary.BigEndian.AppendUint32(b, uint32(q.PSN))
	b = binary.BigEndian.AppendUint32(b, q.QKey)
	b = binary.BigEndian.AppendUint64(b, q.Addr)
	b = binary.BigEndian.AppendUint32(b, q.RKey)
	b = binary.BigEndian.AppendUint64(b, q.Bytes)
	return b, nil
}

// UnmarshalBinary decodes what MarshalBinary produced. Any other input is
// rejected with an error wrapping ErrBadQPInfo that says what is wrong.
func (q *QPInfo) UnmarshalBinary(b []byte) error {
	if len(b) != QPInfoWireBytes {
		return fmt.Errorf("%w: %d bytes, want %d (is the peer running the same rdmashuffle version?)", ErrBadQPInfo, len(b), QPInfoWireBytes)
	}
	if m := binary.BigEndian.Uint16(b); m != qpInfoMagic {
		return fmt.Errorf("%w: magic %#04x, want %#04x (the peer is not an rdmashuffle process)", ErrBadQPInfo, m, qpInfoMagic)
	}
	if v := b[2]; v != qpInfoVersion {
		return fmt.Errorf("%w: version %d, want %d (upgrade both nodes to the same release)", ErrBadQPInfo, v, qpInfoVersion)
	}
	b = b[3:]
	q.Node = binary.BigEndian.Uint32(b)
	q.LID = binary.BigEndian.Uint16(b[4:])
	copy(q.GID[:], b[6:22])
	q.QPN = binary.BigEndian.Uint32(b[22:])
	q.PSN = PSN(binary.BigEndian.Uint32(b[26:]))
	q.QKey = binary.BigEndian.Uint32(b[30:])
	q.Addr = binary.BigEndian.Uint64(b[34:])
	q.RKey = binary.BigEndian.Uint32(b[42:])
	q.Bytes = binary.BigEndian.Uint64(b[46:])
	if q.QPN >= 1<<24 {
		return fmt.Errorf("%w: QPN %#x does not fit in 24 bits", ErrBadQPInfo, q.QPN)
	}
	if q.PSN > MaxPSN {
		return fmt.Errorf("%w: PSN %#x does not fit in 24 bits", ErrBadQPInfo, q.PSN)
	}
	return nil
}

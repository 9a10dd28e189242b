package sim

import (
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// pktOp is the operation of a packet, following the IB BTH opcodes in
// spirit (first/middle/last/only are separate flags).
type pktOp uint8

const (
	pSend pktOp = iota + 1
	pWrite
	pReadReq
	pReadResp
	pAck
	pNak
	pDCConnect // a DCI's connect request (its key in raddr)
	pDCConnAck // a DCT's connect response
)

var pktOpNames = [...]string{"?", "SEND", "WRITE", "READ_REQ", "READ_RESP", "ACK", "NAK", "DC_CONNECT", "DC_CONNECT_ACK"}

func (o pktOp) String() string { return pktOpNames[o] }

// nakCode is the syndrome of a NAK.
type nakCode uint8

const (
	nakSeq nakCode = iota + 1
	nakRNR
	nakRemoteAccess
	nakInvalid
	// nakDCConnect is no NAK: with ackOn it marks a DCI whose next packet
	// is a connect request (dc.go), which rides the ACK's turn in the
	// transmit engine.
	nakDCConnect
)

var nakNames = [...]string{"", "sequence error", "receiver not ready", "remote access error", "invalid request"}

func (c nakCode) String() string {
	if int(c) < len(nakNames) {
		return nakNames[c]
	}
	return fmt.Sprintf("nakCode(%d)", uint8(c))
}

// IB header sizes in bytes (IBA vol. 1; see docs/model.md).
const (
	hdrLRH   = 8
	hdrBTH   = 12
	hdrDETH  = 8
	hdrRETH  = 16
	hdrAETH  = 4
	hdrImm   = 4
	hdrICRC  = 4
	hdrVCRC  = 2
	hdrBase  = hdrLRH + hdrBTH + hdrICRC + hdrVCRC
	pktAlign = 4
	// maxHeaderBytes bounds every packet's headers and padding.
	maxHeaderBytes = hdrBase + hdrRETH + hdrDETH + hdrImm + pktAlign
	// creditBlock is the unit of InfiniBand link-level flow control.
	creditBlock = 64
)

// span is a byte range [off, off+n) of a packet's payload that carries real
// data (all of it in payload mode; the head/tail windows in size-only mode).
type span struct{ off, n int }

// packet is one IB packet in flight. Packets are pooled per cluster.
type packet struct {
	id             uint64
	src, dst       int
	srcQPN, dstQPN uint32
	qpType         fabric.QPType
	op             pktOp
	first, last    bool
	psn            fabric.PSN
	n              int // payload bytes
	wire           int // bytes on the wire
	imm            uint32
	hasImm         bool
	raddr          uint64 // RETH
	rkey           uint32
	dmaLen         uint32
	qkey           uint32 // DETH (UD), or XRCETH's SRQ number (XRC requests)
	srcLID         uint16
	nak            nakCode
	rnrCode        uint8
	data           []byte
	segs           [2]span
	nseg           int
	held           bool
	placed         bool        // an RDMA Write payload already written on arrival, ahead of a gap (ooo.go placeAhead)
	noDMA          bool        // payload travels in the work request (inline)
	vl             uint8       // the virtual lane its service level maps to (0 with one data VL)
	dataAt         fabric.Time // when the payload could first be fetched
	tailAt         fabric.Time // when its last byte reaches the next switch input (links at different rates only: network.mixed)
}

// PacketInfo is a read-only description of a packet, for filters and
// manual delivery in tests.
type PacketInfo struct {
	ID       uint64
	Src, Dst int // node ids
	SrcQPN   uint32
	DstQPN   uint32
	Type     fabric.QPType
	Op       string // SEND, WRITE, READ_REQ, READ_RESP, ACK, NAK
	First    bool
	Last     bool
	PSN      fabric.PSN
	Bytes    int // payload bytes
}

func (p *packet) info() PacketInfo {
	return PacketInfo{ID: p.id, Src: p.src, Dst: p.dst, SrcQPN: p.srcQPN, DstQPN: p.dstQPN, Type: p.qpType,
		Op: p.op.String(), First: p.first, Last: p.last, PSN: p.psn, Bytes: p.n}
}

func (c *Cluster) newPacket() *packet {
	var p *packet
	if n := len(c.freePkts); n > 0 {
		p = c.freePkts[n-1]
		c.freePkts = c.freePkts[:n-1]
		data := p.data[:0]
		*p = packet{data: data}
	} else {
		p = &packet{}
	}
	c.pktID++
	p.id = c.pktID
	return p
}

func (c *Cluster) freePacket(p *packet) { c.freePkts = append(c.freePkts, p) }

func (c *Cluster) clonePacket(p *packet) *packet {
	q := c.newPacket()
	id, data := q.id, q.data
	*q = *p
	q.id = id
	q.data = append(data[:0], p.data...)
	return q
}

// setWire computes the packet's size on the wire from its headers.
func (p *packet) setWire() {
	h := hdrBase
	switch p.op {
	case pWrite:
		if p.first {
			h += hdrRETH
		}
	case pReadReq:
		h += hdrRETH
	case pReadResp, pAck, pNak:
		h += hdrAETH
	}
	if p.qpType == fabric.UD {
		h += hdrDETH
	}
	if p.qpType == fabric.XRCSend && (p.op == pSend || p.op == pWrite || p.op == pReadReq) {
		h += hdrXRCETH
	}
	if p.qpType == fabric.DCI && p.op != pAck && p.op != pNak {
		h += hdrDCETH
	}
	if p.hasImm && p.last {
		h += hdrImm
	}
	pad := -p.n & (pktAlign - 1) // (pktAlign - n%pktAlign) % pktAlign: n >= 0, pktAlign a power of two
	p.wire = h + p.n + pad
}

// loadPayload copies the bytes that move for a packet covering message
// bytes [msgOff, msgOff+n) of a message of msgLen bytes from src.
func (p *packet) loadPayload(src []byte, msgOff, msgLen int, payload bool) {
	p.nseg = 0
	if p.n == 0 || src == nil {
		return
	}
	add := func(lo, hi int) { // message offsets
		if lo < msgOff {
			lo = msgOff
		}
		if hi > msgOff+p.n {
			hi = msgOff + p.n
		}
		if lo >= hi {
			return
		}
		if p.nseg > 0 && p.segs[p.nseg-1].off+p.segs[p.nseg-1].n >= lo-msgOff {
			last := &p.segs[p.nseg-1]
			last.n = hi - msgOff - last.off
			return
		}
		p.segs[p.nseg] = span{lo - msgOff, hi - lo}
		p.nseg++
	}
	if payload {
		add(msgOff, msgOff+p.n)
	} else {
		w := fabric.SizeOnlyWindow
		add(0, w)
		add(msgLen-w, msgLen)
	}
	// data holds the segments back to back: all of the payload in payload
	// mode, at most 2*SizeOnlyWindow bytes in size-only mode.
	total := 0
	for _, s := range p.segs[:p.nseg] {
		total += s.n
	}
	if cap(p.data) < total {
		p.data = make([]byte, total)
	}
	p.data = p.data[:0]
	for _, s := range p.segs[:p.nseg] {
		p.data = append(p.data, src[msgOff+s.off:msgOff+s.off+s.n]...)
	}
}

// storePayload writes the packet's moving bytes into dst, which
// corresponds to the packet's payload offset 0.
func (p *packet) storePayload(dst []byte) {
	k := 0
	for _, s := range p.segs[:p.nseg] {
		copy(dst[s.off:s.off+s.n], p.data[k:k+s.n])
		k += s.n
	}
}

package sim

import "github.com/rdmashuffle/rdmashuffle/fabric"

// GoodputBound is the highest payload rate, in Gb/s (10^9 bit/s), that one
// link of profile p can carry for messages of size bytes sent with
// operation op on transport typ: the data rate after line encoding times
// the fraction of wire bytes that are payload once every packet's headers
// (LRH, BTH, the operation's extended headers, ICRC, VCRC) and padding are
// counted. Inter-packet gaps and link-level flow-control packets are not
// modelled and not counted.
func GoodputBound(p *Profile, typ fabric.QPType, op fabric.Opcode, size int) float64 {
	mtu := p.Link.MTU
	npk := max((size+mtu-1)/mtu, 1)
	wire := 0
	for i := 0; i < npk; i++ {
		pk := packet{qpType: typ, n: min(mtu, size-i*mtu), first: i == 0, last: i == npk-1, hasImm: op.HasImm()}
		switch op {
		case fabric.OpWrite, fabric.OpWriteImm:
			pk.op = pWrite
		case fabric.OpRead:
			pk.op = pReadResp // the data travels in read responses
		default:
			pk.op = pSend
		}
		pk.setWire()
		wire += pk.wire
	}
	return p.DataRateBps() / 1e9 * float64(size) / float64(wire)
}

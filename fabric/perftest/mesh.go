package perftest

import (
	"encoding/binary"
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// mesh is one node's queue pairs to a set of peers: qps per peer, all on
// one protection domain, one send CQ, one receive CQ and one memory region
// holding a slot of slotBytes per queue pair.
type mesh struct {
	node     fabric.Node
	inline   int // largest inline send of the queue pairs (MaxInline)
	pd       fabric.PD
	scq, rcq fabric.CQ
	// onSCQ and onRCQ are the argument lists of a Thread.Wait on one
	// queue: built once, because a variadic call through the interface
	// allocates its list on every call, and the loops wait once per message.
	onSCQ, onRCQ []fabric.Waitable
	mr           fabric.MR
	slotBytes    int
	peers        []int
	qps          [][]fabric.QP     // [peer index][k]
	remote       [][]fabric.QPInfo // the peer's matching queue pair and slot
	local        [][]fabric.QPInfo // what we offered the peer: our queue pair, first PSN and slot
	psn          [][]fabric.PSN    // our first PSN per queue pair
	ahs          []fabric.AH       // UD: per peer
	mtu          int               // path MTU of the RC and UC queue pairs
}

type meshOpts struct {
	typ       fabric.QPType
	qps       int
	slotBytes int
	sendWR    int
	recvWR    int
	inline    int
	cqDepth   int
	spread    int   // register at least this many bytes and offer the whole region to every peer
	sl        uint8 // service level of every path (perftest's -S)
	path      path  // path MTU, ACK timeout and read depth of the RC and UC queue pairs
}

// path is what connect sets on an RC or UC queue pair besides its
// destination and PSNs.
type path struct {
	mtu     int   // path MTU, bytes; 0: the port's active MTU
	timeout uint8 // ACK timeout code
	outs    int   // RDMA Reads in flight, outgoing and incoming
}

const qkey = 0x1ee7

// slot returns the SGE of queue pair k of peer index p.
func (m *mesh) slot(p, k, n int) fabric.SGE {
	return m.mr.SGE((p*len(m.qps[p])+k)*m.slotBytes, n)
}

// connectMesh builds queue pairs to every peer and connects them through
// one out-of-band all-gather. Every node of the cluster must call it (a
// node with no peers passes none).
func connectMesh(th fabric.Thread, peers []int, o meshOpts) (*mesh, error) {
	n := th.Node()
	dev := n.Device()
	m := &mesh{node: n, slotBytes: o.slotBytes, peers: peers, inline: o.inline, mtu: dev.Attr().MTU}
	if o.path.mtu > 0 && o.typ != fabric.UD {
		m.mtu = min(o.path.mtu, m.mtu) // above the port's: the port's, as perftest
		o.path.mtu = m.mtu
	}
	var err error
	if m.pd, err = dev.AllocPD(); err != nil {
		return nil, err
	}
	if m.scq, err = dev.CreateCQ(o.cqDepth); err != nil {
		return nil, err
	}
	if m.rcq, err = dev.CreateCQ(o.cqDepth); err != nil {
		return nil, err
	}
	m.onSCQ, m.onRCQ = []fabric.Waitable{m.scq}, []fabric.Waitable{m.rcq}
	total := max(len(peers)*o.qps*o.slotBytes, o.spread, 1)
	if m.mr, err = m.pd.RegMR(total, fabric.AccessLocalWrite|fabric.AccessRemoteWrite|fabric.AccessRemoteRead); err != nil {
		return nil, err
	}
	// Wire format: per (peer, k): peer id (4 bytes) then a QPInfo.
	var blob []byte
	for pi, peer := range peers {
		m.qps = append(m.qps, nil)
		m.psn = append(m.psn, nil)
		m.local = append(m.local, nil)
		for k := 0; k < o.qps; k++ {
			qp, err := m.pd.CreateQP(fabric.QPInit{Type: o.typ, SendCQ: m.scq, RecvCQ: m.rcq,
				Caps: fabric.QPCaps{MaxSendWR: o.sendWR, MaxRecvWR: o.recvWR, MaxInline: o.inline}})
			if err != nil {
				return nil, err
			}
			if err := qp.Modify(fabric.StateInit, fabric.QPAttr{QKey: qkey,
				Access: fabric.AccessLocalWrite | fabric.AccessRemoteWrite | fabric.AccessRemoteRead}); err != nil {
				return nil, err
			}
			m.qps[pi] = append(m.qps[pi], qp)
			info := qp.Info()
			info.PSN = fabric.PSN(th.Rand().IntN(1 << 24))
			m.psn[pi] = append(m.psn[pi], info.PSN)
			s := m.slot(pi, k, m.slotBytes)
			info.Addr, info.RKey, info.Bytes = s.Addr, m.mr.RKey(), uint64(m.slotBytes)
			if o.spread > 0 {
				info.Addr, info.Bytes = m.mr.Addr(), uint64(m.mr.Len())
			}
			m.local[pi] = append(m.local[pi], info)
			enc, _ := info.MarshalBinary()
			blob = binary.BigEndian.AppendUint32(blob, uint32(peer))
			blob = append(blob, enc...)
		}
	}
	all, err := n.OOB().AllGather("perftest-mesh", blob)
	if err != nil {
		return nil, err
	}
	const rec = 4 + fabric.QPInfoWireBytes
	for pi, peer := range peers {
		mine, err := offeredTo(all[peer], n.ID(), peer, o.qps)
		if err != nil {
			return nil, err
		}
		if len(mine) != o.qps {
			return nil, fmt.Errorf("perftest: node %d offered %d queue pairs to node %d, want %d (do both run the same -q?)",
				peer, len(mine), n.ID(), o.qps)
		}
		m.remote = append(m.remote, mine)
		if o.typ == fabric.UD {
			addr := mine[0].Address()
			addr.SL = o.sl
			ah, err := m.pd.CreateAH(addr)
			if err != nil {
				return nil, err
			}
			m.ahs = append(m.ahs, ah)
		}
		for k, qp := range m.qps[pi] {
			if err := connect(qp, m.psn[pi][k], mine[k], o.typ, o.sl, o.path); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// offeredTo decodes the queue pairs peer offered to node me in its blob
// (records of a node id and a QPInfo). A peer whose peers are every other
// node in order (the all-to-all and pairwise tests) lists me's qps
// records at a known place, which is tried first, so that a mesh of n
// nodes decodes in O(n) per node; otherwise the whole blob is scanned.
func offeredTo(b []byte, me, peer, qps int) ([]fabric.QPInfo, error) {
	const rec = 4 + fabric.QPInfoWireBytes
	at := me
	if me > peer {
		at--
	}
	var mine []fabric.QPInfo
	decode := func(r []byte) error {
		var info fabric.QPInfo
		if err := info.UnmarshalBinary(r[4:rec]); err != nil {
			return fmt.Errorf("perftest: from node %d: %w", peer, err)
		}
		mine = append(mine, info)
		return nil
	}
	owner := func(i int) int { return int(binary.BigEndian.Uint32(b[i*rec:])) }
	lo, hi, total := at*qps, (at+1)*qps, len(b)/rec
	fast := hi <= total && (lo == 0 || owner(lo-1) != me) && (hi == total || owner(hi) != me)
	for i := lo; fast && i < hi; i++ {
		fast = owner(i) == me
	}
	if fast {
		for i := lo; i < hi; i++ {
			if err := decode(b[i*rec:]); err != nil {
				return nil, err
			}
		}
		return mine, nil
	}
	for ; len(b) >= rec; b = b[rec:] {
		if int(binary.BigEndian.Uint32(b)) == me {
			if err := decode(b); err != nil {
				return nil, err
			}
		}
	}
	return mine, nil
}

func connect(qp fabric.QP, psn fabric.PSN, peer fabric.QPInfo, typ fabric.QPType, sl uint8, p path) error {
	if typ == fabric.UD {
		if err := qp.Modify(fabric.StateRTR, fabric.QPAttr{}); err != nil {
			return err
		}
		return qp.Modify(fabric.StateRTS, fabric.QPAttr{SendPSN: psn})
	}
	dest := peer.Address()
	dest.SL = sl
	if err := qp.Modify(fabric.StateRTR, fabric.QPAttr{Dest: dest, RemotePSN: peer.PSN, PathMTU: p.mtu,
		MinRNRTimer: 12, MaxDestRdAtomic: p.outs}); err != nil {
		return err
	}
	return qp.Modify(fabric.StateRTS, fabric.QPAttr{SendPSN: psn, Timeout: p.timeout, RetryCnt: 7, RNRRetry: 7, MaxRdAtomic: p.outs})
}

// setup is what m's node set up with its first peer, for the report.
func (m *mesh) setup(cfg *Config, client bool, pollBatch int) *Setup {
	a := m.node.Device().Attr()
	inline := a.MaxInline
	if cfg.Conn == fabric.UD {
		inline = a.MaxInlineUD
	}
	s := &Setup{Node: m.node.ID(), Client: client, Device: a.Name, LinkLayer: a.LinkLayer, MTU: m.mtu,
		MaxInline: min(cfg.Inline, inline), Outs: cfg.outs(), PollBatch: pollBatch}
	if len(m.local) > 0 {
		s.Local, s.Remote = m.local[0], m.remote[0]
	}
	return s
}

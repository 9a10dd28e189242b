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
	perPeer      int         // queue pairs per peer
	all          []fabric.QP // every queue pair, peer by peer: queue pair k of peer index p is all[p*perPeer+k]
	remote       []peerQP    // the peer's matching queue pair and slot, as all
	// The first peer's queue pairs as exchanged, ours and its (the report's
	// Setup): a mesh of thousands of peers keeps only what its senders need
	// of the others (docs/performance.md "Scale").
	local0, remote0 []fabric.QPInfo
	ahs             []fabric.AH // UD: per peer
	mtu             int         // path MTU of the RC and UC queue pairs
}

// peerQP is what a sender needs of the peer's queue pair: its number and
// its slot.
type peerQP struct {
	Addr uint64
	RKey uint32
	QPN  uint32
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
	return m.mr.SGE((p*m.perPeer+k)*m.slotBytes, n)
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
	const rec = 4 + fabric.QPInfoWireBytes
	nq := len(peers) * o.qps
	blob := make([]byte, 0, nq*rec)
	m.all, m.perPeer = make([]fabric.QP, 0, nq), o.qps
	psn := make([]fabric.PSN, 0, nq) // our first PSN per queue pair
	for pi, peer := range peers {
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
			m.all = append(m.all, qp)
			info := qp.Info()
			info.PSN = fabric.PSN(th.Rand().IntN(1 << 24))
			psn = append(psn, info.PSN)
			s := m.slot(pi, k, m.slotBytes)
			info.Addr, info.RKey, info.Bytes = s.Addr, m.mr.RKey(), uint64(m.slotBytes)
			if o.spread > 0 {
				info.Addr, info.Bytes = m.mr.Addr(), uint64(m.mr.Len())
			}
			if pi == 0 {
				m.local0 = append(m.local0, info)
			}
			enc, _ := info.MarshalBinary()
			blob = binary.BigEndian.AppendUint32(blob, uint32(peer))
			blob = append(blob, enc...)
		}
	}
	all, err := n.OOB().AllGather("perftest-mesh", blob)
	if err != nil {
		return nil, err
	}
	m.remote = make([]peerQP, nq)
	var mine []fabric.QPInfo
	for pi, peer := range peers {
		mine, err = offeredTo(mine[:0], all[peer], n.ID(), peer, o.qps)
		if err != nil {
			return nil, err
		}
		if len(mine) != o.qps {
			return nil, fmt.Errorf("perftest: node %d offered %d queue pairs to node %d, want %d (do both run the same -q?)",
				peer, len(mine), n.ID(), o.qps)
		}
		if pi == 0 {
			m.remote0 = append([]fabric.QPInfo(nil), mine...)
		}
		for k, info := range mine {
			m.remote[pi*o.qps+k] = peerQP{Addr: info.Addr, RKey: info.RKey, QPN: info.QPN}
		}
		if o.typ == fabric.UD {
			addr := mine[0].Address()
			addr.SL = o.sl
			ah, err := m.pd.CreateAH(addr)
			if err != nil {
				return nil, err
			}
			m.ahs = append(m.ahs, ah)
		}
		for k, qp := range m.all[pi*o.qps : (pi+1)*o.qps] {
			if err := connect(qp, psn[pi*o.qps+k], mine[k], o.typ, o.sl, o.path); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// offeredTo appends to mine the queue pairs peer offered to node me in its
// blob (records of a node id and a QPInfo). A peer whose peers are every
// other node in order (the all-to-all and pairwise tests) lists me's qps
// records at a known place, which is tried first, so that a mesh of n
// nodes decodes in O(n) per node; otherwise the whole blob is scanned.
func offeredTo(mine []fabric.QPInfo, b []byte, me, peer, qps int) ([]fabric.QPInfo, error) {
	const rec = 4 + fabric.QPInfoWireBytes
	at := me
	if me > peer {
		at--
	}
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
	if len(m.local0) > 0 {
		s.Local, s.Remote = m.local0, m.remote0
	}
	return s
}

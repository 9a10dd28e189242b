package algos

import (
	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// OpenMQXRC opens an MQ/SR+xrc endpoint, our variant of MQ/SR+srq over
// XRC (extended reliable connections): the endpoint's receive pool is an
// XRC shared receive queue of an XRC domain of its own, its receives
// complete in the endpoint's receive CQ, and each peer reaches it through
// an XRC_SEND (initiator) queue pair of the peer's, connected to an
// XRC_RECV (target) queue pair of ours that delivers into the queue the
// sender names (SendWR.RemoteSRQN). Credit, pool and shares are
// MQ/SR+srq's (OpenMQSRQ); the credit words are written over the
// initiators too (an RDMA Write on XRC also names an SRQ of the target's
// domain, and consumes no receive).
//
// Queue pairs: the endpoint is one thread's, and sends from its own
// initiator per peer; sharing one initiator per peer node among the node's
// threads (the use XRC is made for: one connection per pair of nodes for
// every receiving thread of the remote node) would put every thread's
// sends, and the polling of their completions, behind a lock of the node,
// which the ME designs exist to avoid. So the endpoint holds n initiators
// and the n targets of its peers' initiators: 2n queue pairs where
// MQ/SR+srq holds n (docs/architecture.md says what sharing would give).
func OpenMQXRC(th fabric.Thread, cfg Config) (Endpoint, error) {
	return openMQ(th, cfg, false, false, &srqShare{xrc: true})
}

// openXRCPeer creates the initiator to node j and the target of node j's
// initiator to us, and returns what node j needs: the target and our
// credit word (with the PSN our initiator sends from), then the initiator
// and our SRQ's number (in QKey).
func (e *mqsr) openXRCPeer(j, sqDepth int) ([]byte, error) {
	ini, err := e.pd.CreateQP(fabric.QPInit{Type: fabric.XRCSend, SendCQ: e.scq,
		Caps: fabric.QPCaps{MaxSendWR: sqDepth, MaxInline: HeaderBytes}})
	if err != nil {
		return nil, err
	}
	e.own.qp(ini)
	tgt, err := e.pd.CreateQP(fabric.QPInit{Type: fabric.XRCRecv, XRCD: e.sh.xrcd})
	if err != nil {
		return nil, err
	}
	e.own.qp(tgt)
	if err := ini.Modify(fabric.StateInit, fabric.QPAttr{Access: fabric.AccessLocalWrite}); err != nil {
		return nil, err
	}
	if err := tgt.Modify(fabric.StateInit, fabric.QPAttr{Access: fabric.AccessRemoteWrite | fabric.AccessLocalWrite}); err != nil {
		return nil, err
	}
	e.qps = append(e.qps, ini)
	e.sh.tgts = append(e.sh.tgts, tgt)
	e.sh.srcOf[tgt.QPN()] = j
	e.info.QPs++ // the targets; openMQ's setup counts the initiators
	credit := tgt.Info()
	credit.PSN = rcPSN(e.me, j)
	credit.Addr, credit.RKey, credit.Bytes = e.mr.Addr()+uint64(e.creditOff+8*j), e.mr.RKey(), 8
	src := ini.Info()
	src.QKey = e.sh.srq.Number()
	var blob []byte
	for _, info := range []fabric.QPInfo{credit, src, {}} {
		enc, _ := info.MarshalBinary()
		blob = append(blob, enc...)
	}
	return blob, nil
}

// connectXRC connects our initiator to node j's target (e.remote[j]) and
// our target to node j's initiator (e.ring[j]), which sends from the PSN
// node j announced with its target.
func (e *mqsr) connectXRC(j int) error {
	if err := connectRC(e.qps[j], e.remote[j], rcPSN(e.me, j), 1, e.cfg.SL); err != nil {
		return err
	}
	src := e.ring[j]
	src.PSN = e.remote[j].PSN
	return connectRC(e.sh.tgts[j], src, rcPSN(e.me, j), 1, e.cfg.SL)
}

// remoteSRQN is the SRQ number our requests to node d name: its
// endpoint's XRC SRQ (MQ/SR+xrc), else 0 (ignored by RC).
func (e *mqsr) remoteSRQN(d int) uint32 {
	if e.sh == nil || !e.sh.xrc {
		return 0
	}
	return e.ring[d].QKey
}

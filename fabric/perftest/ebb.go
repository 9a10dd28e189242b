package perftest

import (
	"encoding/binary"
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// ebb measures effective bisection bandwidth, the metric of Hoefler,
// Schneider and Lumsdaine ("Multistage switches are not crossbars",
// IEEE Cluster 2008): the nodes are split into random pairs, both nodes of
// every pair send Size bytes to each other at once, and the bandwidth of
// every direction is recorded; over Iters such random bisections, the mean
// per-direction bandwidth as a fraction of what one pair gets alone is the
// effective bisection bandwidth. A crossbar gives 1; a statically routed
// multistage network gives less wherever two flows of a bisection share a
// link.
//
// It runs over one UD queue pair per node, datagrams of the port's MTU
// (so that adaptive routing, where the fabric has it, may spread every
// packet), and starts with a reference: node 0 and node 1 exchange Size
// bytes alone. Patterns are drawn by node 0 from its thread's random
// source (so from the run's seed) and shared out of band. An odd node
// count leaves one node out of each pattern.
func ebb(th fabric.Thread, nodes int, cfg *Config) (*nodeResult, error) {
	n := th.Node()
	me := n.ID()
	dev := n.Device()
	chunk := min(cfg.Size, dev.Attr().MTU)
	if chunk < 1 {
		return nil, fmt.Errorf("%w: ebb: the port's MTU is %d", ErrConfig, dev.Attr().MTU)
	}
	msgs := (cfg.Size + chunk - 1) / chunk
	e, err := newEBBNode(th, cfg, chunk)
	if err != nil {
		return nil, err
	}
	// Node 0 draws every pattern; the others take them from it.
	var blob []byte
	if me == 0 {
		for p := 0; p < cfg.Iters; p++ {
			for _, v := range th.Rand().Perm(nodes) {
				blob = binary.BigEndian.AppendUint32(blob, uint32(v))
			}
		}
	}
	all, err := n.OOB().AllGather("ebb-patterns", blob)
	if err != nil {
		return nil, err
	}
	if len(all[0]) != 4*nodes*cfg.Iters {
		return nil, fmt.Errorf("perftest: ebb: node 0 sent %d bytes of patterns, want %d", len(all[0]), 4*nodes*cfg.Iters)
	}
	partner := func(p int) int { // -1: left out
		perm := all[0][4*nodes*p:]
		for i := 0; i+1 < nodes; i += 2 {
			a, b := int(binary.BigEndian.Uint32(perm[4*i:])), int(binary.BigEndian.Uint32(perm[4*i+4:]))
			switch me {
			case a:
				return b
			case b:
				return a
			}
		}
		return -1
	}
	r := &nodeResult{ok: true, start: th.Now()}
	if r.ebbRef, err = e.reference(th, "ebb-ref", msgs); err != nil {
		return nil, err
	}
	for p := 0; p < cfg.Iters; p++ {
		peer := partner(p)
		d, err := e.exchange(th, fmt.Sprintf("ebb-%d", p), peer, peer, msgs)
		if err != nil {
			return nil, err
		}
		if peer >= 0 {
			r.ebbRates = append(r.ebbRates, float64(cfg.Size)*8/d.Seconds()/1e9)
		}
	}
	r.end = th.Now()
	r.bytes = int64(len(r.ebbRates)) * int64(cfg.Size)
	r.msgs = int64(len(r.ebbRates) * msgs)
	return r, n.OOB().Barrier("ebb-done")
}

// ebbNode is one node's UD queue pair, buffers and address handles.
type ebbNode struct {
	node     fabric.Node
	cfg      *Config
	chunk    int
	pd       fabric.PD
	scq, rcq fabric.CQ
	qp       fabric.QP
	mr       fabric.MR
	peers    []fabric.QPInfo // every node's queue pair
	ahs      []fabric.AH     // by node, made on first use
	wcs      []fabric.WC
	recvs    []fabric.RecvWR
	onBoth   []fabric.Waitable
}

func newEBBNode(th fabric.Thread, cfg *Config, chunk int) (*ebbNode, error) {
	n := th.Node()
	e := &ebbNode{node: n, cfg: cfg, chunk: chunk, wcs: make([]fabric.WC, 64)}
	var err error
	if e.pd, err = n.Device().AllocPD(); err != nil {
		return nil, err
	}
	if e.scq, err = n.Device().CreateCQ(cfg.TxDepth); err != nil {
		return nil, err
	}
	if e.rcq, err = n.Device().CreateCQ(cfg.RxDepth); err != nil {
		return nil, err
	}
	e.onBoth = []fabric.Waitable{e.scq, e.rcq}
	// Slot 0 is the send buffer; then one slot per posted receive.
	slot := chunk + fabric.GRHBytes
	if e.mr, err = e.pd.RegMR((cfg.RxDepth+1)*slot, fabric.AccessLocalWrite); err != nil {
		return nil, err
	}
	if e.qp, err = e.pd.CreateQP(fabric.QPInit{Type: fabric.UD, SendCQ: e.scq, RecvCQ: e.rcq,
		Caps: fabric.QPCaps{MaxSendWR: cfg.TxDepth, MaxRecvWR: cfg.RxDepth}}); err != nil {
		return nil, err
	}
	for _, st := range []fabric.QPState{fabric.StateInit, fabric.StateRTR, fabric.StateRTS} {
		if err := e.qp.Modify(st, fabric.QPAttr{QKey: qkey}); err != nil {
			return nil, err
		}
	}
	for i := 0; i < cfg.RxDepth; i++ {
		e.recvs = append(e.recvs, fabric.RecvWR{ID: uint64(i), Local: e.mr.SGE((i+1)*slot, slot)})
	}
	if _, err := e.qp.PostRecv(e.recvs); err != nil {
		return nil, err
	}
	enc, _ := e.qp.Info().MarshalBinary()
	all, err := n.OOB().AllGather("ebb-qps", enc)
	if err != nil {
		return nil, err
	}
	for i, b := range all {
		var info fabric.QPInfo
		if err := info.UnmarshalBinary(b); err != nil {
			return nil, fmt.Errorf("perftest: ebb: node %d's queue pair: %w", i, err)
		}
		e.peers = append(e.peers, info)
	}
	e.ahs = make([]fabric.AH, len(all))
	return e, nil
}

// reference is the bandwidth of one pair alone, Gb/s: nodes 0 and 1
// exchange Size bytes while the others wait at the barrier (0 on every
// node but those two).
func (e *ebbNode) reference(th fabric.Thread, key string, msgs int) (float64, error) {
	peer := -1
	if me := e.node.ID(); me < 2 {
		peer = me ^ 1
	}
	took, err := e.exchange(th, key, peer, peer, msgs)
	if err != nil || peer < 0 {
		return 0, err
	}
	return float64(e.cfg.Size) * 8 / took.Seconds() / 1e9, nil
}

// exchange waits for every node at a barrier, then sends msgs datagrams
// to node to while receiving as many (from node from: a pair's partner
// is both), and returns how long receiving them took (0 when to is -1:
// the node only takes part in the barrier).
func (e *ebbNode) exchange(th fabric.Thread, key string, to, from, msgs int) (fabric.Duration, error) {
	if err := e.node.OOB().Barrier(key); err != nil {
		return 0, err
	}
	if to < 0 {
		return 0, nil
	}
	peer := to
	if e.ahs[peer] == nil {
		addr := e.peers[peer].Address()
		addr.SL = e.cfg.SL
		ah, err := e.pd.CreateAH(addr)
		if err != nil {
			return 0, err
		}
		e.ahs[peer] = ah
	}
	start := th.Now()
	last := start
	sent, acked, got := 0, 0, 0
	var end fabric.Time
	for acked < msgs || got < msgs {
		for sent < msgs && sent-acked < e.cfg.TxDepth {
			wr := fabric.SendWR{ID: uint64(sent), Op: fabric.OpSend, Local: e.mr.SGE(0, e.chunk),
				AH: e.ahs[peer], RemoteQPN: e.peers[peer].QPN, QKey: qkey}
			if (sent+1)%e.cfg.CQMod == 0 || sent+1 == msgs {
				wr.Flags |= fabric.Signaled
			}
			if _, err := e.qp.PostSend([]fabric.SendWR{wr}); err != nil {
				return 0, err
			}
			sent++
		}
		progress := false
		k, err := e.scq.Poll(e.wcs)
		if err != nil {
			return 0, err
		}
		for _, wc := range e.wcs[:k] {
			if wc.Status != fabric.StatusSuccess {
				return 0, &fabric.CompletionError{WC: wc, Node: e.node.ID()}
			}
			acked = int(wc.ID) + 1
			progress = true
		}
		k, err = e.rcq.Poll(e.wcs)
		if err != nil {
			return 0, err
		}
		for _, wc := range e.wcs[:k] {
			if wc.Status != fabric.StatusSuccess {
				return 0, &fabric.CompletionError{WC: wc, Node: e.node.ID()}
			}
			got++
			if _, err := e.qp.PostRecv(e.recvs[wc.ID : wc.ID+1]); err != nil {
				return 0, err
			}
			progress = true
		}
		if got == msgs && end == 0 {
			end = th.Now()
		}
		now := th.Now()
		if progress {
			last = now
			continue
		}
		if now.Sub(last) > stall {
			return 0, fmt.Errorf("perftest: %s: node %d received %d of %d datagrams from node %d and %d of its %d sends to node %d completed in %v; a datagram that finds no receive is lost: raise -r (now %d)",
				e.cfg.Test, e.node.ID(), got, msgs, from, acked, msgs, to, stall, e.cfg.RxDepth)
		}
		th.Wait(last.Add(stall+1), e.onBoth...)
	}
	return end.Sub(start), nil
}

// summarizeEBB fills the ebb fields: the mean and lowest of every
// direction's bandwidth, and their mean over the reference pair's.
func summarizeEBB(out *Result, res []nodeResult) {
	var sum float64
	k := 0
	out.EBBMinGbps = 0
	for _, r := range res {
		if r.ebbRef > 0 {
			out.EBBPairGbps = max(out.EBBPairGbps, r.ebbRef)
		}
		for _, v := range r.ebbRates {
			if k == 0 || v < out.EBBMinGbps {
				out.EBBMinGbps = v
			}
			sum += v
			k++
		}
	}
	if k > 0 {
		out.BWAvgGbps = sum / float64(k)
		out.BWPeakGbps = out.BWAvgGbps
	}
	if out.EBBPairGbps > 0 {
		out.EBB = out.BWAvgGbps / out.EBBPairGbps
	}
}

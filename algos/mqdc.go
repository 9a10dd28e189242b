package algos

import (
	"encoding/binary"
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// The MQ designs over the Dynamically Connected transport (DC): an
// endpoint sends through a small pool of DC initiators (DCIs), each of
// which reaches any node's DC target (DCT) by naming it in the request,
// and receives through one DCT of its own on a shared receive queue. A
// node running t endpoints holds t x (DCIs + 1) queue pairs, whatever the
// cluster's size, where the RC designs hold t x n.
//
// A DCT's receive completions name the DCT, not the sender, so the
// source of a message comes from the message itself: MQ/SR+dc reads it
// from the header every message carries (its source node and, with the
// Depleted flag, the end of its stream), MQ/WR+dc from the immediate of
// its RDMA Write (source and slot).
//
// Choosing a DCI (dcPool.pick). A DCI that changes target waits until its
// earlier requests are acknowledged and then pays a connect round trip
// (docs/model.md, DC). The pool amortises that the way UCX's "dcs" policy
// does: a destination with requests outstanding keeps the DCI they went
// through, so its requests stream on one connection, and stay in order
// (requests on two DCIs could overtake each other, and a source's
// Depleted message must be its last); a destination a DCI was last
// connected to goes on that DCI; any other takes an idle DCI (nothing
// outstanding: it connects without a drain), the least recently used,
// and only when every DCI is busy the least loaded one, behind whose
// requests it reconnects. The endpoint does not reorder its messages to batch them
// per target: a shuffle's sender hands out full buffers in whatever order
// its tuples fill them, and holding some back would hold their send
// buffers. Every request on a DCI is signaled, so that the endpoint knows
// when a DCI is idle (credit writes and notices too, which the RC designs
// signal one in 16).

// dcInitiators is the most DCIs an endpoint sends through (fewer when
// the cluster has fewer nodes: one per destination then never reconnects
// once each has its target).
const dcInitiators = 4

// dcPool is an endpoint's DC queue pairs and how its DCIs are chosen.
type dcPool struct {
	srq   fabric.SRQ     // MQ/WR+dc's (zero-length receives of writes with immediate); MQ/SR+dc's is sh.srq
	dct   fabric.QP      // the endpoint's DCT
	key   uint64         // its DC access key
	dcis  []fabric.QP    // the DCIs
	of    map[uint32]int // DCI number -> index
	busy  []int          // per DCI: requests posted and not yet completed
	dests [][]int        // per DCI: the destinations of those requests, oldest first (a DCI completes in order)
	to    []int          // per DCI: the destination of its last request, -1 before any
	pend  []int          // per destination: requests to it posted and not yet completed
	on    []int          // per destination: the DCI those go through
	last  []uint64       // per DCI: when it was last chosen (a count of choices)
	picks uint64
	depth int // each DCI's send queue depth

	ah   []fabric.AH // per destination: the address handle of its DCT
	dctn []uint32    // per destination: its DCT's number
	keys []uint64    // per destination: its DCT's key
}

// OpenMQSRDC opens an MQ/SR+dc endpoint, our variant of MQ/SR+srq over
// DC: the endpoint's receive pool is a shared receive queue under its
// DCT, credited to the sources in shares as MQ/SR+srq's (OpenMQSRQ), and
// it sends, and writes its credit words, through its DCIs (see dcPool).
// A message's source is the one its header names.
func OpenMQSRDC(th fabric.Thread, cfg Config) (Endpoint, error) {
	return openMQEndpoint(th, cfg, &mqsr{notify: cfg.Notify, sh: &srqShare{}, dc: &dcPool{}})
}

// OpenMQWRDC opens an MQ/WR+dc endpoint, our variant of MQ/WR+cw over DC:
// the sender writes each buffer into its slot of the receiver's ring
// (slots per source in ring order, credit counting those released in
// that order, as MQ/WR+cw) through its DCIs. With the poll-CQ
// notification (the default) the write carries an immediate that names
// the source and the slot, source x Buffers + slot, since the receive it
// completes, taken from the DCT's shared receive queue of n x Buffers
// zero-length receives, names the DCT; the poll-buffers and poll-queue
// notifications are MQ/WR+cw's (their notice rings are per source) and
// consume no receives.
func OpenMQWRDC(th fabric.Thread, cfg Config) (Endpoint, error) {
	return openMQEndpoint(th, cfg, &mqsr{write: true, notify: cfg.Notify, dc: &dcPool{}})
}

// dcLever is what a DC endpoint asks of its DCIs as Buffers moves: a
// send queue for every message the endpoint may have in flight to all
// destinations, with their notices and credit writes (all signaled),
// and, for MQ/WR+dc's poll-CQ variant, n x Buffers receives in the DCT's
// shared receive queue.
func (e *mqsr) dcLever(l lever) lever {
	n, threads, what := e.n, e.cfg.Threads, e.design+"'s DCI"
	recvs := e.write && e.notify == NotifyCQ
	l.ask = func(v int) []queueAsk {
		b := v * threads
		send := 3*n*b + 4*n + 64
		q := queueAsk{what: what, typ: fabric.DCI, inline: HeaderBytes, send: send, least: 2*b + 2*creditSignalEvery + 8}
		if recvs {
			q.recv = n * b
		}
		return []queueAsk{q}
	}
	return l
}

// openDC creates the endpoint's DCT (on MQ/SR+dc's pool, or for MQ/WR+dc
// on a shared receive queue of its own) and its DCIs, each with a send
// queue of depth requests.
func (e *mqsr) openDC(depth int) error {
	p := e.dc
	srq := fabric.SRQ(nil)
	if e.sh != nil {
		srq = e.sh.srq
	} else {
		pool := 1
		if e.notify == NotifyCQ {
			pool = e.n * e.cfg.Buffers
		}
		s, err := e.pd.CreateSRQ(fabric.SRQInit{MaxWR: pool, MaxSGE: 1})
		if err != nil {
			return err
		}
		e.own.srq(s)
		p.srq, srq = s, s
		if e.notify == NotifyCQ {
			for k := 0; k < pool; k++ {
				if err := e.postDCRecv(); err != nil {
					return err
				}
			}
		}
	}
	p.key = uint64(uint32(mix(uint64(e.me)<<32 | uint64(e.cfg.Tag)<<8 | 0xdc)))
	dct, err := e.pd.CreateQP(fabric.QPInit{Type: fabric.DCT, RecvCQ: e.rcq, SRQ: srq, DCKey: p.key})
	if err != nil {
		return err
	}
	e.own.qp(dct)
	p.dct = dct
	if err := dct.Modify(fabric.StateInit, fabric.QPAttr{Access: fabric.AccessRemoteWrite | fabric.AccessLocalWrite}); err != nil {
		return err
	}
	// A DC queue pair's service level is the one its RTR names (its
	// responses' and connects' lane; a DCI's requests take it too).
	sl := fabric.Address{SL: e.cfg.SL}
	if err := dct.Modify(fabric.StateRTR, fabric.QPAttr{Dest: sl, MinRNRTimer: 1, MaxDestRdAtomic: 1}); err != nil {
		return err
	}
	k := min(e.n, dcInitiators)
	p.of, p.depth = make(map[uint32]int, k), depth
	p.pend, p.on = make([]int, e.n), make([]int, e.n)
	for i := 0; i < k; i++ {
		if err := e.openDCI(i); err != nil {
			return err
		}
	}
	p.ah, p.dctn, p.keys = make([]fabric.AH, e.n), make([]uint32, e.n), make([]uint64, e.n)
	e.info.QPs += k + 1
	e.sentWC = p.completed
	return nil
}

// openDCI creates DCI i and moves it to RTS.
func (e *mqsr) openDCI(i int) error {
	p := e.dc
	q, err := e.pd.CreateQP(fabric.QPInit{Type: fabric.DCI, SendCQ: e.scq,
		Caps: fabric.QPCaps{MaxSendWR: p.depth, MaxInline: HeaderBytes}})
	if err != nil {
		return err
	}
	e.own.qp(q)
	if err := q.Modify(fabric.StateInit, fabric.QPAttr{}); err != nil {
		return err
	}
	if err := q.Modify(fabric.StateRTR, fabric.QPAttr{Dest: fabric.Address{SL: e.cfg.SL}}); err != nil {
		return err
	}
	if err := q.Modify(fabric.StateRTS, fabric.QPAttr{SendPSN: rcPSN(e.me, i), Timeout: 14, RetryCnt: 7, RNRRetry: 7, MaxRdAtomic: 1}); err != nil {
		return err
	}
	p.dcis = append(p.dcis, q)
	p.of[q.QPN()] = i
	p.busy, p.to, p.last, p.dests = append(p.busy, 0), append(p.to, -1), append(p.last, 0), append(p.dests, nil)
	return nil
}

// postDCRecv posts one zero-length receive to MQ/WR+dc's shared receive
// queue (a write with immediate consumes one).
func (e *mqsr) postDCRecv() error {
	e.rwr[0] = fabric.RecvWR{}
	_, err := e.dc.srq.PostRecv(e.rwr[:])
	return err
}

// openDCPeer sets up both directions' credit with node j and returns
// what node j needs to know (our DCT, with its key in QKey, and the
// credit word, ring and notice ring that are node j's).
func (e *mqsr) openDCPeer(j, b, msg int) ([]byte, error) {
	if e.sh != nil {
		if err := e.shareCredit(j); err != nil {
			return nil, err
		}
	} else if err := e.startCredit(j, b); err != nil {
		return nil, err
	}
	return e.peerInfo(j, b, msg, e.dc.dct)
}

// connectDC makes the address handle of node j's DCT (e.remote[j], with
// its key in QKey).
func (e *mqsr) connectDC(j int) error {
	dest := e.remote[j].Address()
	dest.SL = e.cfg.SL
	ah, err := e.pd.CreateAH(dest)
	if err != nil {
		return err
	}
	e.own.ah(ah)
	e.dc.ah[j], e.dc.dctn[j], e.dc.keys[j] = ah, e.remote[j].QPN, uint64(e.remote[j].QKey)
	return nil
}

// pick chooses the DCI for requests to destination d (see the policy at
// the top of this file).
func (p *dcPool) pick(d int) int {
	best := -1
	if p.pend[d] > 0 {
		best = p.on[d]
	}
	for k, to := range p.to {
		if best < 0 && to == d {
			best = k
		}
	}
	if best < 0 {
		for k := range p.dcis {
			if p.busy[k] == 0 && (best < 0 || p.last[k] < p.last[best]) {
				best = k
			}
		}
	}
	if best < 0 {
		for k := range p.dcis {
			if best < 0 || p.busy[k] < p.busy[best] || p.busy[k] == p.busy[best] && p.last[k] < p.last[best] {
				best = k
			}
		}
	}
	p.picks++
	p.last[best], p.to[best], p.on[d] = p.picks, d, best
	return best
}

// posted accounts got requests to d posted on DCI k.
func (p *dcPool) posted(k, d, got int) {
	p.busy[k] += got
	p.pend[d] += got
	for ; got > 0; got-- {
		p.dests[k] = append(p.dests[k], d)
	}
}

// completed accounts a send completion of one of the DCIs: its oldest
// request.
func (p *dcPool) completed(wc fabric.WC) {
	if k, ok := p.of[wc.QPN]; ok && p.busy[k] > 0 {
		p.busy[k]--
		d := p.dests[k][0]
		p.dests[k] = p.dests[k][1:]
		p.pend[d]--
	}
}

// postDC posts wrs to destination d's DCT through a DCI of the pool,
// every one signaled. A DCI without room for them (its completions not
// yet reaped) has them reaped first.
func (e *mqsr) postDC(d int, wrs []fabric.SendWR) error {
	p := e.dc
	k := p.pick(d)
	if p.busy[k]+len(wrs) > p.depth {
		if _, err := e.reap(); err != nil {
			return err
		}
		if p.busy[k]+len(wrs) > p.depth {
			return fmt.Errorf("%w: %s's DCI %d holds %d requests of %d", fabric.ErrQueueFull, e.design, k, p.busy[k], p.depth)
		}
	}
	for i := range wrs {
		wrs[i].AH, wrs[i].RemoteQPN, wrs[i].DCKey = p.ah[d], p.dctn[d], p.keys[d]
		if wrs[i].Flags&fabric.Signaled == 0 {
			wrs[i].Flags |= fabric.Signaled
			e.signaled++
		}
	}
	got, err := p.dcis[k].PostSend(wrs)
	p.posted(k, d, got)
	return err
}

// receivedDC handles a receive completion on the endpoint's DCT: for
// MQ/SR+dc its slot of the pool (wr_id) holds a message whose header
// names the source; for MQ/WR+dc the immediate names source and slot,
// and the zero-length receive it took is posted again.
func (e *mqsr) receivedDC(wc fabric.WC) error {
	if e.sh != nil {
		if wc.ID >= uint64(e.sh.pool) || wc.Bytes < HeaderBytes {
			return fmt.Errorf("%w: receive completion of %d bytes in slot %d on the DCT", ErrBadMessage, wc.Bytes, wc.ID)
		}
		off := e.recvOff + int(wc.ID)*e.cfg.MsgBytes
		src := int(binary.LittleEndian.Uint16(e.mr.Bytes()[off+2:])) // the header's source (header.put)
		if src >= e.n {
			return fmt.Errorf("%w: message in slot %d claims to be from node %d of %d", ErrBadMessage, wc.ID, src, e.n)
		}
		e.sh.recvd[src]++
		return e.deliver(src, int(wc.ID), wc.Bytes)
	}
	b := uint32(e.cfg.Buffers)
	if !wc.HasImm || wc.Imm >= uint32(e.n)*b {
		return fmt.Errorf("%w: write on the DCT names source and slot %d (immediate %v), not one of %d x %d", ErrBadMessage, wc.Imm, wc.HasImm, e.n, b)
	}
	if err := e.postDCRecv(); err != nil { // the next write's receive
		return err
	}
	src := int(wc.Imm / b)
	return e.deliver(src, int(wc.Imm), wc.Bytes)
}

// awaitDC is a DC sender's wait for credit: on the credit words and the
// send completions, which it reaps, so that a request that failed (a DCI
// that could not connect, say) ends the wait with its error at once
// rather than at the deadline, and completed requests free their DCIs.
func (e *mqsr) awaitDC(th fabric.Thread, deadline fabric.Time, what waiting) error {
	if err := e.waitFor(th, deadline, deadline, what, e.mr, e.scq); err != nil {
		return err
	}
	_, err := e.reap()
	return err
}

// dcReceiving is r, GetData's progress, that also reaps the endpoint's
// send completions and wakes on them: a DCI request that failed (the
// credit writes of this endpoint's receives go through its DCIs, and a
// sender may have nothing left to wait for) ends the wait with its error
// rather than leaving every receiver to run out its deadline.
func (e *mqsr) dcReceiving(r receiving) receiving {
	inner := r.progress
	r.on = append(r.on[:len(r.on):len(r.on)], e.scq)
	r.progress = func(th fabric.Thread) (int, error) {
		if _, err := e.reap(); err != nil {
			return 0, err
		}
		return inner(th)
	}
	return r
}

// flushFrom staggers the final flush (Shuffle): every sending thread of
// the cluster would otherwise flush to the groups in the same order, and
// since a thread's DCIs reach only a few targets at a time, all of them
// would send to the same few nodes at once while the others' links idle.
// Node i's endpoint of tag t starts at group i plus the fraction of the
// groups that t's van der Corput number says (0, 1/2, 1/4, 3/4, 1/8, ...),
// so that the node's threads start far apart whatever their number.
// The other MQ designs flush in group order (0).
func (e *mqsr) flushFrom(groups int) int {
	if e.dc == nil || groups == 0 {
		return 0
	}
	frac, unit := 0.0, 0.5
	for t := e.cfg.Tag; t > 0; t >>= 1 {
		if t&1 != 0 {
			frac += unit
		}
		unit /= 2
	}
	return (e.me + int(frac*float64(groups))) % groups
}

package sim

import (
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// sqe is a send-queue entry.
type sqe struct {
	wr      fabric.SendWR
	buf     []byte // local bytes (source, or destination for a read)
	mr      *mr    // region of buf (nil for inline or empty)
	length  int
	npkts   int
	psn     fabric.PSN // first PSN, once assigned
	destQPN uint32     // UD, DCI: destination QPN (beside psn: no padding, TestQPSizes)
	rdGot   int        // read responses received
	rdGap   bool       // a missing read response was detected and the read asked for again
	rdHeld  bool       // an RDMA Read whose state the NIC holds (wrCache)
	resent  bool       // rewound into (goBack): the next packet reads its payload again from its own offset (fetchBytes)
	bad     fabric.Status
	done    bool
	procAt  fabric.Time // when the NIC has processed this request and, unless inline, its payload's first byte is on the NIC
	destN   int         // UD, DCI: destination node
	ck      ckState     // the verbs-usage checker's record (checker.go)
}

// status is e's error as the NIC finds it when it reads the request or
// its buffer: the one found at the post, or a local protection error when
// the region was deregistered since (the NIC checks the key at each access;
// a request whose data has all been read completes normally).
func (e *sqe) status() fabric.Status {
	if e.bad == fabric.StatusSuccess && e.mr != nil && e.mr.Dead() {
		return fabric.StatusLocalProtection
	}
	return e.bad
}

// ringSize is the length of a work-request ring holding n requests: the
// next power of two, so that a request's slot is its index masked, not
// divided (a 64-bit division per access was a measurable part of each
// packet's cost). How many requests a queue accepts is still n (qp.caps).
func ringSize(n int) int {
	s := 1
	for s < n {
		s <<= 1
	}
	return s
}

// reserved returns ring with room for n more requests after those of
// indices [from, to): ring itself when it has it, else a ring of
// ringSize(to-from+n) entries with those requests moved to their slots in
// it. Rings start empty and grow as requests are posted, never beyond
// ringSize of the queue's depth (posts beyond it are refused first), so a
// cluster of thousands of queue pairs, most with few requests in flight,
// holds little per queue pair; a batch of posts grows a ring once.
func reserved[E any](ring []E, from, to uint64, n int) []E {
	need := int(to-from) + n
	if need <= len(ring) {
		return ring
	}
	next := make([]E, ringSize(need))
	for i := from; i < to; i++ {
		next[i&uint64(len(next)-1)] = ring[i&uint64(len(ring)-1)]
	}
	return next
}

// sqAt is the send-queue slot of request index i.
func (q *qp) sqAt(i uint64) *sqe { return &q.sq[i&uint64(len(q.sq)-1)] }

// The receive ring keeps receives [rqFree, rqEnd()) as entries; the
// rqRep receives posted after them, up to rqTail, repeat the last entry
// (the template) exactly: a queue pair that reposts the same buffer (as
// perftest and many servers do) keeps one entry for all of them. While
// repeats follow it, the template has not been taken (rqHead < rqEnd()),
// so whatever a take or a release changes in an entry is changed in an
// entry of that receive's own (rqAt unfolds repeats first).

// rqEnd is the index after the ring's last entry.
func (q *qp) rqEnd() uint64 { return q.rqTail - uint64(q.rqRep) }

// rqPeek is receive i as posted, to read only: for a repeat, the entry it
// repeats.
func (q *qp) rqPeek(i uint64) *rqe {
	if end := q.rqEnd(); i >= end {
		i = end - 1
	}
	return &q.rq[i&uint64(len(q.rq)-1)]
}

// rqAt is the receive-queue slot of request index i, an entry of its own
// that the caller may change: repeats up to it become entries, and so
// does the one after it if more follow (the template stays untaken).
func (q *qp) rqAt(i uint64) *rqe {
	if q.rqRep != 0 && i+1 >= q.rqEnd() {
		q.rqUnfold(i)
	}
	return &q.rq[i&uint64(len(q.rq)-1)]
}

// rqUnfold turns repeats into entries until receive i has its own and is
// not the template of repeats after it.
func (q *qp) rqUnfold(i uint64) {
	for q.rqRep != 0 && q.rqEnd() <= i+1 {
		end := q.rqEnd()
		q.rq = reserved(q.rq, q.rqFree, end, 1)
		mask := uint64(len(q.rq) - 1)
		q.rq[end&mask] = q.rq[(end-1)&mask]
		q.rqRep--
	}
}

// rqRepeats reports whether e, about to be posted, can be kept as a repeat
// of the ring's last entry: one not taken yet, equal in every field but
// the poster (kept by the checker only). When the posters differ the
// entry's becomes severalPosters, so that a report on any of these
// receives says that one of several threads posted it instead of naming
// one that may not have.
func (q *qp) rqRepeats(e *rqe) bool {
	end := q.rqEnd()
	if end <= q.rqHead {
		return false
	}
	t := q.rqPeek(end - 1)
	const posterBits = uint64(1<<(64-rqePoster)-1) << rqePoster
	if t.id != e.id || t.n != e.n || t.mr != e.mr || t.at&^posterBits != e.at&^posterBits {
		return false
	}
	if t.poster() != e.poster() {
		t.setPoster(severalPosters)
	}
	return true
}

// rqPush appends e to the receive queue: a repeat when it repeats the
// last entry, else an entry after the repeats, unfolded.
func (q *qp) rqPush(e rqe) {
	if q.rqRepeats(&e) {
		q.rqRep++
	} else {
		q.rqUnfold(q.rqTail)
		q.rq = reserved(q.rq, q.rqFree, q.rqTail, 1)
		q.rq[q.rqTail&uint64(len(q.rq)-1)] = e
	}
	q.rqTail++
}

// taken is the receive taken for the message in progress (msgRecv). Its
// slot stays valid until its completion is polled, which recvDone queues.
func (q *qp) taken() *rqe { return q.rqAt(q.msgIdx) }

// rqe is a receive-queue entry: what the NIC needs of a posted receive
// (its id, its buffer as a region and the bytes [off, off+n) of it) and,
// for the verbs-usage checker (checker_buffers.go), two flags and the
// poster. A ring of 16 posted receives is most of an idle queue pair's
// memory, so the entry is kept at 24 bytes (TestQPSizes): the region is
// its number on the NIC (nic.region), the flags and the poster (the
// cluster's number for its thread's name, Cluster.nameID) share a word
// with the offset, and the checker's sum of the buffer is kept with the
// region's record of its posted ranges (recvRange), not here.
type rqe struct {
	id uint64
	at uint64 // the buffer's offset in its region (below rqeFlags), the flags rqeBad, rqeCkHeld, rqeCkOn, and the poster (from rqePoster up)
	n  uint32 // the buffer: bytes [off, off+n) of the region
	mr uint32 // the region's number on the NIC (mr.num); 0 for an empty buffer or one that failed its check (bad)
}

// An rqe's word at: the offset below rqeFlags (Profile.Validate keeps
// nic.max_mr_bytes at most 2^44), three flags, and from rqePoster up the
// number of the posting thread's name (17 bits; 0 for none, checker only).
const (
	rqeFlags  = 44
	rqePoster = rqeFlags + 3
)

const (
	rqeBad    = 1 << (rqeFlags + iota) // failed its check (mr is 0)
	rqeCkHeld                          // checker: counted in the region's busy count and posted receive ranges
	rqeCkOn                            // checker: the buffer is still checked (its range's sum is current)
)

func (e *rqe) off() uint64    { return e.at & (1<<rqeFlags - 1) }
func (e *rqe) poster() uint32 { return uint32(e.at >> rqePoster) }
func (e *rqe) setPoster(id uint32) {
	e.at = e.at&(1<<rqePoster-1) | uint64(id)<<rqePoster
}
func (e *rqe) has(f uint64) bool { return e.at&f != 0 }
func (e *rqe) set(f uint64, on bool) {
	if on {
		e.at |= f
	} else {
		e.at &^= f
	}
}

// region is e's buffer's region on n, the NIC of its queue (nil for an
// empty or bad buffer). A deregistered region stays findable by its
// number (nic.mrs keeps it, dead).
func (e *rqe) region(n *nic) *mr {
	if e.mr == 0 {
		return nil
	}
	return n.mrs[e.mr-1]
}

// bytes is e's buffer in m, its region, in the region's current bytes (a
// region that gets bytes of its own later needs no update here).
func (e *rqe) bytes(m *mr) []byte {
	switch {
	case m == nil:
		return nil
	case m.Dead():
		return m.freed[e.off() : e.off()+uint64(e.n)]
	}
	return m.buf[e.off() : e.off()+uint64(e.n)]
}

// broken reports whether e cannot take a message: its buffer was invalid
// at the post, or its region m has been deregistered since.
func (e *rqe) broken(m *mr) bool { return e.has(rqeBad) || m != nil && m.Dead() }

// readCtx is an RDMA Read the responder is answering.
type readCtx struct {
	mr    *mr
	buf   []byte
	psn   fabric.PSN
	npkts int
	idx   int
	at    fabric.Time // when the first byte of data is on the NIC: the request accepted, its translations found, one PCIe read round trip
	dup   bool        // answers a duplicate request again (holds no new responder resource)
}

// rxCursor is where the receive pipeline will place the rest of a
// message, as the NIC knows it when the packets arrive (for the
// translation cache; delivery itself is decided later, in order).
type rxCursor struct {
	mr   *mr
	addr uint64
}

// qp implements fabric.QP with the RC, UC and UD transports. A cluster
// of n nodes has n*(n-1) of them in an all-to-all, so the queue pair is
// kept at 384 bytes, an allocation size class (TestQPSizes,
// docs/performance.md "Scale"): counts and sizes bounded by the profile
// are 32 bits (the retry counts 8), and the flags fill the gaps between
// the wider fields.
type qp struct {
	c          *Cluster
	nic        *nic
	pd         *pd
	qpn        uint32
	typ        fabric.QPType
	state      fabric.QPState
	destroyed  bool
	inReady    bool
	scq, rcq   *cq
	caps       qpCaps
	destNode   int32
	attr       qpAttr
	unsig      int32   // unsignaled sends posted since the last signaled one (checker)
	timerOn    bool    // the local ACK timer is running (until timerAt)
	timerEv    bool    // a timer event is queued (at timerEvAt, at or before timerAt)
	nakCode    nakCode // responder (below)
	cached     bool    // its context is in the NIC's context cache (qpcache.go)
	retries    int8    // RC: transport retries left (retry_cnt, 0..7)
	rnrRetries int8    // RC: RNR retries left (rnr_retry, 0..7)
	// Responder flags (the rest of the responder is below).
	nakSent bool
	inMsg   bool // a multi-packet send or write is in progress
	msgRecv bool // msgIdx names a receive taken for the message in progress (UC: or for the next one)
	dropMsg bool // UC: dropping the rest of a message
	ucMid   bool // UC: the last packet that arrived was not the last of its message
	ackOn   bool
	mtu     int

	// Performance model.
	cache   cacheLink   // membership in the NIC's context cache (with cached)
	postLk  lockState   // serializes PostSend across threads
	recvLk  lockState   // serializes PostRecv across threads
	readyEv fabric.Time // a pending re-activation, 0 if none

	// Send queue: a ring of up to ringSize(caps.MaxSendWR) entries, grown
	// as requests are posted (reserved), indexed by counters.
	// sqFree <= sqHead <= sqTx <= sqVisible <= sqTail. The counters only
	// grow, even across RESET, so that a stale event or completion that
	// names an old counter value finds nothing to do.
	sq        []sqe
	sqFree    uint64 // oldest slot not yet released (by polling a completion)
	sqHead    uint64 // oldest entry not yet completed
	sqTx      uint64 // next entry to transmit
	sqVisible uint64 // entries whose doorbell the NIC has processed
	sqTail    uint64 // next slot to post into
	txPkt     int    // next packet of sq[sqTx]
	nextPSN   fabric.PSN
	rdOut     int32  // RDMA Reads in flight
	rdHeld    int32  // RDMA Reads whose state the NIC holds (wrCache), at most max_rd_atomic
	rqRep     uint32 // receives after the receive ring's last entry that repeat it (rqEnd)

	// RC requester reliability. (timerOn and timerEv are with the flags
	// above, and so are the retry counts left, retries and rnrRetries.)
	timerAt   fabric.Time // when the local ACK timer expires
	timerEvAt fabric.Time // when the timer event fires; events at other times are stale
	rnrUntil  fabric.Time

	// Receive queue ring: rqFree <= rqHead <= rqTail, counters that only grow.
	rq     []rqe
	rqFree uint64 // oldest slot not yet released (by polling its completion)
	rqHead uint64 // next receive to take
	rqTail uint64

	// Responder. The RDMA Write in progress writes bytes [msgAt+msgOff,
	// msgAt+msgLen) of msgMR; a send in progress writes from msgOff in the
	// receive it took (taken).
	msgIdx uint64 // receive queue index of that receive (taken)
	msgMR  *mr
	msgAt  uint64
	msgLen uint32
	msgOff uint32 // bytes of the message placed so far (a message has at most 2^31)
	ePSN   fabric.PSN
	ackPSN fabric.PSN
	rd     *readState // the RDMA Reads being answered; nil until the first arrives
	rx     *rxState   // with translation caches: where arriving payload goes; nil until then
	srq    *srq       // the shared receive queue it takes receives from, or nil (srq.go)
}

// qpCaps is what a queue pair keeps of its fabric.QPCaps (each below the
// profile's limits, which are 32-bit).
type qpCaps struct {
	MaxSendWR, MaxRecvWR, MaxInline int32
}

// qpAttr is what a queue pair keeps of its Modify attributes (the rest,
// such as the PSNs, lives in the transport state).
type qpAttr struct {
	DestQPN         uint32 // RC, UC
	QKey            uint32 // UD
	MaxDestRdAtomic int32
	MaxRdAtomic     int32
	Access          fabric.Access
	MinRNRTimer     uint8
	Timeout         uint8
	RetryCnt        uint8
	RNRRetry        uint8
	SL              uint8 // RC, UC: the path's service level (Dest.SL at RTR)
}

// readState is a responder's RDMA Reads, and the packets a queue pair
// holds ahead of a gap in its PSNs (ooo.go): a queue pair that never
// answers a read nor sees a packet overtake another (most of a large
// cluster's) does not carry it.
type readState struct {
	reads []readCtx
	head  int
	in    int // responder resources in use: new RDMA Reads not yet fully answered (max_dest_rd_atomic bounds it)
	ooo   oooState
}

// resetReads forgets every RDMA Read being answered and every packet
// held ahead of a gap.
func (q *qp) resetReads() {
	if q.rd != nil {
		q.rd.reads, q.rd.head, q.rd.in = q.rd.reads[:0], 0, 0
		q.rd.ooo.reset(q.c)
	}
}

// readsInUse is the number of responder resources q holds.
func (q *qp) readsInUse() int {
	if q.rd == nil {
		return 0
	}
	return q.rd.in
}

// readsPending reports whether q has read responses left to send.
func (q *qp) readsPending() bool { return q.rd != nil && q.rd.head < len(q.rd.reads) }

// rxState is the receive pipeline's view of where payload goes (tpt.go),
// kept only while the NIC models translation caches.
type rxState struct {
	write rxCursor // the RDMA Write in progress
	send  rxCursor // the send in progress
	seen  uint64   // receives the pipeline has assigned to arriving messages
}

var _ fabric.QP = (*qp)(nil)

func (p *pd) CreateQP(init fabric.QPInit) (fabric.QP, error) {
	c := p.c
	c.enter(ns(c.prof.Setup.CreateQPUS * 1000))
	prof := &c.prof.NIC
	if err := p.Alive(); err != nil {
		return nil, err
	}
	scq, rcq, caps, s, d, err := p.qpQueues(init)
	if err != nil {
		return nil, err
	}
	noRQ := s != nil || init.Type == fabric.XRCSend || init.Type == fabric.DCI // receives come from elsewhere, or never
	if init.Type != fabric.XRCRecv && init.Type != fabric.DCT && (caps.MaxSendWR < 1 || caps.MaxSendWR > prof.MaxQPWR || !noRQ && (caps.MaxRecvWR < 1 || caps.MaxRecvWR > prof.MaxQPWR)) {
		return nil, fmt.Errorf("%w: queue depths send %d, receive %d must be in 1..%d (nic.max_qp_wr)",
			fabric.ErrLimit, caps.MaxSendWR, caps.MaxRecvWR, prof.MaxQPWR)
	}
	maxInline := prof.MaxInlineRC
	if init.Type == fabric.UD {
		maxInline = prof.MaxInlineUD
	}
	if caps.MaxInline < 0 || caps.MaxInline > maxInline {
		return nil, fmt.Errorf("%w: max inline %d bytes outside 0..%d for %v", fabric.ErrLimit, caps.MaxInline, maxInline, init.Type)
	}
	n := p.nic
	if live := n.liveQPs; live >= prof.MaxQP {
		return nil, fmt.Errorf("%w: node %d already has %d queue pairs (nic.max_qp)", fabric.ErrLimit, n.node.id, live)
	}
	if int(n.firstQPN)+len(n.qps) >= 1<<24 {
		return nil, fmt.Errorf("%w: node %d has used every queue-pair number from %#x to the 24-bit field's end (%d created; numbers are not reused)", fabric.ErrLimit, n.node.id, n.firstQPN, len(n.qps))
	}
	q := &qp{c: c, nic: n, pd: p, qpn: n.firstQPN + uint32(len(n.qps)), typ: init.Type, scq: scq, rcq: rcq,
		caps: qpCaps{int32(caps.MaxSendWR), int32(caps.MaxRecvWR), int32(caps.MaxInline)}, mtu: c.prof.Link.MTU, srq: s}
	if s != nil {
		s.Use()
	}
	n.qps = append(n.qps, q)
	n.liveQPs++
	n.dbs.assign(q)
	if ch := c.chk; ch != nil {
		ch.attach(scq, caps.MaxSendWR, q, "send")
		ch.attach(rcq, caps.MaxRecvWR, q, "receive")
	}
	p.Use()
	scq.used()
	rcq.used()
	if d != nil {
		if n.tgts == nil {
			n.tgts = map[*qp]*xrcTarget{}
		}
		n.tgts[q] = &xrcTarget{d: d, from: map[uint64]*srq{}}
		d.Use()
	}
	if init.Type.DC() {
		n.dcCreated(q, init)
	}
	return q, nil
}

// qpQueues checks the completion queues, shared receive queue and XRC
// domain of a queue pair's arguments, and returns them with the
// capabilities to create it with (scq, rcq or both nil for the XRC types).
func (p *pd) qpQueues(init fabric.QPInit) (scq, rcq *cq, caps fabric.QPCaps, s *srq, d *xrcd, err error) {
	switch init.Type {
	case fabric.RC, fabric.UC, fabric.UD:
	case fabric.XRCSend, fabric.XRCRecv:
		scq, caps, d, err = p.xrcQueues(init)
		return scq, nil, caps, nil, d, err
	case fabric.DCI, fabric.DCT:
		return p.dcQueues(init)
	default:
		return nil, nil, caps, nil, nil, fmt.Errorf("%w: unknown QP type %v", fabric.ErrInvalidArg, init.Type)
	}
	if init.XRCD != nil {
		return nil, nil, caps, nil, nil, fmt.Errorf("%w: only XRC_RECV queue pairs are created in an XRC domain", fabric.ErrInvalidArg)
	}
	scq, ok1 := init.SendCQ.(*cq)
	rcq, ok2 := init.RecvCQ.(*cq)
	if !ok1 || !ok2 || scq == nil || rcq == nil {
		return nil, nil, caps, nil, nil, fmt.Errorf("%w: CreateQP needs a send CQ and a receive CQ of this simulator", fabric.ErrInvalidArg)
	}
	if scq.Dead() || rcq.Dead() {
		return nil, nil, caps, nil, nil, fmt.Errorf("%w: CreateQP with a destroyed CQ", fabric.ErrClosed)
	}
	caps = init.Caps
	if init.SRQ != nil {
		if s, err = p.attachable(init.SRQ); err != nil {
			return nil, nil, caps, nil, nil, err
		}
		caps.MaxRecvWR = 0 // ignored, as max_recv_wr in verbs: the shared queue's depth counts
	}
	return scq, rcq, caps, s, nil, nil
}

func (q *qp) QPN() uint32           { return q.qpn }
func (q *qp) Type() fabric.QPType   { return q.typ }
func (q *qp) State() fabric.QPState { return q.state }
func (q *qp) String() string        { return fmt.Sprintf("%v QP %#x on node %d", q.typ, q.qpn, q.nic.node.id) }

func (q *qp) Info() fabric.QPInfo {
	id := q.nic.node.id
	return fabric.QPInfo{Node: uint32(id), LID: lidOf(id), GID: gidOf(id), QPN: q.qpn, PSN: q.nextPSN, QKey: q.attr.QKey}
}

func (q *qp) Destroy() error {
	q.c.enter(0)
	if err := fabric.CheckDestroyQP(q, q.destroyed); err != nil {
		return err
	}
	if ch := q.c.chk; ch != nil {
		ch.dropAll(q)
		q.sqFree = q.sqTail
		q.freeRecvs(q.rqTail)
		q.scq.detach(int(q.caps.MaxSendWR))
		q.rcq.detach(int(q.caps.MaxRecvWR))
	}
	if q.typ == fabric.XRCRecv {
		q.freeRecvs(q.rqTail)
		q.tgt().d.Release()
		delete(q.nic.tgts, q)
	} else if q.srq != nil {
		q.freeRecvs(q.rqTail) // the receives it had taken are discarded
		q.srq.Release()
	}
	if q.typ.DC() {
		q.dcForget(true)
	}
	q.destroyed = true
	q.nic.cache.evict(q)
	q.nic.wrc.forget(q.qpn)
	q.state = fabric.StateReset
	q.timerOn = false
	q.pd.Release()
	q.scq.unused()
	q.rcq.unused()
	q.nic.qps[q.qpn-q.nic.firstQPN] = nil
	q.nic.liveQPs--
	q.nic.dbs.release(q)
	return nil
}

func (q *qp) Modify(to fabric.QPState, a fabric.QPAttr) error {
	c := q.c
	c.enter(ns(c.prof.Setup.ModifyQPUS * 1000))
	if q.destroyed {
		return fmt.Errorf("%w: %v", fabric.ErrClosed, q)
	}
	from := q.state
	bad := func(why string) error {
		return fmt.Errorf("%w: %v from %v to %v: %s", fabric.ErrBadTransition, q, from, to, why)
	}
	if why := a.Transition(q.typ, from, to, c.prof.Link.MTU, c.prof.NIC.MaxRdAtomic); why != "" {
		return bad(why)
	}
	switch to {
	case fabric.StateReset:
		q.reset()
		return nil
	case fabric.StateError:
		q.enterError("") // asked for: its flushes are no failure's consequence
		return nil
	case fabric.StateInit:
		q.attr.Access, q.attr.QKey = a.Access, a.QKey
	case fabric.StateRTR:
		if q.typ.DC() { // no destination: each request names it (DCI), or any DCI connects (DCT)
			q.mtu = a.PathMTU
			if q.mtu == 0 {
				q.mtu = c.prof.Link.MTU
			}
			q.attr.MinRNRTimer, q.attr.MaxDestRdAtomic, q.attr.SL = a.MinRNRTimer, int32(a.MaxDestRdAtomic), a.Dest.SL
		} else if q.typ != fabric.UD {
			n, err := c.resolve(a.Dest)
			if err != nil {
				return bad(err.Error())
			}
			mtu := a.PathMTU
			if mtu == 0 {
				mtu = c.prof.Link.MTU
			}
			q.destNode, q.mtu = int32(n), mtu
			q.attr.DestQPN, q.attr.MinRNRTimer, q.attr.MaxDestRdAtomic = a.Dest.QPN, a.MinRNRTimer, int32(a.MaxDestRdAtomic)
			q.attr.SL = a.Dest.SL
			q.ePSN = a.RemotePSN & fabric.MaxPSN
		}
	case fabric.StateRTS:
		q.attr.Timeout, q.attr.RetryCnt, q.attr.RNRRetry = a.Timeout, a.RetryCnt, a.RNRRetry
		q.attr.MaxRdAtomic = int32(a.MaxRdAtomic)
		if q.attr.MaxRdAtomic == 0 {
			q.attr.MaxRdAtomic = 1
		}
		q.nextPSN = a.SendPSN & fabric.MaxPSN
		q.retries, q.rnrRetries = int8(a.RetryCnt), int8(a.RNRRetry)
		c.rtsAttr(q)
	default:
		return fmt.Errorf("%w: unknown state %v", fabric.ErrInvalidArg, to)
	}
	q.state = to
	q.nic.activate(q)
	return nil
}

// reset discards every queued request without completions and forgets
// the connection's transport state. The queue counters keep growing (see
// qp), so doorbells, transmit completions and CQ entries of the old
// connection stay harmless.
func (q *qp) reset() {
	if ch := q.c.chk; ch != nil {
		ch.dropAll(q)
	}
	q.state = fabric.StateReset
	delete(q.c.qpFailures, q)
	q.nic.cache.evict(q)
	q.nic.wrc.forget(q.qpn)
	q.sqFree, q.sqHead, q.sqTx, q.sqVisible, q.txPkt = q.sqTail, q.sqTail, q.sqTail, q.sqTail, 0
	q.freeRecvs(q.rqTail)
	q.rqHead = q.rqTail
	q.rdOut, q.rdHeld = 0, 0
	q.resetReads()
	if q.rx != nil {
		*q.rx = rxState{}
	}
	q.ackOn, q.nakSent, q.nakCode, q.inMsg, q.timerOn = false, false, 0, false, false
	q.msgRecv, q.dropMsg, q.ucMid, q.rnrUntil = false, false, false, 0
	if q.typ.DC() {
		q.dcForget(false)
	}
}

// release frees the slots of the send (or receive) queue before free: a
// completion that covers them has been polled (or lost to a CQ overrun).
func (q *qp) release(free uint64, recv bool) {
	if ch := q.c.chk; ch != nil && (!recv || q.typ != fabric.XRCRecv) {
		if recv && free > q.rqFree {
			ch.release(q, q.rqFree, free, true)
		} else if !recv && free > q.sqFree {
			ch.release(q, q.sqFree, free, false)
		}
	}
	switch {
	case recv && q.typ == fabric.XRCRecv:
		q.tgtRelease(free - 1) // the checker's record is released there
		return
	case recv:
		q.freeRecvs(free)
	default:
		q.sqFree = max(q.sqFree, free)
	}
}

func (q *qp) PostSend(wrs []fabric.SendWR) (int, error) {
	c := q.c
	t := c.enter(0)
	if q.destroyed {
		return 0, fmt.Errorf("%w: %v", fabric.ErrClosed, q)
	}
	if q.typ == fabric.XRCRecv || q.typ == fabric.DCT {
		return 0, fmt.Errorf("%w: %v has no send queue", fabric.ErrInvalidArg, q)
	}
	if q.state != fabric.StateRTS && q.state != fabric.StateError {
		return 0, fmt.Errorf("%w: %v is in %v; PostSend needs RTS", fabric.ErrBadState, q, q.state)
	}
	c.acquire(&q.postLk)
	defer c.release(&q.postLk)
	if th := c.cur; th != nil {
		t = th.local
	}
	q.sq = reserved(q.sq, q.sqFree, q.sqTail, min(len(wrs), int(q.caps.MaxSendWR)-int(q.sqTail-q.sqFree)))
	n := 0
	var err error
	for ; n < len(wrs); n++ {
		if err = q.postOne(&wrs[n]); err != nil {
			break
		}
		if th := c.cur; th != nil {
			th.Busy(ns(c.prof.Host.PostSendNS))
			t = th.local
		}
	}
	switch {
	case q.state == fabric.StateError:
		q.flushSends()
	case n > 0: // one doorbell for the whole batch
		if q.nic.dbs != nil {
			t = q.nic.dbs.ring(c, q, t)
		}
		c.schedule(t.Add(q.nic.txLat), q, qpDoorbell|q.sqTail, nil)
	}
	return n, err
}

func (q *qp) postOne(wr *fabric.SendWR) error {
	if err := fabric.CheckSendSlot(q, q.sqTail-q.sqFree, int(q.caps.MaxSendWR)); err != nil {
		if ch := q.c.chk; ch != nil {
			ch.notice(QueueFull, q.nic.node.id, "PostSend", q.String(), fmt.Sprintf("PostSend on %v with all %d send slots taken (rejected: ErrQueueFull)", q, q.caps.MaxSendWR))
		}
		return err
	}
	e := sqe{wr: *wr, length: int(wr.Local.Length)}
	if err := wr.CheckOp(q.typ); err != nil {
		return err
	}
	if q.typ == fabric.UD {
		a, ok := wr.AH.(*ah)
		live := ok && a != nil && !a.Dead()
		if err := fabric.CheckUDSend(live, live && a.pd == q.pd, e.length, q.c.prof.Link.MTU, "simulator"); err != nil {
			return err
		}
		e.destN, e.destQPN = a.node, wr.RemoteQPN
	} else if q.typ == fabric.DCI {
		a, err := q.dcAH(wr.AH)
		if err != nil {
			return err
		}
		e.destN, e.destQPN = a.node, wr.RemoteQPN
	}
	if err := wr.CheckSize(q.typ, int(q.caps.MaxInline)); err != nil {
		return err
	}
	if wr.Flags&fabric.Inline != 0 {
		src := q.nic.findByAddr(wr.Local.Addr, e.length)
		if src == nil && e.length > 0 {
			e.bad = fabric.StatusLocalProtection
		} else {
			e.buf = append([]byte(nil), src...)
		}
	} else {
		need := fabric.Access(0)
		if wr.Op == fabric.OpRead {
			need = fabric.AccessLocalWrite
		}
		m, buf, ok := q.nic.localBuf(q.pd, wr.Local, need)
		if !ok {
			e.bad = fabric.StatusLocalProtection
		}
		e.mr, e.buf = m, buf
	}
	e.npkts = 1
	if e.length > q.mtu {
		e.npkts = (e.length + q.mtu - 1) / q.mtu
	}
	if q.typ != fabric.UD {
		e.psn = q.nextPSN
		q.nextPSN = q.nextPSN.Add(e.npkts)
	}
	if ch := q.c.chk; ch != nil {
		ch.sendPosted(q, &e)
	}
	q.sq = reserved(q.sq, q.sqFree, q.sqTail, 1)
	*q.sqAt(q.sqTail) = e
	q.sqTail++
	return nil
}

func (q *qp) PostRecv(wrs []fabric.RecvWR) (int, error) {
	c := q.c
	c.enter(0)
	if err := fabric.CheckPostRecv(q, q.typ, q.state, q.destroyed, q.srq, q.srq != nil); err != nil {
		return 0, err
	}
	c.acquire(&q.recvLk)
	defer c.release(&q.recvLk)
	for i := range wrs {
		if q.rqTail-q.rqFree >= uint64(q.caps.MaxRecvWR) {
			if ch := c.chk; ch != nil {
				ch.notice(QueueFull, q.nic.node.id, "PostRecv", q.String(), fmt.Sprintf("PostRecv on %v with all %d receive slots taken (rejected: ErrQueueFull)", q, q.caps.MaxRecvWR))
			}
			return i, fmt.Errorf("%w: %v receive queue holds %d buffers; a receive's slot is free again once its completion has been polled",
				fabric.ErrQueueFull, q, q.caps.MaxRecvWR)
		}
		m, _, ok := q.nic.localBuf(q.pd, wrs[i].Local, fabric.AccessLocalWrite)
		e := rqe{id: wrs[i].ID}
		e.set(rqeBad, !ok)
		if m != nil {
			e.at, e.n, e.mr = e.at|(wrs[i].Local.Addr-m.Base), wrs[i].Local.Length, m.num()
		}
		if ch := c.chk; ch != nil {
			ch.recvPosted(q, &e, m)
		}
		q.rqPush(e)
		if th := c.cur; th != nil {
			th.Busy(ns(c.prof.Host.PostRecvNS))
		}
	}
	if q.state == fabric.StateError {
		q.flushRecvs()
	}
	return len(wrs), nil
}

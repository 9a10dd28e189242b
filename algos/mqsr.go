package algos

import (
	"encoding/binary"
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/flowctl"
)

// mqsr is the MQ/SR endpoint (Liu17 §4.4.1, Liu19 Algorithm 3): RDMA
// Send/Receive over one RC queue pair per destination node, one send and
// one receive completion queue per endpoint, and the stateless credit
// protocol: a receiver writes the absolute count of receives it has posted
// for a source into that source's memory with an inline RDMA Write every
// CreditEvery receives; a sender sends while it has sent fewer messages
// than that count. At the end, each receiver writes a final credit when it
// sees a source's Depleted message, and the source pads with empty
// messages until every credited receive is matched (send/receive parity).
type mqsr struct {
	endpointBase
	pd  fabric.PD
	rcq fabric.CQ
	mr  fabric.MR
	qps []fabric.QP

	// Layout of mr: send buffers, receive buffers, credit words written by
	// the receivers (one per destination), scratch words for inline credit
	// writes (one per source), and a parity header.
	sendOff, recvOff, creditOff, scratchOff, parityOff, noticeOff int

	depleted []bool // sent Depleted to each destination

	// MQ/WR: the sender writes into the receiver's slots. With FreeArr
	// (the paper's design, mqwr.go) the receiver returns each slot with a
	// write of its own; without (MQ/WR+cw) slots are used in ring order
	// and the credit counts slots released in that order.
	write    bool
	freeArr  bool
	notify   Notify
	ring     []fabric.QPInfo // per destination: its slots for us (address, rkey)
	notices  []fabric.QPInfo // per destination: its notice words for us (poll-buffers, poll-queue)
	recvNext []uint64        // per source: messages taken (poll-buffers, poll-queue)
	nextSlot []uint64        // per destination: messages written so far
	released [][]bool        // per source: released slots not yet credited (MQ/WR+cw)
	fa       freeArr         // MQ/WR with FreeArr: slot state on both sides
	// Slot return latency (MQ/WR): when each slot of a destination was
	// last written, and the credit already accounted for.
	slotAt     [][]fabric.Time
	creditSeen []uint64
	relHead    []int // per source: the next slot in ring order

	// Receive side.
	cr         []*flowctl.CreditReceiver
	remote     []fabric.QPInfo // per source: where its credit word for us is
	closedSrc  []bool
	unsignaled []int // credit writes posted unsignaled, per queue pair

	sh *srqShare // MEMQ/SR+srq: the shared receive queue and its credit (mqsrq.go); nil otherwise
	dc *dcPool   // MEMQ/SR+dc, MEMQ/WR+dc: the DC queue pairs (mqdc.go); nil otherwise
}

const (
	wrSend   = 1 << 48
	wrCredit = 2 << 48
	wrParity = 3 << 48
	wrKind   = 0xff << 48
	finalBit = 1 << 63

	creditSignalEvery = 16
)

// OpenMQSR opens an MQ/SR endpoint on the calling thread's node. Every node
// must open endpoint cfg.Tag at the same time (it exchanges queue-pair
// information and ends with a barrier).
func OpenMQSR(th fabric.Thread, cfg Config) (Endpoint, error) {
	return openMQ(th, cfg, false, false, nil)
}

// OpenMQWRCW opens an MQ/WR+cw endpoint, our improvement on Liu19's
// RDMA Write design: the sender writes each buffer straight into a slot of
// the receiver's memory (poll-CQ variant: an RDMA Write with immediate
// naming the slot, which completes a zero-length receive at the receiver).
// Slots of a connection are used in ring order, and the credit is the
// number of slots released in that order, written back as for MQ/SR; a
// send therefore costs one RDMA Write plus 1/CreditEvery credit writes
// where the paper's design (OpenMQWR) spends a second write per transfer
// to return the slot. The receives consumed by the writes are reposted as
// they complete. There is no parity step: the zero-length receives left at
// the end are flushed when the endpoint closes. Config.Notify selects the
// other two variants: after the data the sender writes an 8-byte seal
// (NotifyBuffers) or a 16-byte descriptor into a ring (NotifyQueue) with an
// inline RDMA Write, which RC places after the data; the receiver polls
// that memory (the next slot of each source, in ring order) instead of a
// completion queue and needs no receives.
func OpenMQWRCW(th fabric.Thread, cfg Config) (Endpoint, error) {
	return openMQ(th, cfg, true, false, nil)
}

// openMQ opens an MQ endpoint: MQ/WR or MQ/WR+cw when write (with
// FreeArr or not), else MQ/SR, or with sh MQ/SR+srq (sh.xrc: MQ/SR+xrc).
func openMQ(th fabric.Thread, cfg Config, write, freeArr bool, sh *srqShare) (Endpoint, error) {
	return openMQEndpoint(th, cfg, &mqsr{write: write, freeArr: freeArr, notify: cfg.Notify, sh: sh})
}

// openMQEndpoint opens e, an MQ endpoint whose design its fields say
// (openMQ; with dc, MQ/SR+dc or MQ/WR+dc: mqdc.go).
func openMQEndpoint(th fabric.Thread, cfg Config, e *mqsr) (Endpoint, error) {
	if err := cfg.check(0); err != nil {
		return nil, err
	}
	name := "MQ/SR"
	switch {
	case e.dc != nil:
		name = "MQ/SR+dc"
	case e.sh != nil && e.sh.xrc:
		name = "MQ/SR+xrc"
	case e.sh != nil:
		name = "MQ/SR+srq"
	}
	if e.write {
		name = map[bool]string{true: "MQ/WR", false: "MQ/WR+cw"}[e.freeArr]
		if e.dc != nil {
			name = "MQ/WR+dc"
		}
		switch e.notify {
		case "":
			e.notify = NotifyCQ
		case NotifyCQ, NotifyBuffers, NotifyQueue:
		default:
			return nil, fmt.Errorf("%w: MQ/WR notification %q: choose %s, %s or %s", ErrConfig, cfg.Notify, NotifyCQ, NotifyBuffers, NotifyQueue)
		}
	}
	e.init(name, th, cfg)
	if err := e.setup(th); err != nil {
		return nil, fmt.Errorf("algos: open %s endpoint %d on node %d: %w", name, cfg.Tag, e.me, freed(err, e.own.free()))
	}
	e.recv = e.receiving()
	if e.dc != nil {
		e.recv = e.dcReceiving(e.recv)
	}
	return e, nil
}

func (e *mqsr) setup(th fabric.Thread) error {
	// A shared endpoint has a pool per sharing thread: every thread keeps
	// one partly filled buffer per destination.
	e.cfg.Buffers *= e.cfg.Threads
	n, b, msg := e.n, e.cfg.Buffers, e.cfg.MsgBytes
	dev := e.node.Device()
	var err error
	ad := e.cfg.Adaptive
	if ad != nil { // the pool owns the protection domain
		e.pd = ad.Pool.PD()
	} else {
		if e.pd, err = dev.AllocPD(); err != nil {
			return err
		}
		e.own.pd(e.pd)
	}
	depth := min(n*n*b+4*n+64, dev.Attr().MaxCQE)
	if e.scq, err = dev.CreateCQ(depth); err != nil {
		return err
	}
	e.own.cq(e.scq)
	rdepth := n*b + 16
	if e.sh != nil {
		e.sh.pool = srqPool(n, b)
		rdepth = e.sh.pool + 16
	}
	if e.rcq, err = dev.CreateCQ(rdepth); err != nil {
		return err
	}
	e.own.cq(e.rcq)
	if err := e.register(n, b, msg); err != nil {
		return err
	}
	if err := e.initSendBuffers(e.mr, e.sendOff, n*b, msg); err != nil {
		return err
	}
	e.initState(n, b)
	if e.sh != nil {
		if err := e.openSRQ(); err != nil {
			return err
		}
	}
	per := 3
	if e.freeArr {
		e.fa.init(n, b)
		per = 4
	}
	l := lever{name: "Buffers", value: b / e.cfg.Threads}
	if e.dc != nil {
		l = e.dcLever(l)
	} else {
		l = e.lever(l)
	}
	depths, err := fitQueues(dev.Attr(), n, l)
	if err != nil {
		return err
	}
	sqDepth := depths[0]
	if e.dc != nil {
		if err := e.openDC(sqDepth); err != nil {
			return err
		}
	}
	var blob []byte
	for j := 0; j < n; j++ {
		enc, err := e.openPeer(j, b, msg, sqDepth)
		if err != nil {
			return err
		}
		blob = append(blob, enc...)
	}
	if e.sh != nil { // every source has its share of credit: post the pool
		if err := e.postPool(); err != nil {
			return err
		}
	}
	if e.dc == nil { // openDC counts its own
		e.info.QPs += n
	}
	got, err := gatherQPInfo(e.node, fmt.Sprintf("mqsr/%d", e.cfg.Tag), blob, n, per)
	if err != nil {
		return err
	}
	e.remote = make([]fabric.QPInfo, n)
	e.ring = make([]fabric.QPInfo, n)
	e.notices = make([]fabric.QPInfo, n)
	for j := 0; j < n; j++ {
		e.remote[j], e.ring[j], e.notices[j] = got[j][0], got[j][1], got[j][2]
		if e.freeArr {
			e.fa.remote[j] = got[j][3]
		}
		if e.sh != nil && e.sh.xrc {
			if err := e.connectXRC(j); err != nil {
				return err
			}
			continue
		}
		if e.dc != nil {
			if err := e.connectDC(j); err != nil {
				return err
			}
			continue
		}
		if err := connectRC(e.qps[j], e.remote[j], rcPSN(e.me, j), 1, e.cfg.SL); err != nil {
			return err
		}
	}
	return e.node.OOB().Barrier(fmt.Sprintf("mqsr/%d/up", e.cfg.Tag))
}

// lever is what the endpoint asks of its queue pair per peer as the
// setting of l (Buffers) moves: threads times it receives, and sends as
// openPeer says; with FreeArr (MQ/WR), data writes, notices and FreeArr
// writes, at most b of each, and up to creditSignalEvery unsignaled
// writes awaiting a signaled one per kind. It needs every slot.
func (e *mqsr) lever(l lever) lever {
	threads, freeArr, what := e.cfg.Threads, e.freeArr, e.design+"'s queue pair per peer"
	l.ask = func(v int) []queueAsk {
		b := v * threads
		send := 2*b + 2*creditSignalEvery + 8
		if freeArr {
			send = 3*b + 3*creditSignalEvery + 8
		}
		return []queueAsk{{what: what, typ: fabric.RC, inline: HeaderBytes, send: send, least: send, recv: b}}
	}
	return l
}

// register lays out the endpoint's registered region (send buffers unless
// the adaptive pool lends them, receive buffers, credit words, scratch,
// parity header, notice rings, FreeArr words) and registers it.
func (e *mqsr) register(n, b, msg int) error {
	ad := e.cfg.Adaptive
	e.sendOff, e.recvOff = 0, n*b*msg
	if ad != nil {
		e.recvOff = 0 // send buffers come from the pool
	}
	// The words and notices other nodes write and this node polls are
	// aligned to their size (polled.go): a no-op for message sizes that
	// are a multiple of 8.
	recvBytes := n * b * msg
	if e.sh != nil {
		recvBytes = e.sh.pool * msg // the shared receive queue's pool
	}
	e.creditOff = alignUp(e.recvOff+recvBytes, 8)
	e.scratchOff = e.creditOff + 8*n
	e.parityOff = e.scratchOff + 8*n
	e.noticeOff = alignUp(e.parityOff+HeaderBytes, descBytes)
	size := e.noticeOff + n*b*descBytes + n*descBytes // notice rings, then a scratch notice per destination
	if e.freeArr {
		e.fa.off = size
		size += n*b*8 + n*8 // FreeArr words, then a scratch word per source
	}
	var err error
	if e.mr, err = e.pd.RegMR(size, fabric.AccessLocalWrite|fabric.AccessRemoteWrite); err != nil {
		return err
	}
	e.own.mr(e.mr)
	mem := e.mr.Bytes()
	if err := polledAt("credit words", mem, e.creditOff, 8, n); err != nil {
		return err
	}
	if err := polledAt("notice rings", mem, e.noticeOff, descBytes, n*b); err != nil {
		return err
	}
	if e.freeArr {
		if err := polledAt("FreeArr words", mem, e.fa.off, 8, n*b); err != nil {
			return err
		}
	}
	e.info.RegisteredBytes = int64(size)
	e.info.RecvPoolBytes = int64(recvBytes)
	return nil
}

// initState allocates the per-destination and per-source bookkeeping.
func (e *mqsr) initState(n, b int) {
	e.depleted = make([]bool, n)
	e.closedSrc = make([]bool, n)
	e.unsignaled = make([]int, n)
	e.nextSlot = make([]uint64, n)
	e.creditSeen = make([]uint64, n)
	for j := 0; j < n; j++ {
		e.slotAt = append(e.slotAt, make([]fabric.Time, b))
		e.creditSeen[j] = uint64(b)
	}
	e.recvNext = make([]uint64, n)
	e.relHead = make([]int, n)
	for j := 0; j < n; j++ {
		e.released = append(e.released, make([]bool, b))
	}
}

// openPeer creates the queue pair to node j, posts its b receives, sets up
// its credit, and returns what node j needs to know of it (queue pair,
// credit word, receive ring, notice ring, FreeArr words), encoded.
func (e *mqsr) openPeer(j, b, msg, sqDepth int) ([]byte, error) {
	// Send queue: data sends (at most b, the credit), parity messages
	// (at most b), and up to creditSignalEvery credit writes awaiting
	// a signaled one, twice over.
	if e.dc != nil {
		return e.openDCPeer(j, b, msg)
	}
	if e.sh != nil {
		return e.openSharedPeer(j, sqDepth)
	}
	qp, err := newRCQP(&e.own, e.pd, e.scq, e.rcq, fabric.QPCaps{MaxSendWR: sqDepth, MaxRecvWR: b, MaxInline: HeaderBytes},
		fabric.AccessRemoteWrite)
	if err != nil {
		return nil, err
	}
	e.qps = append(e.qps, qp)
	// Receives for source j, posted before anyone is told about them:
	// the sender starts with b credits.
	for k := 0; k < b; k++ {
		if err := e.postRecv(j, k); err != nil {
			return nil, err
		}
	}
	if err := e.startCredit(j, b); err != nil {
		return nil, err
	}
	return e.peerInfo(j, b, msg, qp)
}

// startCredit starts the credit of the connection with node j at b
// buffers, on both sides: the receiver's count of buffers posted for j,
// and the credit this endpoint's sender starts with towards j.
func (e *mqsr) startCredit(j, b int) error {
	cr, err := flowctl.NewCreditReceiver(e.cfg.CreditEvery)
	if err != nil {
		return err
	}
	cr.Posted(b) // known to the sender by configuration
	e.cr = append(e.cr, cr)
	e.cs[j].Update(uint64(b))
	return nil
}

// peerInfo encodes what node j needs to know of the endpoint's queue pair
// to it (queue pair, credit word, receive ring, notice ring, FreeArr words).
func (e *mqsr) peerInfo(j, b, msg int, qp fabric.QP) ([]byte, error) {
	var blob []byte
	info := qp.Info()
	info.PSN = rcPSN(e.me, j)
	if e.dc != nil { // our DCT's access key, which node j's requests carry
		info.QKey = uint32(e.dc.key)
	}
	info.Addr, info.RKey, info.Bytes = e.mr.Addr()+uint64(e.creditOff+8*j), e.mr.RKey(), 8
	enc, _ := info.MarshalBinary()
	blob = append(blob, enc...)
	ring := fabric.QPInfo{Node: uint32(e.me), QPN: info.QPN, Addr: e.mr.Addr() + uint64(e.recvOff+j*b*msg), RKey: e.mr.RKey(), Bytes: uint64(b * msg)}
	enc, _ = ring.MarshalBinary()
	blob = append(blob, enc...)
	notice := fabric.QPInfo{Node: uint32(e.me), QPN: info.QPN, Addr: e.mr.Addr() + uint64(e.noticeOff+j*b*descBytes), RKey: e.mr.RKey(), Bytes: uint64(b * descBytes)}
	enc, _ = notice.MarshalBinary()
	blob = append(blob, enc...)
	if e.freeArr { // where node j returns our slots: its FreeArr words
		free := fabric.QPInfo{Node: uint32(e.me), QPN: info.QPN, Addr: e.mr.Addr() + uint64(e.fa.off+j*b*8), RKey: e.mr.RKey(), Bytes: uint64(b * 8)}
		enc, _ = free.MarshalBinary()
		blob = append(blob, enc...)
	}
	return blob, nil
}

func (e *mqsr) recvSlot(src, k int) int { return src*e.cfg.Buffers + k }

func (e *mqsr) postRecv(src, k int) error {
	slot := e.recvSlot(src, k)
	if e.write { // a write with immediate consumes a receive but fills no buffer
		if e.notify != NotifyCQ {
			return nil // the poll variants consume no receives
		}
		err := e.postRecv1(e.qps[src], fabric.RecvWR{ID: uint64(src)})
		return err
	}
	off := e.recvOff + slot*e.cfg.MsgBytes
	err := e.postRecv1(e.qps[src], fabric.RecvWR{ID: uint64(slot), Local: e.mr.SGE(off, e.cfg.MsgBytes)})
	return err
}

// refresh reads the credit word destination d writes into our memory.
func (e *mqsr) refresh(th fabric.Thread, d int) (final bool) {
	th.Sync()
	e.pollLines(th, 1)
	v := loadWord(e.mr.Bytes()[e.creditOff+8*d:])
	e.cs[d].Update(v &^ finalBit)
	if e.write && !e.freeArr {
		// Credit c returns the slot of write c-b (the first b writes had
		// the initial credit): how long after its write did the sender
		// see it free? Seen when the sender looks, which in a
		// network-bound run is when it waits for credit.
		b, now := uint64(e.cfg.Buffers), th.Now()
		for c := e.creditSeen[d] + 1; c <= e.cs[d].Credit(); c++ {
			if w := c - b; w >= 1 && w <= e.nextSlot[d] {
				e.info.SlotReturnNS += now.Sub(e.slotAt[d][(w-1)%b]).Seconds() * 1e9
				e.info.SlotReturns++
			}
		}
		e.creditSeen[d] = max(e.creditSeen[d], e.cs[d].Credit())
	}
	return v&finalBit != 0
}

func (e *mqsr) PutData(th fabric.Thread, b *Buffer, dests []int, st State) error {
	e.lock() // before checkBuffer: adaptive buffers grow e.bufs under the lock
	defer e.unlock()
	if err := e.checkBuffer(b); err != nil {
		return err
	}
	h := e.headerFor(b, st)
	off := b.off
	h.put(b.mr.Bytes()[off:])
	// The buffer is busy until every destination's send has completed;
	// count them all now, because waiting for credit below lets other
	// threads reap completions of the sends already posted.
	e.outstanding[b.id] += len(dests)
	for i, d := range dests {
		if err := e.sendTo(th, b, off, d, st); err != nil {
			e.outstanding[b.id] -= len(dests) - i // never posted
			return err
		}
	}
	if len(dests) == 0 {
		return e.freeBuffer(b.id)
	}
	return nil
}

// sendTo posts b to destination d once d has credit.
func (e *mqsr) sendTo(th fabric.Thread, b *Buffer, off, d int, st State) error {
	if d < 0 || d >= e.n {
		return fmt.Errorf("%w: destination node %d in a %d-node cluster", ErrConfig, d, e.n)
	}
	if err := e.await(th, d); err != nil {
		return err
	}
	if e.needCredit() {
		if err := e.cs[d].Consume(); err != nil {
			return err
		}
	}
	wr := fabric.SendWR{ID: wrSend | uint64(b.id), Op: fabric.OpSend, Local: b.mr.SGE(off, HeaderBytes+b.N), Flags: fabric.Signaled,
		RemoteSRQN: e.remoteSRQN(d)}
	var notice []fabric.SendWR
	if e.write {
		slot := e.nextSlot[d] % uint64(e.cfg.Buffers)
		if e.freeArr {
			slot = e.fa.take(d)
		}
		e.nextSlot[d]++
		e.slotAt[d][slot] = th.Now()
		wr.Op, wr.Imm = fabric.OpWriteImm, uint32(slot)
		if e.dc != nil { // the receive it completes names our DCT: name ourselves too
			wr.Imm = uint32(e.recvSlot(e.me, int(slot)))
		}
		wr.RemoteAddr, wr.RKey = e.ring[d].Addr+slot*uint64(e.cfg.MsgBytes), e.ring[d].RKey
		if e.notify != NotifyCQ {
			wr.Op = fabric.OpWrite
			notice = e.notice(d, slot, HeaderBytes+b.N)
		}
	}
	if err := e.postTo(d, append([]fabric.SendWR{wr}, notice...)); err != nil {
		return err
	}
	e.info.Transfers++
	e.info.NoticeWrites += int64(len(notice))
	e.signaled++
	if st == Depleted {
		e.depleted[d] = true
	}
	return nil
}

// await waits until destination d can take a message: credit (MQ/SR,
// MQ/WR+cw, and MQ/WR's poll-CQ variant, whose writes consume receives)
// and, with FreeArr, a slot the receiver has returned.
func (e *mqsr) await(th fabric.Thread, d int) error {
	deadline := th.Now().Add(e.cfg.Timeout)
	for !e.canSend(d) {
		if e.needCredit() && e.cs[d].Available() == 0 {
			e.refresh(th, d)
		}
		if e.freeArr && !e.fa.any(d) {
			if err := e.scanFree(th, d); err != nil {
				return err
			}
		}
		if e.canSend(d) {
			break
		}
		e.info.CreditStalls++
		what := "waiting for credit from node %d"
		if e.freeArr {
			what = "waiting for node %d to return a slot (FreeArr) or credit"
		}
		if e.dc != nil {
			if err := e.awaitDC(th, deadline, waiting{what, d}); err != nil {
				return err
			}
			continue
		}
		if err := e.wait(th, deadline, e.mr, waiting{what, d}); err != nil {
			return err
		}
	}
	return nil
}

// needCredit tells whether sends consume credit: every design but MQ/WR's
// poll-buffers and poll-queue variants, where FreeArr alone bounds what a
// sender may write.
func (e *mqsr) needCredit() bool { return !e.freeArr || e.notify == NotifyCQ }

// canSend tells whether destination d can take a message now.
func (e *mqsr) canSend(d int) bool {
	return (!e.needCredit() || e.cs[d].Available() > 0) && (!e.freeArr || e.fa.any(d))
}

func (e *mqsr) GetData(th fabric.Thread) (Delivery, error) { return e.getData(th, &e.recv) }

// receiving is GetData's progress, by how receivers learn of a message.
func (e *mqsr) receiving() receiving {
	if e.freeArr && e.notify == NotifyBuffers {
		return receiving{on: []fabric.Waitable{e.mr}, progress: e.scanSeals}
	}
	if e.write && e.notify != NotifyCQ {
		return receiving{on: []fabric.Waitable{e.mr}, progress: e.scanNotices}
	}
	return receiving{on: []fabric.Waitable{e.rcq}, progress: func(th fabric.Thread) (int, error) {
		return pollOnce(e.rcq, e.wcs, e.me, func(wc fabric.WC) error { return e.received(th, wc) })
	}}
}

// received handles one successful receive completion.
func (e *mqsr) received(th fabric.Thread, wc fabric.WC) error {
	if e.dc != nil {
		return e.receivedDC(wc)
	}
	if e.sh != nil {
		return e.receivedShared(wc)
	}
	slot := int(wc.ID)
	if e.write {
		src := int(wc.ID)
		if int(wc.Imm) >= e.cfg.Buffers || !wc.HasImm {
			return fmt.Errorf("%w: write from node %d names slot %d of %d", ErrBadMessage, src, wc.Imm, e.cfg.Buffers)
		}
		slot = e.recvSlot(src, int(wc.Imm))
		if err := e.postRecv(src, 0); err != nil { // the next write's receive
			return err
		}
		if e.freeArr { // credit counts receives, as for MQ/SR
			if v, ok := e.cr[src].Posted(1); ok {
				if err := e.writeCredit(src, v); err != nil {
					return err
				}
			}
		}
	}
	return e.deliver(slot/e.cfg.Buffers, slot, wc.Bytes)
}

// deliver queues the message in receive slot slot (from src, n bytes
// long at most) for GetData.
func (e *mqsr) deliver(src, slot, n int) error {
	off := e.recvOff + slot*e.cfg.MsgBytes
	buf := e.mr.Bytes()[off : off+e.cfg.MsgBytes]
	var h header
	if err := h.get(buf[:n], e.cfg.MsgBytes-HeaderBytes); err != nil {
		return fmt.Errorf("from node %d: %w", src, err)
	}
	if h.src != src {
		return fmt.Errorf("%w: message on node %d's connection claims to be from node %d", ErrBadMessage, src, h.src)
	}
	if e.sh != nil {
		return e.deliverShared(src, slot, buf, h)
	}
	if h.flags&flagParity != 0 {
		return nil // consumed a credited receive; nothing to deliver
	}
	d, err := e.delivery(src, slot, buf, h)
	if err != nil {
		return err
	}
	if d.State == Depleted {
		if !e.needCredit() {
			e.ready.push(d)
			return nil
		}
		// Every receive posted for src is credited now: the source pads
		// with empty messages up to this count.
		e.cr[src].Flush()
		final := e.cr[src].Close()
		if err := e.writeCredit(src, final|finalBit); err != nil {
			return err
		}
	}
	e.ready.push(d)
	return nil
}

// delivery is the message in slot slot from src as GetData hands it out;
// a source's Depleted message ends its stream (later data from it is
// refused).
func (e *mqsr) delivery(src, slot int, buf []byte, h header) (Delivery, error) {
	if e.closedSrc[src] {
		return Delivery{}, fmt.Errorf("%w: data from node %d after its end of stream", ErrBadMessage, src)
	}
	d := Delivery{Src: src, Data: buf[HeaderBytes : HeaderBytes+h.n], N: h.n, Tuples: h.tuples, Sum: h.sum, id: slot}
	if h.flags&flagDepleted != 0 {
		d.State = Depleted
		e.closedSrc[src] = true
		e.doneCount++
	}
	return d, nil
}

// writeCredit writes an absolute credit value into source src's memory
// with an inline RDMA Write.
func (e *mqsr) writeCredit(src int, v uint64) error {
	off := e.scratchOff + 8*src
	binary.LittleEndian.PutUint64(e.mr.Bytes()[off:], v)
	wr := fabric.SendWR{ID: wrCredit, Op: fabric.OpWrite, Local: e.mr.SGE(off, 8), Flags: fabric.Inline,
		RemoteAddr: e.remote[src].Addr, RKey: e.remote[src].RKey, RemoteSRQN: e.remoteSRQN(src)}
	// Unsignaled writes hold their send-queue slots until a later signaled
	// request of the same queue pair completes: signal every 16th.
	e.signalSome(&wr, &e.unsignaled[src], v&finalBit != 0)
	e.info.CreditWrites++
	if e.dc != nil {
		e.swr[0] = wr
		err := e.postDC(src, e.swr[:])
		e.swr[0] = fabric.SendWR{}
		return err
	}
	err := e.postSend1(e.qps[src], wr)
	return err
}

// postTo posts wrs to destination d: on the queue pair to it, or through
// a DCI.
func (e *mqsr) postTo(d int, wrs []fabric.SendWR) error {
	if e.dc != nil {
		return e.postDC(d, wrs)
	}
	_, err := e.qps[d].PostSend(wrs)
	return err
}

func (e *mqsr) Release(th fabric.Thread, d Delivery) error {
	if d.End {
		return nil
	}
	e.lock()
	defer e.unlock()
	if e.sh != nil {
		return e.releaseShared(th, d)
	}
	if d.id < 0 || d.id >= e.n*e.cfg.Buffers || d.Src != d.id/e.cfg.Buffers {
		return errForeignDelivery
	}
	if e.freeArr {
		return e.releaseSlot(d.Src, d.id%e.cfg.Buffers)
	}
	if e.closedSrc[d.Src] {
		return nil // the stream from d.Src has ended: no more receives for it
	}
	if _, err := e.reap(); err != nil { // frees send-queue slots of credit writes
		return err
	}
	k := 1
	if e.write {
		// Credit only slots released in ring order: the sender reuses
		// them in that order.
		rel := e.released[d.Src]
		rel[d.id%e.cfg.Buffers] = true
		k = 0
		for rel[e.relHead[d.Src]] {
			rel[e.relHead[d.Src]] = false
			e.relHead[d.Src] = (e.relHead[d.Src] + 1) % e.cfg.Buffers
			k++
		}
	} else if err := e.postRecv(d.Src, d.id%e.cfg.Buffers); err != nil {
		return err
	}
	if v, ok := e.cr[d.Src].Posted(k); ok {
		t0 := th.Now()
		defer func() { e.info.CreditNS += th.Now().Sub(t0).Seconds() * 1e9 }()
		return e.writeCredit(d.Src, v)
	}
	return nil
}

// Close pads every stream this endpoint ended with empty messages until
// send/receive parity, waits for every send to complete, meets the other
// nodes' endpoints at a barrier (so that no queue pair disappears while a
// peer still sends) and frees everything. Should any of that fail, it
// still frees everything (destroying a queue pair discards its outstanding
// requests), and returns that error.
func (e *mqsr) Close(th fabric.Thread) error {
	e.lock()
	defer e.unlock()
	return freed(e.finish(th), e.own.free())
}

// finish is Close's bookkeeping: parity, the last completions, the
// barrier. Called with the lock held.
func (e *mqsr) finish(th fabric.Thread) error {
	parity := header{flags: flagParity, src: e.me}
	parity.put(e.mr.Bytes()[e.parityOff:])
	for d := 0; d < e.n; d++ {
		if !e.depleted[d] || e.write || e.sh != nil { // MQ/WR and MQ/SR+srq have no parity step
			continue
		}
		deadline := th.Now().Add(e.cfg.Timeout)
		for !e.refresh(th, d) {
			if _, err := e.reap(); err != nil {
				return err
			}
			if err := e.wait(th, deadline, e.mr, waiting{"waiting for node %d's final credit", d}); err != nil {
				return err
			}
		}
		for e.cs[d].Owed() > 0 {
			e.cs[d].Consume()
			wr := fabric.SendWR{ID: wrParity, Op: fabric.OpSend, Local: e.mr.SGE(e.parityOff, HeaderBytes), Flags: fabric.Inline}
			if e.cs[d].Owed() == 0 {
				wr.Flags |= fabric.Signaled
				e.signaled++
			}
			if err := e.postSend1(e.qps[d], wr); err != nil {
				return err
			}
		}
	}
	return e.quiesce(th, "mqsr")
}

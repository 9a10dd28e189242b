package algos

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/adaptive"
	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/flowctl"
)

// sqsr is the SQ/SR endpoint (Liu17 §4.4.2): RDMA Send/Receive over one
// UD queue pair for all destinations, messages of at most one MTU, and the
// stateless credit protocol. The papers leave open how credit travels back
// over UD; here each endpoint has a second UD queue pair that only carries
// credit messages (16 bytes, inline), so an endpoint costs 2 queue pairs,
// whatever the cluster size. The end of a stream is detected by counting
// (Liu19 §5.3): every message carries its running number per
// destination and the last one is flagged, so the receiver knows the total
// and waits for every message, in whatever order UD delivers them. A
// stream that stays incomplete for the endpoint's timeout fails with an
// error naming the source and how many messages are missing. Receivers
// repeat a source's credit when its connection has been quiet and the
// source may be waiting for credit (a credit message can be lost too;
// absolute values make repeats harmless; repeats.go). There is no
// send/receive parity step: receives are not per connection on UD, and the
// leftovers are flushed when the endpoint closes. Loss recovery
// (Config.Recover) is in udrecovery.go.
type sqsr struct {
	waitList []fabric.Waitable // what Close's wait for acknowledgements watches, built on first use
	ackWait  []fabric.Waitable // what the sender's wait for acknowledgements watches, likewise
	endpointBase
	ct    CreditTimers // the credit timers (repeats.go, owed.go)
	pd    fabric.PD
	rcq   fabric.CQ // data receives
	ccq   fabric.CQ // credit receives
	mr    fabric.MR
	qp    fabric.QP   // data
	cqp   fabric.QP   // credit
	ahs   []fabric.AH // per node: its data queue pair, on the data's service level
	cahs  []fabric.AH // per node: its credit queue pair, on the control's (ahs when the same)
	peers []udPeer
	// Credit repeats, per connection (repeats.go): when data from each
	// source last arrived or its credit was last repeated, how often it
	// has been repeated since data last arrived (its gap is RepeatQuiet
	// doubled that often, at most maxBackoff times), and when the next
	// repeat may fall due on any connection (no earlier than
	// RepeatScan after the last look at them).
	heard      []fabric.Time
	backoff    []uint8
	ackSent    []uint64 // with loss recovery: per source, the acknowledgement last sent
	nextRepeat fabric.Time
	lastScan   fabric.Time
	scanFrom   int // the connection the next look begins with (repeatQuiet)
	walkLeft   int // connections left of a walk that stopped at a full queue
	// Credit owed (owed.go): sources whose latest credit found the credit
	// queue pair's send queue full, in the order they were refused, and
	// each source's place in that list (nil until the first).
	owed      []int
	owedState []uint8

	sendOff, recvOff, crecvOff, csendOff int
	recvBytes                            int // GRH + message
	creditSlots                          int

	// Adaptive receive buffers (cfg.Adaptive): one lane per source, the
	// pool buffer of each receive slot (nil when free), free slot ids.
	rlanes []*adaptive.Lane
	rbufs  []*adaptive.Buf
	rfree  []int

	// Loss recovery (cfg.Recover, udrecovery.go): per destination, the
	// messages sent and not yet acknowledged, in posting order; the
	// thread that answers once every stream has ended, and what it waits
	// on.
	unacked  [][]retained
	ended    []bool // destinations whose stream has ended
	nEnded   int
	resp     *progressThread
	respWait []fabric.Waitable
	rwcs     []fabric.WC // data completions: received may poll send completions into wcs

	seq        []uint64 // messages sent per destination
	cr         []*flowctl.CreditReceiver
	counts     []*flowctl.Count
	doneSrc    []bool
	unsignaled int
}

type udPeer struct{ data, credit fabric.QPInfo }

const (
	udQKey = 0x5d5d0001
	// A credit message: magic, flags, source, pad, the absolute credit,
	// and with loss recovery the cumulative acknowledgement.
	creditBytes    = 16
	creditAckBytes = 24
	creditMagic    = 0xc5
)

// OpenSQSR opens an SQ/SR endpoint on the calling thread's node; every node
// must open endpoint cfg.Tag at the same time. MsgBytes must fit in one MTU.
func OpenSQSR(th fabric.Thread, cfg Config) (Endpoint, error) {
	if err := cfg.check(th.Node().Device().Attr().MTU); err != nil {
		return nil, err
	}
	e := &sqsr{ct: cfg.creditTimers()}
	e.init("SQ/SR", th, cfg)
	if err := e.setup(th); err != nil {
		return nil, fmt.Errorf("algos: open SQ/SR endpoint %d on node %d: %w", cfg.Tag, e.me, freed(err, e.own.free()))
	}
	e.recv = e.receiving()
	return e, nil
}

func (e *sqsr) postData(slot int) error {
	mr, off := e.recvMem(slot)
	err := e.postRecv1(e.qp, fabric.RecvWR{ID: uint64(slot), Local: mr.SGE(off, e.recvBytes)})
	return err
}

// recvMem is where receive slot slot lives.
func (e *sqsr) recvMem(slot int) (fabric.MR, int) {
	if e.rbufs != nil {
		return e.rbufs[slot].MR, e.rbufs[slot].Off
	}
	return e.mr, e.recvOff + slot*e.recvBytes
}

// newRecvSlot takes a receive buffer from the pool and posts it.
func (e *sqsr) newRecvSlot() (int, error) {
	pb, err := e.cfg.Adaptive.Pool.Get(e.recvBytes)
	if err != nil {
		return 0, err
	}
	slot := len(e.rbufs)
	if k := len(e.rfree); k > 0 {
		slot = e.rfree[k-1]
		e.rfree = e.rfree[:k-1]
		e.rbufs[slot] = pb
	} else {
		e.rbufs = append(e.rbufs, pb)
	}
	return slot, e.postData(slot)
}

// growStarving runs when the receiver finds nothing ready at all: every
// source still sending with at most one unused credit gets one more
// receive buffer, and its credit (the adaptive receiver's growth rule). It
// returns how many grew.
func (e *sqsr) growStarving(th fabric.Thread) (int, error) {
	// Credit messages go out on the credit queue pair, whose send-queue
	// slots come back as completions are polled.
	if _, err := e.reap(); err != nil {
		return 0, err
	}
	grown := 0
	for s := 0; s < e.n; s++ {
		l := e.rlanes[s]
		// Liu19's rule grows whenever nothing is ready; a receiver that
		// outpaces the network finds nothing ready after nearly every
		// message, so the literal rule grows without bound (measured:
		// docs/model.md §5). Grow only a source whose unused credit is
		// at most one buffer: its pipeline is about to run dry.
		if e.doneSrc[s] || !l.Hungry() || e.cr[s].Written()-e.counts[s].Received() > 1 {
			continue
		}
		l.Observe(int64(th.Now()))
		if _, err := e.newRecvSlot(); err != nil {
			if errors.Is(err, adaptive.ErrPinnedCap) {
				return grown, nil
			}
			return grown, err
		}
		if err := l.Grow(); err != nil {
			return grown, err
		}
		grown++
		v, ok := e.cr[s].Posted(1)
		e.armRepeat(s)
		if !ok {
			v, ok = e.cr[s].Flush()
		}
		if ok {
			if err := e.sendCredit(s, v); err != nil {
				return grown, err
			}
		}
	}
	return grown, nil
}

func (e *sqsr) postCredit(slot int) error {
	sz := fabric.GRHBytes + creditAckBytes
	err := e.postRecv1(e.cqp, fabric.RecvWR{ID: uint64(slot), Local: e.mr.SGE(e.crecvOff+slot*sz, sz)})
	return err
}

// creditLen is the size of this endpoint's credit messages: with loss
// recovery they carry the acknowledgement too.
func (e *sqsr) creditLen() int {
	if e.cfg.Recover {
		return creditAckBytes
	}
	return creditBytes
}

// drainCredit applies every credit message that has arrived.
func (e *sqsr) drainCredit(th fabric.Thread) (int, error) {
	n, err := e.ccq.Poll(e.wcs)
	if err != nil {
		return 0, err
	}
	sz := fabric.GRHBytes + creditAckBytes
	for _, wc := range e.wcs[:n] {
		if wc.Status != fabric.StatusSuccess {
			return 0, &fabric.CompletionError{WC: wc, Node: e.me}
		}
		slot := int(wc.ID)
		m := e.mr.Bytes()[e.crecvOff+slot*sz+fabric.GRHBytes:]
		src := int(binary.LittleEndian.Uint16(m[2:]))
		if m[0] != creditMagic || src >= e.n || wc.Bytes != fabric.GRHBytes+e.creditLen() {
			return 0, fmt.Errorf("%w: credit message of %d bytes, magic %#x, source %d", ErrBadMessage, wc.Bytes, m[0], src)
		}
		e.cs[src].Update(binary.LittleEndian.Uint64(m[8:]))
		if e.unacked != nil {
			if err := e.acked(src, binary.LittleEndian.Uint64(m[16:])); err != nil {
				return 0, err
			}
		}
		if err := e.postCredit(slot); err != nil {
			return 0, err
		}
	}
	return n, nil
}

func (e *sqsr) PutData(th fabric.Thread, b *Buffer, dests []int, st State) error {
	e.lock() // before checkBuffer: adaptive buffers grow e.bufs under the lock
	defer e.unlock()
	if err := e.checkBuffer(b); err != nil {
		return err
	}
	h := e.headerFor(b, st)
	for i, d := range dests {
		if d < 0 || d >= e.n {
			return fmt.Errorf("%w: destination node %d in a %d-node cluster", ErrConfig, d, e.n)
		}
		// One header serves every member of the group, so the members
		// must have received the same number of messages (true when every
		// node belongs to one group, as in repartition and broadcast).
		if i == 0 {
			h.seq = e.seq[d] + 1
		} else if e.seq[d]+1 != h.seq {
			return fmt.Errorf("%w: SQ/SR needs transmission groups that do not overlap (node %d)", ErrConfig, d)
		}
	}
	// Reserve the numbers now: waiting for credit below lets other
	// threads of a shared endpoint send in between.
	for _, d := range dests {
		e.seq[d]++
	}
	off := b.off
	h.put(b.mr.Bytes()[off:])
	e.outstanding[b.id] += len(dests)
	for i, d := range dests {
		if err := e.sendTo(th, b, off, d); err != nil {
			e.outstanding[b.id] -= len(dests) - i
			return err
		}
		if e.unacked != nil { // kept until d acknowledges it
			e.unacked[d] = append(e.unacked[d], retained{seq: h.seq, id: b.id, first: th.Now(), at: th.Now()})
			e.holds[b.id]++
		}
	}
	if len(dests) == 0 {
		return e.freeBuffer(b.id)
	}
	if e.unacked != nil && st == Depleted {
		return e.streamsEnded(th, dests)
	}
	return nil
}

func (e *sqsr) sendTo(th fabric.Thread, b *Buffer, off, d int) error {
	deadline := th.Now().Add(e.cfg.Timeout)
	for e.cs[d].Available() == 0 {
		n, err := e.drainCredit(th)
		if err != nil {
			return err
		}
		until := deadline
		if e.unacked != nil {
			// Lost messages hold credit until they are retransmitted.
			next, err := e.retransmit(th)
			if err != nil {
				return err
			}
			until = next
		}
		if n > 0 {
			continue
		}
		e.info.CreditStalls++
		if err := e.waitFor(th, deadline, until, waiting{"waiting for credit from node %d", d}, e.ccq); err != nil {
			return err
		}
	}
	if err := e.cs[d].Consume(); err != nil {
		return err
	}
	wr := fabric.SendWR{ID: wrSend | uint64(b.id), Op: fabric.OpSend, Local: b.mr.SGE(off, HeaderBytes+b.N), Flags: fabric.Signaled,
		AH: e.ahs[d], RemoteQPN: e.peers[d].data.QPN, QKey: udQKey}
	for {
		err := e.postSend1(e.qp, wr)
		if !errors.Is(err, fabric.ErrQueueFull) {
			if err != nil {
				return err
			}
			break
		}
		// The device's send queue holds fewer requests than can be in
		// flight (sqsrLever): wait for completions to free a slot.
		n, err := e.reap()
		if err != nil {
			return err
		}
		if n == 0 {
			if err := e.waitFor(th, deadline, deadline, waiting{format: "waiting for a free slot in the send queue"}, e.scq); err != nil {
				return err
			}
		}
	}
	e.signaled++
	return nil
}

func (e *sqsr) GetData(th fabric.Thread) (Delivery, error) { return e.getData(th, &e.recv) }

// receiving is GetData's progress, adaptive receive lanes and credit
// repeats.
func (e *sqsr) receiving() receiving {
	return receiving{
		on: []fabric.Waitable{e.rcq},
		progress: func(th fabric.Thread) (int, error) {
			if _, err := e.payOwed(); err != nil {
				return 0, err
			}
			n, err := e.pollData(th)
			if err != nil {
				return 0, err
			}
			if n == 0 && e.rlanes != nil && e.ready.len() == 0 {
				// Nothing ready: grow, then wait for the data the new
				// credit brings (growth is not progress).
				if _, err := e.growStarving(th); err != nil {
					return 0, err
				}
			}
			return n, nil
		},
		taken: func(th fabric.Thread, d Delivery) (Delivery, error) {
			if e.rlanes == nil {
				return d, nil
			}
			l := e.rlanes[d.Src]
			l.Observe(int64(th.Now()))
			retire, err := l.Take()
			d.retire = retire
			return d, err
		},
		// A quiet connection gets its credit repeated: a credit message
		// may have been lost (repeats.go).
		idle: func(th fabric.Thread, now, quiet fabric.Time) (fabric.Time, fabric.Time, error) {
			// A walk that stopped at a full queue goes on at its next
			// look whether or not the thread has been quiet since.
			if (now.Sub(quiet) >= e.ct.RepeatQuiet || e.walkLeft > 0) && now >= e.nextRepeat {
				if err := e.repeatQuiet(now); err != nil {
					return 0, quiet, err
				}
			}
			next := max(quiet.Add(e.ct.RepeatQuiet), e.nextRepeat)
			if e.walkLeft > 0 {
				next = max(now, e.nextRepeat)
			}
			if owed, err := e.payOwed(); err != nil {
				return 0, quiet, err
			} else if owed {
				next = min(next, now.Add(e.ct.OwedRetry))
			}
			if e.unacked != nil { // this endpoint's sends need acknowledging too
				_, due, err := e.senderTick(th)
				if err != nil {
					return 0, quiet, err
				}
				next = min(next, due)
			}
			return next, quiet, nil
		},
		stuck: e.incomplete,
	}
}

// incomplete describes the sources whose streams did not finish.
func (e *sqsr) incomplete() error {
	msg := ""
	for s := 0; s < e.n; s++ {
		if e.doneSrc[s] {
			continue
		}
		c := e.counts[s]
		if m := c.Missing(); m > 0 {
			msg += fmt.Sprintf("; node %d: %d of %d messages missing", s, m, m+c.Received())
		} else {
			msg += fmt.Sprintf("; node %d: no end of stream after %d messages", s, c.Received())
		}
	}
	return fmt.Errorf("algos: SQ/SR endpoint %d on node %d: streams incomplete after %v without progress (UD messages lost?)%s",
		e.cfg.Tag, e.me, e.cfg.Timeout, msg)
}

func (e *sqsr) received(th fabric.Thread, wc fabric.WC) error {
	if wc.Status != fabric.StatusSuccess {
		return &fabric.CompletionError{WC: wc, Node: e.me}
	}
	slot := int(wc.ID)
	mr, off := e.recvMem(slot)
	buf := mr.Bytes()[off+fabric.GRHBytes : off+e.recvBytes]
	var h header
	if err := h.get(buf[:wc.Bytes-fabric.GRHBytes], e.cfg.MsgBytes-HeaderBytes); err != nil {
		return err
	}
	if h.src < 0 || h.src >= e.n {
		return fmt.Errorf("%w: source node %d", ErrBadMessage, h.src)
	}
	if e.cfg.Recover && e.counts[h.src].Seen(h.seq) {
		// A duplicate (a retransmission whose first copy arrived after
		// all, or one the network made): it used a receive no credit
		// accounts for, so the receive goes back uncredited; the
		// acknowledgement is repeated, as the sender evidently lacks it.
		e.info.Duplicates++
		if err := e.postData(slot); err != nil {
			return err
		}
		return e.sendCredit(h.src, e.cr[h.src].Written())
	}
	if err := e.counts[h.src].Add(h.seq, h.flags&flagDepleted != 0); err != nil {
		return fmt.Errorf("from node %d: %w", h.src, err)
	}
	e.heardFrom(h.src, th.Now())
	d := Delivery{Src: h.src, Data: buf[HeaderBytes : HeaderBytes+h.n], N: h.n, Tuples: h.tuples, Sum: h.sum, id: slot}
	if e.rlanes != nil {
		l := e.rlanes[h.src]
		l.Observe(int64(th.Now()))
		if err := l.Filled(); err != nil {
			return fmt.Errorf("%w: node %d sent beyond its credit: %v", ErrBadMessage, h.src, err)
		}
	}
	if e.counts[h.src].Done() {
		d.State = Depleted
		e.doneSrc[h.src] = true
		e.doneCount++
		if e.cfg.Recover {
			// Acknowledge the end, three times: no more credit follows to
			// carry the acknowledgement should a copy be lost (and the
			// responder answers a retransmission of it).
			for k := 0; k < 3; k++ {
				if err := e.sendCredit(h.src, e.cr[h.src].Written()); err != nil {
					return err
				}
			}
			if e.doneCount == e.n && e.resp == nil {
				e.startResponder(th)
			}
		}
	}
	e.ready.push(d)
	return nil
}

// sendCredit sends an absolute credit value to source src's credit queue
// pair. Should the send queue be full even after polling its completions,
// src is owed the credit instead (owed.go).
func (e *sqsr) sendCredit(src int, v uint64) error {
	sent, err := e.tryCredit(src, v)
	if err != nil || sent {
		return err
	}
	// Every slot holds a credit message not yet known complete: poll,
	// and try once more.
	if _, err := e.reap(); err != nil {
		return err
	}
	if sent, err = e.tryCredit(src, v); err != nil || sent {
		return err
	}
	e.owe(src)
	return nil
}

// tryCredit posts a credit message with value v to source src, and
// reports false, having posted nothing, when the send queue is full.
func (e *sqsr) tryCredit(src int, v uint64) (bool, error) {
	wr := e.creditWR(src, v)
	e.info.CreditWrites++
	err := e.postSend1(e.cqp, wr)
	if errors.Is(err, fabric.ErrQueueFull) {
		e.unpost(wr)
		return false, nil
	}
	if err != nil {
		return false, err
	}
	// The acknowledgement counts as sent only once it is posted: a
	// refused repeat leaves its connection owing one (mayStall), so the
	// walk that goes on after it repeats it. (Marked before the post, a
	// refused one was left to the sender's retransmission timer.)
	if e.ackSent != nil {
		e.ackSent[src] = e.counts[src].Contiguous()
	}
	e.sentCredit(src)
	return true, nil
}

// creditWR writes the credit message for source src (the absolute credit
// v and, with loss recovery, the cumulative acknowledgement) and returns
// the send request that carries it inline, signaled every
// creditSignalEvery-th.
func (e *sqsr) creditWR(src int, v uint64) fabric.SendWR {
	m := e.mr.Bytes()[e.csendOff:]
	m[0], m[1] = creditMagic, 0
	binary.LittleEndian.PutUint16(m[2:], uint16(e.me))
	binary.LittleEndian.PutUint64(m[8:], v)
	binary.LittleEndian.PutUint64(m[16:], e.counts[src].Contiguous()) // sent only with loss recovery (creditLen)
	wr := fabric.SendWR{ID: wrCredit, Op: fabric.OpSend, Local: e.mr.SGE(e.csendOff, e.creditLen()), Flags: fabric.Inline,
		AH: e.cahs[src], RemoteQPN: e.peers[src].credit.QPN, QKey: udQKey}
	e.signalSome(&wr, &e.unsignaled, false)
	return wr
}

// unpost takes back the counts of a credit message that did not fit the
// send queue, as if creditWR had not run.
func (e *sqsr) unpost(wr fabric.SendWR) {
	e.info.CreditWrites--
	if wr.Flags&fabric.Signaled != 0 {
		e.signaled--
		e.unsignaled = creditSignalEvery - 1
	} else {
		e.unsignaled--
	}
}

func (e *sqsr) Release(th fabric.Thread, d Delivery) error {
	if d.End {
		return nil
	}
	e.lock()
	defer e.unlock()
	slots := e.n * e.cfg.Buffers
	if e.rbufs != nil {
		slots = len(e.rbufs)
	}
	if d.id < 0 || d.id >= slots || d.Src < 0 || d.Src >= e.n || e.rbufs != nil && e.rbufs[d.id] == nil {
		return fmt.Errorf("%w: Release of a delivery this endpoint did not make", ErrConfig)
	}
	if _, err := e.reap(); err != nil {
		return err
	}
	if _, err := e.payOwed(); err != nil {
		return err
	}
	if e.rlanes != nil {
		l := e.rlanes[d.Src]
		l.Observe(int64(th.Now()))
		if err := l.Return(d.retire); err != nil {
			return err
		}
		if d.retire { // back to the pool: not reposted, not credited
			pb := e.rbufs[d.id]
			e.rbufs[d.id] = nil
			e.rfree = append(e.rfree, d.id)
			return e.cfg.Adaptive.Pool.Put(pb)
		}
	}
	if err := e.postData(d.id); err != nil {
		return err
	}
	if e.doneSrc[d.Src] {
		return nil
	}
	v, ok := e.cr[d.Src].Posted(1)
	e.armRepeat(d.Src)
	if ok {
		t0 := th.Now()
		defer func() { e.info.CreditNS += th.Now().Sub(t0).Seconds() * 1e9 }()
		return e.sendCredit(d.Src, v)
	}
	return nil
}

// Close waits for every send to complete, meets the other nodes' endpoints
// at a barrier and frees everything. With loss recovery it first waits for
// every acknowledgement and stops the responder (settle). Should any of
// that fail, it still frees everything, and returns that error.
func (e *sqsr) Close(th fabric.Thread) error {
	var err error
	if e.unacked != nil {
		err = e.settle(th) // the responder has stopped, whatever settle returns
	}
	e.lock()
	defer e.unlock()
	if err == nil {
		err = e.quiesce(th, "sqsr")
	}
	return freed(err, e.own.free())
}

// returnRecvBuffers gives every adaptive receive buffer back to the pool
// (once the queue pairs are gone, flushing the posted receives).
func (e *sqsr) returnRecvBuffers() error {
	for i, pb := range e.rbufs {
		if pb != nil {
			if err := e.cfg.Adaptive.Pool.Put(pb); err != nil {
				return err
			}
			e.rbufs[i] = nil
		}
	}
	return nil
}

// Info adds the receive lanes' statistics to the endpoint's. Once the
// UD-recovery responder runs, it counts too (credit writes), so Info then
// takes the lock that it holds.
func (e *sqsr) Info() EndpointInfo {
	if e.resp != nil {
		e.lock()
		defer e.unlock()
	}
	i := e.endpointBase.Info()
	for _, l := range e.rlanes {
		i.addLane(l, true)
	}
	return i
}

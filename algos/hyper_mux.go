package algos

import (
	"encoding/binary"
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// The multiplexer thread: completions, credit, scheduled and unscheduled sends, barriers.

// multiplex is the multiplexer thread.
func (e *hyper) multiplex(th fabric.Thread) error { return e.run(th, e.loop, e.avail) }

func (e *hyper) loop(th fabric.Thread) error {
	e.lastMove = th.Now()
	for {
		moved, err := e.step(th)
		if err != nil {
			return err
		}
		if e.stop && e.done && e.doneSent && e.signaled == 0 {
			return nil
		}
		if moved {
			e.lastMove = th.Now()
			continue
		}
		deadline := th.Now().Add(e.cfg.Timeout)
		if e.busy() {
			if th.Now() >= e.lastMove.Add(e.cfg.Timeout) {
				return fmt.Errorf("no progress for %v: %s", e.cfg.Timeout, e.state())
			}
			deadline = e.lastMove.Add(e.cfg.Timeout)
		}
		if e.waitList == nil { // built once: a variadic call through the interface allocates
			e.waitList = []fabric.Waitable{e.work, e.scq, e.rcq, e.mr}
		}
		e.idle(th, deadline, e.waitList)
	}
}

// busy reports whether the multiplexer waits for the network or its peers
// (a timeout is then an error), not for the workers. Once Close has asked
// it to stop, the workers have nothing more to give it: what it still
// waits for (a credit to send a peer its end of stream, a peer's barrier
// word) comes from the network, and a peer that crashed never sends it.
func (e *hyper) busy() bool {
	return e.signaled > 0 || e.stage != stSend || e.queued > 0 || e.stop
}

func (e *hyper) state() string {
	return fmt.Sprintf("phase %d, stage %d, %d messages queued, %d sends outstanding, %d of %d sources ended", e.phase, e.stage, e.queued, e.signaled, e.doneCount, e.n)
}

// step does whatever can be done now and reports whether anything moved.
func (e *hyper) step(th fabric.Thread) (bool, error) {
	// Send completions.
	moved, err := pollAll(e.scq, e.wcs, e.me, func(wc fabric.WC) error {
		e.signaled--
		if wc.ID&wrKind == hyWrData {
			e.inflight--
			e.release(int(wc.ID &^ wrKind))
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	// Receive completions: hand the messages to the workers.
	got, err := pollAll(e.rcq, e.wcs, e.me, func(wc fabric.WC) error { return e.received(th, wc) })
	if err != nil {
		return false, err
	}
	moved = moved || got
	// Released receive buffers: repost, and credit the source.
	for _, slot := range e.reposts {
		src := slot / e.recvPer
		if e.closedSrc[src] {
			continue
		}
		if err := e.postRecv(src, slot%e.recvPer); err != nil {
			return false, err
		}
		if v, ok := e.cr[src].Posted(1); ok {
			if err := e.writeWord(src, e.creditOff+8*e.me, v); err != nil {
				return false, err
			}
			e.info.CreditWrites++
		}
		moved = true
	}
	e.reposts = e.reposts[:0]
	// Sending.
	var sent bool
	if e.opt.Schedule == ScheduleNone {
		sent, err = e.sendUnscheduled(th)
	} else {
		sent, err = e.sendScheduled(th)
	}
	if err != nil {
		return false, err
	}
	moved = moved || sent
	// The end: everything sent and completed; tell the peers not to wait
	// for this node in their barriers.
	if !e.done && e.queued == 0 && e.inflight == 0 && e.stage == stSend && e.allEnded() {
		e.done = true
	}
	if e.done && !e.doneSent {
		for j := 0; j < e.n; j++ {
			if j != e.me {
				if err := e.writeWord(j, e.barrierOff+8*e.me, barrierEnd); err != nil {
					return false, err
				}
			}
		}
		e.doneSent, moved = true, true
	}
	return moved, nil
}

func (e *hyper) allEnded() bool {
	for j := 0; j < e.n; j++ {
		if !e.sentEnd[j] {
			return false
		}
	}
	return true
}

// received hands one received message (a successful completion) to the
// workers.
func (e *hyper) received(th fabric.Thread, wc fabric.WC) error {
	slot := int(wc.ID)
	src := slot / e.recvPer
	off := e.recvOff + slot*e.cfg.MsgBytes
	buf := e.mr.Bytes()[off : off+e.cfg.MsgBytes]
	var h header
	if err := h.get(buf[:wc.Bytes], e.cfg.MsgBytes-HeaderBytes); err != nil {
		return fmt.Errorf("from node %d: %w", src, err)
	}
	if h.src != src {
		return fmt.Errorf("%w: message on node %d's connection claims to be from node %d", ErrBadMessage, src, h.src)
	}
	if e.closedSrc[src] {
		return fmt.Errorf("%w: data from node %d after its end of stream", ErrBadMessage, src)
	}
	if c := e.opt.TCP; c != nil { // recv() on the multiplexer's thread
		e.cpu(th, int64(max(1, (h.n+HeaderBytes+c.SegmentBytes-1)/c.SegmentBytes))*c.RxSegmentCycles+2*c.SyscallCycles, c.RecvCopies*(h.n+HeaderBytes))
	}
	d := Delivery{Src: src, Data: buf[HeaderBytes : HeaderBytes+h.n], N: h.n, Tuples: h.tuples, Sum: h.sum, id: slot}
	if h.flags&flagDepleted != 0 {
		d.State = Depleted
		e.closedSrc[src] = true
		e.doneCount++
	}
	e.ready.push(d)
	e.avail.Notify()
	return nil
}

// writeWord writes an 8-byte value into node j's region at off with an
// inline RDMA Write (credit and barrier words).
func (e *hyper) writeWord(j, off int, v uint64) error {
	binary.LittleEndian.PutUint64(e.mr.Bytes()[e.scratchOff:], v)
	wr := fabric.SendWR{ID: hyWrCtl, Op: fabric.OpWrite, Local: e.mr.SGE(e.scratchOff, 8), Flags: fabric.Inline | fabric.Signaled,
		RemoteAddr: e.remote[j].Addr + uint64(off), RKey: e.remote[j].RKey}
	if _, err := e.qps[j].PostSend([]fabric.SendWR{wr}); err != nil {
		return err
	}
	e.signaled++
	return nil
}

// cpu spends the kernel's work of the TCP variant on the multiplexer's
// thread without holding the endpoint's lock (the workers go on meanwhile).
func (e *hyper) cpu(th fabric.Thread, cycles int64, copyBytes int) {
	withoutLock(e.mu, func() {
		th.Compute(cycles)
		if copyBytes > 0 {
			th.Charge(fabric.WorkCopy, copyBytes)
		}
	})
}

// credit reports whether destination d has credit, refreshing it from the
// word d writes into our region.
func (e *hyper) credit(th fabric.Thread, d int) bool {
	if e.cs[d].Available() > 0 {
		return true
	}
	th.Sync()
	e.cs[d].Update(loadWord(e.mr.Bytes()[e.creditOff+8*d:]))
	if e.cs[d].Available() == 0 {
		e.info.CreditStalls++
		return false
	}
	return true
}

// post sends the oldest queued message of destination d.
func (e *hyper) post(th fabric.Thread, d int) error {
	m := e.queue[d][e.qhead[d]]
	e.queue[d][e.qhead[d]] = qmsg{}
	if e.qhead[d]++; e.qhead[d] == len(e.queue[d]) {
		e.queue[d], e.qhead[d] = e.queue[d][:0], 0
	}
	e.queued--
	if err := e.cs[d].Consume(); err != nil {
		return err
	}
	b := e.bufs[m.id]
	n := int(binary.LittleEndian.Uint32(e.mr.Bytes()[b.off+4:])) // the used bytes, from the header
	if c := e.opt.TCP; c != nil {                                // send() on the multiplexer's thread, before the bytes leave
		e.cpu(th, c.SyscallCycles+int64(max(1, (n+HeaderBytes+c.SegmentBytes-1)/c.SegmentBytes))*c.TxSegmentCycles, c.SendCopies*(n+HeaderBytes))
	}
	wr := fabric.SendWR{ID: hyWrData | uint64(m.id), Op: fabric.OpSend, Local: e.mr.SGE(b.off, HeaderBytes+n), Flags: fabric.Signaled}
	if _, err := e.qps[d].PostSend([]fabric.SendWR{wr}); err != nil {
		return err
	}
	e.signaled++
	e.inflight++
	e.info.Transfers++
	if m.st == Depleted {
		e.sentEnd[d] = true
	}
	if e.opt.Observe != nil {
		p := e.phase
		if e.opt.Schedule == ScheduleNone {
			p = 0
		}
		e.opt.Observe(e.me, p, d, th.Now())
	}
	return nil
}

// sendUnscheduled posts queued messages in hand-over order to destinations
// with credit, up to InFlight in flight.
func (e *hyper) sendUnscheduled(th fabric.Thread) (bool, error) {
	moved := false
	for e.inflight < e.opt.InFlight && e.queued > 0 {
		best := -1
		for d := 0; d < e.n; d++ {
			if e.qhead[d] < len(e.queue[d]) && (best < 0 || e.queue[d][e.qhead[d]].seq < e.queue[best][e.qhead[best]].seq) && e.credit(th, d) {
				best = d
			}
		}
		if best < 0 {
			break
		}
		if err := e.post(th, best); err != nil {
			return false, err
		}
		moved = true
	}
	return moved, nil
}

// target is node me's destination in phase p.
func (e *hyper) target(p uint64) int {
	return (e.me + int((p-1)%uint64(e.n-1)) + 1) % e.n
}

// sendScheduled runs the round-robin phases.
func (e *hyper) sendScheduled(th fabric.Thread) (bool, error) {
	if e.n == 1 || e.done || e.stage == stSend && e.queued == 0 && e.allEnded() {
		return false, nil
	}
	moved := false
	for {
		switch e.stage {
		case stSend:
			t := e.target(e.phase)
			for e.phaseSent < e.opt.PhaseMessages && e.qhead[t] < len(e.queue[t]) && e.credit(th, t) {
				if err := e.post(th, t); err != nil {
					return false, err
				}
				e.phaseSent++
				moved = true
			}
			if e.phaseSent == 0 && e.linger(th, t) {
				return moved, nil
			}
			e.stage = stDrain
			moved = true
		case stDrain:
			if e.inflight > 0 {
				return moved, nil
			}
			for j := 0; j < e.n; j++ {
				if j != e.me && !e.peerDone(j) {
					if err := e.writeWord(j, e.barrierOff+8*e.me, e.phase); err != nil {
						return false, err
					}
					if c := e.opt.TCP; c != nil {
						e.cpu(th, c.SyscallCycles, 0)
					}
				}
			}
			e.stage = stBarrier
			moved = true
		case stBarrier:
			th.Sync()
			for j := 0; j < e.n; j++ {
				if j != e.me && e.peerWord(j) < e.phase {
					return moved, nil
				}
			}
			e.phase++
			e.phaseSent = 0
			e.stage = stSend
			moved = true
			if e.queued == 0 && e.allEnded() {
				return moved, nil // done: step ends the schedule
			}
		}
	}
}

func (e *hyper) peerWord(j int) uint64 {
	return loadWord(e.mr.Bytes()[e.barrierOff+8*j:])
}

func (e *hyper) peerDone(j int) bool { return e.peerWord(j) == barrierEnd }

// linger reports whether a phase in which nothing could be sent to target
// t should wait before its barrier: when this node has nothing queued for
// any other node (nothing to gain from moving on) and no peer has finished
// the phase yet. A node with nothing to send thus waits for work, credit
// or a peer instead of spinning through empty barriers.
func (e *hyper) linger(th fabric.Thread, t int) bool {
	if e.queued > len(e.queue[t])-e.qhead[t] {
		return false // something queued for another node
	}
	if e.queued == 0 && e.allEnded() {
		return false
	}
	th.Sync()
	for j := 0; j < e.n; j++ {
		if w := e.peerWord(j); j != e.me && w != barrierEnd && w >= e.phase {
			return false
		}
	}
	return true
}

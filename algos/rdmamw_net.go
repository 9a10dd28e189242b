package algos

import (
	"encoding/binary"
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// The middleware's network thread: write completions, deferred writes, notices.

func (e *mw) network(th fabric.Thread) error { return e.run(th, e.netLoop, e.avail, e.space) }

func (e *mw) finished() bool {
	if e.signaled > 0 {
		return false
	}
	for j := 0; j < e.n; j++ {
		if j != e.me && (!e.endSent[j] || len(e.pend[j]) > 0) {
			return false
		}
	}
	return true
}

func (e *mw) netLoop(th fabric.Thread) error {
	last := th.Now()
	for {
		moved, err := e.netStep(th)
		if err != nil {
			return err
		}
		if e.stop && e.finished() {
			return nil
		}
		if moved {
			last = th.Now()
			continue
		}
		deadline := th.Now().Add(e.cfg.Timeout)
		if e.signaled > 0 || e.stop {
			if th.Now() >= last.Add(e.cfg.Timeout) {
				return fmt.Errorf("no progress for %v (%d sends outstanding)", e.cfg.Timeout, e.signaled)
			}
			deadline = last.Add(e.cfg.Timeout)
		}
		if e.waitList == nil { // built once: a variadic call through the interface allocates
			e.waitList = []fabric.Waitable{e.work, e.scq, e.rcq}
		}
		e.idle(th, deadline, e.waitList)
	}
}

func (e *mw) netStep(th fabric.Thread) (bool, error) {
	moved, err := pollAll(e.scq, e.wcs, e.me, func(wc fabric.WC) error {
		e.signaled--
		id := int(wc.ID &^ wrKind)
		if wc.ID&wrKind == mwWrNotice {
			e.noticeBusy[id] = false
			return nil
		}
		d, s := id/e.t, id%e.t
		o := &e.out[d][s]
		o.inflight, o.acked = false, o.wrEnd
		e.queueNotice(d, mwEntry{kind: mwWritten, slot: uint32(s), pos: uint64(o.written)})
		if err := e.tryWrite(th, d, s); err != nil {
			return err
		}
		e.space.Notify()
		return nil
	})
	if err != nil {
		return false, err
	}
	got, err := pollAll(e.rcq, e.wcs, e.me, func(wc fabric.WC) error { return e.notice(th, wc) })
	if err != nil {
		return false, err
	}
	moved = moved || got
	// Flushing destinations: post what is left; once every ring's data is
	// written and acknowledged, announce the end.
	for j := 0; j < e.n; j++ {
		if j == e.me || !e.flushing[j] || e.endSent[j] {
			continue
		}
		all := true
		for s := range e.out[j] {
			if err := e.tryWrite(th, j, s); err != nil {
				return false, err
			}
			o := &e.out[j][s]
			all = all && !o.inflight && o.head < 0 && o.acked == o.fill
		}
		if all {
			e.queueNotice(j, mwEntry{kind: mwEnd})
			e.endSent[j], moved = true, true
		}
	}
	// Notices: one in flight per connection, entries batched.
	for j := 0; j < e.n; j++ {
		if j == e.me || e.noticeBusy[j] || len(e.pend[j]) == 0 {
			continue
		}
		mem := e.mrs[j].Bytes()[e.nsendOff:]
		cnt := min(len(e.pend[j]), mwNoticeMax)
		binary.LittleEndian.PutUint32(mem, uint32(cnt))
		binary.LittleEndian.PutUint32(mem[4:], uint32(e.me))
		for i, x := range e.pend[j][:cnt] {
			m := mem[8+i*mwNoticeEntry:]
			binary.LittleEndian.PutUint32(m, x.kind)
			binary.LittleEndian.PutUint32(m[4:], x.slot)
			binary.LittleEndian.PutUint64(m[8:], x.pos)
		}
		size := 8 + cnt*mwNoticeEntry
		e.pend[j] = append(e.pend[j][:0], e.pend[j][cnt:]...)
		e.noticeBusy[j] = true
		if c := e.opt.Stack; c != nil {
			e.cpu(th, c.SyscallCycles+c.TxSegmentCycles, 0, true)
		}
		wr := fabric.SendWR{ID: mwWrNotice | uint64(j), Op: fabric.OpSend, Local: e.mrs[j].SGE(e.nsendOff, size), Flags: fabric.Signaled}
		if _, err := e.qps[j].PostSend([]fabric.SendWR{wr}); err != nil {
			return false, err
		}
		e.signaled++
		e.info.NoticeWrites++
		moved = true
	}
	return moved, nil
}

// notice applies one notice from a peer (a successful completion).
func (e *mw) notice(th fabric.Thread, wc fabric.WC) error {
	j, k := int(wc.ID)/mwNoticeRecvs, int(wc.ID)%mwNoticeRecvs
	mem := e.mrs[j].Bytes()[e.nrecvOff+k*e.noticeBytes : e.nrecvOff+(k+1)*e.noticeBytes]
	cnt, src := int(binary.LittleEndian.Uint32(mem)), int(binary.LittleEndian.Uint32(mem[4:]))
	if src != j || cnt < 0 || 8+cnt*mwNoticeEntry > wc.Bytes {
		return fmt.Errorf("%w: notice on node %d's connection: %d entries from node %d in %d bytes", ErrBadMessage, j, cnt, src, wc.Bytes)
	}
	var placed int64
	for i := 0; i < cnt; i++ {
		m := mem[8+i*mwNoticeEntry:]
		kind, slot, pos := binary.LittleEndian.Uint32(m), int(binary.LittleEndian.Uint32(m[4:])), int64(binary.LittleEndian.Uint64(m[8:]))
		if kind != mwEnd && slot >= e.t {
			return fmt.Errorf("%w: notice from node %d names ring %d of %d", ErrBadMessage, j, slot, e.t)
		}
		switch kind {
		case mwWritten:
			in := &e.in[j][slot]
			if pos > in.avail {
				placed += pos - in.avail
				in.avail = pos
			}
		case mwFreed:
			o := &e.out[j][slot]
			o.freed = max(o.freed, pos)
			if err := e.tryWrite(th, j, slot); err != nil {
				return err
			}
		case mwEnd:
			e.srcEnded[j] = true
		default:
			return fmt.Errorf("%w: notice kind %d from node %d", ErrBadMessage, kind, j)
		}
	}
	if err := e.postNoticeRecv(j, k); err != nil {
		return err
	}
	if c := e.opt.Stack; c != nil {
		// The stack's receive path for the notice and the data it
		// announces (placed in memory by the kernel, on this core).
		e.cpu(th, (1+segs(c, int(placed)))*c.RxSegmentCycles, c.RecvCopies*int(placed), false)
	}
	e.checkEnd(j)
	e.avail.Notify()
	e.space.Notify()
	return nil
}

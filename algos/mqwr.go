package algos

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// This file is MQ/WR as Liu19 describes it (§4.4, §7.1.2): the receiver
// returns every slot with an RDMA Write of its own into the sender's
// FreeArr, whatever the notification variant, so a sender may reuse any
// slot the receiver has released, in any order. The endpoint is the mqsr
// type (mqsr.go) with freeArr set; MQ/WR+cw, our improvement that returns
// slots through a credit word in ring order, is the same type without it.
//
// FreeArr holds a word per destination and slot in the sender's memory:
// the number of times the receiver has released that slot. A slot is free
// when that count has caught up with the writes the sender made into it,
// so an entry is never lost or misread, however writes are reordered.
//
// The receiver learns of a write as in the other variants: a completion
// (poll-CQ, an RDMA Write with immediate naming the slot; the receives it
// consumes are reposted as they complete and credited as for MQ/SR, which
// is the paper's extra 1/b write per transfer), a descriptor in a ring
// (poll-queue), or a seal per slot (poll-buffers). Slots are reused out of
// order, so a poll-buffers receiver cannot know which slot comes next: it
// polls the seal of every slot of every source, n*k locations, and delivers
// each source's messages in the order of their numbers.

// OpenMQWR opens an MQ/WR endpoint, Liu19's RDMA Write design: the sender
// writes each buffer straight into a free slot of the receiver's memory,
// and the receiver returns the slot at Release with an RDMA Write into the
// sender's FreeArr. Config.Notify selects how the receiver learns of a
// write (poll-CQ by default, poll-buffers, poll-queue). Every node must
// open endpoint cfg.Tag at the same time.
func OpenMQWR(th fabric.Thread, cfg Config) (Endpoint, error) {
	return openMQ(th, cfg, true, true, nil)
}

// freeArr is the slot state of MQ/WR with FreeArr, on both sides. Owned by
// its endpoint (guarded by the endpoint's lock).
type freeArr struct {
	off    int             // the FreeArr words in the endpoint's region: destination d's slot k at off+8*(d*b+k), then a scratch word per source
	remote []fabric.QPInfo // per source: our FreeArr words at that node (address, rkey)
	// Sender side, per destination and slot: writes made into it, and
	// whether it is written and not yet seen free; per destination the
	// slots seen free and not yet used (a stack).
	uses [][]uint64
	busy [][]bool
	free [][]int
	// Receiver side, per source and slot: releases written back.
	released [][]uint64
}

func (f *freeArr) init(n, b int) {
	f.remote = make([]fabric.QPInfo, n)
	for j := 0; j < n; j++ {
		f.uses = append(f.uses, make([]uint64, b))
		f.busy = append(f.busy, make([]bool, b))
		f.released = append(f.released, make([]uint64, b))
		slots := make([]int, 0, b)
		for k := b - 1; k >= 0; k-- { // slot 0 is used first
			slots = append(slots, k)
		}
		f.free = append(f.free, slots)
	}
}

// any tells whether a slot of destination d is known to be free.
func (f *freeArr) any(d int) bool { return len(f.free[d]) > 0 }

// take uses a free slot of destination d (there must be one).
func (f *freeArr) take(d int) uint64 {
	k := f.free[d][len(f.free[d])-1]
	f.free[d] = f.free[d][:len(f.free[d])-1]
	f.busy[d][k] = true
	f.uses[d][k]++
	return uint64(k)
}

// scanFree reads destination d's FreeArr words (every slot: the cache
// lines they fill are charged) and takes the slots it has returned, noting
// how long after its write each came back.
func (e *mqsr) scanFree(th fabric.Thread, d int) error {
	th.Sync()
	b := e.cfg.Buffers
	e.pollLines(th, (8*b+63)/64)
	now := th.Now()
	words := e.mr.Bytes()[e.fa.off+8*d*b:]
	for k := 0; k < b; k++ {
		if !e.fa.busy[d][k] {
			continue
		}
		switch v := loadWord(words[8*k:]); {
		case v > e.fa.uses[d][k]:
			return fmt.Errorf("%w: node %d released slot %d %d times, written %d times", ErrBadMessage, d, k, v, e.fa.uses[d][k])
		case v == e.fa.uses[d][k]:
			e.fa.busy[d][k] = false
			e.fa.free[d] = append(e.fa.free[d], k)
			e.info.SlotReturnNS += now.Sub(e.slotAt[d][k]).Seconds() * 1e9
			e.info.SlotReturns++
		}
	}
	return nil
}

// releaseSlot returns slot k of source src to it: an inline RDMA Write of
// the slot's release count into the source's FreeArr (the paper's second
// write per transfer). Called with the lock held.
func (e *mqsr) releaseSlot(src, k int) error {
	if _, err := e.reap(); err != nil { // frees send-queue slots of earlier writes
		return err
	}
	e.fa.released[src][k]++
	off := e.fa.off + 8*e.n*e.cfg.Buffers + 8*src
	binary.LittleEndian.PutUint64(e.mr.Bytes()[off:], e.fa.released[src][k])
	wr := fabric.SendWR{ID: wrCredit, Op: fabric.OpWrite, Local: e.mr.SGE(off, 8), Flags: fabric.Inline,
		RemoteAddr: e.fa.remote[src].Addr + 8*uint64(k), RKey: e.fa.remote[src].RKey}
	e.signalSome(&wr, &e.unsignaled[src], false)
	e.info.FreeWrites++
	err := e.postSend1(e.qps[src], wr)
	return err
}

// scanSeals is poll-buffers with FreeArr: it reads the seal of every slot
// of every source (n*k locations, each charged as a cache line: the
// paper's seal is the last word of its buffer) and delivers, per source,
// the sealed messages in the order of their numbers.
func (e *mqsr) scanSeals(th fabric.Thread) (int, error) {
	th.Sync()
	b := e.cfg.Buffers
	e.pollLines(th, e.n*b)
	e.info.NoticeScans++
	e.info.NoticeLines += int64(e.n * b)
	type sealed struct {
		seq  uint64
		slot int
	}
	var pend []sealed
	got := 0
	for s := 0; s < e.n; s++ {
		if e.closedSrc[s] {
			continue
		}
		pend = pend[:0]
		for k := 0; k < b; k++ {
			if seq := loadWord(e.mr.Bytes()[e.noticeOff+(s*b+k)*descBytes+noticeSeqAt:]); seq > e.recvNext[s] {
				pend = append(pend, sealed{seq, k})
			}
		}
		slices.SortFunc(pend, func(x, y sealed) int { return int(x.seq - y.seq) })
		for _, p := range pend {
			if p.seq != e.recvNext[s]+1 || e.closedSrc[s] {
				break // an earlier message's seal has not arrived yet
			}
			e.recvNext[s]++
			if err := e.deliver(s, e.recvSlot(s, p.slot), e.cfg.MsgBytes); err != nil {
				return got, err
			}
			got++
		}
	}
	return got, nil
}

// Notify is how an MQ/WR receiver learns that a buffer has arrived (seed
// 001 §5.4).
type Notify string

// The three notification variants.
const (
	NotifyCQ      Notify = "cq"      // RDMA Write with immediate; poll the completion queue (default)
	NotifyBuffers Notify = "buffers" // a seal word per buffer, written after the data; poll the seals
	NotifyQueue   Notify = "queue"   // a descriptor in a ring, written after the data; poll the ring
)

// notice builds the inline write that tells destination d about the
// message just written into its slot: the message's number (its seal) at
// the slot's notice word, or a descriptor in the next ring entry.
func (e *mqsr) notice(d int, slot uint64, n int) []fabric.SendWR {
	seq := e.nextSlot[d]
	m := e.mr.Bytes()[e.noticeOff+e.n*e.cfg.Buffers*descBytes+d*descBytes:]
	binary.LittleEndian.PutUint32(m, uint32(slot))
	binary.LittleEndian.PutUint32(m[4:], uint32(n))
	binary.LittleEndian.PutUint64(m[noticeSeqAt:], seq) // the seal last (polled.go)
	// poll-buffers: the slot's own word
	k := slot
	if e.notify == NotifyQueue {
		k = (seq - 1) % uint64(e.cfg.Buffers)
	}
	wr := fabric.SendWR{ID: wrCredit, Op: fabric.OpWrite, Local: e.mr.SGE(e.noticeOff+e.n*e.cfg.Buffers*descBytes+d*descBytes, descBytes),
		Flags: fabric.Inline, RemoteAddr: e.notices[d].Addr + k*descBytes, RKey: e.notices[d].RKey}
	e.signalSome(&wr, &e.unsignaled[d], false)
	return []fabric.SendWR{wr}
}

// scanNotices takes every message whose notice has arrived, in order per
// source (the poll-buffers and poll-queue variants).
func (e *mqsr) scanNotices(th fabric.Thread) (int, error) {
	th.Sync()
	got, reads := 0, 0
	defer func() {
		e.pollLines(th, reads)
		e.info.NoticeScans++
		e.info.NoticeLines += int64(reads)
	}()
	for s := 0; s < e.n; s++ {
		for !e.closedSrc[s] {
			reads++
			want := e.recvNext[s] + 1
			k := e.recvNext[s] % uint64(e.cfg.Buffers) // the slot, and the ring entry
			m := e.mr.Bytes()[e.noticeOff+(s*e.cfg.Buffers+int(k))*descBytes:]
			if loadWord(m[noticeSeqAt:]) != want {
				break
			}
			slot := k
			if e.notify == NotifyQueue {
				slot = uint64(binary.LittleEndian.Uint32(m))
				if slot >= uint64(e.cfg.Buffers) {
					return got, fmt.Errorf("%w: notice from node %d names slot %d", ErrBadMessage, s, slot)
				}
			}
			e.recvNext[s]++
			if err := e.deliver(s, e.recvSlot(s, int(slot)), e.cfg.MsgBytes); err != nil {
				return got, err
			}
			got++
		}
	}
	return got, nil
}

package istore

import (
	"encoding/binary"
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// A worker's progress through one stream.

// streamWork is worker thread k's progress through its part of stream r:
// blocks read (the head), forwarded (all but the last member), processed,
// freed, and credit returned upstream (all but the head).
type streamWork struct {
	e                                                                             *engine
	k                                                                             int
	r                                                                             *ring
	st                                                                            *EngineStats
	head, last                                                                    bool
	issued, p, fwdPosted, fwdDone, freed, creditSent, creditInFlight, outstanding int
}

func (w *streamWork) finished() bool {
	N := len(w.r.s.Blocks)
	return w.p == N && (w.last || w.fwdDone == N) && (w.head || w.creditSent == w.freed && w.creditInFlight == 0)
}

func (w *streamWork) stalled(what string) error {
	r := w.r
	return fmt.Errorf("istore: node %d worker %d: stream %d (member %d of %d, %d blocks) stalled %s: %d processed, %d read, %d forwarded (%d done), %d freed",
		w.e.me, w.k, r.idx, r.pos+1, len(r.s.Members), len(r.s.Blocks), what, w.p, w.issued, w.fwdPosted, w.fwdDone, w.freed)
}

// completed applies completions: reads done, blocks arrived from upstream
// (possibly into a later stream's ring: its upstream may start forwarding
// before this thread gets there), forwards and credit writes done.
func (w *streamWork) completed(wcs []fabric.WC) error {
	e, D := w.e, w.e.cfg.Depth
	for _, wc := range wcs {
		if wc.Status != fabric.StatusSuccess {
			return &fabric.CompletionError{WC: wc, Node: e.me}
		}
		v := int(wc.ID & (1<<24 - 1))
		switch wc.ID & wrKind {
		case wrRead:
			w.r.ready[v%D] = v + 1
			w.outstanding--
		case wrRecv:
			rg := e.rings[w.k][int(wc.ID>>24)&0xffff]
			j := int(wc.Imm)
			if j >= len(rg.s.Blocks) || rg.ready[j%D] != 0 {
				return fmt.Errorf("istore: node %d: stream %d: block %d arrived into a full slot or beyond the stream", e.me, rg.idx, j)
			}
			rg.ready[j%D] = j + 1
			if rg.recvPosted < len(rg.s.Blocks) {
				if err := rg.postRecv(); err != nil {
					return err
				}
			}
		case wrFwd:
			w.fwdDone++
		case wrCredit:
			w.creditInFlight--
		}
	}
	return nil
}

// read (the head) keeps up to Depth RDMA Reads of the stream's blocks in
// flight, into slots that have been freed.
func (w *streamWork) read(fabric.Thread) (bool, error) {
	if !w.head {
		return false, nil
	}
	e, r, s, D := w.e, w.r, w.r.s, w.e.cfg.Depth
	moved := false
	for w.issued < len(s.Blocks) && w.issued-w.freed < D {
		loc := e.cfg.Locs[s.Blocks[w.issued]]
		rem := e.remote[loc.Node]
		slot := w.issued % D
		wr := fabric.SendWR{ID: wrRead | uint64(w.issued), Op: fabric.OpRead, Flags: fabric.Signaled,
			Local: r.mr.SGE(slot*BlockBytes, BlockBytes), RemoteAddr: rem.Addr + uint64(loc.Off), RKey: rem.RKey}
		if _, err := e.pair[w.k][loc.Node].PostSend([]fabric.SendWR{wr}); err != nil {
			return moved, err
		}
		w.issued++
		w.outstanding++
		w.st.Reads++
		w.st.MaxOutstanding = max(w.st.MaxOutstanding, w.outstanding)
		moved = true
	}
	return moved, nil
}

// forward (all but the last member) writes ready blocks into the next
// member's ring, within the credit it returned.
func (w *streamWork) forward(th fabric.Thread) (bool, error) {
	r, N, D := w.r, len(w.r.s.Blocks), w.e.cfg.Depth
	if w.last || w.fwdPosted >= N {
		return false, nil
	}
	th.Sync()
	downFreed := int(binary.LittleEndian.Uint64(r.mr.Bytes()[D*BlockBytes:]))
	moved := false
	for w.fwdPosted < N && r.ready[w.fwdPosted%D] == w.fwdPosted+1 && w.fwdPosted-downFreed < D {
		slot := w.fwdPosted % D
		wr := fabric.SendWR{ID: wrFwd | uint64(w.fwdPosted), Op: fabric.OpWriteImm, Flags: fabric.Signaled, Imm: uint32(w.fwdPosted),
			Local: r.mr.SGE(slot*BlockBytes, BlockBytes), RemoteAddr: r.downRing.Addr + uint64(slot*BlockBytes), RKey: r.downRing.RKey}
		if _, err := r.down.PostSend([]fabric.SendWR{wr}); err != nil {
			return moved, err
		}
		w.fwdPosted++
		w.st.Forwards++
		moved = true
	}
	return moved, nil
}

// process hands ready blocks to the query (once forwarded, unless this is
// the last member) and frees the slots every use of which is done.
func (w *streamWork) process(th fabric.Thread) (bool, error) {
	e, r, s, D := w.e, w.r, w.r.s, w.e.cfg.Depth
	moved := false
	for w.p < len(s.Blocks) && r.ready[w.p%D] == w.p+1 && (w.last || w.fwdPosted > w.p) {
		var data []byte
		if e.payload {
			data = r.mr.Bytes()[w.p%D*BlockBytes : (w.p%D+1)*BlockBytes]
		}
		if err := e.cfg.Process(th, s, s.Blocks[w.p], data); err != nil {
			return moved, err
		}
		w.p++
		moved = true
	}
	f := w.p
	if !w.last {
		f = min(w.p, w.fwdDone)
	}
	for ; w.freed < f; w.freed++ {
		r.ready[w.freed%D] = 0
	}
	return moved, nil
}

// credit (all but the head) writes the count of freed slots upstream,
// with at most 4 credit writes in flight.
func (w *streamWork) credit(fabric.Thread) (bool, error) {
	r := w.r
	if w.head || w.freed <= w.creditSent || w.creditInFlight >= 4 {
		return false, nil
	}
	creditOff := w.e.cfg.Depth * BlockBytes
	binary.LittleEndian.PutUint64(r.mr.Bytes()[creditOff+8:], uint64(w.freed))
	wr := fabric.SendWR{ID: wrCredit, Op: fabric.OpWrite, Flags: fabric.Signaled | fabric.Inline,
		Local: r.mr.SGE(creditOff+8, 8), RemoteAddr: r.upCredit.Addr, RKey: r.upCredit.RKey}
	if _, err := r.up.PostSend([]fabric.SendWR{wr}); err != nil {
		return false, err
	}
	w.creditSent = w.freed
	w.creditInFlight++
	w.st.Credits++
	return true, nil
}

package algos

import (
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// The MPI baseline's broadcast: MPI_Ibcast, as Liu19 §7.1 used it, with
// the algorithms MPICH chooses for it (src/mpi/coll/ibcast/ibcast.c,
// MPIR_Ibcast_sched_intra; MVAPICH2 is derived from MPICH and falls back
// to the same rule when its own tuning tables do not choose): a binomial
// tree for messages under MPIR_CVAR_BCAST_SHORT_MSG_SIZE or fewer than
// MPIR_CVAR_BCAST_MIN_PROCS processes; otherwise a binomial scatter of the
// message in one piece per process, followed by a recursive-doubling
// allgather (messages under MPIR_CVAR_BCAST_LONG_MSG_SIZE, a power-of-two
// number of processes) or a ring allgather. A non-blocking collective
// advances only inside library calls (no progress thread, MVAPICH2's
// default), so a node forwards a broadcast only while one of its threads
// is in the library.
const (
	bcastShortBytes = 12288  // MPIR_CVAR_BCAST_SHORT_MSG_SIZE's default
	bcastLongBytes  = 524288 // MPIR_CVAR_BCAST_LONG_MSG_SIZE's default
	bcastMinProcs   = 8      // MPIR_CVAR_BCAST_MIN_PROCS's default
)

// Broadcast algorithms, as MPICH names them.
const (
	bcastBinomial      = "binomial"
	bcastScatterRecDbl = "scatter_recursive_doubling_allgather"
	bcastScatterRing   = "scatter_ring_allgather"
)

// bcastAlgorithm is the algorithm MPICH schedules for an MPI_Ibcast of
// nbytes among n processes.
func bcastAlgorithm(n, nbytes int) string {
	switch {
	case nbytes < bcastShortBytes || n < bcastMinProcs:
		return bcastBinomial
	case nbytes < bcastLongBytes && n&(n-1) == 0:
		return bcastScatterRecDbl
	}
	return bcastScatterRing
}

// bcastOp is one transfer of a broadcast's schedule: bytes [off, off+n)
// of the message, sent to or received from peer.
type bcastOp struct {
	send  bool
	peer  int
	off   int
	n     int
	done  bool
	cts   bool // receive by rendezvous: the clear-to-send has gone
	stage int  // eager send: its staging slot while in flight, else -1
}

// bcastSchedule is node me's part in a broadcast of nbytes from root among
// n nodes: steps, each a set of transfers that start together; a step
// starts when every transfer of the one before has completed (MPICH's
// schedule barriers). Sizes are exact: a receive expects what the sender
// of the same step sends.
func bcastSchedule(n, me, root, nbytes int) [][]bcastOp {
	if n < 2 {
		return nil
	}
	rr := (me - root + n) % n // relative rank
	abs := func(rel int) int { return (rel + root) % n }
	op := func(send bool, rel, off, end int) bcastOp {
		return bcastOp{send: send, peer: abs(rel), off: off, n: max(end-off, 0), stage: -1}
	}
	var steps [][]bcastOp
	if bcastAlgorithm(n, nbytes) == bcastBinomial {
		mask := 1
		for ; mask < n; mask <<= 1 {
			if rr&mask != 0 {
				steps = append(steps, []bcastOp{op(false, rr-mask, 0, nbytes)})
				break
			}
		}
		var sends []bcastOp
		for mask >>= 1; mask > 0; mask >>= 1 {
			if rr+mask < n {
				sends = append(sends, op(true, rr+mask, 0, nbytes))
			}
		}
		if len(sends) > 0 {
			steps = append(steps, sends)
		}
		return steps
	}
	// Binomial scatter: relative rank k ends with piece k, bytes
	// [k*ss, (k+1)*ss) of the message (clipped to nbytes).
	ss := (nbytes + n - 1) / n
	at := func(k int) int { return min(k*ss, nbytes) }
	mask := 1
	for ; mask < n; mask <<= 1 {
		if rr&mask != 0 {
			// The parent sends the pieces of this subtree.
			if at(rr) < nbytes {
				steps = append(steps, []bcastOp{op(false, rr-mask, at(rr), at(rr+mask))})
			}
			break
		}
	}
	var sends []bcastOp
	for mask >>= 1; mask > 0; mask >>= 1 {
		if rr+mask < n && at(rr+mask) < at(min(rr+2*mask, n)) {
			sends = append(sends, op(true, rr+mask, at(rr+mask), at(min(rr+2*mask, n))))
		}
	}
	if len(sends) > 0 {
		steps = append(steps, sends)
	}
	if bcastAlgorithm(n, nbytes) == bcastScatterRecDbl {
		// Recursive doubling: at step i, exchange the 2^i-piece blocks
		// held so far with the partner whose rank differs in bit i.
		for i, m := 0, 1; m < n; i, m = i+1, m<<1 {
			partner := rr ^ m
			mine, theirs := rr>>i<<i, partner>>i<<i
			steps = append(steps, []bcastOp{
				op(true, partner, at(mine), at(min(mine+m, n))),
				op(false, partner, at(theirs), at(min(theirs+m, n))),
			})
		}
		return steps
	}
	// Ring: n-1 steps, each passing one piece to the right.
	j, jnext := rr, (rr-1+n)%n
	for i := 1; i < n; i++ {
		steps = append(steps, []bcastOp{
			op(true, (rr+1)%n, at(j), at(j+1)),
			op(false, (rr-1+n)%n, at(jnext), at(jnext+1)),
		})
		j, jnext = jnext, (jnext-1+n)%n
	}
	return steps
}

// Collective message kinds (header.seq's top byte), after the
// point-to-point ones. A collective message's header carries the
// broadcast's sequence number and root in seq and the piece as
// offset<<32 | length in sum (for a CTS, the offset is where in the
// receiver's region to write, and tuples is the piece's offset); n is the
// data that follows an eager header. Pieces are matched as MPI matches
// messages within one collective: by source, in order (RC delivers a
// connection's messages in order), here by their offset.
const (
	mpiBcEager = 5 // a piece with its data, copied through a control slot
	mpiBcRTS   = 6 // a piece too large for a slot: the receiver answers with a CTS
	mpiBcCTS   = 7 // write the piece here
	mpiBcFIN   = 8 // the piece is written

	wrMPIBcast = 3 << 48 // completes op (bits 0-15) of broadcast instance (bits 16-47)
)

// bcastInst is one MPI_Ibcast in progress on this node.
type bcastInst struct {
	root, seq int
	sbuf      int // our own broadcast: the send buffer's id; -1 elsewhere
	land      int // our own broadcast: the landing buffer receives go to
	src, dst  int // byte offsets in the region: where sends read, where receives land
	steps     [][]bcastOp
	step      int // current step
	left      int // its transfers not yet complete
}

// bcastUnexp is a collective message that came before this node reached
// its step (MPI's unexpected queue): an eager piece keeps a copy.
type bcastUnexp struct {
	kind, root, seq, src, off, n int
	data                         []byte
}

// bcastState is the MPI endpoint's broadcast bookkeeping.
type bcastState struct {
	insts    []bcastInst
	free     []int
	index    map[[2]int]int // (root, seq & mpiSlotMask) -> instance
	unexp    []bcastUnexp
	seq      int            // our next broadcast
	post     []int          // per root: the next sequence number to post
	next     []int          // per root: the next sequence number to deliver
	done     map[[2]int]int // complete, waiting for an earlier one: -> receive buffer
	owner    []int          // per receive buffer: the root it serves, -1 for point-to-point
	per      int            // receive buffers per root
	stageOff int            // eager send staging slots
	stages   []int          // free ones
	backlog  [][2]int       // eager sends waiting for a slot: (instance, op)
	landOff  int            // landing buffers of our own broadcasts
	lands    []int          // free ones
	seen     []bool         // bcastAll's scratch, per node
}

// bcastAll reports whether dests is every node once (a broadcast).
func (e *mpi) bcastAll(dests []int) bool {
	if !e.cfg.Broadcast || e.n < 2 || len(dests) != e.n {
		return false
	}
	seen := e.bc.seen // under the lock; cleared on the way out
	if seen == nil {
		seen = make([]bool, e.n)
		e.bc.seen = seen
	}
	all := true
	for _, d := range dests {
		if d < 0 || d >= e.n || seen[d] {
			all = false
			break
		}
		seen[d] = true
	}
	for _, d := range dests {
		if d >= 0 && d < e.n {
			seen[d] = false
		}
	}
	return all
}

// bcastSetup lays out the broadcast's staging slots and landing buffers
// from off in the region and returns the end; postBcasts then posts the
// receiving side.
func (e *mpi) bcastSetup(off int) int {
	t := e.cfg.Threads
	b := &e.bc
	b.index, b.done = map[[2]int]int{}, map[[2]int]int{}
	b.post, b.next = make([]int, e.n), make([]int, e.n)
	b.stageOff = off
	nst := 2*e.n + 2*t
	for i := nst - 1; i >= 0; i-- {
		b.stages = append(b.stages, i)
	}
	b.landOff = off + nst*e.slotBytes
	for i := t - 1; i >= 0; i-- {
		b.lands = append(b.lands, i)
	}
	return b.landOff + t*e.msg
}

// postBcasts gives each other node's broadcasts per receive buffers
// (MPI_Ibcast posted ahead, as receives are), keeping per for our own
// messages to ourselves.
func (e *mpi) postBcasts(th fabric.Thread) error {
	b := &e.bc
	b.per = len(e.freeRecv) / e.n
	b.owner = make([]int, len(e.freeRecv))
	for i := range b.owner {
		b.owner[i] = -1
	}
	for r := 0; r < e.n; r++ {
		if r == e.me {
			continue
		}
		for k := 0; k < b.per; k++ {
			rb := e.freeRecv[len(e.freeRecv)-1]
			e.freeRecv = e.freeRecv[:len(e.freeRecv)-1]
			if err := e.postBcast(th, r, rb); err != nil {
				return err
			}
		}
	}
	return nil
}

// postBcast posts the next MPI_Ibcast from root into receive buffer rb.
func (e *mpi) postBcast(th fabric.Thread, root, rb int) error {
	b := &e.bc
	b.owner[rb] = root
	e.pending[rb] = mpiPending{state: recvAwaiting, src: root}
	seq := b.post[root]
	b.post[root]++
	off := e.recvOff + rb*e.msg
	return e.startBcast(th, bcastInst{root: root, seq: seq, sbuf: -1, land: -1, src: off, dst: off})
}

// startBcast starts a broadcast instance at its first step.
func (e *mpi) startBcast(th fabric.Thread, inst bcastInst) error {
	b := &e.bc
	inst.steps = bcastSchedule(e.n, e.me, inst.root, e.msg)
	var i int
	if k := len(b.free); k > 0 {
		i, b.free = b.free[k-1], b.free[:k-1]
		b.insts[i] = inst
	} else {
		i = len(b.insts)
		b.insts = append(b.insts, inst)
	}
	b.index[[2]int{inst.root, inst.seq & mpiSlotMask}] = i
	return e.bcastStep(th, i)
}

// bcastStep starts instance i's current step, and the next ones while
// every transfer completes at once (from the unexpected queue); after the
// last step the broadcast is complete.
func (e *mpi) bcastStep(th fabric.Thread, i int) error {
	b := &e.bc
	for {
		inst := &b.insts[i]
		if inst.step == len(inst.steps) {
			return e.bcastDone(th, i)
		}
		ops := inst.steps[inst.step]
		inst.left = len(ops)
		for j := range ops {
			var err error
			if ops[j].send {
				err = e.bcastSend(th, i, j)
			} else {
				err = e.bcastRecv(th, i, j)
			}
			if err != nil {
				return err
			}
		}
		inst = &b.insts[i]
		if inst.left > 0 {
			return nil
		}
		inst.step++
	}
}

// bcastOpDone completes transfer j of instance i's current step, and the
// step with it when it was the last.
func (e *mpi) bcastOpDone(th fabric.Thread, i, j int) error {
	inst := &e.bc.insts[i]
	inst.steps[inst.step][j].done = true
	if inst.left--; inst.left > 0 {
		return nil
	}
	inst.step++
	return e.bcastStep(th, i)
}

// bcastSend starts a send: eagerly through a staging slot (the data is
// copied, as into an MPI library's registered eager buffer), or by an RTS
// when the piece does not fit one.
func (e *mpi) bcastSend(th fabric.Thread, i, j int) error {
	b := &e.bc
	inst := &b.insts[i]
	op := &inst.steps[inst.step][j]
	h := header{seq: mpiSeq(mpiBcRTS, inst.seq, inst.root), sum: uint64(op.off)<<32 | uint64(op.n)}
	if HeaderBytes+op.n > e.slotBytes {
		th.Compute(e.costs.CallCycles)
		return e.control(op.peer, h, wrMPICtl, false)
	}
	k := len(b.stages)
	if k == 0 {
		b.backlog = append(b.backlog, [2]int{i, j})
		return nil
	}
	th.Compute(e.costs.CallCycles)
	op.stage, b.stages = b.stages[k-1], b.stages[:k-1]
	at := b.stageOff + op.stage*e.slotBytes
	mem := e.mr.Bytes()
	h.seq, h.n, h.src = mpiSeq(mpiBcEager, inst.seq, inst.root), op.n, e.me
	h.put(mem[at:])
	copy(mem[at+HeaderBytes:at+HeaderBytes+op.n], mem[inst.src+op.off:inst.src+op.off+op.n])
	th.Charge(fabric.WorkCopy, op.n)
	e.signaled++
	return e.postSend1(e.qps[op.peer], fabric.SendWR{ID: wrMPIBcast | uint64(i)<<16 | uint64(j), Op: fabric.OpSend,
		Local: e.mr.SGE(at, HeaderBytes+op.n), Flags: e.eagerFlags(op.n)})
}

// bcastRecv posts a receive: a piece that already came (unexpected) is
// taken at once.
func (e *mpi) bcastRecv(th fabric.Thread, i, j int) error {
	b := &e.bc
	inst := &b.insts[i]
	op := &inst.steps[inst.step][j]
	for k := range b.unexp {
		u := &b.unexp[k]
		if u.root != inst.root || u.seq != inst.seq&mpiSlotMask || u.src != op.peer || u.off != op.off {
			continue
		}
		if u.n != op.n {
			return fmt.Errorf("%w: broadcast piece [%d, +%d) from node %d where [%d, +%d) is expected", ErrBadMessage, u.off, u.n, u.src, op.off, op.n)
		}
		got := *u
		b.unexp = append(b.unexp[:k], b.unexp[k+1:]...)
		if got.kind == mpiBcEager {
			copy(e.mr.Bytes()[inst.dst+op.off:], got.data)
			th.Charge(fabric.WorkCopy, op.n)
			op.done = true
			inst.left--
			return nil
		}
		return e.bcastCTS(i, j)
	}
	return nil
}

// bcastCTS answers a rendezvous piece: write it into our buffer.
func (e *mpi) bcastCTS(i, j int) error {
	inst := &e.bc.insts[i]
	op := &inst.steps[inst.step][j]
	op.cts = true
	h := header{seq: mpiSeq(mpiBcCTS, inst.seq, inst.root), tuples: uint64(op.off), sum: uint64(inst.dst+op.off)<<32 | uint64(op.n)}
	return e.control(op.peer, h, wrMPICtl, false)
}

// bcastIncoming handles a collective message from peer.
func (e *mpi) bcastIncoming(th fabric.Thread, peer, kind, seq, root int, h header, data []byte) error {
	b := &e.bc
	if !e.cfg.Broadcast || root >= e.n {
		return fmt.Errorf("%w: broadcast message from node %d for root %d: this endpoint takes no broadcasts from it", ErrBadMessage, peer, root)
	}
	off, n := int(h.sum>>32), int(h.sum&0xffffffff)
	if kind == mpiBcCTS {
		off = int(h.tuples) // the piece; sum names where it goes
	}
	i, posted := b.index[[2]int{root, seq}]
	var inst *bcastInst
	if posted {
		inst = &b.insts[i]
	}
	find := func(send bool) int { // the transfer of the current step the message is for
		if inst == nil {
			return -1
		}
		for j, op := range inst.steps[inst.step] {
			if op.send == send && op.peer == peer && !op.done && op.off == off {
				return j
			}
		}
		return -1
	}
	switch kind {
	case mpiBcCTS:
		j := find(true)
		if j < 0 || inst.steps[inst.step][j].n != n {
			return fmt.Errorf("%w: clear-to-send from node %d for piece [%d, +%d) of broadcast %d of node %d, which sends it no such piece now", ErrBadMessage, peer, off, n, seq, root)
		}
		op := inst.steps[inst.step][j]
		target := int(h.sum >> 32)
		if target+op.n > e.mr.Len() { // every node's region has the same layout
			return fmt.Errorf("%w: clear-to-send from node %d names bytes [%d, +%d) outside its %d-byte region", ErrBadMessage, peer, target, op.n, e.mr.Len())
		}
		if op.n > 0 {
			base := e.peers[peer].Addr - uint64(e.recvOff)
			wr := fabric.SendWR{ID: wrMPICtl, Op: fabric.OpWrite, Local: e.mr.SGE(inst.src+op.off, op.n), RemoteAddr: base + uint64(target), RKey: e.peers[peer].RKey}
			if err := e.postSend1(e.qps[peer], wr); err != nil {
				return err
			}
		}
		fin := header{seq: mpiSeq(mpiBcFIN, seq, root), sum: uint64(op.off)<<32 | uint64(op.n)}
		return e.control(peer, fin, wrMPIBcast|uint64(i)<<16|uint64(j), true)
	case mpiBcFIN:
		j := find(false)
		if j < 0 || !inst.steps[inst.step][j].cts {
			return fmt.Errorf("%w: FIN from node %d for a broadcast piece it was not asked to write", ErrBadMessage, peer)
		}
		return e.bcastOpDone(th, i, j)
	}
	if off < 0 || n < 0 || off+n > e.msg || kind == mpiBcEager && h.n != n {
		return fmt.Errorf("%w: broadcast piece [%d, +%d) from node %d in a %d-byte message", ErrBadMessage, off, n, peer, e.msg)
	}
	th.Compute(e.costs.MatchCycles)
	if j := find(false); j >= 0 {
		op := &inst.steps[inst.step][j]
		if op.n != n {
			return fmt.Errorf("%w: broadcast piece [%d, +%d) from node %d where [%d, +%d) is expected", ErrBadMessage, off, n, peer, op.off, op.n)
		}
		if kind == mpiBcRTS {
			return e.bcastCTS(i, j)
		}
		copy(e.mr.Bytes()[inst.dst+off:], data)
		th.Charge(fabric.WorkCopy, n)
		return e.bcastOpDone(th, i, j)
	}
	u := bcastUnexp{kind: kind, root: root, seq: seq, src: peer, off: off, n: n}
	if kind == mpiBcEager {
		u.data = append([]byte(nil), data...)
		th.Charge(fabric.WorkCopy, n)
	}
	b.unexp = append(b.unexp, u)
	return nil
}

// bcastSent handles the completion of an eager send or a FIN.
func (e *mpi) bcastSent(th fabric.Thread, id uint64) error {
	b := &e.bc
	i, j := int(id>>16&(1<<32-1)), int(id&0xffff)
	if i >= len(b.insts) || b.insts[i].step >= len(b.insts[i].steps) || j >= len(b.insts[i].steps[b.insts[i].step]) {
		return fmt.Errorf("algos: MPI endpoint %d on node %d: completion of broadcast transfer %d.%d, which is not in flight", e.cfg.Tag, e.me, i, j)
	}
	inst := &b.insts[i]
	op := &inst.steps[inst.step][j]
	if op.stage >= 0 {
		b.stages = append(b.stages, op.stage)
		op.stage = -1
	}
	if err := e.bcastOpDone(th, i, j); err != nil {
		return err
	}
	for len(b.backlog) > 0 && len(b.stages) > 0 {
		w := b.backlog[0]
		b.backlog = b.backlog[1:]
		if err := e.bcastSend(th, w[0], w[1]); err != nil {
			return err
		}
	}
	return nil
}

// bcastDone finishes instance i: our own broadcast lets PutData return;
// another node's is delivered, in its root's order.
func (e *mpi) bcastDone(th fabric.Thread, i int) error {
	b := &e.bc
	inst := b.insts[i]
	delete(b.index, [2]int{inst.root, inst.seq & mpiSlotMask})
	b.insts[i] = bcastInst{}
	b.free = append(b.free, i)
	if inst.sbuf >= 0 {
		e.remaining[inst.sbuf]--
		b.lands = append(b.lands, inst.land)
		return nil
	}
	rb := (inst.dst - e.recvOff) / e.msg
	b.done[[2]int{inst.root, inst.seq}] = rb
	for {
		key := [2]int{inst.root, b.next[inst.root]}
		rb, ok := b.done[key]
		if !ok {
			return nil
		}
		delete(b.done, key)
		b.next[inst.root]++
		var h header
		off := e.recvOff + rb*e.msg
		if err := h.get(e.mr.Bytes()[off:off+e.msg], e.msg-HeaderBytes); err != nil {
			return fmt.Errorf("broadcast from node %d: %w", inst.root, err)
		}
		e.pending[rb] = mpiPending{state: recvAwaiting, src: inst.root, h: h}
		e.deliver(rb)
	}
}

// bcastStart is MPI_Ibcast of send buffer id, whose header is written, from
// this node.
func (e *mpi) bcastStart(th fabric.Thread, id int) error {
	b := &e.bc
	k := len(b.lands)
	if k == 0 {
		return fmt.Errorf("algos: MPI endpoint %d on node %d: more broadcasts in flight than the %d threads sharing it", e.cfg.Tag, e.me, e.cfg.Threads)
	}
	land := b.lands[k-1]
	b.lands = b.lands[:k-1]
	e.remaining[id]++
	seq := b.seq
	b.seq++
	return e.startBcast(th, bcastInst{root: e.me, seq: seq, sbuf: id, land: land, src: id * e.msg, dst: b.landOff + land*e.msg})
}

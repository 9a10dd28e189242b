package sim

import (
	"fmt"
	"sort"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// Buffer ownership. From the post until the completion is polled, a
// request's buffer belongs to the NIC; the checker sums it at the post and
// checks the sums as the NIC moves the bytes and at the poll:
//
//   - a send or RDMA Write: in payload mode each packet's bytes as the NIC
//     reads them (so that bytes changed after one packet and restored
//     before the poll are caught), in size-only mode the windows at the
//     first packet; all of them at the poll;
//   - an RDMA Read's destination: each packet's part before the NIC writes
//     it (the CPU wrote there first) and again at the poll (the CPU wrote
//     over data that had arrived), summed afresh after each write;
//   - a receive: the whole buffer when the first packet arrives, summed
//     again once the message is written, and at the poll.
//
// Each region keeps the byte ranges of its posted receives, sorted, so
// that a send or RDMA Read overlapping a posted receive, a receive posted
// over another, and an RDMA Write into a posted receive are found too.

// ckState is what the checker keeps per posted request. Its buffer is
// summed in parts: in payload mode, the buffer of a send or an RDMA Read in
// packets (each is checked as the NIC moves it, so that bytes changed
// after one packet and restored before the poll are caught); otherwise,
// and for receives, the whole buffer as one part.
type ckState struct {
	on     bool
	sum    uint64   // the sum of part 0
	more   []uint64 // the sums of parts 1, 2, ...
	part   int      // bytes per part
	buf    []byte
	mr     *mr
	poster *thread
}

func (c *ckState) parts() int { return 1 + len(c.more) }

// bytes returns part i of the buffer.
func (c *ckState) bytes(i int) []byte {
	lo := i * c.part
	return c.buf[lo:min(lo+c.part, len(c.buf))]
}

// sumOf returns where the sum of part i is kept.
func (c *ckState) sumOf(i int) *uint64 {
	if i == 0 {
		return &c.sum
	}
	return &c.more[i-1]
}

// seal sums c's buffer in parts of part bytes.
func (ch *checker) seal(c *ckState, part int) {
	c.part = part
	if n := (len(c.buf) + part - 1) / part; n > 1 {
		c.more = make([]uint64, n-1)
	}
	for i := range c.parts() {
		*c.sumOf(i) = ch.sum(c.bytes(i))
	}
}

// intact reports whether part i still has the bytes it was summed with.
func (ch *checker) intact(c *ckState, i int) bool { return ch.sum(c.bytes(i)) == *c.sumOf(i) }

// changed returns the first part that no longer matches its sum, or -1.
func (ch *checker) changed(c *ckState) int {
	for i := range c.parts() {
		if !ch.intact(c, i) {
			return i
		}
	}
	return -1
}

// partOf returns the part that packet k of e's message falls in.
func (e *sqe) partOf(q *qp, k int) int { return min(k*q.mtu/e.ck.part, e.ck.parts()-1) }

// packetDesc names part i of e as the packet it travels in.
func (e *sqe) packetDesc(i int) string {
	if e.ck.parts() == 1 {
		return "it"
	}
	b := e.ck.bytes(i)
	lo := i * e.ck.part
	return fmt.Sprintf("packet %d of %d (message bytes [%d, %d))", i+1, e.npkts, lo, lo+len(b))
}

func (m *mr) where(b []byte) string {
	if len(b) == 0 || len(m.buf) == 0 {
		return fmt.Sprintf("MR %#x", m.Key)
	}
	lo, hi := m.span(b)
	return fmt.Sprintf("MR %#x bytes [%d, %d)", m.Key, lo, hi)
}

// span returns where b, a slice of m's bytes (once m is deregistered, of
// the bytes it kept for its posted receives), lies in m.
func (m *mr) span(b []byte) (lo, hi uint64) {
	base := m.buf
	if m.Dead() {
		base = m.freed
	}
	lo = uint64(cap(base) - cap(b))
	return lo, lo + uint64(len(b))
}

// sendPosted runs as PostSend accepts e.
func (ch *checker) sendPosted(q *qp, e *sqe) {
	if e.wr.Flags&fabric.Signaled != 0 {
		q.unsig = 0
	} else if q.unsig++; q.unsig >= q.caps.MaxSendWR {
		ch.report(UnsignaledWrap, q.nic.node.id, ch.c.cur, "PostSend", q.String(),
			fmt.Sprintf("%d unsignaled requests in a row on %v, whose send queue holds %d: no completion can free their slots (signal one every fewer than %d)",
				q.unsig, q, q.caps.MaxSendWR, q.caps.MaxSendWR))
	}
	if e.mr == nil || e.bad != fabric.StatusSuccess || e.wr.Flags&fabric.Inline != 0 || e.length == 0 {
		return
	}
	e.mr.busy++
	e.ck = ckState{on: true, buf: e.buf, mr: e.mr, poster: ch.c.cur}
	part := len(e.buf)
	if ch.payload {
		part = q.mtu
	}
	ch.seal(&e.ck, part)
	ch.sendOverlap(q, e, "")
}

// sendOverlap reports e, and stops checking its bytes, when its buffer
// overlaps a posted receive; when says when that was found (at the post
// if empty; at a completion poll if whenPolled).
func (ch *checker) sendOverlap(q *qp, e *sqe, when string) {
	m := e.ck.mr
	if m.live == 0 || m.Dead() {
		return
	}
	lo, hi := m.span(e.ck.buf)
	ri, ok := m.overlapRecv(lo, hi)
	if !ok {
		return
	}
	r := m.recvs[ri]
	if when == whenPolled {
		when = ch.polled()
	}
	if when != "" {
		when = ", found " + when
	}
	ch.reportRegion(SendFromPostedRecv, e.ck.poster, "PostSend", m, func() string {
		use := "reads"
		if e.wr.Op == fabric.OpRead {
			use = "writes"
		}
		return fmt.Sprintf("%v wr_id %#x on %v: MR %#x bytes [%d, %d) overlap bytes [%d, %d) posted as a receive%s; the NIC %s them for this request while a message may land in them",
			e.wr.Op, e.wr.ID, q, m.Key, lo, hi, r.lo, r.hi, when, use)
	})
	e.ck.on = false // a message landing would read as a CPU write
}

// sendRead runs as the NIC fetches packet k of e (a send or RDMA Write):
// in payload mode for every packet, else for the first.
func (ch *checker) sendRead(q *qp, e *sqe, k int) {
	if !e.ck.on {
		return
	}
	if k == 0 {
		if ch.sendOverlap(q, e, "when the NIC read it"); !e.ck.on {
			return
		}
	}
	if i := e.partOf(q, k); (k*q.mtu)%e.ck.part == 0 && !ch.intact(&e.ck, i) {
		ch.sendModified(q, e, "when the NIC read "+e.packetDesc(i))
		e.ck.on = false // reported once
	}
}

func (ch *checker) sendModified(q *qp, e *sqe, when string) {
	ch.report(SendBufferModified, q.nic.node.id, e.ck.poster, "PostSend", e.ck.mr.where(e.ck.buf),
		fmt.Sprintf("%v wr_id %#x on %v: %s changed after the post, detected %s; a send's buffer belongs to the NIC until its completion is polled",
			e.wr.Op, e.wr.ID, q, e.ck.mr.where(e.ck.buf), when))
}

// readLanding runs as the NIC is about to write response k of the RDMA
// Read e into its destination (responses that carry bytes), readLanded
// once it has: the part is checked against the sum taken at the post (or
// after the NIC last wrote it), then summed again.
func (ch *checker) readLanding(q *qp, e *sqe, k int) {
	if i := e.partOf(q, k); e.ck.on && !ch.intact(&e.ck, i) {
		ch.readModified(q, e, "when the NIC wrote "+e.packetDesc(i))
	}
}

func (ch *checker) readLanded(q *qp, e *sqe, k int) {
	if e.ck.on {
		i := e.partOf(q, k)
		*e.ck.sumOf(i) = ch.sum(e.ck.bytes(i))
	}
}

func (ch *checker) readModified(q *qp, e *sqe, when string) {
	ch.report(ReadDestModified, q.nic.node.id, e.ck.poster, "PostSend", e.ck.mr.where(e.ck.buf),
		fmt.Sprintf("RDMA Read wr_id %#x on %v: %s written by the CPU before the read completed, detected %s; an RDMA Read's destination belongs to the NIC until its completion is polled",
			e.wr.ID, q, e.ck.mr.where(e.ck.buf), when))
	e.ck.on = false
}

// sendReleased runs as polling frees e's slot.
func (ch *checker) sendReleased(q *qp, e *sqe) {
	if e.ck.mr == nil {
		return
	}
	if e.ck.on {
		if e.wr.Op == fabric.OpRead {
			if ch.changed(&e.ck) >= 0 {
				ch.readModified(q, e, ch.polled())
			}
		} else if ch.sendOverlap(q, e, whenPolled); e.ck.on && ch.changed(&e.ck) >= 0 {
			ch.sendModified(q, e, ch.polled())
		}
	}
	e.ck.mr.busy--
	e.ck = ckState{}
}

// whenPolled stands, as sendOverlap's when, for ch.polled(): formatting
// that at every completion, whether or not anything is found, cost more
// than the checks.
const whenPolled = "\x00polled"

// polled says that a check failed at a completion poll by the running
// thread.
func (ch *checker) polled() string {
	return fmt.Sprintf("when its completion was polled (by %s)", threadName(ch.c.cur))
}

// recvPosted runs as PostRecv accepts e, a receive into m (nil for none).
func (ch *checker) recvPosted(q fmt.Stringer, e *rqe, m *mr) {
	if m == nil || e.has(rqeBad) || e.n == 0 {
		return
	}
	m.busy++
	e.set(rqeCkHeld|rqeCkOn, true)
	e.setPoster(ch.c.nameID(ch.c.cur))
	b := e.bytes(m)
	if r, ok := m.addRecv(b, uint32(ch.sum(b))); ok {
		lo, hi := m.span(b)
		ch.reportRegion(RecvPostedTwice, ch.c.cur, "PostRecv", m, func() string {
			return fmt.Sprintf("receive wr_id %#x on %v: MR %#x bytes [%d, %d) overlap bytes [%d, %d) already posted as a receive; each message overwrites what another left there",
				e.id, q, m.Key, lo, hi, r.lo, r.hi)
		})
		e.set(rqeCkOn, false) // the others are no longer checked either (recvChecked)
	}
}

// recvChecked returns e's range in m, its region, when e's bytes are
// still checked, else nil: a message landing in a receive that overlaps
// another posted receive changes the other's bytes without the CPU, so
// neither is checked once they overlap. A range that no other overlaps
// holds exactly one receive, e, so its sum is e's.
func (ch *checker) recvChecked(e *rqe, m *mr) *recvRange {
	if !e.has(rqeCkOn) {
		return nil
	}
	if r := m.recvOf(e.bytes(m)); !r.shared {
		return r
	}
	return nil
}

// recvFilling runs as the NIC starts writing a message into e.
func (ch *checker) recvFilling(q *qp, e *rqe) {
	m := e.region(q.nic)
	if r := ch.recvChecked(e, m); r != nil && uint32(ch.sum(e.bytes(m))) != r.sum {
		ch.recvModified(q, e, m, "when a message arrived")
	}
}

// recvFilled runs once the NIC has written e (ring entry idx).
func (ch *checker) recvFilled(q *qp, idx uint64) {
	if e := q.rqAt(idx); e.has(rqeCkOn) {
		m := e.region(q.nic)
		b := e.bytes(m)
		m.recvOf(b).sum = uint32(ch.sum(b))
	}
}

func (ch *checker) recvModified(q *qp, e *rqe, m *mr, when string) {
	ch.reportAs(RecvBufferModified, q.nic.node.id, ch.c.threadNamed(e.poster()), "PostRecv", m.where(e.bytes(m)),
		fmt.Sprintf("receive wr_id %#x on %v: %s written by the CPU while posted, detected %s; a receive buffer belongs to the NIC until its completion is polled",
			e.id, q, m.where(e.bytes(m)), when))
	e.set(rqeCkOn, false)
}

// recvReleased runs as polling frees e's slot.
func (ch *checker) recvReleased(q *qp, e *rqe) {
	if !e.has(rqeCkHeld) {
		return
	}
	m := e.region(q.nic)
	if r := ch.recvChecked(e, m); r != nil && uint32(ch.sum(e.bytes(m))) != r.sum {
		ch.recvModified(q, e, m, ch.polled())
	}
	ch.recvForget(e, m)
}

// recvForget drops the checker's record of e, a receive into m.
func (ch *checker) recvForget(e *rqe, m *mr) {
	m.busy--
	m.removeRecv(e.bytes(m))
	e.set(rqeCkHeld|rqeCkOn, false)
	e.setPoster(0)
}

// release runs the checks of the slots q's release frees.
func (ch *checker) release(q *qp, from, to uint64, recv bool) {
	if recv {
		for i := from; i < to; i++ {
			ch.recvReleased(q, q.rqAt(i))
		}
		return
	}
	for i := from; i < to; i++ {
		ch.sendReleased(q, q.sqAt(i))
	}
}

// dropAll forgets q's outstanding requests (reset or destroy), without
// checksum checks: the requests are discarded.
func (ch *checker) dropAll(q *qp) {
	for i := q.sqFree; i < q.sqTail; i++ {
		if e := q.sqAt(i); e.ck.mr != nil {
			e.ck.mr.busy--
			e.ck = ckState{}
		}
	}
	for i := q.rqFree; i < q.rqTail; i++ {
		if e := q.rqAt(i); e.has(rqeCkHeld) {
			ch.recvForget(e, e.region(q.nic))
		}
	}
}

// remoteWrite runs as an RDMA Write starts landing in buf of m.
func (ch *checker) remoteWrite(q *qp, m *mr, buf []byte, p *packet) {
	if m.live == 0 || len(buf) == 0 {
		return
	}
	lo, hi := m.span(buf)
	if ri, ok := m.overlapRecv(lo, hi); ok {
		r := m.recvs[ri]
		ch.report(WriteIntoPostedRecv, q.nic.node.id, nicThread, "RDMA Write", fmt.Sprintf("MR %#x", m.Key),
			fmt.Sprintf("an RDMA Write from node %d (QP %#x) into MR %#x bytes [%d, %d) overlaps bytes [%d, %d) posted as a receive",
				p.src, p.srcQPN, m.Key, lo, hi, r.lo, r.hi))
		// The receives it hit changed without the CPU: stop checking them.
		ch.uncheckRecvs(m, lo, hi)
	}
}

// uncheckRecvs stops checking the posted receives in m that overlap
// [lo, hi): something other than the CPU writes them.
func (ch *checker) uncheckRecvs(m *mr, lo, hi uint64) {
	for _, o := range m.nic.qps {
		if o == nil {
			continue
		}
		for i := o.rqFree; i < o.rqTail; i++ {
			e := o.rqAt(i)
			if e.has(rqeCkHeld) && e.mr == m.num() {
				if elo, ehi := e.off(), e.off()+uint64(e.n); elo < hi && ehi > lo {
					e.set(rqeCkOn, false)
				}
			}
		}
	}
	for _, s := range m.nic.srqs {
		for i := s.head; i < s.tail; i++ {
			if e := s.at(i); e.has(rqeCkHeld) && e.mr == m.num() {
				if elo, ehi := e.off(), e.off()+uint64(e.n); elo < hi && ehi > lo {
					e.set(rqeCkOn, false)
				}
			}
		}
	}
}

// recvRange is a byte range of a region posted as receive buffers: n
// receives with exactly these bounds; shared once another posted receive
// overlaps it. A range that is not shared holds one receive, and sum is
// the checker's sum of its buffer (its low 32 bits; payload mode's is a
// CRC-32 anyway) when last known intact: kept here, per region, rather
// than in each receive-queue entry (rqe).
type recvRange struct {
	lo, hi uint64
	n      int
	sum    uint32
	shared bool
}

// recvOf is the range of the posted receive buffer b (a receive the
// checker holds: rqeCkHeld).
func (m *mr) recvOf(b []byte) *recvRange {
	i, _ := m.findRecv(m.span(b))
	return &m.recvs[i]
}

// findRecv returns where the range [lo, hi) is, or would be inserted, in
// m.recvs, and whether it is there.
//
// It first tries where the last lookup ended (m.recvAt) and the place
// after it: a receive is looked up again as its message arrives and when
// it completes, and programs post their buffers in address order, so
// most lookups of a region with thousands of posted ranges (a node's
// receive ring for every peer) end there without a search.
func (m *mr) findRecv(lo, hi uint64) (int, bool) {
	for _, i := range [2]int{m.recvAt, m.recvAt + 1} {
		if m.recvPlace(i, lo, hi) {
			m.recvAt = i
			return i, i < len(m.recvs) && m.recvs[i].lo == lo && m.recvs[i].hi == hi
		}
	}
	i := sort.Search(len(m.recvs), func(i int) bool { return !recvBefore(m.recvs[i], lo, hi) })
	m.recvAt = i
	return i, i < len(m.recvs) && m.recvs[i].lo == lo && m.recvs[i].hi == hi
}

// recvBefore reports whether r sorts before the range [lo, hi).
func recvBefore(r recvRange, lo, hi uint64) bool { return r.lo < lo || r.lo == lo && r.hi < hi }

// recvPlace reports whether i is where sort.Search would put [lo, hi) in
// m.recvs: every range before i sorts before it, and the one at i (if
// any) does not.
func (m *mr) recvPlace(i int, lo, hi uint64) bool {
	if i < 0 || i > len(m.recvs) {
		return false
	}
	return (i == 0 || recvBefore(m.recvs[i-1], lo, hi)) && (i == len(m.recvs) || !recvBefore(m.recvs[i], lo, hi))
}

// addRecv records b, whose bytes have the checker's sum sum, as posted
// for a receive. When it overlaps receives already posted, it returns one
// of them, and marks them and b shared.
func (m *mr) addRecv(b []byte, sum uint32) (recvRange, bool) {
	lo, hi := m.span(b)
	first, ok := m.overlapRecv(lo, hi)
	var other recvRange
	if ok {
		other = m.recvs[first]
		for i := first; i < len(m.recvs) && m.recvs[i].lo < hi; i++ {
			if m.recvs[i].hi > lo && m.recvs[i].n > 0 {
				m.share(i)
			}
		}
	}
	i, found := m.findRecv(lo, hi)
	if !found {
		m.recvs = append(m.recvs, recvRange{})
		copy(m.recvs[i+1:], m.recvs[i:])
		m.recvs[i] = recvRange{lo: lo, hi: hi}
		m.recvMax = max(m.recvMax, hi-lo)
	}
	if m.recvs[i].n == 0 { // new, or posted again after it was taken
		m.recvs[i].sum = sum
		m.live++
	}
	m.recvs[i].n++
	if !ok {
		return recvRange{}, false
	}
	m.share(i)
	return other, true
}

func (m *mr) share(i int) {
	if !m.recvs[i].shared {
		m.recvs[i].shared = true
		m.shared++
	}
}

// removeRecv takes one receive of the posted buffer b away. A range
// whose last receive is taken stays in m.recvs with no receive
// (n 0), so that posting the same buffer again, as programs do, finds it
// instead of moving every range after it twice; such a range takes part
// in no overlap.
func (m *mr) removeRecv(b []byte) {
	lo, hi := m.span(b)
	if i, found := m.findRecv(lo, hi); found && m.recvs[i].n > 0 {
		if m.recvs[i].n--; m.recvs[i].n == 0 {
			if m.recvs[i].shared {
				m.recvs[i].shared = false
				m.shared--
			}
			m.live--
		}
	}
}

// isShared reports whether the posted receive buffer b overlaps another.
func (m *mr) isShared(b []byte) bool {
	i, found := m.findRecv(m.span(b))
	return found && m.recvs[i].n > 0 && m.recvs[i].shared
}

// overlapRecv returns the index in m.recvs of the first posted receive
// range overlapping [lo, hi).
func (m *mr) overlapRecv(lo, hi uint64) (int, bool) {
	// The ranges that start before [lo, hi)'s place and can reach into
	// it start at most recvMax before lo; found from that place (where
	// findRecv's first guess usually is) rather than by a second search.
	// When no two posted ranges overlap (a range overlapping another is
	// marked shared until it is removed), they are sorted by their ends
	// too, and only the last of them can reach into [lo, hi).
	i, _ := m.findRecv(lo, hi)
	start := uint64(0)
	if lo > m.recvMax {
		start = lo - m.recvMax
	}
	first := -1
	for j := i - 1; j >= 0 && m.recvs[j].lo >= start; j-- {
		if m.recvs[j].n == 0 {
			continue // posted no more (removeRecv)
		}
		if m.recvs[j].lo < hi && m.recvs[j].hi > lo {
			first = j
		}
		if m.shared == 0 {
			break
		}
	}
	if first >= 0 {
		return first, true
	}
	for ; i < len(m.recvs) && m.recvs[i].lo < hi; i++ {
		if m.recvs[i].hi > lo && m.recvs[i].n > 0 {
			return i, true
		}
	}
	return 0, false
}

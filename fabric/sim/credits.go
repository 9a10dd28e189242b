package sim

import "github.com/rdmashuffle/rdmashuffle/fabric"

// credits is one side of InfiniBand link-level flow control: a sender may
// put a packet on a link only while the receiving buffer has room for it,
// counted in 64-byte blocks. Blocks come back when the receiver has moved
// the packet on, plus the time the flow-control packet takes to travel
// back. Returns are recorded with the time they become visible, kept in
// time order, and applied lazily, so credit traffic costs no events. A
// switch input buffer drains out of order (a small packet to an idle output
// leaves before a large one that started earlier to a busy output), so a
// return may be recorded before a later one already queued.
type credits struct {
	cap  int // blocks
	used int
	ret  []creditReturn
	head int
}

type creditReturn struct {
	at     fabric.Time
	blocks int
}

func blocksOf(wire int) int {
	return int(uint(wire+creditBlock-1) / creditBlock) // unsigned: a shift (wire >= 0)
}

func newCredits(bytes int) credits { return credits{cap: bytes / creditBlock} }

// avail applies every return visible at now and reports the free blocks.
func (c *credits) avail(now fabric.Time) int {
	for c.head < len(c.ret) && c.ret[c.head].at <= now {
		c.used -= c.ret[c.head].blocks
		c.head++
	}
	if c.head == len(c.ret) {
		c.ret, c.head = c.ret[:0], 0
	} else if c.head >= 256 && 2*c.head >= len(c.ret) {
		k := copy(c.ret, c.ret[c.head:])
		c.ret, c.head = c.ret[:k], 0
	}
	return c.cap - c.used
}

func (c *credits) take(blocks int) { c.used += blocks }

// give schedules the return of blocks at time at, in its place in time
// order (usually the end).
func (c *credits) give(at fabric.Time, blocks int) {
	c.ret = append(c.ret, creditReturn{at, blocks})
	for i := len(c.ret) - 1; i > c.head && c.ret[i-1].at > at; i-- {
		c.ret[i], c.ret[i-1] = c.ret[i-1], c.ret[i]
	}
}

// next is when the next pending return becomes visible.
func (c *credits) next() (fabric.Time, bool) {
	if c.head < len(c.ret) {
		return c.ret[c.head].at, true
	}
	return 0, false
}

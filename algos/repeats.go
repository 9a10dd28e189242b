package algos

import "github.com/rdmashuffle/rdmashuffle/fabric"

// Credit repeats for SQ/SR, per connection.
//
// A credit message travels over UD and may be lost; a source that lacks
// it may wait for credit forever. So a receiver repeats a source's credit
// (its absolute value, Flush: the value last written, or more when
// receives were posted since) once the connection from that source has
// been quiet for its gap: no data from it for RepeatQuiet (CreditTimers)
// after its last message, then a gap that doubles with every repeat up
// to 32 times that (maxBackoff), back to RepeatQuiet when data arrives
// again. Only a connection whose source may be waiting for credit counts
// (mayStall): the source's credit is at least the initial Buffers and at
// least the number of messages received from it, so while fewer than
// Buffers have arrived, or every credit the receiver has given is used
// (the receiver has nothing to give until a Release), no repeat can help.
//
// Repeats go out only while the receiving thread waits, after it has
// found nothing for RepeatQuiet (the thread's quiet, as before). A
// connection alone is quiet far more often than its thread: at 256 nodes
// a connection carries four or five messages in a 4.5 ms shuffle while
// its thread receives one every few microseconds, so repeating on every
// connection's own quiet sent more repeats than repeating to every source
// on the thread's (measured: docs/architecture.md). Before, a thread
// quiet for its gap repeated to every source still sending, busy ones and
// ones with their initial credit in hand alike (every source at the start
// of an exchange, when no data has arrived yet).
//
// The state is two numbers per connection (9 bytes: when it was last
// heard from or repeated to, and its backoff; with loss recovery 8 more,
// the acknowledgement last sent) and, per endpoint, when the next repeat
// may fall due, a lower bound kept in O(1) as data arrives and receives
// are posted. A walk over the connections (O(sources)) happens at most
// once per RepeatScan.
//
// A walk stops when the credit queue pair's send queue is full (its
// completions polled once as the walk begins): the connections left stay
// due, and the next look, a RepeatScan later and whether or not the
// thread has been quiet since, walks them (only them: a new walk waits
// for the thread's quiet again). None is owed (owed.go), so that a walk
// over a thousand connections never puts a thousand guesses ahead of the
// credit a source is waiting for. Before, a walk posted to every due
// connection, and those that did not fit were dropped after their credit
// had been counted as written.

// mayStall reports whether source s may be waiting for credit that a
// repeat would carry: it has not ended its stream, has sent at least its
// initial credit, and the receiver has posted receives beyond the
// messages received from it. With loss recovery, also when the source
// may wait for an acknowledgement: one not sent yet (a message the
// source keeps until it is acknowledged holds its send buffer).
func (e *sqsr) mayStall(s int) bool {
	if e.doneSrc[s] {
		return false
	}
	c := e.counts[s]
	got := c.Received()
	return got >= uint64(e.cfg.Buffers) && e.cr[s].PostedCount() > got ||
		e.ackSent != nil && c.Contiguous() > e.ackSent[s]
}

// repeatDue is when source s's credit falls due for a repeat.
func (e *sqsr) repeatDue(s int) fabric.Time {
	return e.heard[s].Add(e.ct.RepeatQuiet << e.backoff[s])
}

// heardFrom records data from source s at now: its connection is quiet
// from now on, with the shortest gap.
func (e *sqsr) heardFrom(s int, now fabric.Time) {
	e.heard[s], e.backoff[s] = now, 0
	e.armRepeat(s)
}

// armRepeat brings the next look at the connections forward to source
// s's due repeat, if it may stall, but no earlier than RepeatScan after
// the last look.
func (e *sqsr) armRepeat(s int) {
	if e.mayStall(s) {
		e.nextRepeat = min(e.nextRepeat, max(e.repeatDue(s), e.lastScan.Add(e.ct.RepeatScan)))
	}
}

// repeatQuiet repeats the credit of every connection whose gap has
// passed at now and whose source may stall, and sets when the next
// repeat falls due.
func (e *sqsr) repeatQuiet(now fabric.Time) error {
	next, reaped := fabric.Forever, false
	walk := e.n
	if e.walkLeft > 0 { // the rest of a walk that stopped at a full queue
		walk, next = e.walkLeft, now.Add(e.ct.RepeatQuiet) // connections walked before are due no sooner
	}
	for k := 0; k < walk; k++ {
		s := (e.scanFrom + k) % e.n
		if !e.mayStall(s) {
			continue
		}
		due := e.repeatDue(s)
		if due <= now {
			if v, ok := e.cr[s].FlushValue(); ok {
				if !reaped { // credit messages free their send-queue slots as completions are polled
					if _, err := e.reap(); err != nil {
						return err
					}
					reaped = true
				}
				sent, err := e.tryCredit(s, v)
				if err != nil {
					return err
				}
				if !sent {
					// The queue is full: the connections left stay due,
					// and the next look, whether or not the thread has
					// been quiet since, walks them before it starts a
					// new walk (so that every connection's turn comes
					// under a queue that stays full). A repeat is a
					// guess, so it is not owed (owed.go), where it would
					// hold up the credit that releases send.
					e.lastScan, e.scanFrom, e.walkLeft = now, s, walk-k
					e.nextRepeat = now.Add(e.ct.RepeatScan)
					return nil
				}
				e.cr[s].Flush()
				e.info.CreditRepeats++
			}
			e.heard[s] = now
			e.backoff[s] = min(e.backoff[s]+1, maxBackoff)
			due = e.repeatDue(s)
		}
		next = min(next, due)
	}
	e.lastScan, e.walkLeft = now, 0
	e.scanFrom = (e.scanFrom + walk) % e.n
	e.nextRepeat = max(next, now.Add(e.ct.RepeatScan))
	return nil
}

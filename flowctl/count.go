package flowctl

import "fmt"

// Count tracks one UD source's messages for end-of-stream detection. Every
// message carries the sender's running count; the last one is flagged as
// the end and carries the total. UD may deliver the end before earlier
// messages, so the source is finished only when everything announced has
// arrived. A duplicate (same sequence number twice) is detected when the
// sender numbers its messages, which Add checks.
type Count struct {
	got   uint64
	total uint64 // announced total, valid when ended
	ended bool
	seen  map[uint64]struct{} // sequence numbers above cum, when tracked
	cum   uint64              // when tracked: 1..cum all recorded
	top   uint64              // the largest sequence number recorded
}

// NewCount returns a counter; trackSeq makes it remember sequence numbers
// to detect duplicates (costing memory per message until the end).
func NewCount(trackSeq bool) *Count {
	c := &Count{}
	if trackSeq {
		c.seen = map[uint64]struct{}{}
	}
	return c
}

// Add records a message with sequence number seq (1-based, the sender's
// running count). last marks the end of the stream; its seq is the total.
// It returns an error for a duplicate or for a message beyond the
// announced total.
func (c *Count) Add(seq uint64, last bool) error {
	if seq == 0 {
		return fmt.Errorf("flowctl: message sequence numbers start at 1")
	}
	if c.seen != nil {
		if c.Seen(seq) {
			return fmt.Errorf("flowctl: duplicate message %d", seq)
		}
		c.seen[seq] = struct{}{}
		for {
			if _, ok := c.seen[c.cum+1]; !ok {
				break
			}
			delete(c.seen, c.cum+1)
			c.cum++
		}
	}
	if last {
		if c.ended {
			return fmt.Errorf("flowctl: second end-of-stream (totals %d and %d)", c.total, seq)
		}
		c.ended, c.total = true, seq
	}
	c.got++
	c.top = max(c.top, seq)
	if c.ended && (c.got > c.total || c.top > c.total) {
		// c.top, not seq: a message numbered beyond the total may have
		// arrived before the end did.
		return fmt.Errorf("flowctl: message %d beyond the announced total %d", c.top, c.total)
	}
	return nil
}

// Seen reports whether message seq was recorded (tracking counters only;
// an untracked counter reports false).
func (c *Count) Seen(seq uint64) bool {
	if c.seen == nil {
		return false
	}
	_, ok := c.seen[seq]
	return ok || seq >= 1 && seq <= c.cum
}

// Contiguous is the largest n such that messages 1..n have all been
// recorded: the cumulative acknowledgement a receiver can send back
// (tracking counters only; 0 otherwise).
func (c *Count) Contiguous() uint64 { return c.cum }

// Done reports whether the end arrived and every announced message with it.
func (c *Count) Done() bool { return c.ended && c.got == c.total }

// Missing is how many announced messages have not arrived (0 before the
// end was seen).
func (c *Count) Missing() uint64 {
	if !c.ended || c.got >= c.total {
		return 0
	}
	return c.total - c.got
}

// Received is the number of messages received.
func (c *Count) Received() uint64 { return c.got }

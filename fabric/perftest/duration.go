package perftest

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync/atomic"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// NoMargin, as Config.Margin, measures a duration-mode test from its first
// moment to its last (perftest's -f 0).
const NoMargin fabric.Duration = -1

// margin is the part of a duration-mode run left out of the measurement
// at each end: Config.Margin, or perftest's default of a quarter of the
// duration.
func (c *Config) margin() fabric.Duration {
	switch {
	case c.Margin == NoMargin:
		return 0
	case c.Margin == 0:
		return c.Duration / 4
	}
	return c.Margin
}

// window is the timing of one node's test in duration mode (perftest's
// -D): it sends from start until end and measures what completes in
// [from, to), a margin inside each end (perftest's warm-up and cool-down
// states). The zero window is iteration mode.
type window struct {
	on                   bool
	start, from, to, end fabric.Time
}

// window returns the timing of a run that starts now; the zero window in
// iteration mode.
func (c *Config) window(now fabric.Time) window {
	if c.Duration <= 0 {
		return window{}
	}
	m := c.margin()
	return window{on: true, start: now, from: now.Add(m), to: now.Add(c.Duration - m), end: now.Add(c.Duration)}
}

// sampling reports whether a completion seen at t is measured.
func (w window) sampling(t fabric.Time) bool { return w.on && t >= w.from && t < w.to }

// share is the part of n messages, completed evenly over (from, to], that
// completed in the measured interval. One signaled completion covers the
// -Q requests since the previous one; counting them all at the moment it
// is polled (as perftest does) quantises a short run to -Q messages per
// queue pair.
func (w window) share(from, to fabric.Time, n int) float64 {
	if to <= from {
		if w.sampling(to) {
			return float64(n)
		}
		return 0
	}
	lo, hi := max(from, w.from), min(to, w.to)
	if hi <= lo {
		return 0
	}
	return float64(n) * float64(hi.Sub(lo)) / float64(to.Sub(from))
}

// measured fills r's interval with the window's: a duration-mode result
// is what completed in [from, to), over that interval.
func (w window) measured(r *nodeResult, msgs float64, size int) {
	r.start, r.end = w.from, w.to
	r.msgs, r.bytes = int64(math.Round(msgs)), int64(math.Round(msgs*float64(size)))
}

// tally tells a receiver, in duration mode, how many messages it will get
// in all: only the senders know, once they have stopped. Written once by
// the node's main thread, read by its receiver thread.
type tally struct {
	expected atomic.Int64 // -1 until known
	known    fabric.Signal
}

func newTally(n fabric.Node) *tally {
	t := &tally{known: n.NewSignal()}
	t.expected.Store(-1)
	return t
}

func (t *tally) set(n int64) {
	t.expected.Store(n)
	t.known.Notify()
}

// maxCount bounds one node's count in the exchange (a day at 10^9
// messages per second is below it), so that a corrupt table cannot
// overflow the sum.
const maxCount = 1 << 47

// exchangeCounts is the end of a duration-mode bandwidth test on every
// node: each node contributes how many messages it sent to each node
// (sent, indexed by node id; nil if it sent nothing), and learns how many
// were sent to it in all.
func exchangeCounts(oob fabric.OOB, me, nodes int, sent []int64) (int64, error) {
	buf := make([]byte, 8*nodes)
	for i, v := range sent {
		binary.LittleEndian.PutUint64(buf[8*i:], uint64(v))
	}
	all, err := oob.AllGather("perftest-sent", buf)
	if err != nil {
		return 0, err
	}
	if len(all) != nodes {
		return 0, fmt.Errorf("perftest: the count exchange has %d nodes, want %d: every node of the job must run the same test on the same number of nodes", len(all), nodes)
	}
	var total int64
	for j, b := range all {
		if len(b) != len(buf) {
			return 0, fmt.Errorf("perftest: node %d sent %d bytes of message counts, want %d (one count per node): every node of the job must run the same test on the same number of nodes", j, len(b), len(buf))
		}
		c := binary.LittleEndian.Uint64(b[8*me:])
		if c > maxCount {
			return 0, fmt.Errorf("perftest: node %d says it sent %d messages to node %d, more than a day's run at a billion messages a second: a corrupt count exchange", j, c, me)
		}
		total += int64(c)
	}
	return total, nil
}

// receiveAside runs rx on a second thread of th's node until it has
// received expected messages (or, with a tally, as many as the tally
// says) and returns a function that waits for it and returns its result.
func receiveAside(th fabric.Thread, rx *receiver, expected int) func() (*nodeResult, error) {
	var got *nodeResult
	var rerr error
	var finished atomic.Bool
	doneSig := th.Node().NewSignal()
	th.Spawn("receiver", min(1, th.Node().Cores()-1), func(rt fabric.Thread) error {
		defer func() { finished.Store(true); doneSig.Notify() }()
		got, rerr = rx.run(rt, expected)
		return rerr
	})
	return func() (*nodeResult, error) {
		for !finished.Load() {
			th.Wait(fabric.Forever, doneSig)
		}
		return got, rerr
	}
}

// runTimed runs one node of a bandwidth test in duration mode from the
// moment every node is ready: rx (nil: this node receives nothing)
// receives on a second thread while send (nil: this node sends nothing)
// sends on th until the window ends and its requests have completed; then
// every node exchanges its counts so that each receiver knows when it has
// everything. It returns what the sender and the receiver measured.
func runTimed(th fabric.Thread, m *mesh, nodes int, cfg *Config, rx *receiver,
	send func(w window) (*nodeResult, error)) (sent, got *nodeResult, err error) {
	w := cfg.window(th.Now())
	var wait func() (*nodeResult, error)
	if rx != nil {
		rx.w, rx.tally = w, newTally(th.Node())
		wait = receiveAside(th, rx, 0)
	}
	var counts []int64
	if send != nil {
		if sent, err = send(w); err != nil {
			return nil, nil, err
		}
		counts = make([]int64, nodes)
		for p, c := range sent.sent {
			counts[m.peers[p]] += c
		}
	}
	total, err := exchangeCounts(th.Node().OOB(), th.Node().ID(), nodes, counts)
	if err != nil {
		return nil, nil, err
	}
	if rx != nil {
		rx.tally.set(total)
		got, err = wait()
	}
	return sent, got, err
}

// checkDuration checks the duration-mode fields.
func (c *Config) checkDuration() error {
	switch {
	case c.Duration < 0:
		return bad("Duration", c.Duration, "the duration must be positive")
	case c.Duration == 0 && c.Margin != 0:
		return bad("Margin", c.Margin, "applies to duration mode; give a Duration too")
	case c.Duration == 0:
		return nil
	case c.Iters != 0:
		return bad("Iters", c.Iters, "with a Duration of %v: give a message count or a duration, not both", c.Duration)
	case c.Test == "reg_mr":
		return bad("Duration", c.Duration, "reg_mr times a number of registrations (Iters), not a duration")
	case c.Schedule != ScheduleSpread:
		return bad("Duration", c.Duration, "the %s schedule sends a fixed list of messages: give a message count (Iters), not a duration", c.Schedule)
	case c.Margin < 0 && c.Margin != NoMargin:
		return bad("Margin", c.Margin, "the margin must not be negative")
	case c.Duration <= 2*c.margin():
		return bad("Duration", c.Duration, "with a margin of %v: the duration must be longer than twice the margin, or nothing is measured", c.margin())
	}
	return nil
}

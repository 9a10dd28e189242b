package algos

import (
	"fmt"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// TestOwedCreditArrives: credit that finds the credit queue pair's send
// queue full is owed, not dropped (owed.go). A receiver writes a burst of
// credit to one source, more messages than the queue holds, each a higher
// value; the source ends up holding the burst's last value, sent once the
// queue had room. Before, the messages that did not fit were dropped, the
// last value among them, and the source kept an older one until a repeat
// of its quiet connection.
func TestOwedCreditArrives(t *testing.T) {
	// Three send queues' worth of credit messages; enough buffers that the
	// source has a credit receive posted for every message the queue can
	// hold (creditSlots), so that none is lost on arrival.
	const burst, buffers = 3 * (2*creditSignalEvery + 8), 2*creditSignalEvery + 8
	c, err := sim.New(sim.Config{Nodes: 2, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var want uint64
	var owedAtMost int
	err = c.Run(func(th fabric.Thread) error {
		ep, err := OpenSQSR(th, Config{Nodes: 2, MsgBytes: 1024, Buffers: buffers, CreditEvery: 2, Timeout: 10 * fabric.Millisecond})
		if err != nil {
			return err
		}
		e := ep.(*sqsr)
		if th.Node().ID() == 1 {
			for i := 0; i < burst; i++ {
				e.cr[0].Posted(1)
				v, _ := e.cr[0].Flush()
				if err := e.sendCredit(0, v); err != nil {
					return err
				}
				owedAtMost = max(owedAtMost, len(e.owed))
			}
			want = e.cr[0].Written()
			for owed := true; owed; {
				th.Busy(fabric.Microsecond)
				if owed, err = e.payOwed(); err != nil {
					return err
				}
			}
			if e.info.CreditOwed == 0 {
				return fmt.Errorf("no credit was sent late")
			}
		} else {
			for end := th.Now().Add(200 * fabric.Microsecond); th.Now() < end; th.Busy(fabric.Microsecond) {
				if _, err := e.drainCredit(th); err != nil {
					return err
				}
			}
			if got := e.cs[1].Credit(); got != uint64(burst+buffers) {
				return fmt.Errorf("the source holds credit %d after a burst up to %d", got, burst+buffers)
			}
		}
		return ep.Close(th)
	})
	if err != nil {
		t.Fatal(err)
	}
	if owedAtMost != 1 || want != burst+buffers {
		t.Fatalf("owed at most %d sources (want 1: one source, however many values), last value %d", owedAtMost, want)
	}
}

// TestRepeatScanStopsAtAFullQueue: a repeat walk that finds the credit
// queue pair's send queue full stops there (repeats.go): what it sent is
// marked written and its connections' gaps grow; the connections left
// keep their credit unwritten and stay due, nothing is owed (so that a
// burst of repeats never holds up the credit a source needs), and the
// next look, a RepeatScan later, walks exactly those it left.
func TestRepeatScanStopsAtAFullQueue(t *testing.T) {
	const nodes = 64
	c, err := sim.New(sim.Config{Nodes: nodes, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = c.Run(func(th fabric.Thread) error {
		ep, err := OpenSQSR(th, Config{Nodes: nodes, MsgBytes: 1024, Buffers: 2, CreditEvery: 2, Timeout: 10 * fabric.Millisecond})
		if err != nil {
			return err
		}
		e := ep.(*sqsr)
		if th.Node().ID() == 0 {
			// Every other source sent its two messages; one buffer was
			// released since: one credit posted and not yet written.
			for s := 1; s < nodes; s++ {
				for seq := uint64(1); seq <= 2; seq++ {
					if err := e.counts[s].Add(seq, false); err != nil {
						return err
					}
				}
				e.cr[s].Posted(1)
				e.heard[s], e.backoff[s] = 0, 0
			}
			now := th.Now()
			if err := e.repeatQuiet(now); err != nil {
				return err
			}
			sent := int(e.info.CreditRepeats)
			if sent == 0 || sent >= nodes-1 {
				return fmt.Errorf("a scan over %d due connections sent %d repeats; want fewer than all (the queue holds %d)", nodes-1, sent, 2*creditSignalEvery+8)
			}
			if len(e.owed) != 0 || e.nextRepeat != now.Add(DefaultCreditTimers.RepeatScan) || e.walkLeft != nodes-1-sent {
				return fmt.Errorf("after the scan: %d owed, next look at %v, %d connections left to walk; want none owed, the next look at %v and %d left",
					len(e.owed), e.nextRepeat, e.walkLeft, now.Add(DefaultCreditTimers.RepeatScan), nodes-1-sent)
			}
			repeated := 0
			for s := 1; s < nodes; s++ {
				switch {
				case e.heard[s] == now && e.cr[s].Written() == 3 && e.backoff[s] == 1:
					repeated++
				case e.heard[s] == 0 && e.cr[s].Written() == 2 && e.repeatDue(s) <= now:
				default:
					return fmt.Errorf("source %d: heard %v, credit written %d, backoff %d: neither repeated nor left due", s, e.heard[s], e.cr[s].Written(), e.backoff[s])
				}
			}
			if repeated != sent {
				return fmt.Errorf("%d connections marked repeated, %d repeats sent", repeated, sent)
			}
			// The next look, once the queue has drained, repeats the rest.
			th.Busy(100 * fabric.Microsecond)
			if err := e.repeatQuiet(th.Now()); err != nil {
				return err
			}
			for s := 1; s < nodes; s++ {
				if e.heard[s] == 0 {
					return fmt.Errorf("source %d not repeated by the next scan (%d repeats in all)", s, e.info.CreditRepeats)
				}
			}
			if e.walkLeft != 0 || int(e.info.CreditRepeats) != nodes-1 {
				return fmt.Errorf("the next look walked beyond what was left (%d repeats in all, want %d), or left %d", e.info.CreditRepeats, nodes-1, e.walkLeft)
			}
		}
		return ep.Close(th)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestRefusedCreditKeepsAckOwed: with loss recovery a credit message also
// acknowledges; one that the full send queue refuses has acknowledged
// nothing, so its source still counts as owed an acknowledgement
// (mayStall) and the walk that goes on repeats it.
func TestRefusedCreditKeepsAckOwed(t *testing.T) {
	c, err := sim.New(sim.Config{Nodes: 2, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = c.Run(func(th fabric.Thread) error {
		ep, err := OpenSQSR(th, Config{Nodes: 2, MsgBytes: 1024, Buffers: 4, CreditEvery: 2, Recover: true, Timeout: 10 * fabric.Millisecond})
		if err != nil {
			return err
		}
		e := ep.(*sqsr)
		if th.Node().ID() == 1 {
			var acked uint64
			for seq := uint64(1); ; seq++ {
				if err := e.counts[0].Add(seq, false); err != nil {
					return err
				}
				sent, err := e.tryCredit(0, e.cr[0].Written())
				if err != nil {
					return err
				}
				if !sent {
					if e.ackSent[0] != acked || !e.mayStall(0) {
						return fmt.Errorf("after a refused post of acknowledgement %d: acknowledgement sent %d (last posted %d), owed %v",
							seq, e.ackSent[0], acked, e.mayStall(0))
					}
					break
				}
				if acked = seq; e.ackSent[0] != acked {
					return fmt.Errorf("posted acknowledgement %d, recorded %d", acked, e.ackSent[0])
				}
			}
			for owed := true; owed; { // let the queue drain before closing
				th.Busy(fabric.Microsecond)
				if _, err := e.reap(); err != nil {
					return err
				}
				owed = e.signaled > 0
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

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

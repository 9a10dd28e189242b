package algos

import (
	"errors"
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// Loss recovery for SQ/SR (Config.Recover), and its bounds
// (docs/reliability.md, "UD loss recovery").
//
// A sender keeps every message until its destination acknowledges it.
// Acknowledgements are cumulative and ride on the destination's credit
// messages; a duplicate is answered with one at once. A message
// unacknowledged for its retransmission timeout is sent again, and the
// timeout doubles with each retransmission of that message, from RTO to
// at most RTO<<rtoBackoff (16 RTO: 8 ms by default). After
// retransmitLimit retransmissions, and once the message has been
// unanswered for the endpoint's Timeout too, the sender gives up with
// ErrUnanswered, naming the destination: by default after 20
// retransmissions over about 144 ms. A waiting sender counts news from
// its peers as progress (credit, acknowledgements, completions), never
// its own retransmissions: a sender whose receiver has gone ends in that
// error, instead of retransmitting until the run's time limit.
//
// A receiver keeps answering as long as a sender may wait for an
// acknowledgement, also after its own streams have all ended and its
// receiving threads are gone: a responder thread, started when the last
// stream ends, answers every duplicate until Close. Close waits until
// the endpoint's own messages are all acknowledged, then meets the other
// nodes at a barrier while the responder still answers, and stops the
// responder only then: once every node has reached the barrier, no
// sender waits for anything.

const (
	rtoBackoff      = 4  // a message's timeout doubles up to RTO<<rtoBackoff
	retransmitLimit = 20 // retransmissions of a message before its sender gives up
)

// ErrUnanswered reports a message its destination did not acknowledge
// within the retransmission bounds: lost every time, or the destination
// has stopped.
var ErrUnanswered = errors.New("algos: retransmissions unanswered")

// retained is a message kept for retransmission until its destination
// acknowledges it.
type retained struct {
	seq   uint64
	id    int         // send buffer
	first fabric.Time // first transmission
	at    fabric.Time // last (re)transmission
	tries int         // retransmissions so far
}

// due is when r is retransmitted next, or given up.
func (r *retained) due(rto fabric.Duration) fabric.Time {
	return r.at.Add(rto << min(r.tries, rtoBackoff))
}

// acked applies destination d's cumulative acknowledgement: every message
// up to ack arrived, so its buffer need not be kept for d. The queue is in
// posting order, which is not number order on a shared endpoint (a thread
// reserves its number, then may wait for credit while another thread
// sends the next one), so every entry is checked: stopping at the first
// unacknowledged one kept acknowledged buffers and retransmitted them.
func (e *sqsr) acked(d int, ack uint64) error {
	q := e.unacked[d]
	k := 0
	for _, r := range q {
		if r.seq <= ack {
			if err := e.unhold(r.id); err != nil {
				return err
			}
			continue
		}
		q[k] = r
		k++
	}
	clear(q[k:])
	e.unacked[d] = q[:k]
	return nil
}

// retransmit resends every message whose timeout has passed, and reports
// when the next one falls due; it fails with ErrUnanswered for a message
// beyond the bounds. A retransmission takes no credit: it replaces a
// message that consumed credit but, lost, no receive (or, if the first
// copy did arrive, the receiver drops the duplicate and reposts its
// receive without crediting it).
func (e *sqsr) retransmit(th fabric.Thread) (fabric.Time, error) {
	now, next := th.Now(), fabric.Forever
	for d, q := range e.unacked {
		for i := range q {
			r := &q[i]
			if due := r.due(e.cfg.RTO); due > now {
				next = min(next, due)
				continue
			}
			if r.tries >= retransmitLimit && now.Sub(r.first) >= e.cfg.Timeout {
				return next, fmt.Errorf("%w: SQ/SR endpoint %d on node %d: node %d did not acknowledge message %d in %v (%d retransmissions; lost each time, or node %d has stopped)",
					ErrUnanswered, e.cfg.Tag, e.me, d, r.seq, now.Sub(r.first), r.tries, d)
			}
			b := e.bufs[r.id]
			wr := fabric.SendWR{ID: wrSend | uint64(r.id), Op: fabric.OpSend, Local: b.mr.SGE(b.off, HeaderBytes+b.N), Flags: fabric.Signaled,
				AH: e.ahs[d], RemoteQPN: e.peers[d].data.QPN, QKey: udQKey}
			if err := e.postSend1(e.qp, wr); errors.Is(err, fabric.ErrQueueFull) {
				return now.Add(e.cfg.RTO / 8), nil // the queue drains as completions are polled
			} else if err != nil {
				return next, err
			}
			e.outstanding[r.id]++
			e.signaled++
			e.info.Retransmits++
			r.at = now
			r.tries++
			next = min(next, r.due(e.cfg.RTO))
		}
	}
	return next, nil
}

// senderTick is the sender's periodic work while it waits: apply credit
// and acknowledgements, retransmit what is overdue. It reports how many
// credit messages arrived (its own retransmissions are not progress) and
// when it wants to run again.
func (e *sqsr) senderTick(th fabric.Thread) (int, fabric.Time, error) {
	n, err := e.drainCredit(th)
	if err != nil {
		return 0, 0, err
	}
	next, err := e.retransmit(th)
	return n, next, err
}

// pending is the number of messages not yet acknowledged.
func (e *sqsr) pending() int {
	k := 0
	for _, q := range e.unacked {
		k += len(q)
	}
	return k
}

// streamsEnded records that the streams to dests have ended. Once every
// stream has, the caller stays until every message is acknowledged,
// retransmitting whatever was lost, as long as its receivers wait for it;
// ending a stream does not wait by itself, so that one destination slow
// to acknowledge does not hold back the ends of the other streams.
func (e *sqsr) streamsEnded(th fabric.Thread, dests []int) error {
	for _, d := range dests {
		if !e.ended[d] {
			e.ended[d] = true
			e.nEnded++
		}
	}
	if e.nEnded < e.n {
		return nil
	}
	return e.awaitStreamAcks(th)
}

// awaitStreamAcks waits until every message is acknowledged,
// retransmitting as needed. It needs no deadline of its own: every
// message is acknowledged or given up (ErrUnanswered) within the
// retransmission bounds.
func (e *sqsr) awaitStreamAcks(th fabric.Thread) error {
	for e.pending() > 0 {
		k, next, err := e.senderTick(th)
		if err != nil {
			return err
		}
		n, err := e.reap()
		if err != nil {
			return err
		}
		if k+n == 0 {
			if e.ackWait == nil { // built once: a variadic call through the interface allocates
				e.ackWait = []fabric.Waitable{e.ccq, e.scq}
			}
			waitReleased(th, e.mu, next, e.ackWait...)
		}
	}
	return nil
}

// awaitAcks (at Close) is awaitStreamAcks for every destination; it also
// answers peers still recovering, in case no responder does yet.
func (e *sqsr) awaitAcks(th fabric.Thread) error {
	for e.pending() > 0 {
		k, next, err := e.senderTick(th)
		if err != nil {
			return err
		}
		m, err := e.pollData(th)
		if err != nil {
			return err
		}
		if e.ready.len() > 0 {
			return fmt.Errorf("%w: SQ/SR endpoint %d on node %d: data arrived after every stream ended", ErrBadMessage, e.cfg.Tag, e.me)
		}
		if k+m == 0 {
			if e.waitList == nil {
				e.waitList = []fabric.Waitable{e.ccq, e.rcq}
			}
			waitReleased(th, e.mu, next, e.waitList...)
		}
	}
	return nil
}

// pollData polls for data messages and handles each (received).
func (e *sqsr) pollData(th fabric.Thread) (int, error) {
	n, err := e.rcq.Poll(e.rwcs)
	if err != nil {
		return 0, err
	}
	for _, wc := range e.rwcs[:n] {
		if err := e.received(th, wc); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// startResponder starts the thread that answers for the endpoint once
// its streams have all ended. Called with the lock held.
func (e *sqsr) startResponder(th fabric.Thread) {
	p := &progressThread{mu: e.mu, work: e.node.NewSignal(), exit: e.node.NewSignal()}
	p.label("SQ/SR", "responder", e.cfg.Tag, e.me)
	e.resp, e.respWait = p, []fabric.Waitable{p.work, e.rcq}
	th.Spawn(fmt.Sprintf("responder%d", e.cfg.Tag), th.Core(), func(rt fabric.Thread) error {
		return p.run(rt, e.respond)
	})
}

// respond is the responder's loop: every data message is a duplicate by
// now, which received answers with an acknowledgement.
func (e *sqsr) respond(th fabric.Thread) error {
	for !e.resp.stop {
		n, err := e.pollData(th)
		if err != nil {
			return err
		}
		if n == 0 {
			e.resp.idle(th, fabric.Forever, e.respWait)
		}
	}
	return nil
}

// settle (at Close) waits until the endpoint's messages are all
// acknowledged, meets the other nodes' endpoints at a barrier while the
// responder answers for this one, and then stops the responder.
func (e *sqsr) settle(th fabric.Thread) error {
	err := func() error {
		e.lock()
		defer e.unlock()
		if e.resp == nil { // the streams did not all end: answer anyway
			e.startResponder(th)
		}
		return e.awaitAcks(th)
	}()
	if err == nil {
		err = e.node.OOB().Barrier(fmt.Sprintf("sqsr/%d/acked", e.cfg.Tag))
	}
	if herr := e.resp.halt(th); err == nil {
		err = herr
	}
	return err
}

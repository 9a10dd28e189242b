package algos

import (
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// owned is what an endpoint has created, recorded as it is created, so
// that a failed Open and Close free exactly that. free goes by kind, each
// kind in the order of creation: address handles and queue pairs first,
// then completion queues (which queue pairs use), regions, buffers lent
// by a pool (which the queue pairs may still name), and the protection
// domain (which holds the rest) last. Not safe for concurrent use: the
// endpoint's lock, or its opening thread, guards it.
type owned struct {
	kinds [8][]func() error
}

// Kinds of owned objects, in the order free frees them.
const (
	ownAH = iota
	ownQP
	ownSRQ  // after the queue pairs attached to it
	ownXRCD // after its SRQs and target queue pairs; before the CQs its SRQs complete in
	ownCQ
	ownMR
	ownLent // buffers lent by a pool, given back
	ownPD
)

// pd records a protection domain the endpoint allocated.
func (o *owned) pd(pd fabric.PD) { o.kinds[ownPD] = append(o.kinds[ownPD], pd.Dealloc) }

// cq records a completion queue.
func (o *owned) cq(cq fabric.CQ) { o.kinds[ownCQ] = append(o.kinds[ownCQ], cq.Destroy) }

// mr records a memory region.
func (o *owned) mr(mr fabric.MR) { o.kinds[ownMR] = append(o.kinds[ownMR], mr.Dereg) }

// qp records a queue pair.
func (o *owned) qp(qp fabric.QP) { o.kinds[ownQP] = append(o.kinds[ownQP], qp.Destroy) }

// srq records a shared receive queue.
func (o *owned) srq(s fabric.SRQ) { o.kinds[ownSRQ] = append(o.kinds[ownSRQ], s.Destroy) }

// xrcd records an XRC domain.
func (o *owned) xrcd(x fabric.XRCD) { o.kinds[ownXRCD] = append(o.kinds[ownXRCD], x.Close) }

// ah records an address handle.
func (o *owned) ah(ah fabric.AH) { o.kinds[ownAH] = append(o.kinds[ownAH], ah.Destroy) }

// lent records how to give a pool's buffers back.
func (o *owned) lent(giveBack func() error) { o.kinds[ownLent] = append(o.kinds[ownLent], giveBack) }

// free frees everything recorded, also after a step has failed (what can
// still be freed is), and returns the first error. Nothing is left to
// free afterwards.
func (o *owned) free() error {
	var first error
	for k := range o.kinds {
		for _, step := range o.kinds[k] {
			if err := step(); err != nil && first == nil {
				first = err
			}
		}
		o.kinds[k] = nil
	}
	return first
}

// freed is what a failed Open or a Close returns: the cause (the first
// error; nil when there was none), with an error of the teardown that
// followed added, never in its place.
func freed(cause, teardown error) error {
	switch {
	case teardown == nil:
		return cause
	case cause == nil:
		return teardown
	}
	return fmt.Errorf("%w (and freeing the endpoint's resources: %w)", cause, teardown)
}

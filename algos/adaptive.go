package algos

import (
	"errors"
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/adaptive"
	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// AdaptiveBuffers makes an endpoint's registered buffers adaptive (seed
// 001 §6): its buffers come from a node-wide pool and each flow of buffers
// grows when it starves and shrinks when it has more than it uses (see
// adaptive.Lane). The endpoint creates its queue pairs in the pool's
// protection domain and gives every buffer back at Close.
//
// Where it applies: the send buffers of every design (SQ/SR, MQ/SR, MQ/WR,
// and MQ/RD, whose descriptors carry each buffer's address and rkey so the
// readers need no send region exchanged at setup; the pool must then
// register with remote read access), and the receive buffers of SQ/SR, one
// lane per source. Not the receive side of MQ/SR, MQ/WR and MQ/RD: there
// the buffers are addressed by the peer or fixed by it (ring slots and
// their addresses are exchanged when the connection is set up, and MQ/RD's
// local read slots are bounded by design), so growing the memory would
// mean exchanging addresses again in the middle of the stream; their
// credit already bounds the buffers in use.
type AdaptiveBuffers struct {
	Pool *adaptive.Pool
	// The most buffers per thread sharing the endpoint: receive buffers
	// per source, send buffers per destination. The least is the credit
	// write-back frequency for receives (the credit protocol needs that
	// many) and one per destination plus one for sends (the SHUFFLE
	// operator holds a buffer per destination).
	MaxRecv, MaxSend int
}

func (a *AdaptiveBuffers) check(cfg Config) error {
	if a.Pool == nil {
		return fmt.Errorf("%w: adaptive buffers without a pool", ErrConfig)
	}
	if a.MaxRecv < cfg.Buffers || a.MaxSend < cfg.Buffers {
		return fmt.Errorf("%w: adaptive maxima (%d receive, %d send buffers per peer) below the %d buffers per peer to start with",
			ErrConfig, a.MaxRecv, a.MaxSend, cfg.Buffers)
	}
	return nil
}

// initAdaptiveSend makes count send buffers of msg bytes from the pool and
// the send lane (call with cfg.Buffers already multiplied by Threads).
func (e *endpointBase) initAdaptiveSend(count, msg int) error {
	a := e.cfg.Adaptive
	e.sendMsg = msg
	e.outstanding = make([]int, 0, count)
	for i := 0; i < count; i++ {
		if err := e.addSendBuffer(); err != nil {
			return err
		}
	}
	lo := min(count, e.cfg.Threads*(e.n+1))
	lane, err := adaptive.NewLane(count, lo, max(count, a.MaxSend*e.cfg.Threads*e.n))
	if err != nil {
		return err
	}
	e.slane = lane
	return nil
}

// addSendBuffer takes one buffer from the pool into the free list.
func (e *endpointBase) addSendBuffer() error {
	pb, err := e.cfg.Adaptive.Pool.Get(e.sendMsg)
	if err != nil {
		return err
	}
	id := len(e.bufs)
	if k := len(e.retiredIDs); k > 0 {
		id = e.retiredIDs[k-1]
		e.retiredIDs = e.retiredIDs[:k-1]
	}
	b := &Buffer{Data: pb.MR.Bytes()[pb.Off+HeaderBytes : pb.Off+e.sendMsg], id: id, mr: pb.MR, off: pb.Off}
	if id == len(e.bufs) {
		e.bufs, e.sbufs, e.outstanding = append(e.bufs, b), append(e.sbufs, pb), append(e.outstanding, 0)
		if e.holds != nil {
			e.holds = append(e.holds, 0)
		}
	} else {
		e.bufs[id], e.sbufs[id] = b, pb
	}
	e.free = append(e.free, id)
	return nil
}

// adaptSend applies the sender's rule before Acquire hands out a buffer:
// give all free buffers but one back to the pool, or grow by one when none
// is free. It reports whether a buffer is free now.
func (e *endpointBase) adaptSend(th fabric.Thread) (bool, error) {
	e.slane.Observe(int64(th.Now()))
	if k := e.slane.Shed(); k > 0 {
		for i := 0; i < k; i++ {
			id := e.free[len(e.free)-1]
			e.free = e.free[:len(e.free)-1]
			if err := e.cfg.Adaptive.Pool.Put(e.sbufs[id]); err != nil {
				return false, err
			}
			e.bufs[id], e.sbufs[id] = nil, nil
			e.retiredIDs = append(e.retiredIDs, id)
		}
		if err := e.slane.RetireFree(k); err != nil {
			return false, err
		}
	}
	if len(e.free) == 0 && e.slane.Starving() {
		if err := e.addSendBuffer(); err != nil {
			if errors.Is(err, adaptive.ErrPinnedCap) {
				return false, nil // at the pinned-memory cap: wait for a send to complete
			}
			return false, err
		}
		if err := e.slane.Grow(); err != nil {
			return false, err
		}
	}
	return len(e.free) > 0, nil
}

// returnSendBuffers gives every send buffer back to the pool (Close, after
// every send completed).
func (e *endpointBase) returnSendBuffers() error {
	for id, pb := range e.sbufs {
		if pb != nil {
			if err := e.cfg.Adaptive.Pool.Put(pb); err != nil {
				return err
			}
			e.sbufs[id], e.bufs[id] = nil, nil
		}
	}
	return nil
}

// laneInfo adds a lane's statistics to the endpoint's.
func (i *EndpointInfo) addLane(l *adaptive.Lane, recv bool) {
	st := l.Stats()
	i.AdaptiveGrown += st.Grown
	i.AdaptiveRetired += st.Retired
	if st.Span > 0 {
		mean := st.CircTime / float64(st.Span)
		if recv {
			i.RecvBuffersMean += mean
			for k := range i.RecvStateMeans {
				i.RecvStateMeans[k] += st.StateTime[k] / float64(st.Span)
			}
		} else {
			i.SendBuffersMean += mean
		}
	}
}

package perftest

import (
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// Schedules of alltoall_bw.
const (
	ScheduleSpread = ""       // every queue pair keeps TxDepth messages in flight (perftest style)
	ScheduleRandom = "random" // whole messages to targets in a random order, Window in flight: uncoordinated senders
	ScheduleRR     = "rr"     // round-robin phases (Roediger15): Burst messages to target (i+p) mod n, then a barrier
)

// orderedSend sends one message at a time to the target order[k], keeping
// at most cfg.Window messages in flight; before message k it calls
// before(k), which may wait for the window to drain and synchronize.
func orderedSend(th fabric.Thread, m *mesh, cfg *Config, order []int, phaseEnd func(k int) bool) error {
	wcs := make([]fabric.WC, 32)
	inflight := 0
	poll := func(block bool) error {
		for {
			n, err := m.scq.Poll(wcs)
			if err != nil {
				return err
			}
			for _, wc := range wcs[:n] {
				if wc.Status != fabric.StatusSuccess {
					return &fabric.CompletionError{WC: wc, Node: m.node.ID()}
				}
				inflight--
			}
			if n > 0 || !block {
				return nil
			}
			deadline := th.Now().Add(stall)
			th.Wait(deadline, m.onSCQ...)
			if th.Now() >= deadline {
				return fmt.Errorf("perftest: node %d: no send completion for %v", m.node.ID(), stall)
			}
		}
	}
	for k, t := range order {
		for inflight >= cfg.Window {
			if err := poll(true); err != nil {
				return err
			}
		}
		tg := m.target(t, cfg.Size)
		wr := fabric.SendWR{ID: uint64(k), Op: fabric.OpSend, Local: tg.local, Flags: fabric.Signaled,
			AH: tg.ah, RemoteQPN: tg.remote.QPN, QKey: qkey}
		if _, err := tg.qp.PostSend([]fabric.SendWR{wr}); err != nil {
			return err
		}
		inflight++
		if phaseEnd != nil && phaseEnd(k) {
			for inflight > 0 {
				if err := poll(true); err != nil {
					return err
				}
			}
			if err := m.node.OOB().Barrier("rr-phase"); err != nil {
				return err
			}
		}
		if err := poll(false); err != nil {
			return err
		}
	}
	for inflight > 0 {
		if err := poll(true); err != nil {
			return err
		}
	}
	return nil
}

// scheduleOrder returns the target order of this node's messages and, for
// round-robin phases, which message ends a phase.
func scheduleOrder(th fabric.Thread, nodes int, peers []int, cfg *Config) ([]int, func(int) bool) {
	index := map[int]int{}
	for i, p := range peers {
		index[p] = i * cfg.QPs
	}
	me := th.Node().ID()
	var order []int
	switch cfg.Schedule {
	case ScheduleRandom:
		for t := 0; t < len(peers)*cfg.QPs; t++ {
			for i := 0; i < cfg.Iters; i++ {
				order = append(order, t)
			}
		}
		th.Rand().Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		return order, nil
	default: // ScheduleRR
		for sent := 0; sent < cfg.Iters; sent += cfg.Burst {
			for p := 1; p < nodes; p++ {
				target := index[(me+p)%nodes]
				for i := 0; i < min(cfg.Burst, cfg.Iters-sent); i++ {
					order = append(order, target)
				}
			}
		}
		burst := cfg.Burst
		return order, func(k int) bool { return (k+1)%burst == 0 || k+1 == len(order) }
	}
}

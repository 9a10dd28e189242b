package perftest

import (
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// latency runs send_lat or write_lat as a ping-pong between this node and
// peer; the client records half of every round trip. read_lat is
// readLatency.
func latency(th fabric.Thread, peer int, client bool, cfg *Config) (*nodeResult, error) {
	m, err := meshFor(th, []int{peer}, cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Test == "read_lat" {
		return readLatency(th, m, client, cfg)
	}
	send := cfg.Test == "send_lat"
	var rx *receiver
	if send {
		if rx, err = newReceiver(m, cfg); err != nil {
			return nil, err
		}
	}
	oob := th.Node().OOB()
	if err := oob.Barrier("lat-ready"); err != nil {
		return nil, err
	}
	p := &pingPong{th: th, m: m, cfg: cfg, rx: rx, t: m.target(0, cfg.Size), wcs: make([]fabric.WC, 16)}
	w := cfg.window(th.Now())
	r := &nodeResult{ok: client, start: th.Now()}
	ls := latSamples{w: w, r: r}
	// In duration mode the client decides when the run is over and says so
	// in its last ping, which the server answers before it stops.
	for i, stop := 0, false; !stop && (w.on || i < cfg.Iters); i++ {
		t0 := th.Now()
		if client {
			stop = w.on && t0 >= w.end
			err = p.ping(i, send, stop)
			if err == nil {
				_, err = p.await(i, send)
			}
		} else {
			stop, err = p.await(i, send)
			if err == nil {
				err = p.ping(i, send, stop)
			}
		}
		if err != nil {
			return nil, err
		}
		ls.add(th.Now(), th.Now().Sub(t0)/2)
	}
	ls.done(th.Now(), cfg)
	if !client {
		r = &nodeResult{} // measures nothing
	}
	r.setup = m.setup(cfg, client, 0)
	return r, oob.Barrier("lat-done")
}

type pingPong struct {
	th      fabric.Thread
	m       *mesh
	cfg     *Config
	rx      *receiver
	t       target
	wcs     []fabric.WC
	pending int // unsignaled sends not yet covered by a completion
}

// stopBit, in a message's marker, says it is the duration-mode client's
// last.
const stopBit = 0x80

// marker is the last byte of message i: never zero, and with stopBit set
// on the client's last message in duration mode.
func marker(i int, stop bool) byte {
	b := byte(i%(stopBit-1) + 1)
	if stop {
		b |= stopBit
	}
	return b
}

// ping sends message i: a send or a write whose last byte is i's marker.
func (p *pingPong) ping(i int, send, stop bool) error {
	buf := p.m.mr.Bytes()
	last := int(p.t.local.Addr-p.m.mr.Addr()) + p.cfg.Size - 1
	buf[last] = marker(i, stop)
	wr := fabric.SendWR{ID: uint64(i), Op: fabric.OpWrite, Local: p.t.local, RemoteAddr: p.t.remote.Addr + uint64(p.cfg.Size),
		RKey: p.t.remote.RKey, AH: p.t.ah, RemoteQPN: p.t.remote.QPN, QKey: qkey}
	if send {
		wr.Op = fabric.OpSend
	}
	if p.cfg.Size <= p.m.inline {
		wr.Flags |= fabric.Inline
	}
	p.pending++
	if p.pending == p.cfg.CQMod {
		wr.Flags |= fabric.Signaled
	}
	if _, err := p.t.qp.PostSend([]fabric.SendWR{wr}); err != nil {
		return err
	}
	// Reap send completions without waiting for them.
	n, err := p.m.scq.Poll(p.wcs)
	if err != nil {
		return err
	}
	for _, wc := range p.wcs[:n] {
		if wc.Status != fabric.StatusSuccess {
			return &fabric.CompletionError{WC: wc, Node: p.m.node.ID()}
		}
		p.pending = 0
	}
	if p.pending >= p.cfg.TxDepth-1 {
		return fmt.Errorf("perftest: send queue of %d would wrap; raise -t or lower -Q", p.cfg.TxDepth)
	}
	return nil
}

// await waits for message i from the peer and reports whether it was the
// duration-mode client's last.
func (p *pingPong) await(i int, send bool) (stop bool, err error) {
	th := p.th
	deadline := th.Now().Add(stall)
	buf := p.m.mr.Bytes()
	if send {
		for {
			n, err := p.m.rcq.Poll(p.wcs[:1])
			if err != nil {
				return false, err
			}
			if n == 1 {
				if p.wcs[0].Status != fabric.StatusSuccess {
					return false, &fabric.CompletionError{WC: p.wcs[0], Node: p.m.node.ID()}
				}
				in := p.rx.sge(0) // the message ends where the receive buffer does (after a UD GRH)
				stop := buf[int(in.Addr-p.m.mr.Addr())+int(in.Length)-1]&stopBit != 0
				return stop, p.rx.post(0, 1)
			}
			if th.Now() >= deadline {
				return false, fmt.Errorf("perftest: node %d: message %d did not arrive within %v", p.m.node.ID(), i, stall)
			}
			th.Wait(deadline, p.m.onRCQ...)
		}
	}
	last := int(p.t.local.Addr-p.m.mr.Addr()) + 2*p.cfg.Size - 1 // the incoming half
	for {
		th.Sync()
		if buf[last]&^stopBit == marker(i, false) {
			return buf[last]&stopBit != 0, nil
		}
		if th.Now() >= deadline {
			return false, fmt.Errorf("perftest: node %d: write %d did not land within %v", p.m.node.ID(), i, stall)
		}
		th.Wait(deadline, p.m.mr)
	}
}

// readLatency runs read_lat as ib_read_lat does: the client reads Size
// bytes of the server's buffer, one RDMA Read at a time, and records each
// read's whole round trip (from the post to its completion); the server
// only serves. In duration mode the client reads until the window ends.
func readLatency(th fabric.Thread, m *mesh, client bool, cfg *Config) (*nodeResult, error) {
	oob := th.Node().OOB()
	if err := oob.Barrier("lat-ready"); err != nil {
		return nil, err
	}
	if !client {
		return &nodeResult{setup: m.setup(cfg, false, 0)}, oob.Barrier("lat-done")
	}
	t := m.target(0, cfg.Size)
	wcs := make([]fabric.WC, 1)
	w := cfg.window(th.Now())
	r := &nodeResult{ok: true, start: th.Now()}
	ls := latSamples{w: w, r: r}
	for i := 0; w.on && th.Now() < w.end || !w.on && i < cfg.Iters; i++ {
		t0 := th.Now()
		wr := fabric.SendWR{ID: uint64(i), Op: fabric.OpRead, Local: t.local, RemoteAddr: t.remote.Addr, RKey: t.remote.RKey, Flags: fabric.Signaled}
		if _, err := t.qp.PostSend([]fabric.SendWR{wr}); err != nil {
			return nil, err
		}
		deadline := th.Now().Add(stall)
		for {
			n, err := m.scq.Poll(wcs)
			if err != nil {
				return nil, err
			}
			if n == 1 {
				if wcs[0].Status != fabric.StatusSuccess {
					return nil, &fabric.CompletionError{WC: wcs[0], Node: m.node.ID()}
				}
				break
			}
			if th.Now() >= deadline {
				return nil, fmt.Errorf("perftest: node %d: read %d did not complete within %v", m.node.ID(), i, stall)
			}
			th.Wait(deadline, m.onSCQ...)
		}
		ls.add(th.Now(), th.Now().Sub(t0))
	}
	ls.done(th.Now(), cfg)
	r.setup = m.setup(cfg, true, 0)
	return r, oob.Barrier("lat-done")
}

// latSamples collects a latency test's samples into r: every one with
// -n, in duration mode only those that end in the measured interval.
type latSamples struct {
	w        window
	r        *nodeResult
	measured float64
}

// add records sample d, which ended at now.
func (s *latSamples) add(now fabric.Time, d fabric.Duration) {
	switch {
	case !s.w.on:
		s.r.lat = append(s.r.lat, d)
	case s.w.sampling(now):
		s.r.lat = append(s.r.lat, d)
		s.measured++
	}
}

// done closes the run at now.
func (s *latSamples) done(now fabric.Time, cfg *Config) {
	s.r.end = now
	s.r.msgs, s.r.bytes = int64(cfg.Iters), int64(cfg.Iters)*int64(cfg.Size)
	if s.w.on {
		s.w.measured(s.r, s.measured, cfg.Size)
	}
}

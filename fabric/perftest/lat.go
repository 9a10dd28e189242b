package perftest

import (
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// latency runs send_lat or write_lat as a ping-pong between this node and
// peer; the client records half of every round trip.
func latency(th fabric.Thread, peer int, client bool, cfg *Config) (*nodeResult, error) {
	m, err := meshFor(th, []int{peer}, cfg)
	if err != nil {
		return nil, err
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
	p := &pingPong{th: th, m: m, cfg: cfg, rx: rx, t: m.targets(cfg.Size)[0], wcs: make([]fabric.WC, 16)}
	r := &nodeResult{ok: client, start: th.Now()}
	for i := 0; i < cfg.Iters; i++ {
		t0 := th.Now()
		if client {
			err = p.ping(i, send)
			if err == nil {
				err = p.await(i, send)
			}
		} else {
			err = p.await(i, send)
			if err == nil {
				err = p.ping(i, send)
			}
		}
		if err != nil {
			return nil, err
		}
		r.lat = append(r.lat, th.Now().Sub(t0)/2)
	}
	r.end = th.Now()
	r.msgs, r.bytes = int64(cfg.Iters), int64(cfg.Iters)*int64(cfg.Size)
	if !client {
		r = nil
	}
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

func marker(i int) byte { return byte(i%255 + 1) }

// ping sends message i: a send, or a write whose last byte is i's marker.
func (p *pingPong) ping(i int, send bool) error {
	buf := p.m.mr.Bytes()
	last := int(p.t.local.Addr-p.m.mr.Addr()) + p.cfg.Size - 1
	buf[last] = marker(i)
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

// await waits for message i from the peer.
func (p *pingPong) await(i int, send bool) error {
	th := p.th
	deadline := th.Now().Add(stall)
	if send {
		for {
			n, err := p.m.rcq.Poll(p.wcs[:1])
			if err != nil {
				return err
			}
			if n == 1 {
				if p.wcs[0].Status != fabric.StatusSuccess {
					return &fabric.CompletionError{WC: p.wcs[0], Node: p.m.node.ID()}
				}
				return p.rx.post(0, 1)
			}
			if th.Now() >= deadline {
				return fmt.Errorf("perftest: node %d: message %d did not arrive within %v", p.m.node.ID(), i, stall)
			}
			th.Wait(deadline, p.m.onRCQ...)
		}
	}
	buf := p.m.mr.Bytes()
	last := int(p.t.local.Addr-p.m.mr.Addr()) + 2*p.cfg.Size - 1 // the incoming half
	for {
		th.Sync()
		if buf[last] == marker(i) {
			return nil
		}
		if th.Now() >= deadline {
			return fmt.Errorf("perftest: node %d: write %d did not land within %v", p.m.node.ID(), i, stall)
		}
		th.Wait(deadline, p.m.mr)
	}
}

package perftest

import (
	"fmt"
	"math"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// stall is how long a loop may see no completion before it reports the
// run as stuck instead of waiting forever.
const stall = fabric.Second

// target is one queue pair a sender drives.
type target struct {
	qp     fabric.QP
	local  fabric.SGE
	remote peerQP
	ah     fabric.AH
}

// target is where queue pair i of the mesh sends: computed when a request
// is posted rather than kept per queue pair, whose count grows as the
// square of the nodes (docs/performance.md "Scale").
func (m *mesh) target(i, size int) target {
	p, k := i/m.perPeer, i%m.perPeer
	t := target{qp: m.all[i], local: m.slot(p, k, size), remote: m.remote[i]}
	if m.ahs != nil {
		t.ah = m.ahs[p]
	}
	return t
}

// sendState is a sender's progress on one queue pair.
type sendState struct {
	posted int
	done   int
	limit  int         // messages to send: Iters, or in duration mode unbounded until the run ends
	last   fabric.Time // time of the previous completion
}

func meshFor(th fabric.Thread, peers []int, cfg *Config) (*mesh, error) {
	slot := cfg.Size
	if cfg.Conn == fabric.UD {
		slot += fabric.GRHBytes
	}
	if cfg.Test == "write_lat" {
		slot *= 2 // an outgoing half and an incoming half
	}
	nq := max(len(peers), 1) * cfg.QPs
	depth := min((cfg.TxDepth+cfg.RxDepth)*nq+16, th.Node().Device().Attr().MaxCQE)
	limit := th.Node().Device().Attr().MaxInline
	if cfg.Conn == fabric.UD {
		limit = th.Node().Device().Attr().MaxInlineUD
	}
	inline := min(cfg.Inline, cfg.Size, limit)
	return connectMesh(th, peers, meshOpts{typ: cfg.Conn, qps: cfg.QPs, slotBytes: slot, sendWR: cfg.TxDepth,
		recvWR: cfg.RxDepth, inline: inline, cqDepth: depth, spread: cfg.Spread, sl: cfg.SL,
		path: path{mtu: cfg.MTU, timeout: cfg.timeout(), outs: cfg.outs()}})
}

// outs is the read depth of every queue pair.
func (c *Config) outs() int {
	if c.Outs > 0 {
		return c.Outs
	}
	return defaultOuts
}

// timeout is the ACK timeout code of every RC queue pair.
func (c *Config) timeout() uint8 {
	switch c.QPTimeout {
	case 0:
		return defaultQPTimeout
	case NoTimeout:
		return 0
	}
	return uint8(c.QPTimeout)
}

// pollBatch is how many completions a sender takes from its CQ per poll.
const pollBatch = 64

// spreadAlign aligns the random remote offsets of --spread.
const spreadAlign = 64

// bandwidth runs send_bw, write_bw or read_bw between this node and peer:
// the client sends, or with Bidirectional both nodes do. It returns what
// this node measured as a sender (with ok false on a node that only
// served) and what it set up.
func bandwidth(th fabric.Thread, nodes, peer int, client bool, cfg *Config) (*nodeResult, error) {
	m, err := meshFor(th, []int{peer}, cfg)
	if err != nil {
		return nil, err
	}
	sender := client || cfg.Bidirectional
	var rx *receiver
	if cfg.Test == "send_bw" && (!client || cfg.Bidirectional) {
		if rx, err = newReceiver(m, cfg); err != nil {
			return nil, err
		}
	}
	oob := th.Node().OOB()
	if err := oob.Barrier("bw-ready"); err != nil {
		return nil, err
	}
	op := map[string]fabric.Opcode{"send_bw": fabric.OpSend, "write_bw": fabric.OpWrite, "read_bw": fabric.OpRead}[cfg.Test]
	var r *nodeResult
	switch {
	case cfg.Duration > 0:
		var send func(window) (*nodeResult, error)
		if sender {
			send = func(w window) (*nodeResult, error) { return sendLoop(th, m, cfg, op, w) }
		}
		r, _, err = runTimed(th, m, nodes, cfg, rx, send)
	case sender && rx != nil: // bidirectional send_bw: receive beside sending
		wait := receiveAside(th, rx, cfg.Iters*cfg.QPs)
		if r, err = sendLoop(th, m, cfg, op, window{}); err == nil {
			_, err = wait()
		}
	case sender:
		r, err = sendLoop(th, m, cfg, op, window{})
	case rx != nil:
		_, err = rx.run(th, cfg.Iters*cfg.QPs)
	}
	if err != nil {
		return nil, err
	}
	if r == nil {
		r = &nodeResult{}
	}
	r.setup = m.setup(cfg, client, pollBatch)
	return r, oob.Barrier("bw-done")
}

// allToAll has every node send to every other node while a second thread
// receives; each node reports what it received.
func allToAll(th fabric.Thread, nodes int, cfg *Config) (*nodeResult, error) {
	me := th.Node().ID()
	var peers []int
	for i := 0; i < nodes; i++ {
		if i != me {
			peers = append(peers, i)
		}
	}
	m, err := meshFor(th, peers, cfg)
	if err != nil {
		return nil, err
	}
	rx, err := newReceiver(m, cfg)
	if err != nil {
		return nil, err
	}
	oob := th.Node().OOB()
	if err := oob.Barrier("a2a-ready"); err != nil {
		return nil, err
	}
	if cfg.Duration > 0 {
		_, got, err := runTimed(th, m, nodes, cfg, rx, func(w window) (*nodeResult, error) {
			return sendLoop(th, m, cfg, fabric.OpSend, w)
		})
		if err != nil {
			return nil, err
		}
		return got, oob.Barrier("a2a-done")
	}
	wait := receiveAside(th, rx, cfg.Iters*cfg.QPs*len(peers))
	if cfg.Schedule == ScheduleSpread {
		if _, err := sendLoop(th, m, cfg, fabric.OpSend, window{}); err != nil {
			return nil, err
		}
	} else {
		order, phaseEnd := scheduleOrder(th, nodes, peers, cfg)
		if err := orderedSend(th, m, cfg, order, phaseEnd); err != nil {
			return nil, err
		}
	}
	got, _ := wait() // its error ends the run
	return got, oob.Barrier("a2a-done")
}

// sendLoop keeps up to TxDepth requests outstanding on every target until
// each has carried Iters messages (in duration mode: until w ends and the
// requests posted by then have completed), signaling one request in CQMod.
func sendLoop(th fabric.Thread, m *mesh, cfg *Config, op fabric.Opcode, w window) (*nodeResult, error) {
	ts := make([]sendState, len(m.all))
	limit := cfg.Iters
	if w.on {
		limit = math.MaxInt
	}
	for i := range ts {
		ts[i].last, ts[i].limit = th.Now(), limit
	}
	total := cfg.Iters * len(ts)
	if w.on {
		total = math.MaxInt // until the run ends
	}
	wrs := make([]fabric.SendWR, 0, cfg.TxDepth)
	wcs := make([]fabric.WC, pollBatch)
	var segs []segment
	inline := cfg.Size <= m.inline && op != fabric.OpRead
	r := &nodeResult{ok: true, start: th.Now()}
	completed, lastProgress := 0, th.Now()
	var measured float64 // messages completed in w's measured interval
	batch, passes := cfg.TxDepth, 1
	switch {
	case cfg.Interleave:
		batch = 1 // one request per queue pair per round
	case cfg.PostList > 0:
		batch = cfg.PostList // perftest's post list: this many per post call
	}
	// open lists the targets that may have room: all at first, then those
	// whose completions freed some (a sender with thousands of queue pairs
	// must not scan them all on every poll).
	open := make([]int, len(ts))
	for i := range open {
		open[i] = i
	}
	isOpen := make([]bool, len(ts))
	for completed < total {
		if w.on && total == math.MaxInt && th.Now() >= w.end {
			// The run is over: each target sends up to its next signaled
			// request, so that a completion covers everything posted.
			total = 0
			for i := range ts {
				t := &ts[i]
				t.limit = (t.posted + cfg.CQMod - 1) / cfg.CQMod * cfg.CQMod
				total += t.limit
				if t.posted < t.limit && !isOpen[i] {
					isOpen[i] = true
					open = append(open, i)
				}
			}
			continue
		}
		posted := 0
		cur := open
		open = open[len(open):]
		for _, i := range cur {
			isOpen[i] = false
		}
		for pass := 0; pass < passes; pass++ {
			for _, i := range cur {
				n, err := postTarget(th, m.target(i, cfg.Size), &ts[i], i, cfg, op, inline, batch, &wrs)
				posted += n
				if err != nil {
					return nil, err
				}
				if t := &ts[i]; t.posted < t.limit && t.posted-t.done < cfg.TxDepth && !isOpen[i] {
					isOpen[i] = true // interleaved: more room next round
					open = append(open, i)
				}
			}
		}
		n, err := m.scq.Poll(wcs)
		if err != nil {
			return nil, err
		}
		for _, wc := range wcs[:n] {
			if wc.Status != fabric.StatusSuccess {
				return nil, &fabric.CompletionError{WC: wc, Node: m.node.ID()}
			}
			t := &ts[wc.ID>>32]
			idx := int(wc.ID&0xffffffff) + 1
			completed += idx - t.done
			if w.on {
				measured += w.share(t.last, th.Now(), idx-t.done)
			} else {
				segs = append(segs, segment{t.last, th.Now(), int64(idx-t.done) * int64(cfg.Size)})
			}
			t.done, t.last = idx, th.Now()
			if i := int(wc.ID >> 32); !isOpen[i] && t.posted < t.limit {
				isOpen[i] = true
				open = append(open, i)
			}
		}
		now := th.Now()
		if n > 0 || posted > 0 { // more to do before waiting
			lastProgress = max(lastProgress, now)
			continue
		}
		if now.Sub(lastProgress) > stall {
			if w.on {
				return nil, fmt.Errorf("perftest: node %d: no send completion for %v (%d done)", m.node.ID(), stall, completed)
			}
			return nil, fmt.Errorf("perftest: node %d: no send completion for %v (%d of %d done)", m.node.ID(), stall, completed, total)
		}
		th.Wait(lastProgress.Add(stall+1), m.onSCQ...)
	}
	r.end = th.Now()
	if w.on {
		w.measured(r, measured, cfg.Size)
		r.sent = make([]int64, len(m.peers))
		for i := range ts {
			r.sent[i/cfg.QPs] += int64(ts[i].posted)
		}
		return r, nil
	}
	r.bytes, r.msgs = int64(total)*int64(cfg.Size), int64(total)
	r.peak = peakRate(segs, r.start, r.end)
	return r, nil
}

// postTarget posts as many requests as target t (number i) has room for,
// at most batch, signaling one in CQMod and its last; wrs is scratch
// space. It returns how many were posted.
func postTarget(th fabric.Thread, tg target, t *sendState, i int, cfg *Config, op fabric.Opcode, inline bool, batch int, wrs *[]fabric.SendWR) (int, error) {
	room := min(cfg.TxDepth-(t.posted-t.done), t.limit-t.posted, batch)
	if room <= 0 {
		return 0, nil
	}
	*wrs = (*wrs)[:0]
	for j := 0; j < room; j++ {
		idx := t.posted + j
		wr := fabric.SendWR{ID: uint64(i)<<32 | uint64(idx), Op: op, Local: tg.local,
			RemoteAddr: tg.remote.Addr, RKey: tg.remote.RKey, AH: tg.ah, RemoteQPN: tg.remote.QPN, QKey: qkey}
		if cfg.Spread > 0 {
			wr.RemoteAddr += uint64(th.Rand().IntN((cfg.Spread-cfg.Size)/spreadAlign+1) * spreadAlign)
		}
		if (idx+1)%cfg.CQMod == 0 || idx+1 == t.limit {
			wr.Flags |= fabric.Signaled
		}
		if inline {
			wr.Flags |= fabric.Inline
		}
		*wrs = append(*wrs, wr)
	}
	n, err := tg.qp.PostSend(*wrs)
	t.posted += n
	return n, err
}

// receiver keeps RxDepth receives posted on every queue pair of a mesh.
type receiver struct {
	m   *mesh
	cfg *Config
	qps []fabric.QP // the mesh's, queue pair i's slot is the mesh's slot i
	wrs []fabric.RecvWR
	// Duration mode: the run's timing and, from the senders, how many
	// messages will arrive in all (nil in iteration mode).
	w     window
	tally *tally
}

func newReceiver(m *mesh, cfg *Config) (*receiver, error) {
	rx := &receiver{m: m, cfg: cfg, qps: m.all}
	for i := range rx.qps {
		if err := rx.post(i, cfg.RxDepth); err != nil {
			return nil, err
		}
	}
	return rx, nil
}

func (rx *receiver) post(i, n int) error {
	rx.wrs = rx.wrs[:0]
	for j := 0; j < n; j++ {
		rx.wrs = append(rx.wrs, fabric.RecvWR{ID: uint64(i), Local: rx.sge(i)})
	}
	_, err := rx.qps[i].PostRecv(rx.wrs)
	return err
}

// sge is the receive buffer of queue pair i: its slot in the mesh's region.
func (rx *receiver) sge(i int) fabric.SGE {
	return rx.m.mr.SGE(i*rx.m.slotBytes, rx.m.slotBytes)
}

// run receives until expected messages arrived (in duration mode: as many
// as the tally says, once it knows; for UD, until the senders have clearly
// stopped) and reposts every consumed receive.
func (rx *receiver) run(th fabric.Thread, expected int) (*nodeResult, error) {
	m := rx.m
	ud := rx.cfg.Conn == fabric.UD
	idle := stall
	if ud {
		idle = fabric.Millisecond // datagrams that found no receive are gone
	}
	wait := m.onRCQ
	if rx.tally != nil {
		wait = append(append([]fabric.Waitable(nil), m.onRCQ...), rx.tally.known)
	}
	wcs := make([]fabric.WC, 64)
	repost := make([]int, len(rx.qps))
	var dirty []int // queue pairs with receives to repost
	var segs []segment
	// The interval starts when receiving starts (the senders start at the
	// same barrier), not at the first completion, which would drop the
	// first messages' transfer time but count their bytes.
	r := &nodeResult{ok: true, start: th.Now()}
	got, last := 0, th.Now()
	var prevBytes int64
	var measured float64
	for {
		told := true // the number to expect is known
		if rx.tally != nil {
			e := rx.tally.expected.Load()
			told, expected = e >= 0, int(e)
		}
		if told && got >= expected {
			break
		}
		n, err := m.rcq.Poll(wcs)
		if err != nil {
			return nil, err
		}
		for _, wc := range wcs[:n] {
			if wc.Status != fabric.StatusSuccess {
				return nil, &fabric.CompletionError{WC: wc, Node: m.node.ID()}
			}
			got++
			b := wc.Bytes
			if ud {
				b -= fabric.GRHBytes
			}
			r.bytes += int64(b)
			if repost[wc.ID] == 0 {
				dirty = append(dirty, int(wc.ID))
			}
			repost[wc.ID]++
		}
		now := th.Now()
		if n > 0 {
			if rx.w.sampling(now) {
				measured += float64(n)
			} else if !rx.w.on && got > n {
				segs = append(segs, segment{last, now, r.bytes - prevBytes})
			}
			prevBytes = r.bytes
			for _, i := range dirty {
				if err := rx.post(i, repost[i]); err != nil {
					return nil, err
				}
				repost[i] = 0
			}
			dirty = dirty[:0]

			last = now
			continue
		}
		limit := idle
		if !told {
			limit = stall // the senders are still counting
		}
		if now.Sub(last) > limit {
			if ud && told {
				break
			}
			return nil, fmt.Errorf("perftest: node %d: no receive for %v (%s arrived)", m.node.ID(), limit, rx.progress(got, expected, told))
		}
		th.Wait(last.Add(limit+1), wait...)
	}
	r.end = last
	r.msgs = int64(got)
	r.dropped = int64(expected - got)
	r.peak = peakRate(segs, r.start, r.end)
	if rx.w.on {
		rx.w.measured(r, measured, rx.cfg.Size)
	}
	return r, nil
}

// progress says how much of what was expected arrived.
func (rx *receiver) progress(got, expected int, told bool) string {
	if !told {
		return fmt.Sprintf("%d messages", got)
	}
	return fmt.Sprintf("%d of %d", got, expected)
}

// incast has every node but 0 send to node 0 at once; node 0 reports what
// it received.
func incast(th fabric.Thread, nodes int, cfg *Config) (*nodeResult, error) {
	me := th.Node().ID()
	peers := []int{0}
	if me == 0 {
		peers = peers[:0]
		for i := 1; i < nodes; i++ {
			peers = append(peers, i)
		}
	}
	m, err := meshFor(th, peers, cfg)
	if err != nil {
		return nil, err
	}
	var rx *receiver
	if me == 0 {
		if rx, err = newReceiver(m, cfg); err != nil {
			return nil, err
		}
	}
	oob := th.Node().OOB()
	if err := oob.Barrier("incast-ready"); err != nil {
		return nil, err
	}
	var r *nodeResult
	switch {
	case cfg.Duration > 0 && me == 0:
		_, r, err = runTimed(th, m, nodes, cfg, rx, nil)
	case cfg.Duration > 0:
		_, _, err = runTimed(th, m, nodes, cfg, nil, func(w window) (*nodeResult, error) {
			return sendLoop(th, m, cfg, fabric.OpSend, w)
		})
	case me == 0:
		r, err = rx.run(th, cfg.Iters*cfg.QPs*(nodes-1))
	default:
		_, err = sendLoop(th, m, cfg, fabric.OpSend, window{})
	}
	if err != nil {
		return nil, err
	}
	return r, oob.Barrier("incast-done")
}

// regMR times memory registration and deregistration of Size bytes, Iters
// times, on every node; node 0 reports registration times as latencies.
// RegMR allocates and zeroes the memory before it registers it, so a
// backend that can time the registration alone (fabric.RegTimer) is
// asked to; for the others the time includes allocating and zeroing,
// and the result says so (Result.RegWithAlloc).
func regMR(th fabric.Thread, cfg *Config) (*nodeResult, error) {
	pd, err := th.Node().Device().AllocPD()
	if err != nil {
		return nil, err
	}
	rt, alone := pd.(fabric.RegTimer)
	r := &nodeResult{ok: th.Node().ID() == 0, start: th.Now(), regWithAlloc: !alone}
	const access = fabric.AccessLocalWrite | fabric.AccessRemoteWrite | fabric.AccessRemoteRead
	for i := 0; i < cfg.Iters; i++ {
		t0 := th.Now()
		var mr fabric.MR
		var d fabric.Duration
		if alone {
			mr, d, err = rt.TimeRegMR(cfg.Size, access)
		} else {
			mr, err = pd.RegMR(cfg.Size, access)
		}
		if err != nil {
			return nil, err
		}
		th.Sync()
		if !alone {
			d = th.Now().Sub(t0)
		}
		r.lat = append(r.lat, d)
		if err := mr.Dereg(); err != nil {
			return nil, err
		}
	}
	r.end = th.Now()
	if err := pd.Dealloc(); err != nil {
		return nil, err
	}
	if !r.ok {
		return nil, nil
	}
	return r, nil
}

package sim

// Tests of the performance model (docs/model.md §1 and §3): credits and
// buffers, the queue-pair context cache, the throughput limits that must
// emerge from PCIe, the link and the cache, provider locks, Thread.Charge,
// the control-path costs, and determinism under faults.
//
// White-box (package sim): the credit test drives verbs from the test
// goroutine and fires events one at a time (mtHarness.step, a copy of what
// Advance does) so that it can inspect the switch and the NICs after every
// single event. Everything is simulated time; nothing here sleeps or reads
// the wall clock.

import (
	"errors"
	"fmt"
	"github.com/rdmashuffle/rdmashuffle/fabric/route"
	"github.com/rdmashuffle/rdmashuffle/fabric/topo"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/perftest"
)

// mtProfile loads a built-in profile and lets the caller change it.
func mtProfile(t testing.TB, name string, edit func(p *Profile)) *Profile {
	t.Helper()
	p, err := LoadProfile(name)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(p)
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

func mtCluster(t testing.TB, cfg Config) *Cluster {
	t.Helper()
	if cfg.TimeLimit == 0 {
		cfg.TimeLimit = 10 * fabric.Second
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// ---------------------------------------------------------------------------
// 1. Credits and buffers.

// mtNode is one node's verbs objects for the credit workloads: one PD, one
// CQ for everything, one region (the source of every write and the target
// of every peer's writes) and an RC queue pair per peer.
type mtNode struct {
	pd  fabric.PD
	cq  fabric.CQ
	mr  fabric.MR
	qps map[int]fabric.QP // by peer
}

// mtHarness drives a cluster from the test goroutine, one event at a time,
// checking the credit invariants after each.
type mtHarness struct {
	t     *testing.T
	c     *Cluster
	nodes []*mtNode

	posted    int64 // send work requests posted
	completed int64 // successful completions polled
	events    int64

	maxIn, maxOut []int // highest credit use seen per input port / NIC receive buffer
	maxPktBlocks  int   // largest packet seen in a switch input buffer, in blocks
	// sl, if set, gives the service level of the connection between two
	// nodes (several virtual lanes).
	sl func(a, b int) uint8
}

func newHarness(t *testing.T, c *Cluster, mrBytes int) *mtHarness {
	t.Helper()
	ports := 0
	for _, sw := range c.net.sws {
		ports += len(sw.in)
	}
	h := &mtHarness{t: t, c: c, maxIn: make([]int, ports), maxOut: make([]int, ports)}
	acc := fabric.AccessLocalWrite | fabric.AccessRemoteWrite | fabric.AccessRemoteRead
	for i := 0; i < c.Size(); i++ {
		dev := c.Node(i).Device()
		n := &mtNode{qps: map[int]fabric.QP{}}
		var err error
		if n.pd, err = dev.AllocPD(); err != nil {
			t.Fatal(err)
		}
		if n.cq, err = dev.CreateCQ(1 << 16); err != nil {
			t.Fatal(err)
		}
		if n.mr, err = n.pd.RegMR(mrBytes, acc); err != nil {
			t.Fatal(err)
		}
		h.nodes = append(h.nodes, n)
	}
	return h
}

// connect creates and connects an RC queue pair between nodes a and b.
func (h *mtHarness) connect(a, b int) {
	t := h.t
	t.Helper()
	acc := fabric.AccessLocalWrite | fabric.AccessRemoteWrite | fabric.AccessRemoteRead
	for _, s := range [][2]int{{a, b}, {b, a}} {
		n := h.nodes[s[0]]
		qp, err := n.pd.CreateQP(fabric.QPInit{Type: fabric.RC, SendCQ: n.cq, RecvCQ: n.cq,
			Caps: fabric.QPCaps{MaxSendWR: 1024, MaxRecvWR: 16}})
		if err != nil {
			t.Fatal(err)
		}
		if err := qp.Modify(fabric.StateInit, fabric.QPAttr{Access: acc}); err != nil {
			t.Fatal(err)
		}
		n.qps[s[1]] = qp
	}
	for _, s := range [][2]int{{a, b}, {b, a}} {
		qp, peer := h.nodes[s[0]].qps[s[1]], h.nodes[s[1]].qps[s[0]]
		dest := peer.Info().Address()
		if h.sl != nil {
			dest.SL = h.sl(a, b)
		}
		if err := qp.Modify(fabric.StateRTR, fabric.QPAttr{Dest: dest, RemotePSN: 100,
			MaxDestRdAtomic: 16, MinRNRTimer: 1}); err != nil {
			t.Fatal(err)
		}
		if err := qp.Modify(fabric.StateRTS, fabric.QPAttr{SendPSN: 100, Timeout: 14, RetryCnt: 7,
			RNRRetry: 7, MaxRdAtomic: 16}); err != nil {
			t.Fatal(err)
		}
	}
}

// write posts one signaled RDMA Write of size bytes from src to dst.
func (h *mtHarness) write(src, dst, size int, id uint64) {
	h.t.Helper()
	s, d := h.nodes[src], h.nodes[dst]
	wr := fabric.SendWR{ID: id, Op: fabric.OpWrite, Flags: fabric.Signaled, Local: s.mr.SGE(0, size),
		RemoteAddr: d.mr.Addr(), RKey: d.mr.RKey()}
	if _, err := s.qps[dst].PostSend([]fabric.SendWR{wr}); err != nil {
		h.t.Fatal(err)
	}
	h.posted++
}

// poll drains node i's CQ and returns the IDs of its completions.
func (h *mtHarness) poll(i int) ([]uint64, error) {
	var ids []uint64
	wcs := make([]fabric.WC, 64)
	for {
		n, err := h.nodes[i].cq.Poll(wcs)
		if err != nil {
			return ids, err
		}
		for _, wc := range wcs[:n] {
			if wc.Status != fabric.StatusSuccess {
				return ids, fmt.Errorf("node %d: %v", i, &fabric.CompletionError{WC: wc, Node: i})
			}
			ids = append(ids, wc.ID)
			h.completed++
		}
		if n < len(wcs) {
			return ids, nil
		}
	}
}

// step fires the next event (as Advance does) and checks the invariants.
// It reports false when no event is left.
func (h *mtHarness) step() (bool, error) {
	c := h.c
	if c.q.len() == 0 {
		return false, nil
	}
	ev := c.q.pop()
	c.fire(&ev)
	h.events++
	return true, h.check()
}

// creditsInUse is what the sender on a link believes the buffer holds at
// now: blocks taken minus the returns visible by now. It does not change
// the credits (avail would apply the returns).
func creditsInUse(cr *credits, now fabric.Time) int {
	u := cr.used
	for _, r := range cr.ret[cr.head:] {
		if r.at <= now {
			u -= r.blocks
		}
	}
	return u
}

// check verifies, at the current event, for every switch input buffer and
// every NIC receive buffer:
//   - the credits in use never exceed the buffer's capacity (the sender on
//     the link never sent more than the buffer holds);
//   - the packets actually queued in an input buffer never occupy more
//     blocks than the credits in use account for (so, with the first rule,
//     the buffer never holds more than its capacity). A NIC's receive
//     buffer holds a packet from its arrival until its pipeline moves it
//     on, a sub-interval of [forward, return) during which its credit is
//     in use, so the first rule bounds it too;
//   - pending returns are ordered by time (credits applies them lazily in
//     order, so an out-of-order return would be applied late or early);
//   - a NIC that waits for credit is woken no later than the time enough
//     credit for a packet is back.
func (h *mtHarness) check() error {
	c := h.c
	now := c.now
	for i, n := range c.nodes {
		if err := h.wakeInTime(i, n.nic); err != nil {
			return fmt.Errorf("at %v: NIC %d: %v", now, i, err)
		}
	}
	for si := range c.net.sws {
		sw := &c.net.sws[si]
		for i := range sw.in {
			g := sw.base + i
			in := &sw.in[i]
			u := 0
			for v := 0; v <= len(in.crv); v++ {
				cr := in.credit(uint8(v))
				uv := creditsInUse(cr, now)
				if uv > cr.cap || uv < 0 {
					return fmt.Errorf("at %v: switch %d input %d VL %d: %d credit blocks in use, capacity %d", now, si, i, v, uv, cr.cap)
				}
				if err := retOrdered(cr); err != nil {
					return fmt.Errorf("at %v: switch %d input %d VL %d: %v", now, si, i, v, err)
				}
				u += uv
			}
			occ := 0
			for o := range in.voq {
				for _, p := range in.voq[o].q[in.voq[o].head:] {
					b := blocksOf(p.wire)
					occ += b
					h.maxPktBlocks = max(h.maxPktBlocks, b)
				}
			}
			if occ > u {
				return fmt.Errorf("at %v: switch %d input %d holds %d blocks of packets but only %d credit blocks are in use", now, si, i, occ, u)
			}
			h.maxIn[g] = max(h.maxIn[g], u)
		}
		for o := range sw.out {
			out := &sw.out[o]
			if out.toNode < 0 {
				continue // its credits are the next switch's input's, checked above
			}
			for v := 0; v <= len(out.crv); v++ {
				cr := out.credit(uint8(v))
				u := creditsInUse(cr, now)
				if u > cr.cap || u < 0 {
					return fmt.Errorf("at %v: NIC %d receive buffer VL %d: %d credit blocks in use, capacity %d", now, out.toNode, v, u, cr.cap)
				}
				h.maxOut[sw.base+o] = max(h.maxOut[sw.base+o], u)
				if err := retOrdered(cr); err != nil {
					return fmt.Errorf("at %v: NIC %d receive buffer VL %d: %v", now, out.toNode, v, err)
				}
			}
		}
	}
	return nil
}

// wakeInTime checks that a NIC blocked for credit has a step queued no
// later than the first time its uplink's credits suffice for a packet.
func (h *mtHarness) wakeInTime(i int, nic *nic) error {
	if !nic.creditBlocked {
		return nil
	}
	// The lanes the NIC waits on: VL 0 with one lane, else those of its
	// ready queue pairs' next packets (a lane nobody waits on may have
	// credit without the NIC having anything to send on it).
	in := h.c.net.uplinkIn(i)
	lanes := []uint8{0}
	if len(in.crv) > 0 {
		lanes = lanes[:0]
		for k := 0; k < nic.ready.len(); k++ {
			lanes = append(lanes, nic.ready.at(k).nextVL())
		}
	}
	enough := fabric.Forever
	for _, vl := range lanes {
		cr := in.credit(vl)
		u := cr.used
		for _, r := range cr.ret[cr.head:] {
			u -= r.blocks
			if cr.cap-u >= nic.maxBlocks {
				enough = min(enough, r.at)
				break
			}
		}
	}
	if enough == fabric.Forever {
		return nil // credit comes back with a later forward, which wakes the NIC
	}
	step := fabric.Forever
	h.c.q.each(func(at fabric.Time, eh handler, arg uint64) {
		if eh == handler(nic) && arg == evStep {
			step = min(step, at)
		}
	})
	// Nor can it send before its link is free, or before now (a queue
	// pair of a lane with credit may have just become ready: a step is
	// due now).
	enough = max(enough, h.c.net.up[i].freeAt, h.c.now)
	if step > enough {
		var detail []string
		for k := 0; k < nic.ready.len(); k++ {
			q := nic.ready.at(k)
			cr := in.credit(q.nextVL())
			detail = append(detail, fmt.Sprintf("qp %d lane %d gate %v avail %d next %v", q.qpn, q.nextVL(), q.gate(h.c.now), cr.avail(h.c.now), cr.ret[cr.head:]))
		}
		return fmt.Errorf("waits for credit that is back at %v, but its next step is at %v (stepAt %v pending %v): %v", enough, step, nic.stepAt, nic.stepPending, detail)
	}
	return nil
}

func retOrdered(cr *credits) error {
	r := cr.ret[cr.head:]
	for k := 1; k < len(r); k++ {
		if r[k].at < r[k-1].at {
			return fmt.Errorf("credit returns out of order: %v after %v", r[k].at, r[k-1].at)
		}
	}
	return nil
}

// quiet checks the state once no event is left: every credit taken has
// been returned, no packet is left in the switch, and no NIC waits.
func (h *mtHarness) quiet() error {
	c := h.c
	var errs []error
	left := func(what string, cr *credits) {
		u := cr.used
		for _, r := range cr.ret[cr.head:] {
			u -= r.blocks
		}
		if u != 0 {
			errs = append(errs, fmt.Errorf("%s: %d credit blocks never returned", what, u))
		}
	}
	for si := range c.net.sws {
		sw := &c.net.sws[si]
		for i := range sw.in {
			in := &sw.in[i]
			for v := 0; v <= len(in.crv); v++ {
				left(fmt.Sprintf("switch %d input %d VL %d", si, i, v), in.credit(uint8(v)))
			}
			for o := range in.voq {
				if n := in.voq[o].len(); n > 0 {
					errs = append(errs, fmt.Errorf("switch %d input %d still holds %d packets for output %d", si, i, n, o))
				}
			}
		}
		for o := range sw.out {
			out := &sw.out[o]
			if out.toNode >= 0 {
				for v := 0; v <= len(out.crv); v++ {
					left(fmt.Sprintf("NIC %d receive buffer VL %d", out.toNode, v), out.credit(uint8(v)))
				}
			}
			for v := 0; v <= len(out.waitv); v++ {
				if n := out.waitingOf(uint8(v)).len(); n > 0 {
					errs = append(errs, fmt.Errorf("switch %d output %d still has %d contenders on VL %d", si, o, n, v))
				}
			}
		}
	}
	for i, n := range c.nodes {
		if n.nic.creditBlocked {
			errs = append(errs, fmt.Errorf("NIC %d still waits for credit", i))
		}
		if k := n.nic.ready.len(); k > 0 {
			errs = append(errs, fmt.Errorf("NIC %d still has %d queue pairs ready to send", i, k))
		}
	}
	return errors.Join(errs...)
}

// TestModelCreditsBoundBuffers runs an 8-into-1 incast and a random
// all-to-all of large RDMA Writes and checks the credit invariants after
// every event, then that every credit came back.
func TestModelCreditsBoundBuffers(t *testing.T) {
	const kib = 1024
	cases := []struct {
		name    string
		profile string
		nodes   int
		faults  Faults
		// incast: every node but the last writes msgs messages of size to
		// the last one, all posted at once.
		incast bool
		// all-to-all: every node writes msgs messages of random sizes in
		// [size/4, size] to random other nodes, window in flight at a time.
		msgs, size, window int
		// the workload must fill these buffers to within one packet of
		// capacity, or it did not test back-pressure
		fillIn, fillRx bool
		// tree: a two-level fat tree of radix-tree switches instead of
		// the single switch (adaptive: UD-only adaptive routing, RC keeps
		// its table's path; cable: a spine's cable down for a while)
		tree     int
		adaptive bool
		cable    bool
		vls      int // data virtual lanes of the tree (connections on service levels 0-3)
	}{
		// FDR: PCIe (6.6 GB/s) drains the receiver's buffer slower than
		// the link fills it, so the NIC's buffer fills first, then the
		// switch's input buffers behind it.
		{name: "incast-fdr", profile: "fdr-cx3", nodes: 9, incast: true, msgs: 8, size: 256 * kib, fillIn: true, fillRx: true},
		// EDR: PCIe is faster than the link; the oversubscribed output
		// backs up into the input buffers.
		{name: "incast-edr", profile: "edr-cx4", nodes: 9, incast: true, msgs: 8, size: 256 * kib, fillIn: true},
		{name: "alltoall-random-fdr", profile: "fdr-cx3", nodes: 8, msgs: 24, size: 512 * kib, window: 2, fillIn: true},
		{name: "alltoall-random-edr", profile: "edr-cx4", nodes: 8, msgs: 24, size: 512 * kib, window: 2, fillIn: true},
		// Lost, duplicated and reordered packets must not leak credits.
		{name: "alltoall-random-faults", profile: "edr-cx4", nodes: 8, msgs: 12, size: 256 * kib, window: 2,
			faults: Faults{Loss: 0.002, Duplicate: 0.002, Reorder: 0.002}},
		// Networks of switches: credits hop by hop, the same invariants
		// at every switch input and at every NIC.
		{name: "incast-edr-tree", profile: "edr-cx4", nodes: 8, incast: true, msgs: 8, size: 256 * kib, fillIn: true, tree: 4},
		{name: "alltoall-random-fdr-tree", profile: "fdr-cx3", nodes: 8, msgs: 24, size: 512 * kib, window: 2, fillIn: true, tree: 4},
		{name: "alltoall-random-edr-tree3", profile: "edr-cx4", nodes: 16, msgs: 12, size: 256 * kib, window: 2, fillIn: true, tree: -4},
		{name: "alltoall-random-tree-faults", profile: "edr-cx4", nodes: 8, msgs: 12, size: 256 * kib, window: 2, tree: 4,
			faults: Faults{Loss: 0.002, Duplicate: 0.002, Reorder: 0.002}},
		{name: "alltoall-random-tree-cable", profile: "edr-cx4", nodes: 8, msgs: 12, size: 256 * kib, window: 2, tree: 4, cable: true},
		// Several virtual lanes: connections on service levels 0-3, so
		// every lane's credits, arbitration and wake-ups are exercised.
		{name: "alltoall-random-tree-vls", profile: "edr-cx4", nodes: 8, msgs: 24, size: 256 * kib, window: 2, tree: 4, vls: 4},
		{name: "incast-edr-tree-vls", profile: "edr-cx4", nodes: 8, incast: true, msgs: 8, size: 256 * kib, tree: 4, vls: 2},
		{name: "alltoall-random-tree3-vls-faults", profile: "edr-cx4", nodes: 16, msgs: 12, size: 256 * kib, window: 2, tree: -4, vls: 3,
			faults: Faults{Loss: 0.002, Duplicate: 0.002, Reorder: 0.002}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Nodes: tc.nodes, Seed: 3, SizeOnly: true, Profile: mtProfile(t, tc.profile, nil)}
			if tc.tree != 0 {
				cfg.Fabric = mtTree(t, tc.nodes, tc.tree)
				cfg.Fabric.VLs = tc.vls
			}
			c := mtCluster(t, cfg)
			if tc.cable {
				p := NewPlan()
				p.Rules = []Rule{{Action: CableDown, Switch: "spine-0", Port: 1, From: fabric.Time(50 * fabric.Microsecond), To: fabric.Time(400 * fabric.Microsecond)}}
				p.Reroute = 100 * fabric.Microsecond
				if err := c.SetPlan(p); err != nil {
					t.Fatal(err)
				}
			}
			h := newHarness(t, c, tc.size)
			if tc.vls > 1 {
				h.sl = func(a, b int) uint8 { return uint8((a + b) % 4) }
			}
			for a := 0; a < tc.nodes; a++ {
				for b := a + 1; b < tc.nodes; b++ {
					if !tc.incast || b == tc.nodes-1 {
						h.connect(a, b)
					}
				}
			}
			if tc.faults.any() {
				for i := 0; i < tc.nodes; i++ {
					if err := c.SetFaults(i, tc.faults); err != nil {
						t.Fatal(err)
					}
				}
			}
			last := make([]fabric.Time, tc.nodes) // each node's last completion
			rng := rand.New(rand.NewPCG(11, 12))
			total := int64(0)
			// next[i] lists node i's messages still to post, as (dst, size).
			next := make([][][2]int, tc.nodes)
			if tc.incast {
				for i := 0; i < tc.nodes-1; i++ {
					for k := 0; k < tc.msgs; k++ {
						h.write(i, tc.nodes-1, tc.size, uint64(k))
						total++
					}
				}
			} else {
				for i := range next {
					for k := 0; k < tc.msgs; k++ {
						dst := rng.IntN(tc.nodes - 1)
						if dst >= i {
							dst++
						}
						next[i] = append(next[i], [2]int{dst, tc.size/4 + rng.IntN(tc.size*3/4+1)})
					}
					total += int64(tc.msgs)
					for k := 0; k < tc.window; k++ {
						m := next[i][0]
						next[i] = next[i][1:]
						h.write(i, m[0], m[1], 0)
					}
				}
			}
			for {
				more, err := h.step()
				if err != nil {
					t.Fatalf("after %d events: %v", h.events, err)
				}
				for i := range h.nodes {
					ids, err := h.poll(i)
					if err != nil {
						t.Fatal(err)
					}
					if len(ids) > 0 {
						last[i] = c.Now()
					}
					for range ids {
						if len(next[i]) > 0 {
							m := next[i][0]
							next[i] = next[i][1:]
							h.write(i, m[0], m[1], 0)
							more = true
						}
					}
				}
				if !more {
					break
				}
			}
			if h.completed != total {
				t.Fatalf("%d of %d writes completed", h.completed, total)
			}
			if err := h.quiet(); err != nil {
				t.Fatal(err)
			}
			st := c.Stats()
			if h.maxPktBlocks > maxPacketBlocks(c.prof) {
				t.Errorf("a packet of %d blocks was sent; NICs only wait for %d (maxPacketBlocks)", h.maxPktBlocks, maxPacketBlocks(c.prof))
			}
			if !tc.faults.any() && !tc.cable {
				// A lossless fabric never retransmits.
				if st.RCRetransmits != 0 || st.PacketsLost != 0 {
					t.Errorf("lossless run: %d retransmits, %d packets lost", st.RCRetransmits, st.PacketsLost)
				}
				// Every work request is looked up once when the NIC
				// processes it, and every packet once when it arrives.
				if got, want := st.QPCacheHits+st.QPCacheMisses, st.PacketsSent+h.posted; got != want {
					t.Errorf("cache lookups %d (hits %d + misses %d), want packets %d + work requests %d = %d",
						got, st.QPCacheHits, st.QPCacheMisses, st.PacketsSent, h.posted, want)
				}
			} else if tc.faults.any() && (st.PacketsLost == 0 || st.RCRetransmits == 0) {
				t.Errorf("the faults did nothing: %+v", st)
			}
			if tc.tree != 0 && st.SwitchHops <= st.PacketsSent {
				t.Errorf("%d switch hops for %d packets: the tree carried nothing across its spines", st.SwitchHops, st.PacketsSent)
			}
			fullIn, fullRx := 0, 0
			inCap, rxCap := c.net.sws[0].in[0].cr.cap, c.net.sws[0].out[0].cr.cap
			for i := range h.maxIn {
				if h.maxIn[i] > inCap-maxPacketBlocks(c.prof) {
					fullIn++
				}
				if h.maxOut[i] > rxCap-maxPacketBlocks(c.prof) {
					fullRx++
				}
			}
			t.Logf("%d events, %v simulated; most credit blocks in use: inputs %v (cap %d), NIC buffers %v (cap %d); %+v",
				h.events, c.Now(), h.maxIn, inCap, h.maxOut, rxCap, st)
			if tc.incast {
				// The output serves its inputs round-robin: the senders
				// share the receiver's link fairly and finish together.
				first, lastDone := slices.Min(last[:tc.nodes-1]), slices.Max(last[:tc.nodes-1])
				bytes := float64((tc.nodes - 1) * tc.msgs * tc.size)
				gbps, bound := bytes*8/lastDone.Seconds()/1e9, min(payloadBound(c.prof), c.prof.PCIe.GBps*8)
				t.Logf("senders finished between %v and %v; %.2f Gb/s into the receiver (bound %.2f)", first, lastDone, gbps, bound)
				if gbps > bound || gbps < 0.98*bound {
					t.Errorf("incast delivered %.2f Gb/s; want just under min(link, PCIe) = %.2f", gbps, bound)
				}
				switch {
				case tc.tree == 0 && first < lastDone-lastDone/50:
					t.Errorf("incast senders finished between %v and %v: the receiver's link was not shared fairly", first, lastDone)
				case tc.tree != 0 && tc.vls > 1:
					// The lanes' arbitration, not the ports', decides.
				case tc.tree != 0:
					// On a tree the receiver's leaf serves its inputs
					// round-robin, one share per port: the sender on the
					// receiver's own leaf has a port to itself, and the
					// remote senders share the spines' ports, so the
					// local one finishes first (the parking-lot
					// unfairness of multistage networks).
					local := tc.nodes - 2 // on the receiver's leaf (radix 4: two hosts per leaf)
					if last[local] != first || first > lastDone/2 {
						t.Errorf("incast on a tree: the receiver's leaf-mate finished at %v, the first at %v, the last at %v; want the leaf-mate first, well ahead", last[local], first, lastDone)
					}
				}
			}
			if tc.fillIn && fullIn == 0 {
				t.Errorf("no switch input buffer came within one packet of full: back-pressure not exercised")
			}
			if tc.fillRx && fullRx == 0 {
				t.Errorf("no NIC receive buffer came within one packet of full: back-pressure not exercised")
			}
		})
	}
}

// TestModelCreditReturnsOutOfOrder: an input buffer with one queue per
// output drains out of order (a small packet to an idle output leaves
// before a large one to a busy output that started earlier), so credit
// returns are not recorded in time order. Each must become visible when its
// own packet left, not behind the others.
func TestModelCreditReturnsOutOfOrder(t *testing.T) {
	cr := newCredits(64 * 100)
	cr.take(65) // a 4 KiB packet to output A, leaves at 1000
	cr.take(1)  // an ACK to output B, leaves at 500
	cr.give(1000, 65)
	cr.give(500, 1)
	for _, s := range []struct {
		at   fabric.Time
		free int
	}{{499, 34}, {500, 35}, {999, 35}, {1000, 100}} {
		if got := cr.avail(s.at); got != s.free {
			t.Errorf("at %d: %d blocks free, want %d", s.at, got, s.free)
		}
	}
	if _, ok := cr.next(); ok {
		t.Errorf("returns left after all were applied")
	}
}

// ---------------------------------------------------------------------------
// 2. The queue-pair context cache: qpcache_test.go.

// ---------------------------------------------------------------------------
// 3. Throughput limits emerge from the mechanisms (docs/model.md §3).

// payloadBound is the link's rate for MTU-sized RDMA Write packets, Gb/s.
func payloadBound(p *Profile) float64 {
	return p.DataRateBps() / 1e9 * float64(p.Link.MTU) / float64(p.Link.MTU+hdrBase)
}

// TestModelWriteBandwidthLimits: a large-message write_bw on fdr-cx3 is
// held by PCIe Gen3 x8 (52.8 Gb/s), below the link; given a faster bus it
// rises to the link's bound, so PCIe was the limit. On edr-cx4 the link
// is the limit and a faster bus changes nothing.
func TestModelWriteBandwidthLimits(t *testing.T) {
	cases := []struct {
		profile   string
		pcie      float64 // GB/s; 0: the profile's
		lo, hi    float64 // expected Gb/s
		pcieBound bool    // the bus is slower than the link
	}{
		{profile: "fdr-cx3", lo: 52.4, hi: 52.8, pcieBound: true},
		{profile: "fdr-cx3", pcie: 13, lo: 53.8, hi: 54.2},
		{profile: "edr-cx4", lo: 98.8, hi: 99.4},
		{profile: "edr-cx4", pcie: 26, lo: 98.8, hi: 99.4},
	}
	got := map[string]float64{}
	for _, tc := range cases {
		name := fmt.Sprintf("%s/pcie=%v", tc.profile, tc.pcie)
		t.Run(name, func(t *testing.T) {
			p := mtProfile(t, tc.profile, func(p *Profile) {
				if tc.pcie > 0 {
					p.PCIe.GBps = tc.pcie
				}
			})
			c := mtCluster(t, Config{Nodes: 2, Seed: 1, SizeOnly: true, Profile: p})
			r, err := perftest.Run(c, perftest.Config{Test: "write_bw", Size: 1 << 20, Iters: 16})
			if err != nil {
				t.Fatal(err)
			}
			link, bus := payloadBound(p), p.PCIe.GBps*8
			got[name] = r.BWAvgGbps
			t.Logf("%.2f Gb/s; link payload bound %.2f, PCIe %.2f", r.BWAvgGbps, link, bus)
			if r.BWAvgGbps < tc.lo || r.BWAvgGbps > tc.hi {
				t.Errorf("write_bw -s 1M: %.2f Gb/s, want %.1f..%.1f", r.BWAvgGbps, tc.lo, tc.hi)
			}
			if r.BWAvgGbps > min(link, bus)*1.0001 {
				t.Errorf("%.3f Gb/s is above min(link %.3f, PCIe %.3f)", r.BWAvgGbps, link, bus)
			}
			if tc.pcieBound != (bus < link) {
				t.Errorf("profile: PCIe %.2f vs link %.2f does not match the case", bus, link)
			}
		})
	}
	if a, b := got["fdr-cx3/pcie=0"], got["fdr-cx3/pcie=13"]; a > 0 && b-a < 1 {
		t.Errorf("fdr-cx3: a faster bus gave %.2f -> %.2f Gb/s; PCIe should be the limit", a, b)
	}
	if a, b := got["edr-cx4/pcie=0"], got["edr-cx4/pcie=26"]; a > 0 && math.Abs(b-a) > 0.1 {
		t.Errorf("edr-cx4: a faster bus changed %.2f -> %.2f Gb/s; the link should be the limit", a, b)
	}
}

// TestModelMessageRateVersusQPs: on fdr-cx3 (80 contexts in sets of 2,
// three fetches in flight), 32-byte RDMA Reads spread one per queue pair
// in turn (--interleave) run at the posting rate with 32 queue pairs (64
// already conflict in some sets, hashed as they are); with
// 512 nearly every lookup misses, and each NIC fetches about two contexts
// per read (the client's when it posts and when the response arrives, the
// server's when the request arrives and when it answers), three at a time
// in 550 ns: about 2.7 M reads/s; perftest's own
// order (fill one queue pair's window, then the next) keeps few queue
// pairs active and does not collapse.
func TestModelMessageRateVersusQPs(t *testing.T) {
	cases := []struct {
		qps        int
		interleave bool
		lo, hi     float64 // M reads/s
	}{
		{32, true, 11, 14},
		{512, true, 2, 4},
		{64, false, 11, 14},
		{512, false, 11, 14},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("q=%d/interleave=%v", tc.qps, tc.interleave), func(t *testing.T) {
			c := mtCluster(t, Config{Nodes: 2, Seed: 1, SizeOnly: true, Profile: mtProfile(t, "fdr-cx3", nil)})
			r, err := perftest.Run(c, perftest.Config{Test: "read_bw", Size: 32, Iters: 20, QPs: tc.qps, Interleave: tc.interleave})
			if err != nil {
				t.Fatal(err)
			}
			st := c.Stats()
			t.Logf("%.2f M reads/s, cache miss rate %.3f", r.MsgRateMpps, st.QPCacheMissRate())
			if r.MsgRateMpps < tc.lo || r.MsgRateMpps > tc.hi {
				t.Errorf("read_bw -s 32 -q %d interleave=%v: %.2f M reads/s, want %.1f..%.1f",
					tc.qps, tc.interleave, r.MsgRateMpps, tc.lo, tc.hi)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// 4. Provider locks and Charge.

// mtPairRun runs a 2-node cluster in which each node creates nq RC queue
// pairs (send depth sq) on one CQ, connected pairwise, then calls body on
// node 0's main thread with its queue pairs and the peer's region.
func mtPairRun(t *testing.T, c *Cluster, nq, sq int, body func(th fabric.Thread, qps []fabric.QP, mr fabric.MR, remote fabric.MR) error) error {
	t.Helper()
	qps := make([][]fabric.QP, 2)
	mrs := make([]fabric.MR, 2)
	acc := fabric.AccessLocalWrite | fabric.AccessRemoteWrite | fabric.AccessRemoteRead
	return c.Run(func(th fabric.Thread) error {
		me := th.Node().ID()
		dev := th.Node().Device()
		pd, err := dev.AllocPD()
		if err != nil {
			return err
		}
		cq, err := dev.CreateCQ(4 * sq * nq)
		if err != nil {
			return err
		}
		if mrs[me], err = pd.RegMR(1<<16, acc); err != nil {
			return err
		}
		for k := 0; k < nq; k++ {
			q, err := pd.CreateQP(fabric.QPInit{Type: fabric.RC, SendCQ: cq, RecvCQ: cq,
				Caps: fabric.QPCaps{MaxSendWR: sq, MaxRecvWR: 16}})
			if err != nil {
				return err
			}
			if err := q.Modify(fabric.StateInit, fabric.QPAttr{Access: acc}); err != nil {
				return err
			}
			qps[me] = append(qps[me], q)
		}
		if err := th.Node().OOB().Barrier("created"); err != nil {
			return err
		}
		for k, q := range qps[me] {
			peer := qps[1-me][k]
			if err := q.Modify(fabric.StateRTR, fabric.QPAttr{Dest: peer.Info().Address(), RemotePSN: 0,
				MaxDestRdAtomic: 16, MinRNRTimer: 1}); err != nil {
				return err
			}
			if err := q.Modify(fabric.StateRTS, fabric.QPAttr{SendPSN: 0, Timeout: 14, RetryCnt: 7,
				RNRRetry: 7, MaxRdAtomic: 16}); err != nil {
				return err
			}
		}
		if err := th.Node().OOB().Barrier("connected"); err != nil {
			return err
		}
		if me == 0 {
			return body(th, qps[0], mrs[0], mrs[1])
		}
		return nil
	})
}

// TestModelProviderLocks: two threads posting to one shared queue pair
// serialize on its lock and pay a hand-off each time the lock changes
// hands; with a queue pair each they post in parallel at the posting cost.
func TestModelProviderLocks(t *testing.T) {
	const m = 64 // posts per thread
	type outcome struct {
		span     fabric.Duration
		handoffs int64
	}
	res := map[bool]outcome{}
	for _, shared := range []bool{false, true} {
		t.Run(fmt.Sprint("shared=", shared), func(t *testing.T) {
			p := mtProfile(t, "fdr-cx3", nil)
			c := mtCluster(t, Config{Nodes: 2, Seed: 1, SizeOnly: true, Profile: p})
			nq := 2
			if shared {
				nq = 1
			}
			var start, end [2]fabric.Time
			err := mtPairRun(t, c, nq, 4*m, func(th fabric.Thread, qps []fabric.QP, mr, remote fabric.MR) error {
				for w := 0; w < 2; w++ {
					qp := qps[w%len(qps)]
					th.Spawn(fmt.Sprint("poster", w), 1+w, func(th fabric.Thread) error {
						start[w] = th.Now()
						for i := 0; i < m; i++ {
							wr := fabric.SendWR{ID: uint64(w<<16 | i), Op: fabric.OpWrite, Local: mr.SGE(0, 64),
								RemoteAddr: remote.Addr(), RKey: remote.RKey()}
							if _, err := qp.PostSend([]fabric.SendWR{wr}); err != nil {
								return err
							}
						}
						end[w] = th.Now()
						return nil
					})
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if start[0] != start[1] {
				t.Fatalf("the posting threads started at %v and %v", start[0], start[1])
			}
			o := outcome{max(end[0], end[1]).Sub(start[0]), c.Stats().LockHandoffs}
			res[shared] = o
			post, handoff := ns(p.Host.PostSendNS), ns(p.Host.LockHandoffNS)
			t.Logf("%d posts per thread: %v, %d lock hand-offs", m, o.span, o.handoffs)
			if !shared {
				// No contention: each thread pays exactly the posting cost.
				for w := range end {
					if d := end[w].Sub(start[w]); d != m*post {
						t.Errorf("thread %d: %v for %d posts, want %v", w, d, m, m*post)
					}
				}
				if o.handoffs != 0 {
					t.Errorf("%d lock hand-offs with a queue pair per thread", o.handoffs)
				}
				return
			}
			// Shared: the posts are serialized, the lock is never idle,
			// and every counted hand-off puts one cache-line transfer on
			// the critical path. Both threads keep posting, so the lock
			// changes hands on every post.
			if o.handoffs != 2*m-1 {
				t.Errorf("%d hand-offs, want %d (the lock alternates)", o.handoffs, 2*m-1)
			}
			if want := 2*m*post + fabric.Duration(o.handoffs)*handoff; o.span != want {
				t.Errorf("%v for %d serialized posts with %d hand-offs, want %v", o.span, 2*m, o.handoffs, want)
			}
		})
	}
	if s, p := res[true], res[false]; s.span <= 2*p.span {
		t.Errorf("a shared queue pair took %v, a queue pair per thread %v: want more than twice as long", s.span, p.span)
	}
}

// TestModelCharge: Charge advances only the calling thread's clock, by the
// bytes over the profile's memcpy rate or by tuples times the hash cost.
func TestModelCharge(t *testing.T) {
	cases := []struct {
		profile string
		work    fabric.Work
		n       int
		want    fabric.Duration
	}{
		{"fdr-cx3", fabric.WorkCopy, 6000, fabric.Microsecond}, // 6 GB/s
		{"fdr-cx3", fabric.WorkCopy, 6 << 20, 1048576 * fabric.Nanosecond},
		{"fdr-cx3", fabric.WorkCopy, 0, 0},
		{"fdr-cx3", fabric.WorkCopy, 1, 167 * fabric.Picosecond}, // 1/6 ns, rounded
		{"edr-cx4", fabric.WorkCopy, 7000, fabric.Microsecond},   // 7 GB/s
		{"hdr-cx6", fabric.WorkCopy, 1e9, 100 * fabric.Millisecond},
		{"fdr-cx3", fabric.WorkHashTuple, 1000, 1500 * fabric.Nanosecond},
		{"fdr-cx3", fabric.WorkHashTuple, 1, 1500 * fabric.Picosecond},
	}
	for _, tc := range cases {
		c := mtCluster(t, Config{Nodes: 1, Seed: 1, Profile: mtProfile(t, tc.profile, nil)})
		err := c.Run(func(th fabric.Thread) error {
			var other fabric.Time
			th.Spawn("bystander", 1, func(o fabric.Thread) error { other = o.Now(); return nil })
			t0 := th.Now()
			th.Charge(tc.work, tc.n)
			if d := th.Now().Sub(t0); d != tc.want {
				return fmt.Errorf("%s: Charge(%d, %d) took %v, want %v", tc.profile, tc.work, tc.n, d, tc.want)
			}
			th.Sync() // let the bystander run
			if other != t0 {
				return fmt.Errorf("another thread's clock moved to %v (from %v)", other, t0)
			}
			return nil
		})
		if err != nil {
			t.Error(err)
		}
	}
}

// ---------------------------------------------------------------------------
// 5. Control-path costs.

// TestModelSetupCosts: every control-path verb costs its caller exactly
// the profile's figure in simulated time; registration and deregistration
// grow with the pages of the region.
func TestModelSetupCosts(t *testing.T) {
	odd := func(p *Profile) { // distinct values, so that a mixed-up field shows
		p.Setup = SetupProfile{RegMRUS: 3, RegMRPerPageNS: 7, DeregMRUS: 11, DeregPerPageNS: 13,
			CreateQPUS: 17, ModifyQPUS: 19, CreateCQUS: 23}
	}
	for _, tc := range []struct {
		profile string
		edit    func(*Profile)
	}{{"fdr-cx3", nil}, {"edr-cx4", nil}, {"qdr-cx3", odd}} {
		t.Run(tc.profile, func(t *testing.T) {
			p := mtProfile(t, tc.profile, tc.edit)
			s := p.Setup
			us := func(v float64) fabric.Duration { return fabric.Duration(math.Round(v * 1e6)) }
			nsd := func(v float64) fabric.Duration { return fabric.Duration(math.Round(v * 1e3)) }
			c := mtCluster(t, Config{Nodes: 1, Seed: 1, Profile: p})
			err := c.Run(func(th fabric.Thread) error {
				var errs []error
				cost := func(what string, want fabric.Duration, f func() error) {
					t0 := th.Now()
					if err := f(); err != nil {
						errs = append(errs, fmt.Errorf("%s: %w", what, err))
						return
					}
					th.Sync()
					if d := th.Now().Sub(t0); d != want {
						errs = append(errs, fmt.Errorf("%s took %v, want %v", what, d, want))
					}
				}
				dev := th.Node().Device()
				var pd fabric.PD
				var cq fabric.CQ
				cost("AllocPD", 0, func() (err error) { pd, err = dev.AllocPD(); return })
				cost("CreateCQ", us(s.CreateCQUS), func() (err error) { cq, err = dev.CreateCQ(64); return })
				acc := fabric.AccessLocalWrite | fabric.AccessRemoteWrite | fabric.AccessRemoteRead
				var mrs []fabric.MR
				for _, size := range []int{1, 4096, 4097, 8192, 255 * 4096, 64 << 20} {
					pages := (size + 4095) / 4096
					var mr fabric.MR
					cost(fmt.Sprintf("RegMR(%d bytes, %d pages)", size, pages), us(s.RegMRUS)+nsd(float64(pages)*s.RegMRPerPageNS),
						func() (err error) { mr, err = pd.RegMR(size, acc); return })
					mrs = append(mrs, mr)
				}
				// A rejected registration pins nothing: it costs the fixed
				// part only, however large the request.
				for _, size := range []int{0, -4096, int(min(p.NIC.MaxMRBytes+1, math.MaxInt))} {
					t0 := th.Now()
					if _, err := pd.RegMR(size, acc); !errors.Is(err, fabric.ErrInvalidArg) {
						errs = append(errs, fmt.Errorf("RegMR(%d): %v, want ErrInvalidArg", size, err))
					}
					if d := th.Now().Sub(t0); d != us(s.RegMRUS) {
						errs = append(errs, fmt.Errorf("rejected RegMR(%d) took %v, want %v", size, d, us(s.RegMRUS)))
					}
				}
				var qp fabric.QP
				cost("CreateQP", us(s.CreateQPUS), func() (err error) {
					qp, err = pd.CreateQP(fabric.QPInit{Type: fabric.RC, SendCQ: cq, RecvCQ: cq,
						Caps: fabric.QPCaps{MaxSendWR: 4, MaxRecvWR: 4}})
					return
				})
				if qp != nil { // connected to itself (loopback)
					cost("Modify INIT", us(s.ModifyQPUS), func() error { return qp.Modify(fabric.StateInit, fabric.QPAttr{Access: acc}) })
					cost("Modify RTR", us(s.ModifyQPUS), func() error {
						return qp.Modify(fabric.StateRTR, fabric.QPAttr{Dest: qp.Info().Address(), MaxDestRdAtomic: 1})
					})
					cost("Modify RTS", us(s.ModifyQPUS), func() error { return qp.Modify(fabric.StateRTS, fabric.QPAttr{Timeout: 14}) })
					cost("Modify ERROR", us(s.ModifyQPUS), func() error { return qp.Modify(fabric.StateError, fabric.QPAttr{}) })
					cost("Modify RESET", us(s.ModifyQPUS), func() error { return qp.Modify(fabric.StateReset, fabric.QPAttr{}) })
					cost("Destroy QP", 0, qp.Destroy)
				}
				for _, mr := range mrs {
					if mr == nil {
						continue
					}
					pages := (mr.Len() + 4095) / 4096
					cost(fmt.Sprintf("Dereg(%d pages)", pages), us(s.DeregMRUS)+nsd(float64(pages)*s.DeregPerPageNS), mr.Dereg)
				}
				return errors.Join(errs...)
			})
			if err != nil {
				t.Error(err)
			}
			// The figures docs/model.md quotes (explore bench reg_mr).
			if tc.profile == "fdr-cx3" {
				if got := s.regCost(4096); got != 21*fabric.Microsecond {
					t.Errorf("fdr-cx3: registering 4 KiB costs %v, docs/model.md says 21 us", got)
				}
				if got := s.regCost(512 << 20); got != 131092*fabric.Microsecond {
					t.Errorf("fdr-cx3: registering 512 MiB costs %v, want 131.092 ms", got)
				}
			}
		})
	}
}

// ---------------------------------------------------------------------------
// 6. Determinism with the performance model under faults.

// TestModelDeterminismUnderFaults: an all-to-all with the performance
// model on and lossy, duplicating, reordering links gives the same trace,
// statistics and result for the same seed, and a different trace for
// another seed.
func TestModelDeterminismUnderFaults(t *testing.T) {
	type run struct {
		hash  uint64
		now   fabric.Time
		stats Stats
		bw    float64
	}
	do := func(seed uint64, schedule string) run {
		c := mtCluster(t, Config{Nodes: 4, Seed: seed, SizeOnly: true, Profile: mtProfile(t, "fdr-cx3", nil)})
		for i := 0; i < 4; i++ {
			if err := c.SetFaults(i, Faults{Loss: 0.003, Duplicate: 0.003, Reorder: 0.003}); err != nil {
				t.Fatal(err)
			}
		}
		r, err := perftest.Run(c, perftest.Config{Test: "alltoall_bw", Size: 65536, Iters: 8, TxDepth: 4, Schedule: schedule})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		return run{c.TraceHash(), c.Now(), c.Stats(), r.BWAvgGbps}
	}
	for _, schedule := range []string{perftest.ScheduleSpread, perftest.ScheduleRandom} {
		a, b, other := do(5, schedule), do(5, schedule), do(6, schedule)
		t.Logf("schedule %q: %+v", schedule, a)
		if a != b {
			t.Errorf("schedule %q: same seed, different runs:\n%+v\n%+v", schedule, a, b)
		}
		if a.stats.PacketsLost == 0 || a.stats.RCRetransmits == 0 || a.stats.PacketsDuplicated == 0 || a.stats.PacketsReordered == 0 {
			t.Errorf("schedule %q: the faults were not exercised: %+v", schedule, a.stats)
		}
		if other.hash == a.hash {
			t.Errorf("schedule %q: seeds 5 and 6 gave the same trace", schedule)
		}
	}
}

// TestModelPayloadFetch: a message the NIC must fetch from host memory
// leaves one PCIe read round trip (pcie.rtt_ns) later than the same
// message sent inline, on every transport; the round trip is the
// profile's (doubling it doubles the step), an RDMA Read's data waits
// for it at the responder, and a stream of fetched messages still fills
// the link (fetches overlap).
func TestModelPayloadFetch(t *testing.T) {
	lat := func(p *Profile, conn fabric.QPType, inline int) float64 {
		c := mtCluster(t, Config{Nodes: 2, Seed: 1, SizeOnly: true, Profile: p})
		r, err := perftest.Run(c, perftest.Config{Test: "send_lat", Size: 128, Iters: 200, Conn: conn, Inline: inline})
		if err != nil {
			t.Fatal(err)
		}
		return r.TTypicalUS * 1000
	}
	for _, tc := range []struct {
		conn fabric.QPType
		rtt  float64 // ns; 0: the profile's (550)
	}{{fabric.RC, 0}, {fabric.UD, 0}, {fabric.RC, 1100}} {
		t.Run(fmt.Sprintf("%v/rtt=%v", tc.conn, tc.rtt), func(t *testing.T) {
			p := mtProfile(t, "edr-cx4", func(p *Profile) {
				if tc.rtt > 0 {
					p.PCIe.RTTNS = tc.rtt
				}
			})
			step := lat(p, tc.conn, 8) - lat(p, tc.conn, 220) // 128 bytes fetched, then inline
			if want := p.PCIe.RTTNS; math.Abs(step-want) > 30 {
				t.Errorf("fetched %0.f ns slower than inline, want about %.0f (pcie.rtt_ns)", step, want)
			}
		})
	}
	// An RDMA Read's responder fetches its data the same way: one read
	// takes a round trip longer when the round trip is twice as long.
	readUS := func(rtt float64) float64 {
		c := mtCluster(t, Config{Nodes: 2, Seed: 1, SizeOnly: true, Profile: mtProfile(t, "edr-cx4", func(p *Profile) { p.PCIe.RTTNS = rtt })})
		r, err := perftest.Run(c, perftest.Config{Test: "read_bw", Size: 64, Iters: 1})
		if err != nil {
			t.Fatal(err)
		}
		return 1 / r.MsgRateMpps
	}
	if step := 1000 * (readUS(1100) - readUS(550)); math.Abs(step-550) > 30 {
		t.Errorf("one RDMA Read: %.0f ns longer with a 1100-ns round trip than with 550, want about 550", step)
	}
	c := mtCluster(t, Config{Nodes: 2, Seed: 1, SizeOnly: true})
	r, err := perftest.Run(c, perftest.Config{Test: "write_bw", Size: 65536, Iters: 2000, Inline: 8})
	if err != nil {
		t.Fatal(err)
	}
	if r.BWAvgGbps < 98.5 {
		t.Errorf("fetched 64 KiB writes: %.2f Gb/s, want the link's 99", r.BWAvgGbps)
	}
}

// TestModelReadRequest: with pcie.read_request_bytes the NIC fetches a
// message's payload in read requests of that size and a packet leaves once
// the request holding its last byte is on the NIC. At a path MTU below the
// request a 4 KiB message's first packet waits for the whole 4 KiB instead
// of its own bytes, on a send and on an RDMA Read's responder alike; at an
// MTU of the request's size nothing changes; and a stream still fills the
// link, because the requests of later messages overlap earlier packets.
func TestModelReadRequest(t *testing.T) {
	prof := func(mtu, req int) *Profile {
		return mtProfile(t, "edr-cx4", func(p *Profile) { p.Link.MTU, p.PCIe.ReadRequestBytes = mtu, req })
	}
	run := func(p *Profile, cfg perftest.Config) *perftest.Result {
		c := mtCluster(t, Config{Nodes: 2, Seed: 1, SizeOnly: true, Profile: p})
		r, err := perftest.Run(c, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	sendNS := func(p *Profile) float64 {
		return 1000 * run(p, perftest.Config{Test: "send_lat", Size: 4096, Iters: 200}).TTypicalUS
	}
	readNS := func(p *Profile) float64 {
		return 1000 / run(p, perftest.Config{Test: "read_bw", Size: 4096, Iters: 1}).MsgRateMpps
	}
	gbps := prof(256, 0).PCIe.GBps
	want := (4096 - 256) / gbps // ns: the rest of the request, fetched before the first packet leaves
	for name, lat := range map[string]func(*Profile) float64{"send": sendNS, "read": readNS} {
		if step := lat(prof(256, 4096)) - lat(prof(256, 0)); math.Abs(step-want) > 30 {
			t.Errorf("%s of 4 KiB at MTU 256: %.0f ns slower with 4 KiB read requests than per packet, want about %.0f", name, step, want)
		}
		if a, b := lat(prof(4096, 4096)), lat(prof(4096, 0)); a != b {
			t.Errorf("%s of 4 KiB at MTU 4096: %.0f ns with 4 KiB read requests, %.0f per packet: want the same", name, a, b)
		}
	}
	stream := perftest.Config{Test: "write_bw", Size: 65536, Iters: 2000}
	if a, b := run(prof(1024, 4096), stream).BWAvgGbps, run(prof(1024, 0), stream).BWAvgGbps; a < 0.995*b || b < 97 {
		t.Errorf("64 KiB writes at MTU 1024: %.2f Gb/s with 4 KiB read requests, %.2f per packet: want both the link's rate at that MTU (97.4)", a, b)
	}
}

// TestFetchBytes: the bytes fetched before each packet leaves, by request
// size; every message's packets fetch it exactly once in all.
func TestFetchBytes(t *testing.T) {
	for _, tc := range []struct {
		length, mtu, unit int
		want              []int
	}{
		{4096, 1024, 0, []int{1024, 1024, 1024, 1024}},
		{4096, 1024, 1, []int{1024, 1024, 1024, 1024}},
		{4096, 1024, 4096, []int{4096, 0, 0, 0}},
		{5000, 1024, 4096, []int{4096, 0, 0, 0, 904}},
		{9000, 2048, 4096, []int{4096, 0, 4096, 0, 808}},
		{3000, 1024, 2048, []int{2048, 0, 952}},
		{8192, 4096, 2048, []int{4096, 4096}},
		{100, 4096, 4096, []int{100}},
	} {
		var got []int
		sum := 0
		for off := 0; off < tc.length; off += tc.mtu {
			k := fetchBytes(off, min(tc.mtu, tc.length-off), tc.length, tc.unit, false)
			got, sum = append(got, k), sum+k
		}
		if !slices.Equal(got, tc.want) || sum != tc.length {
			t.Errorf("%d bytes, MTU %d, requests of %d: fetched %v, want %v", tc.length, tc.mtu, tc.unit, got, tc.want)
		}
	}
	// Sent again from the middle of a request, a packet reads from its own
	// offset to the end of that request; the next request as before.
	for _, tc := range []struct{ off, n, length, unit, want int }{
		{1024, 1024, 4096, 4096, 3072},
		{3072, 1024, 4096, 4096, 1024},
		{4096, 1024, 9000, 4096, 4096},
		{2048, 1024, 3000, 4096, 952},
		{1024, 1024, 4096, 0, 1024},
	} {
		if got := fetchBytes(tc.off, tc.n, tc.length, tc.unit, true); got != tc.want {
			t.Errorf("sent again at %d of %d bytes, requests of %d: fetched %d, want %d", tc.off, tc.length, tc.unit, got, tc.want)
		}
	}
}

// TestModelReceiveStoreAndForward: a message of one packet crosses three
// stages one after the other (its payload's fetch over PCIe, the wire, and
// the receive pipeline's write over PCIe), so below one MTU its latency
// grows by the wire's time per byte plus twice PCIe's; halving PCIe's
// bandwidth adds a PCIe time per byte on each side. Past one MTU the
// packets pipeline and a large stream still fills the link.
func TestModelReceiveStoreAndForward(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pcieX float64 // pcie.gbps multiplier
	}{{"profile", 1}, {"half PCIe", 0.5}} {
		t.Run(tc.name, func(t *testing.T) {
			p := mtProfile(t, "qdr-cx3", func(p *Profile) { p.PCIe.GBps *= tc.pcieX })
			lat := func(size int) float64 {
				c := mtCluster(t, Config{Nodes: 2, Seed: 1, SizeOnly: true, Profile: p})
				r, err := perftest.Run(c, perftest.Config{Test: "write_lat", Size: size, Iters: 200, Inline: 1})
				if err != nil {
					t.Fatal(err)
				}
				return r.TTypicalUS * 1000
			}
			const a, b = 1024, 4096 // both one packet at MTU 4096, both fetched
			perByte := (lat(b) - lat(a)) / (b - a)
			c := mtCluster(t, Config{Nodes: 2, Seed: 1, SizeOnly: true, Profile: p})
			wire := float64(serialization(1<<20, c.net.rate)) / 1000 / (1 << 20) // ns per byte on the link
			want := wire + 2/p.PCIe.GBps
			if math.Abs(perByte-want) > 0.02 {
				t.Errorf("latency grows %.3f ns per byte below one MTU, want %.3f (wire %.3f + 2 x PCIe %.3f)", perByte, want, wire, 1/p.PCIe.GBps)
			}
		})
	}
	c := mtCluster(t, Config{Nodes: 2, Seed: 1, SizeOnly: true, Profile: mtProfile(t, "qdr-cx3", nil)})
	r, err := perftest.Run(c, perftest.Config{Test: "write_bw", Size: 1 << 20, Iters: 200})
	if err != nil {
		t.Fatal(err)
	}
	if r.BWAvgGbps < 31.5 {
		t.Errorf("1 MiB writes: %.2f Gb/s, want the link's 31.8", r.BWAvgGbps)
	}
}

// mtTree wires nodes on a fat tree of radix-port switches (two levels; a
// negative radix: three levels), ftree routing, contiguous placement.
func mtTree(t *testing.T, nodes, radix int) *Fabric {
	t.Helper()
	levels := 2
	if radix < 0 {
		radix, levels = -radix, 3
	}
	tp, err := topo.FatTree(topo.FatTreeSpec{Hosts: nodes, Radix: radix, Levels: levels})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := route.Compute(tp, route.FTree, 1)
	if err != nil {
		t.Fatal(err)
	}
	hosts := make([]int, nodes)
	for i := range hosts {
		hosts[i] = i
	}
	return &Fabric{Topology: tp, Tables: tb, Hosts: hosts, Engine: route.FTree}
}

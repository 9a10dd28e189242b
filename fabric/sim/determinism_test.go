package sim_test

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/fabrictest"
	"github.com/rdmashuffle/rdmashuffle/fabric/perftest"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// The determinism workload: every node of a 4-node cluster sends detRC
// messages over RC and detUD datagrams over UD to every other node, of
// mixed sizes, and records what it receives in the order it polls it.
const (
	detNodes   = 4
	detRC      = 60
	detUD      = 60
	detRCSlot  = 9216
	detUDMax   = 4096
	detUDSlot  = fabric.GRHBytes + detUDMax
	detUDQKey  = 0x2222
	detPerPeer = detRC + detUD
)

// delivery is one received message.
type delivery struct {
	UD       bool
	Src, Seq int
	Bytes    int
}

func (d delivery) compare(e delivery) int {
	switch {
	case d.UD != e.UD:
		if !d.UD {
			return -1
		}
		return 1
	case d.Src != e.Src:
		return d.Src - e.Src
	case d.Seq != e.Seq:
		return d.Seq - e.Seq
	}
	return d.Bytes - e.Bytes
}

func detRCSize(src, dst, seq int) int { return 1 + int(key('R', src, dst, seq)%9000) }
func detUDSize(src, dst, seq int) int { return 1 + int(key('U', src, dst, seq)%detUDMax) }

func detImm(ud bool, src, seq int) uint32 {
	v := uint32(src)<<16 | uint32(seq)
	if ud {
		v |= 1 << 31
	}
	return v
}

func detDecode(imm uint32) (ud bool, src, seq int) {
	return imm>>31 == 1, int(imm>>16) & 0x7fff, int(imm & 0xffff)
}

// udMesh is a node's UD queue pair with an address handle for every node.
type udMesh struct {
	pd       fabric.PD
	scq, rcq fabric.CQ
	mr       fabric.MR
	qp       fabric.QP
	peers    []fabric.QPInfo
	ahs      []fabric.AH
}

func setupUDMesh(th fabric.Thread, recvs, sends int) (*udMesh, error) {
	n := th.Node()
	u := &udMesh{}
	var err error
	if u.pd, err = n.Device().AllocPD(); err != nil {
		return nil, err
	}
	if u.scq, err = n.Device().CreateCQ(sends + 16); err != nil {
		return nil, err
	}
	if u.rcq, err = n.Device().CreateCQ(recvs + 16); err != nil {
		return nil, err
	}
	if u.mr, err = u.pd.RegMR(recvs*detUDSlot+sends*detUDMax, fabric.AccessLocalWrite); err != nil {
		return nil, err
	}
	u.qp, err = u.pd.CreateQP(fabric.QPInit{Type: fabric.UD, SendCQ: u.scq, RecvCQ: u.rcq,
		Caps: fabric.QPCaps{MaxSendWR: sends, MaxRecvWR: recvs}})
	if err != nil {
		return nil, err
	}
	if err := u.qp.Modify(fabric.StateInit, fabric.QPAttr{QKey: detUDQKey}); err != nil {
		return nil, err
	}
	if err := u.qp.Modify(fabric.StateRTR, fabric.QPAttr{}); err != nil {
		return nil, err
	}
	if err := u.qp.Modify(fabric.StateRTS, fabric.QPAttr{}); err != nil {
		return nil, err
	}
	b, _ := u.qp.Info().MarshalBinary()
	all, err := n.OOB().AllGather("ud-mesh", b)
	if err != nil {
		return nil, err
	}
	u.peers = make([]fabric.QPInfo, len(all))
	u.ahs = make([]fabric.AH, len(all))
	for i, a := range all {
		if err := u.peers[i].UnmarshalBinary(a); err != nil {
			return nil, err
		}
		if u.ahs[i], err = u.pd.CreateAH(u.peers[i].Address()); err != nil {
			return nil, err
		}
	}
	return u, nil
}

// detWorkload returns the main thread of every node; node i appends what
// it receives to order[i].
func detWorkload(order [][]delivery) func(th fabric.Thread) error {
	return func(th fabric.Thread) error {
		me := th.Node().ID()
		rc := make([]*fabrictest.Conn, detNodes)
		for k := 1; k < detNodes; k++ { // round k pairs every node with me^k
			c, err := fabrictest.Connect(th, me^k, fabrictest.Options{MRBytes: 2 * detRC * detRCSlot,
				CQDepth: 2 * detRC, SendWR: detRC, RecvWR: detRC, Timeout: 10, RetryCnt: 7})
			if err != nil {
				return err
			}
			rc[me^k] = c
		}
		const udRecvs = 2 * (detNodes - 1) * detUD // room for duplicates
		const udSends = (detNodes - 1) * detUD
		ud, err := setupUDMesh(th, udRecvs, udSends)
		if err != nil {
			return err
		}
		for p, c := range rc {
			if c == nil {
				continue
			}
			wrs := make([]fabric.RecvWR, detRC)
			for i := range wrs {
				wrs[i] = fabric.RecvWR{ID: uint64(i), Local: c.MR.SGE(i*detRCSlot, detRCSlot)}
			}
			if _, err := c.QP.PostRecv(wrs); err != nil {
				return fmt.Errorf("RC receives for node %d: %w", p, err)
			}
		}
		wrs := make([]fabric.RecvWR, udRecvs)
		for i := range wrs {
			wrs[i] = fabric.RecvWR{ID: uint64(i), Local: ud.mr.SGE(i*detUDSlot, detUDSlot)}
		}
		if _, err := ud.qp.PostRecv(wrs); err != nil {
			return err
		}
		if err := th.Node().OOB().Barrier("ready"); err != nil {
			return err
		}

		// Send: for each sequence number, one RC message and one datagram
		// to every other node, interleaved.
		udOff := udRecvs * detUDSlot
		for seq := 0; seq < max(detRC, detUD); seq++ {
			for d := 1; d < detNodes; d++ {
				p := (me + d) % detNodes
				if seq < detRC {
					c := rc[p]
					off := detRC*detRCSlot + seq*detRCSlot
					n := detRCSize(me, p, seq)
					fillKey(c.MR.Bytes()[off:off+n], key('R', me, p, seq))
					wr := fabric.SendWR{ID: uint64(seq), Op: fabric.OpSendImm, Imm: detImm(false, me, seq),
						Local: c.MR.SGE(off, n), Flags: fabric.Signaled}
					if _, err := c.QP.PostSend([]fabric.SendWR{wr}); err != nil {
						return err
					}
				}
				if seq < detUD {
					n := detUDSize(me, p, seq)
					fillKey(ud.mr.Bytes()[udOff:udOff+n], key('U', me, p, seq))
					wr := fabric.SendWR{ID: uint64(seq), Op: fabric.OpSendImm, Imm: detImm(true, me, seq),
						Local: ud.mr.SGE(udOff, n), Flags: fabric.Signaled,
						AH: ud.ahs[p], RemoteQPN: ud.peers[p].QPN, QKey: ud.peers[p].QKey}
					if _, err := ud.qp.PostSend([]fabric.SendWR{wr}); err != nil {
						return err
					}
					udOff += detUDMax
				}
			}
		}

		// Poll every CQ until every send completed and every message
		// arrived (datagrams may arrive twice with duplication on).
		var cqs []fabric.Waitable
		for _, c := range rc {
			if c != nil {
				cqs = append(cqs, c.RCQ, c.SCQ)
			}
		}
		cqs = append(cqs, ud.rcq, ud.scq)
		rcNext := make([]int, detNodes)
		udSeen := map[[2]int]bool{}
		sendsDone, rcGot := 0, 0
		const wantSends = (detNodes - 1) * detPerPeer
		const wantRC = (detNodes - 1) * detRC
		const wantUD = (detNodes - 1) * detUD
		deadline := th.Now().Add(200 * fabric.Millisecond)
		buf := make([]fabric.WC, 16)
		for sendsDone < wantSends || rcGot < wantRC || len(udSeen) < wantUD {
			found := false
			for p, c := range rc {
				if c == nil {
					continue
				}
				k, err := c.SCQ.Poll(buf)
				if err != nil {
					return err
				}
				for _, wc := range buf[:k] {
					if wc.Status != fabric.StatusSuccess {
						return &fabric.CompletionError{WC: wc, Node: me}
					}
				}
				sendsDone += k
				found = found || k > 0
				if k, err = c.RCQ.Poll(buf); err != nil {
					return err
				}
				found = found || k > 0
				for _, wc := range buf[:k] {
					isUD, src, seq := detDecode(wc.Imm)
					if wc.Status != fabric.StatusSuccess || !wc.HasImm || isUD || src != p {
						return fmt.Errorf("RC receive from node %d: unexpected %+v", p, wc)
					}
					if seq != rcNext[p] || wc.ID != uint64(seq) {
						return fmt.Errorf("RC from node %d: message %d in receive %d, want message %d (lost, duplicated or reordered)",
							p, seq, wc.ID, rcNext[p])
					}
					rcNext[p]++
					rcGot++
					n := detRCSize(p, me, seq)
					if wc.Bytes != n {
						return fmt.Errorf("RC message %d from node %d: %d bytes, want %d", seq, p, wc.Bytes, n)
					}
					if err := checkBytes(fmt.Sprintf("RC message %d from node %d", seq, p),
						c.MR.Bytes()[seq*detRCSlot:seq*detRCSlot+n], key('R', p, me, seq)); err != nil {
						return err
					}
					order[me] = append(order[me], delivery{Src: p, Seq: seq, Bytes: n})
				}
			}
			k, err := ud.scq.Poll(buf)
			if err != nil {
				return err
			}
			for _, wc := range buf[:k] {
				if wc.Status != fabric.StatusSuccess {
					return &fabric.CompletionError{WC: wc, Node: me}
				}
			}
			sendsDone += k
			found = found || k > 0
			if k, err = ud.rcq.Poll(buf); err != nil {
				return err
			}
			found = found || k > 0
			for _, wc := range buf[:k] {
				isUD, src, seq := detDecode(wc.Imm)
				if wc.Status != fabric.StatusSuccess || !wc.HasImm || !isUD || src >= detNodes || src == me || seq >= detUD {
					return fmt.Errorf("UD receive: unexpected %+v", wc)
				}
				if wc.SrcQP != ud.peers[src].QPN {
					return fmt.Errorf("UD datagram from node %d reports source QPN %#x, want %#x", src, wc.SrcQP, ud.peers[src].QPN)
				}
				n := detUDSize(src, me, seq)
				if wc.Bytes != fabric.GRHBytes+n {
					return fmt.Errorf("UD datagram %d from node %d: %d bytes, want %d", seq, src, wc.Bytes, fabric.GRHBytes+n)
				}
				off := int(wc.ID)*detUDSlot + fabric.GRHBytes
				if err := checkBytes(fmt.Sprintf("UD datagram %d from node %d", seq, src),
					ud.mr.Bytes()[off:off+n], key('U', src, me, seq)); err != nil {
					return err
				}
				udSeen[[2]int{src, seq}] = true
				order[me] = append(order[me], delivery{UD: true, Src: src, Seq: seq, Bytes: n})
			}
			if found {
				continue
			}
			if th.Now() >= deadline {
				return fmt.Errorf("node %d: after 200ms: %d/%d sends completed, %d/%d RC and %d/%d UD messages received",
					me, sendsDone, wantSends, rcGot, wantRC, len(udSeen), wantUD)
			}
			th.Wait(deadline, cqs...)
		}
		return th.Node().OOB().Barrier("done")
	}
}

type detResult struct {
	hash  uint64
	stats sim.Stats
	order [][]delivery
}

func runDeterminism(t *testing.T, seed uint64, f sim.Faults) detResult {
	t.Helper()
	c := newCluster(t, sim.Config{Nodes: detNodes, Seed: seed})
	for i := 0; i < detNodes; i++ {
		if err := c.SetFaults(i, f); err != nil {
			t.Fatal(err)
		}
	}
	order := make([][]delivery, detNodes)
	if err := c.Run(detWorkload(order)); err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	return detResult{c.TraceHash(), c.Stats(), order}
}

func udOnly(ds []delivery) []delivery {
	var out []delivery
	for _, d := range ds {
		if d.UD {
			out = append(out, d)
		}
	}
	return out
}

// TestDeterminismSameSeed runs the workload twice per seed, with
// reordering and duplication on, and requires identical runs.
func TestDeterminismSameSeed(t *testing.T) {
	faults := sim.Faults{Reorder: 0.2, Duplicate: 0.05}
	for _, seed := range []uint64{1, 2, 77} {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			a := runDeterminism(t, seed, faults)
			b := runDeterminism(t, seed, faults)
			if a.hash != b.hash {
				t.Errorf("trace hash differs between two runs with the same seed: %#x vs %#x", a.hash, b.hash)
			}
			if a.stats != b.stats {
				t.Errorf("stats differ between two runs with the same seed:\n%+v\n%+v", a.stats, b.stats)
			}
			for i := range a.order {
				if !reflect.DeepEqual(a.order[i], b.order[i]) {
					t.Errorf("node %d received in a different order in two runs with the same seed", i)
				}
			}
			// The faults must actually have been exercised.
			s := a.stats
			if s.PacketsReordered == 0 || s.PacketsDuplicated == 0 || s.RCRetransmits == 0 {
				t.Errorf("faults not exercised: %+v", s)
			}
			if s.PacketsLost != 0 || s.UDDropsNoRecv != 0 {
				t.Errorf("messages lost without loss enabled: %+v", s)
			}
			dups := 0
			for _, o := range a.order {
				dups += len(o) - (detNodes-1)*detPerPeer
			}
			if dups == 0 {
				t.Errorf("no datagram was delivered twice although %d packets were duplicated", s.PacketsDuplicated)
			}
		})
	}
}

// TestDeterminismSeedChangesOrder: with reordering on, another seed gives
// another UD arrival order but the same set of messages, each exactly once.
func TestDeterminismSeedChangesOrder(t *testing.T) {
	faults := sim.Faults{Reorder: 0.2}
	want := make([][]delivery, detNodes)
	for dst := range want {
		for src := 0; src < detNodes; src++ {
			if src == dst {
				continue
			}
			for seq := 0; seq < detRC; seq++ {
				want[dst] = append(want[dst], delivery{Src: src, Seq: seq, Bytes: detRCSize(src, dst, seq)})
			}
			for seq := 0; seq < detUD; seq++ {
				want[dst] = append(want[dst], delivery{UD: true, Src: src, Seq: seq, Bytes: detUDSize(src, dst, seq)})
			}
		}
		slices.SortFunc(want[dst], delivery.compare)
	}
	for _, seeds := range [][2]uint64{{1, 2}, {3, 1000}} {
		t.Run(fmt.Sprintf("seed=%d_vs_seed=%d", seeds[0], seeds[1]), func(t *testing.T) {
			a := runDeterminism(t, seeds[0], faults)
			b := runDeterminism(t, seeds[1], faults)
			if a.hash == b.hash {
				t.Errorf("different seeds gave the same trace hash %#x", a.hash)
			}
			differ := false
			for i := range a.order {
				if !reflect.DeepEqual(udOnly(a.order[i]), udOnly(b.order[i])) {
					differ = true
				}
				for _, r := range []detResult{a, b} {
					got := slices.Clone(r.order[i])
					slices.SortFunc(got, delivery.compare)
					if !reflect.DeepEqual(got, want[i]) {
						t.Errorf("node %d did not receive every message exactly once (%d deliveries, want %d)",
							i, len(got), len(want[i]))
					}
				}
			}
			if !differ {
				t.Errorf("seeds %d and %d gave the same UD delivery order on every node", seeds[0], seeds[1])
			}
		})
	}
}

// TestProgressChangesNothing: a progress callback is called as events
// accumulate, with growing counts, and leaves the trace as it was.
func TestProgressChangesNothing(t *testing.T) {
	traceOf := func(progress func(fabric.Time, uint64)) uint64 {
		c, err := sim.New(sim.Config{Nodes: 4, Seed: 9, Progress: progress})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := perftest.Run(c, perftest.Config{Test: "alltoall_bw", Size: 4096, Iters: 4000}); err != nil { // well over progressEvery (2^18) events
			t.Fatal(err)
		}
		return c.TraceHash()
	}
	var calls int
	var last uint64
	with := traceOf(func(_ fabric.Time, events uint64) {
		if events <= last {
			t.Errorf("events went from %d to %d", last, events)
		}
		calls, last = calls+1, events
	})
	if calls == 0 {
		t.Fatal("Progress was never called")
	}
	if without := traceOf(nil); with != without {
		t.Errorf("trace %x with a progress callback, %x without", with, without)
	}
}

// TestDuplicateAndReorderTogether: a packet that link faults both
// duplicate and reorder arrives twice, late (a late duplicate, the
// hardest case for recovery): with every packet duplicated and reordered
// the two counts agree, RC still delivers each message once and in order
// (the workload checks), and UD datagrams arrive twice.
func TestDuplicateAndReorderTogether(t *testing.T) {
	r := runDeterminism(t, 5, sim.Faults{Reorder: 1, Duplicate: 1})
	s := r.stats
	if s.PacketsReordered == 0 || s.PacketsDuplicated != s.PacketsReordered {
		t.Fatalf("with every packet duplicated and reordered: %d reordered, %d duplicated", s.PacketsReordered, s.PacketsDuplicated)
	}
	twice := 0
	for i, o := range r.order {
		seen := map[delivery]int{}
		for _, d := range o {
			if d.UD {
				seen[d]++
			}
		}
		for d, k := range seen {
			if k > 2 {
				t.Errorf("node %d received UD datagram %d from node %d %d times", i, d.Seq, d.Src, k)
			}
			if k == 2 {
				twice++
			}
		}
	}
	if twice == 0 {
		t.Errorf("no UD datagram arrived twice although %d packets were duplicated", s.PacketsDuplicated)
	}
}

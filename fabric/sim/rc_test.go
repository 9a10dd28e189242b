package sim_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/fabrictest"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// rcOp is one request of an RC stream from node 0 to node 1.
type rcOp struct {
	op   fabric.Opcode // OpSendImm, OpWriteImm, OpWrite or OpRead
	size int
}

const rcSlot = 12288

// rcMix returns n requests of mixed kinds and sizes (most of them several
// packets long at the 4096-byte MTU), chosen by seed.
func rcMix(n int, seed uint64) []rcOp {
	r := rand.New(rand.NewPCG(seed, 99))
	ops := make([]rcOp, n)
	kinds := []fabric.Opcode{fabric.OpSendImm, fabric.OpSendImm, fabric.OpWriteImm, fabric.OpWrite, fabric.OpRead}
	for i := range ops {
		ops[i] = rcOp{op: kinds[r.IntN(len(kinds))], size: 1 + r.IntN(rcSlot-300)}
		if r.IntN(25) == 0 {
			ops[i].size = 0
		}
	}
	return ops
}

// consumesRecv reports whether op takes a receive at the target.
func consumesRecv(op fabric.Opcode) bool { return op == fabric.OpSendImm || op == fabric.OpWriteImm }

func rcRecvs(ops []rcOp) int {
	n := 0
	for _, o := range ops {
		if consumesRecv(o.op) {
			n++
		}
	}
	return n
}

func rcOptions(ops []rcOp) fabrictest.Options {
	return fabrictest.Options{MRBytes: (len(ops) + rcRecvs(ops)) * rcSlot, CQDepth: 1024, SendWR: 64,
		RecvWR: max(rcRecvs(ops), 1), Timeout: 8, RetryCnt: 7}
}

// rcStream runs ops from node 0 to node 1 over the connection c and checks
// that every request completed once, in order, with the right bytes on
// both sides. Memory layout, the same size on both nodes: receive buffer
// k at k*rcSlot, then the target area of request i (written by a write,
// read by a read) at (recvs+i)*rcSlot on node 1 and the source (or read
// destination) of request i at i*rcSlot on node 0.
func rcStream(th fabric.Thread, c *fabrictest.Conn, ops []rcOp, round int) error {
	return rcStreamAs(th, c, ops, round, th.Node().ID() == 0)
}

// rcStreamAs is rcStream with the sender chosen by the caller: several
// pairs of nodes may run streams at once (every node takes part in the
// barriers).
func rcStreamAs(th fabric.Thread, c *fabrictest.Conn, ops []rcOp, round int, sender bool) error {
	oob := th.Node().OOB()
	recvs := rcRecvs(ops)
	area := func(i int) int { return (recvs + i) * rcSlot }
	dkey := func(i int) uint64 { return key('d', round, i) } // data sent by request i
	rkey := func(i int) uint64 { return key('r', round, i) } // data read by request i

	if sender {
		if err := oob.Barrier("ready"); err != nil {
			return err
		}
		for i, o := range ops {
			if o.op != fabric.OpRead {
				fillKey(c.MR.Bytes()[i*rcSlot:i*rcSlot+o.size], dkey(i))
			}
		}
		next, done := 0, 0
		deadline := th.Now().Add(time500ms)
		buf := make([]fabric.WC, 16)
		for done < len(ops) {
			var wrs []fabric.SendWR
			for ; next < len(ops) && next-done < 64; next++ {
				o := ops[next]
				wrs = append(wrs, fabric.SendWR{ID: uint64(next), Op: o.op, Local: c.MR.SGE(next*rcSlot, o.size),
					Flags: fabric.Signaled, Imm: uint32(next), RemoteAddr: c.Peer.Addr + uint64(area(next)), RKey: c.Peer.RKey})
			}
			if len(wrs) > 0 {
				if _, err := c.QP.PostSend(wrs); err != nil {
					return err
				}
			}
			n, err := c.SCQ.Poll(buf)
			if err != nil {
				return err
			}
			for _, wc := range buf[:n] {
				i := done
				o := ops[i]
				if wc.ID != uint64(i) || wc.Status != fabric.StatusSuccess || wc.Op != o.op || wc.Bytes != o.size {
					return fmt.Errorf("request %d (%v, %d bytes): completion %v", i, o.op, o.size, wc)
				}
				if o.op == fabric.OpRead {
					if err := checkBytes(fmt.Sprintf("read %d", i), c.MR.Bytes()[i*rcSlot:i*rcSlot+o.size], rkey(i)); err != nil {
						return err
					}
				}
				done++
			}
			if n == 0 && next-done >= 64 || n == 0 && next == len(ops) {
				if th.Now() >= deadline {
					return fmt.Errorf("sender: %d of %d requests completed after 500ms", done, len(ops))
				}
				th.Wait(deadline, c.SCQ)
			}
		}
		return oob.Barrier("done")
	}

	// Node 1: the target.
	for i, o := range ops {
		if o.op == fabric.OpRead {
			fillKey(c.MR.Bytes()[area(i):area(i)+o.size], rkey(i))
		}
	}
	var want []int // request behind each receive, in order
	for i, o := range ops {
		if consumesRecv(o.op) {
			want = append(want, i)
		}
	}
	if recvs > 0 {
		wrs := make([]fabric.RecvWR, recvs)
		for k := range wrs {
			wrs[k] = fabric.RecvWR{ID: uint64(k), Local: c.MR.SGE(k*rcSlot, rcSlot)}
		}
		if _, err := c.QP.PostRecv(wrs); err != nil {
			return err
		}
	}
	if err := oob.Barrier("ready"); err != nil {
		return err
	}
	wcs, err := fabrictest.Await(th, c.RCQ, recvs, time500ms)
	if err != nil {
		return fmt.Errorf("receiver: %w", err)
	}
	for k, wc := range wcs {
		i := want[k]
		o := ops[i]
		op := fabric.OpRecv
		at := k * rcSlot
		if o.op == fabric.OpWriteImm {
			op, at = fabric.OpRecvWriteImm, area(i)
		}
		if wc.ID != uint64(k) || wc.Status != fabric.StatusSuccess || wc.Op != op || !wc.HasImm || wc.Imm != uint32(i) || wc.Bytes != o.size {
			return fmt.Errorf("receive %d: %+v, want request %d (%v, %d bytes): lost, duplicated or out of order", k, wc, i, o.op, o.size)
		}
		if err := checkBytes(fmt.Sprintf("request %d (%v)", i, o.op), c.MR.Bytes()[at:at+o.size], dkey(i)); err != nil {
			return err
		}
	}
	if err := oob.Barrier("done"); err != nil {
		return err
	}
	for i, o := range ops {
		if o.op == fabric.OpWrite {
			if err := checkBytes(fmt.Sprintf("write %d", i), c.MR.Bytes()[area(i):area(i)+o.size], dkey(i)); err != nil {
				return err
			}
		}
	}
	// Nothing may be delivered twice, not even late.
	if err := fabrictest.Quiet(th, c.RCQ, fabric.Millisecond); err != nil {
		return fmt.Errorf("receiver, after the stream: %w", err)
	}
	return nil
}

const time500ms = 500 * fabric.Millisecond

func rcMain(ops []rcOp) func(th fabric.Thread) error {
	return func(th fabric.Thread) error {
		c, err := fabrictest.Connect(th, 1-th.Node().ID(), rcOptions(ops))
		if err != nil {
			return err
		}
		return rcStream(th, c, ops, 0)
	}
}

// TestRCReliableUnderFaults: loss, duplication and reordering on both links;
// every send, write and read of a long stream is delivered exactly once, in
// order, with the right bytes.
func TestRCReliableUnderFaults(t *testing.T) {
	cases := []struct {
		name   string
		faults sim.Faults
		mtu    int // 0: the profile's; below its 4 KiB read requests, go-back-N resends from inside one
	}{
		{"loss1%", sim.Faults{Loss: 0.01}, 0},
		{"loss5%", sim.Faults{Loss: 0.05}, 0},
		{"loss5%/mtu1024", sim.Faults{Loss: 0.05}, 1024},
		{"loss2%+dup+reorder", sim.Faults{Loss: 0.02, Duplicate: 0.02, Reorder: 0.05}, 0},
		{"dup+reorder", sim.Faults{Duplicate: 0.05, Reorder: 0.1}, 0},
		{"heavy", sim.Faults{Loss: 0.1, Duplicate: 0.1, Reorder: 0.3, ReorderDelay: 20 * fabric.Microsecond}, 0},
	}
	for _, tc := range cases {
		for _, seed := range []uint64{1, 2, 3} {
			t.Run(fmt.Sprintf("%s/seed=%d", tc.name, seed), func(t *testing.T) {
				cfg := sim.Config{Nodes: 2, Seed: seed}
				if tc.mtu > 0 {
					cfg.Profile = sim.DefaultProfile()
					cfg.Profile.Link.MTU = tc.mtu
				}
				c := newCluster(t, cfg)
				for i := 0; i < 2; i++ {
					if err := c.SetFaults(i, tc.faults); err != nil {
						t.Fatal(err)
					}
				}
				if err := c.Run(rcMain(rcMix(200, seed))); err != nil {
					t.Fatal(err)
				}
				st := c.Stats()
				if st.RCRetransmits == 0 {
					t.Errorf("no retransmission: %+v", st)
				}
				if (tc.faults.Loss > 0) != (st.PacketsLost > 0) {
					t.Errorf("loss %v, but stats %+v", tc.faults.Loss, st)
				}
			})
		}
	}
}

// TestRCLinkDown: every packet to and from node 1 is lost. The request
// fails with retry exceeded after RetryCnt retransmissions, the queue pair
// goes to ERROR and everything after it is flushed.
func TestRCLinkDown(t *testing.T) {
	const timeout = 4 // 4.096us * 2^4 = 65.5us
	for _, retry := range []uint8{0, 1, 3, 7} {
		for _, queued := range []int{1, 3} {
			t.Run(fmt.Sprintf("retry=%d/queued=%d", retry, queued), func(t *testing.T) {
				c := newCluster(t, sim.Config{Nodes: 2, Seed: 1})
				if err := c.SetFaults(1, sim.Faults{Loss: 1}); err != nil {
					t.Fatal(err)
				}
				var rexmit int64
				err := c.Run(func(th fabric.Thread) error {
					conn, err := fabrictest.Connect(th, 1-th.Node().ID(), fabrictest.Options{Timeout: timeout, RetryCnt: retry})
					if err != nil {
						return err
					}
					if th.Node().ID() == 1 {
						return th.Node().OOB().Barrier("done")
					}
					wrs := make([]fabric.SendWR, queued)
					for i := range wrs {
						wrs[i] = fabric.SendWR{ID: uint64(i), Op: fabric.OpSend, Local: conn.MR.SGE(0, 100), Flags: fabric.Signaled}
					}
					t0 := th.Now()
					if _, err := conn.QP.PostSend(wrs); err != nil {
						return err
					}
					wc, err := awaitOne(th, conn.SCQ, fabric.StatusRetryExceeded)
					if err != nil {
						return err
					}
					elapsed := th.Now().Sub(t0)
					rexmit = c.Stats().RCRetransmits
					tmo := fabric.AckTimeout(timeout)
					if lo, hi := tmo*fabric.Duration(retry+1), tmo*fabric.Duration(retry+1)+5*fabric.Microsecond; elapsed < lo || elapsed > hi {
						return fmt.Errorf("retry exceeded after %v, want %d timeouts of %v (%v..%v)", elapsed, retry+1, tmo, lo, hi)
					}
					if wc.ID != 0 || wc.Op != fabric.OpSend {
						return fmt.Errorf("first completion %v, want request 0", wc)
					}
					if st := conn.QP.State(); st != fabric.StateError {
						return fmt.Errorf("QP in %v after retry exceeded, want ERROR", st)
					}
					for i := 1; i < queued; i++ {
						wc, err := awaitOne(th, conn.SCQ, fabric.StatusFlushed)
						if err != nil || wc.ID != uint64(i) {
							return fmt.Errorf("queued request %d: %v, %v; want flushed", i, wc, err)
						}
					}
					// Requests posted later are flushed at once.
					later := []fabric.SendWR{
						{ID: 10, Op: fabric.OpSend, Local: conn.MR.SGE(0, 8)},
						{ID: 11, Op: fabric.OpRead, Local: conn.MR.SGE(0, 8), RemoteAddr: conn.Peer.Addr, RKey: conn.Peer.RKey},
						{ID: 12, Op: fabric.OpWrite, Local: conn.MR.SGE(0, 8), RemoteAddr: conn.Peer.Addr, RKey: conn.Peer.RKey, Flags: fabric.Signaled},
					}
					if _, err := conn.QP.PostSend(later); err != nil {
						return err
					}
					if _, err := conn.QP.PostRecv([]fabric.RecvWR{{ID: 20, Local: conn.MR.SGE(0, 64)}}); err != nil {
						return err
					}
					t1 := th.Now()
					wcs, err := fabrictest.Await(th, conn.SCQ, 3, fabric.Millisecond)
					if err != nil {
						return err
					}
					for i, wc := range wcs {
						if err := fabrictest.Expect(wc, uint64(10+i), fabric.StatusFlushed, later[i].Op); err != nil {
							return err
						}
					}
					rwc, err := awaitOne(th, conn.RCQ, fabric.StatusFlushed)
					if err != nil || rwc.ID != 20 {
						return fmt.Errorf("receive posted in ERROR: %v, %v; want flushed", rwc, err)
					}
					if d := th.Now().Sub(t1); d > fabric.Microsecond {
						return fmt.Errorf("requests posted in ERROR took %v to flush", d)
					}
					if err := fabrictest.Quiet(th, conn.SCQ, fabric.Millisecond); err != nil {
						return err
					}
					return th.Node().OOB().Barrier("done")
				})
				if err != nil {
					t.Fatal(err)
				}
				// One go-back-N rewind per timeout but the last (each
				// resends every queued request).
				if want := int64(retry); rexmit != want {
					t.Errorf("%d retransmissions, want %d", rexmit, want)
				}
			})
		}
	}
}

// TestRCTargetedDrop loses (or duplicates) exactly the chosen packets of a
// short stream; the transport recovers each time.
func TestRCTargetedDrop(t *testing.T) {
	ops := []rcOp{
		{fabric.OpSendImm, 10000}, // SEND packets 1-3
		{fabric.OpSendImm, 10000}, // 4-6
		{fabric.OpSendImm, 10000}, // 7-9
		{fabric.OpWrite, 10000},   // WRITE packets 1-3
		{fabric.OpRead, 10000},    // READ_REQ 1, READ_RESP 1-3
		{fabric.OpWriteImm, 5000}, // WRITE 4-5
		{fabric.OpSendImm, 10000}, // SEND 10-12
	}
	type hit struct {
		op string
		n  int // 1-based count of packets of that opcode, retransmissions included
	}
	cases := []struct {
		name    string
		hits    []hit
		verdict sim.Verdict
	}{
		// A lost ACK is covered by the next (cumulative) one.
		{"first-ACK", []hit{{"ACK", 1}}, sim.Drop},
		{"every-early-ACK", []hit{{"ACK", 1}, {"ACK", 2}, {"ACK", 3}}, sim.Drop},
		// The last ACK is not: the requester times out and resends.
		{"last-ACK", []hit{{"ACK", -1}}, sim.Drop}, // -1: the last one of a clean run
		{"middle-SEND-packet", []hit{{"SEND", 2}}, sim.Drop},
		{"3rd-SEND-packet", []hit{{"SEND", 3}}, sim.Drop},
		{"first-packet-of-2nd-SEND", []hit{{"SEND", 4}}, sim.Drop},
		{"last-SEND-packet(tail)", []hit{{"SEND", 12}}, sim.Drop},
		{"SEND-packet-and-its-NAK", []hit{{"SEND", 2}, {"NAK", 1}}, sim.Drop},
		{"first-WRITE-packet", []hit{{"WRITE", 1}}, sim.Drop},
		{"last-WRITE-packet-with-imm", []hit{{"WRITE", 5}}, sim.Drop},
		{"READ_REQ", []hit{{"READ_REQ", 1}}, sim.Drop},
		{"first-READ_RESP", []hit{{"READ_RESP", 1}}, sim.Drop},
		{"middle-READ_RESP", []hit{{"READ_RESP", 2}}, sim.Drop},
		{"last-READ_RESP", []hit{{"READ_RESP", 3}}, sim.Drop},
		{"READ_RESP-twice", []hit{{"READ_RESP", 2}, {"READ_RESP", 4}}, sim.Drop},
		{"dup-SEND", []hit{{"SEND", 2}}, sim.Duplicate},
		{"dup-last-SEND", []hit{{"SEND", 12}}, sim.Duplicate},
		{"dup-WRITE-imm", []hit{{"WRITE", 5}}, sim.Duplicate},
		{"dup-READ_REQ", []hit{{"READ_REQ", 1}}, sim.Duplicate},
		{"dup-READ_RESP", []hit{{"READ_RESP", 2}}, sim.Duplicate},
		{"dup-ACK", []hit{{"ACK", 1}}, sim.Duplicate},
	}
	// How many ACKs a clean run produces depends on timing (ACKs coalesce);
	// count them once so "the last ACK" means the last one.
	clean := map[string]int{}
	{
		c := newCluster(t, sim.Config{Nodes: 2, Seed: 1})
		c.SetFilter(func(p sim.PacketInfo) sim.Verdict {
			if p.Type == fabric.RC {
				clean[p.Op]++
			}
			return sim.Pass
		})
		if err := c.Run(rcMain(ops)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range cases {
		for j, h := range cases[i].hits {
			if h.n < 0 {
				cases[i].hits[j].n = clean[h.op] + 1 + h.n
			}
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, sim.Config{Nodes: 2, Seed: 1})
			seen := map[string]int{}
			var matched []sim.PacketInfo
			c.SetFilter(func(p sim.PacketInfo) sim.Verdict {
				if p.Type != fabric.RC {
					return sim.Pass
				}
				seen[p.Op]++
				for _, h := range tc.hits {
					if h.op == p.Op && h.n == seen[p.Op] {
						matched = append(matched, p)
						return tc.verdict
					}
				}
				return sim.Pass
			})
			if err := c.Run(rcMain(ops)); err != nil {
				t.Fatal(err)
			}
			if len(matched) != len(tc.hits) {
				t.Fatalf("the filter matched %d packets, want %d (seen: %v)", len(matched), len(tc.hits), seen)
			}
			st := c.Stats()
			if tc.verdict == sim.Drop {
				if st.PacketsLost != int64(len(tc.hits)) {
					t.Errorf("stats %+v: want %d lost", st, len(tc.hits))
				}
				if cumulative := tc.hits[len(tc.hits)-1].op == "ACK" && tc.name != "last-ACK"; (st.RCRetransmits > 0) == cumulative {
					t.Errorf("stats %+v: retransmissions expected: %v", st, !cumulative)
				}
			} else if st.PacketsDuplicated != int64(len(tc.hits)) || st.PacketsLost != 0 {
				t.Errorf("stats %+v: want %d duplicated, none lost", st, len(tc.hits))
			}
			t.Logf("matched %v; seen %v; %+v", matched, seen, st)
		})
	}
}

// TestRCPSNWrap reconnects one queue pair many times with first PSNs just
// below the 24-bit wrap and runs a lossy, reordering stream across it each
// time, so that go-back-N, duplicate detection and read responses all
// straddle the wrap.
func TestRCPSNWrap(t *testing.T) {
	const rounds = 24
	for _, seed := range []uint64{1, 2} {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			c := newCluster(t, sim.Config{Nodes: 2, Seed: seed})
			for i := 0; i < 2; i++ {
				if err := c.SetFaults(i, sim.Faults{Loss: 0.03, Reorder: 0.05, Duplicate: 0.02}); err != nil {
					t.Fatal(err)
				}
			}
			ops := rcMix(12, seed)
			err := c.Run(func(th fabric.Thread) error {
				conn, err := fabrictest.Connect(th, 1-th.Node().ID(), rcOptions(ops))
				if err != nil {
					return err
				}
				for r := 0; r < rounds; r++ {
					psn := fabric.MaxPSN.Add(-r * 5) // 0xffffff, 0xfffffa, ...
					if err := reconnect(conn, psn, rcOptions(ops)); err != nil {
						return err
					}
					if err := th.Node().OOB().Barrier("connected"); err != nil {
						return err
					}
					if err := rcStream(th, conn, ops, r); err != nil {
						return fmt.Errorf("round %d (first PSN %#x): %w", r, psn, err)
					}
					if err := th.Node().OOB().Barrier("round-done"); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if st := c.Stats(); st.RCRetransmits == 0 || st.PacketsLost == 0 {
				t.Errorf("faults not exercised: %+v", st)
			}
		})
	}
}

// reconnect takes a connected queue pair through RESET and back to RTS,
// with psn as the first PSN in both directions.
func reconnect(c *fabrictest.Conn, psn fabric.PSN, o fabrictest.Options) error {
	qp := c.QP
	if err := qp.Modify(fabric.StateReset, fabric.QPAttr{}); err != nil {
		return err
	}
	if err := qp.Modify(fabric.StateInit, fabric.QPAttr{Access: fabric.AccessLocalWrite | fabric.AccessRemoteWrite | fabric.AccessRemoteRead}); err != nil {
		return err
	}
	if err := qp.Modify(fabric.StateRTR, fabric.QPAttr{Dest: c.Peer.Address(), RemotePSN: psn, MaxDestRdAtomic: 16}); err != nil {
		return err
	}
	return qp.Modify(fabric.StateRTS, fabric.QPAttr{SendPSN: psn, Timeout: o.Timeout, RetryCnt: o.RetryCnt, MaxRdAtomic: 16})
}

// TestRCManualHold drives an RC connection from the test goroutine: the
// packet with PSN 0xffffff (the last before the wrap) is held at the
// switch, the responder NAKs the gap, the requester resends, and the held
// original, released long after, is recognized as a duplicate.
func TestRCManualHold(t *testing.T) {
	c := newCluster(t, sim.Config{Nodes: 2, Seed: 1})
	a := newEndpoint(t, c.Node(0), fabric.RC, 64<<10)
	b := newEndpoint(t, c.Node(1), fabric.RC, 64<<10)
	connectPair(t, a, b, 0xfffffe, 0x10, 8, 7)
	held := 0
	c.SetFilter(func(p sim.PacketInfo) sim.Verdict {
		if p.Op == "SEND" && p.PSN == 0xffffff && held == 0 {
			held++
			return sim.Hold
		}
		return sim.Pass
	})
	const n, size = 2, 10000 // 3 packets each: PSNs fffffe ffffff 0, then 1 2 3
	var recvs []fabric.RecvWR
	var sends []fabric.SendWR
	for i := 0; i < n; i++ {
		recvs = append(recvs, fabric.RecvWR{ID: uint64(i), Local: b.mr.SGE(i*16384, 16384)})
		fillKey(a.mr.Bytes()[i*16384:i*16384+size], key('h', i))
		sends = append(sends, fabric.SendWR{ID: uint64(i), Op: fabric.OpSend, Local: a.mr.SGE(i*16384, size), Flags: fabric.Signaled})
	}
	if _, err := b.qp.PostRecv(recvs); err != nil {
		t.Fatal(err)
	}
	if _, err := a.qp.PostSend(sends); err != nil {
		t.Fatal(err)
	}
	c.Advance(50 * fabric.Microsecond)
	if h := c.Held(); len(h) != 1 || h[0].PSN != 0xffffff || h[0].First || h[0].Last {
		t.Fatalf("held %+v, want the middle packet of the first send", h)
	}
	check := func(want int) {
		t.Helper()
		wcs, err := drain(b.rcq)
		if err != nil {
			t.Fatal(err)
		}
		if len(wcs) != want {
			t.Fatalf("%d receive completions, want %d: %v", len(wcs), want, wcs)
		}
		for i, wc := range wcs {
			if wc.ID != uint64(i) || wc.Status != fabric.StatusSuccess || wc.Bytes != size {
				t.Fatalf("receive %d: %v", i, wc)
			}
			if err := checkBytes(fmt.Sprintf("send %d", i), b.mr.Bytes()[i*16384:i*16384+size], key('h', i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	check(n) // recovered by the NAK and the retransmission alone
	if wcs, err := drain(a.scq); err != nil || len(wcs) != n {
		t.Fatalf("sender: %v, %v", wcs, err)
	}
	st := c.Stats()
	if st.RCRetransmits != 1 {
		t.Errorf("%d go-back-N rewinds, want 1 (one NAK)", st.RCRetransmits)
	}
	if err := c.Release(c.Held()[0].ID); err != nil {
		t.Fatal(err)
	}
	c.Advance(50 * fabric.Microsecond)
	check(0) // the stale original changed nothing
	if a.qp.State() != fabric.StateRTS || b.qp.State() != fabric.StateRTS {
		t.Errorf("states %v, %v after a duplicate; want RTS", a.qp.State(), b.qp.State())
	}
	if s := c.Stats(); s.RCRetransmits != st.RCRetransmits {
		t.Errorf("the duplicate caused %d more rewinds", s.RCRetransmits-st.RCRetransmits)
	}
}

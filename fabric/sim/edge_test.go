package sim_test

// Edge cases of the transports and the engine: address wrap-around, UC
// receive rings and drops, RNR and ACK timers across resets, bad buffers
// and keys, zero-length operations, odd arguments and dead objects. Every
// test but TestRNRWaitOutlastsAckTimeout (a guard) failed before its fix.
// Most drive verbs from the test goroutine and step time with Advance, so
// that every event is placed exactly.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// rvEndpoint builds an endpoint like newEndpoint but with chosen queue
// depths.
func rvEndpoint(t *testing.T, n fabric.Node, typ fabric.QPType, sendWR, recvWR int) *endpoint {
	t.Helper()
	e := &endpoint{}
	var err error
	dev := n.Device()
	if e.pd, err = dev.AllocPD(); err != nil {
		t.Fatal(err)
	}
	if e.scq, err = dev.CreateCQ(1024); err != nil {
		t.Fatal(err)
	}
	if e.rcq, err = dev.CreateCQ(1024); err != nil {
		t.Fatal(err)
	}
	if e.mr, err = e.pd.RegMR(512<<10, fabric.AccessLocalWrite|fabric.AccessRemoteWrite|fabric.AccessRemoteRead); err != nil {
		t.Fatal(err)
	}
	e.qp, err = e.pd.CreateQP(fabric.QPInit{Type: typ, SendCQ: e.scq, RecvCQ: e.rcq,
		Caps: fabric.QPCaps{MaxSendWR: sendWR, MaxRecvWR: recvWR, MaxInline: 64}})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// rvConnect brings a and b to RTS connected to each other; rtr and rts
// supply the attributes of both sides (Dest is filled in).
func rvConnect(t *testing.T, a, b *endpoint, rtr, rts fabric.QPAttr) {
	t.Helper()
	acc := fabric.AccessLocalWrite | fabric.AccessRemoteWrite | fabric.AccessRemoteRead
	for _, s := range [][2]*endpoint{{a, b}, {b, a}} {
		e, peer := s[0], s[1]
		if err := e.qp.Modify(fabric.StateReset, fabric.QPAttr{}); err != nil {
			t.Fatal(err)
		}
		if err := e.qp.Modify(fabric.StateInit, fabric.QPAttr{Access: acc}); err != nil {
			t.Fatal(err)
		}
		r := rtr
		r.Dest = peer.qp.Info().Address()
		if err := e.qp.Modify(fabric.StateRTR, r); err != nil {
			t.Fatal(err)
		}
		if err := e.qp.Modify(fabric.StateRTS, rts); err != nil {
			t.Fatal(err)
		}
	}
}

// noPanic runs f and turns a panic into a test error.
func noPanic(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s panicked: %v", what, r)
		}
	}()
	f()
}

func wantWCs(t *testing.T, what string, cq fabric.CQ, want []fabric.WC) {
	t.Helper()
	got, err := drain(cq)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if len(got) != len(want) {
		t.Fatalf("%s: completions %v, want %d of them: %v", what, got, len(want), want)
	}
	for i := range want {
		if got[i].ID != want[i].ID || got[i].Status != want[i].Status {
			t.Fatalf("%s: completion %d is %v, want id=%d %v (all: %v)", what, i, got[i], want[i].ID, want[i].Status, got)
		}
	}
}

// TestSGEAddressWrap: an SGE or a remote address so close to 2^64 that
// address+length wraps around used to pass the bounds checks and panic
// slicing the region. Each must be a protection or access error instead.
func TestSGEAddressWrap(t *testing.T) {
	const far = ^uint64(0) - 15 // far+100 wraps to 84
	cases := []struct {
		name   string
		wr     func(a, b *endpoint) fabric.SendWR
		recv   bool // post the bad SGE as a receive on b instead
		status fabric.Status
	}{
		{"local-SGE", func(a, b *endpoint) fabric.SendWR {
			return fabric.SendWR{ID: 1, Op: fabric.OpSend, Flags: fabric.Signaled, Local: fabric.SGE{Addr: far, Length: 100, LKey: a.mr.LKey()}}
		}, false, fabric.StatusLocalProtection},
		{"local-SGE-longer-than-region", func(a, b *endpoint) fabric.SendWR {
			return fabric.SendWR{ID: 1, Op: fabric.OpSend, Flags: fabric.Signaled, Local: a.mr.SGE(100, a.mr.Len())}
		}, false, fabric.StatusLocalProtection},
		{"inline-source", func(a, b *endpoint) fabric.SendWR {
			return fabric.SendWR{ID: 1, Op: fabric.OpSend, Flags: fabric.Signaled | fabric.Inline, Local: fabric.SGE{Addr: far, Length: 32}}
		}, false, fabric.StatusLocalProtection},
		{"write-remote-address", func(a, b *endpoint) fabric.SendWR {
			return fabric.SendWR{ID: 1, Op: fabric.OpWrite, Flags: fabric.Signaled, Local: a.mr.SGE(0, 100), RemoteAddr: far, RKey: b.mr.RKey()}
		}, false, fabric.StatusRemoteAccess},
		{"read-remote-address", func(a, b *endpoint) fabric.SendWR {
			return fabric.SendWR{ID: 1, Op: fabric.OpRead, Flags: fabric.Signaled, Local: a.mr.SGE(0, 100), RemoteAddr: far, RKey: b.mr.RKey()}
		}, false, fabric.StatusRemoteAccess},
		{"receive-SGE", func(a, b *endpoint) fabric.SendWR {
			return fabric.SendWR{ID: 1, Op: fabric.OpSend, Flags: fabric.Signaled, Local: a.mr.SGE(0, 100)}
		}, true, fabric.StatusRemoteInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, sim.Config{Nodes: 2, Seed: 1})
			a := rvEndpoint(t, c.Node(0), fabric.RC, 16, 16)
			b := rvEndpoint(t, c.Node(1), fabric.RC, 16, 16)
			rvConnect(t, a, b, fabric.QPAttr{MaxDestRdAtomic: 4}, fabric.QPAttr{Timeout: 10, RetryCnt: 3, MaxRdAtomic: 4})
			noPanic(t, "posting", func() {
				if tc.recv {
					if _, err := b.qp.PostRecv([]fabric.RecvWR{{ID: 9, Local: fabric.SGE{Addr: far, Length: 100, LKey: b.mr.LKey()}}}); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := a.qp.PostSend([]fabric.SendWR{tc.wr(a, b)}); err != nil {
					t.Fatal(err)
				}
			})
			noPanic(t, "delivery", func() { c.Advance(fabric.Millisecond) })
			wantWCs(t, "sender", a.scq, []fabric.WC{{ID: 1, Status: tc.status}})
		})
	}
}

// TestUCReceiveRing: a UC send whose middle packet is lost gives its
// receive back for the next message. The receive's ring slot used to be
// reported free as soon as the first packet arrived; a receive posted then
// overwrote it, and giving it back (rqHead--) corrupted the ring: one
// receive was never completed and another completed twice.
func TestUCReceiveRing(t *testing.T) {
	c := newCluster(t, sim.Config{Nodes: 2, Seed: 1})
	a := rvEndpoint(t, c.Node(0), fabric.UC, 16, 2)
	b := rvEndpoint(t, c.Node(1), fabric.UC, 16, 2)
	rvConnect(t, a, b, fabric.QPAttr{}, fabric.QPAttr{})
	c.SetFilter(func(p sim.PacketInfo) sim.Verdict {
		if p.Type == fabric.UC && p.Op == "SEND" && !p.First {
			return sim.Hold // the middle and last packets of the first send
		}
		return sim.Pass
	})
	recv := func(id uint64) error {
		_, err := b.qp.PostRecv([]fabric.RecvWR{{ID: id, Local: b.mr.SGE(int(id)*16384, 16384)}})
		return err
	}
	for id := uint64(0); id < 2; id++ {
		if err := recv(id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.qp.PostSend([]fabric.SendWR{{ID: 0, Op: fabric.OpSend, Local: a.mr.SGE(0, 10000)}}); err != nil {
		t.Fatal(err)
	}
	c.Advance(50 * fabric.Microsecond)
	// The first packet took receive 0; the receive queue is still full.
	if err := recv(2); !errors.Is(err, fabric.ErrQueueFull) {
		t.Fatalf("PostRecv with every receive taken or pending: %v, want ErrQueueFull", err)
	}
	held := c.Held()
	if len(held) != 2 {
		t.Fatalf("held %v, want the middle and last packets", held)
	}
	c.SetFilter(nil)
	if err := c.DropHeld(held[0].ID); err != nil {
		t.Fatal(err)
	}
	if err := c.Release(held[1].ID); err != nil {
		t.Fatal(err)
	}
	c.Advance(10 * fabric.Microsecond)
	for i := 1; i <= 2; i++ {
		if _, err := a.qp.PostSend([]fabric.SendWR{{ID: uint64(i), Op: fabric.OpSendImm, Imm: uint32(i), Local: a.mr.SGE(0, 100)}}); err != nil {
			t.Fatal(err)
		}
		c.Advance(10 * fabric.Microsecond)
	}
	// Message 1 used the receive given back (0), message 2 receive 1.
	wantWCs(t, "receiver", b.rcq, []fabric.WC{{ID: 0}, {ID: 1}})
	if err := recv(2); err != nil {
		t.Fatalf("PostRecv after polling: %v", err)
	}
	if _, err := a.qp.PostSend([]fabric.SendWR{{ID: 3, Op: fabric.OpSend, Local: a.mr.SGE(0, 100)}}); err != nil {
		t.Fatal(err)
	}
	c.Advance(10 * fabric.Microsecond)
	wantWCs(t, "receiver", b.rcq, []fabric.WC{{ID: 2}})
	if st := c.Stats(); st.UCDrops != 1 {
		t.Errorf("UCDrops = %d, want 1", st.UCDrops)
	}
}

// TestUCDrops: Stats.UCDrops counts a message whose first packet was
// lost (it used not to), and every other loss that can be told apart from
// the packets that arrive.
func TestUCDrops(t *testing.T) {
	const n = 5 // ucStream: 3 packets per 10000-byte message
	cases := []struct {
		name string
		drop []int // 1-based ordinals of the data packets to drop
	}{
		{"first-packet", []int{4}},
		{"first-packet-of-first-message", []int{1}},
		{"middle-packet", []int{5}},
		{"last-packet", []int{6}},
		{"two-messages-apart", []int{2, 11}},
		{"first-packets-of-two-messages", []int{4, 10}},
		{"last-packet-of-stream", []int{15}},
	}
	for _, op := range []fabric.Opcode{fabric.OpSendImm, fabric.OpWriteImm} {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%v/%s", op, tc.name), func(t *testing.T) {
				c := newCluster(t, sim.Config{Nodes: 2, Seed: 1})
				seen := 0
				c.SetFilter(func(p sim.PacketInfo) sim.Verdict {
					if p.Type != fabric.UC || p.Src != 0 {
						return sim.Pass
					}
					seen++
					if slices.Contains(tc.drop, seen) {
						return sim.Drop
					}
					return sim.Pass
				})
				var got []int
				if err := c.Run(ucStream(n, 10000, op, &got, nil)); err != nil {
					t.Fatal(err)
				}
				if lost, st := n-len(got), c.Stats(); lost != len(tc.drop) || st.UCDrops != int64(lost) {
					t.Errorf("%d messages lost, UCDrops = %d; want %d and %d", lost, st.UCDrops, len(tc.drop), len(tc.drop))
				}
			})
		}
	}
}

// TestUCBadRemoteKeyCounted: a UC write with a bad rkey is dropped
// silently by the target and counted.
func TestUCBadRemoteKeyCounted(t *testing.T) {
	c := newCluster(t, sim.Config{Nodes: 2, Seed: 1})
	a := rvEndpoint(t, c.Node(0), fabric.UC, 16, 16)
	b := rvEndpoint(t, c.Node(1), fabric.UC, 16, 16)
	rvConnect(t, a, b, fabric.QPAttr{}, fabric.QPAttr{})
	wr := fabric.SendWR{ID: 1, Op: fabric.OpWrite, Flags: fabric.Signaled, Local: a.mr.SGE(0, 64), RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey() ^ 0x300}
	if _, err := a.qp.PostSend([]fabric.SendWR{wr}); err != nil {
		t.Fatal(err)
	}
	c.Advance(50 * fabric.Microsecond)
	wantWCs(t, "sender", a.scq, []fabric.WC{{ID: 1}})
	if st := c.Stats(); st.UCDrops != 1 {
		t.Errorf("UCDrops = %d, want 1", st.UCDrops)
	}
	if s := b.qp.State(); s != fabric.StateRTS {
		t.Errorf("target in %v, want RTS", s)
	}
}

// TestRNRWaitOutlastsAckTimeout guards that the local ACK timer does
// not count retries while the requester waits out an RNR NAK: with an RNR
// timer (10.24 ms) far longer than the ACK timeout (65.5 us) and one retry,
// the send still succeeds. (It holds because an RNR NAK rewinds every
// unacknowledged packet, so nothing is outstanding when the timer fires.)
func TestRNRWaitOutlastsAckTimeout(t *testing.T) {
	c := newCluster(t, sim.Config{Nodes: 2, Seed: 1})
	a := rvEndpoint(t, c.Node(0), fabric.RC, 16, 16)
	b := rvEndpoint(t, c.Node(1), fabric.RC, 16, 16)
	rvConnect(t, a, b, fabric.QPAttr{MinRNRTimer: 20}, fabric.QPAttr{Timeout: 4, RetryCnt: 1, RNRRetry: 7})
	if _, err := a.qp.PostSend([]fabric.SendWR{{ID: 1, Op: fabric.OpSend, Flags: fabric.Signaled, Local: a.mr.SGE(0, 64)}}); err != nil {
		t.Fatal(err)
	}
	c.Advance(fabric.Millisecond)
	if _, err := b.qp.PostRecv([]fabric.RecvWR{{ID: 7, Local: b.mr.SGE(0, 64)}}); err != nil {
		t.Fatal(err)
	}
	c.Advance(20 * fabric.Millisecond)
	wantWCs(t, "sender", a.scq, []fabric.WC{{ID: 1, Status: fabric.StatusSuccess}})
	wantWCs(t, "receiver", b.rcq, []fabric.WC{{ID: 7, Status: fabric.StatusSuccess}})
	if st := c.Stats(); st.RNRNaks != 1 || st.RCRetransmits != 1 {
		t.Errorf("stats %+v, want one RNR NAK and one rewind", st)
	}
}

// TestErrorBehindOutstanding: a request that fails locally while
// earlier ones still wait for their ACK. The earlier ones used to vanish
// without a completion.
func TestErrorBehindOutstanding(t *testing.T) {
	for _, typ := range []fabric.QPType{fabric.RC, fabric.UC} {
		t.Run(typ.String(), func(t *testing.T) {
			c := newCluster(t, sim.Config{Nodes: 2, Seed: 1})
			a := rvEndpoint(t, c.Node(0), typ, 16, 16)
			b := rvEndpoint(t, c.Node(1), typ, 16, 16)
			rvConnect(t, a, b, fabric.QPAttr{}, fabric.QPAttr{Timeout: 10, RetryCnt: 3})
			bad := a.mr.SGE(0, 64)
			bad.LKey ^= 0x4400
			wrs := []fabric.SendWR{
				{ID: 1, Op: fabric.OpWrite, Flags: fabric.Signaled, Local: a.mr.SGE(0, 10000), RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey()},
				{ID: 2, Op: fabric.OpWrite, Flags: fabric.Signaled, Local: bad, RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey()},
				{ID: 3, Op: fabric.OpWrite, Flags: fabric.Signaled, Local: a.mr.SGE(0, 8), RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey()},
			}
			if _, err := a.qp.PostSend(wrs); err != nil {
				t.Fatal(err)
			}
			c.Advance(fabric.Millisecond)
			wantWCs(t, "sender", a.scq, []fabric.WC{{ID: 1, Status: fabric.StatusSuccess},
				{ID: 2, Status: fabric.StatusLocalProtection}, {ID: 3, Status: fabric.StatusFlushed}})
		})
	}
}

// TestResetClearsRNRBackoff: an RNR wait in progress must not
// survive RESET: the new connection used to stay silent until the old
// wait (491 ms) ran out.
func TestResetClearsRNRBackoff(t *testing.T) {
	c := newCluster(t, sim.Config{Nodes: 2, Seed: 1})
	a := rvEndpoint(t, c.Node(0), fabric.RC, 16, 16)
	b := rvEndpoint(t, c.Node(1), fabric.RC, 16, 16)
	rvConnect(t, a, b, fabric.QPAttr{MinRNRTimer: 31}, fabric.QPAttr{Timeout: 0, RNRRetry: 7})
	send := func(id uint64) {
		if _, err := a.qp.PostSend([]fabric.SendWR{{ID: id, Op: fabric.OpSend, Flags: fabric.Signaled, Local: a.mr.SGE(0, 64)}}); err != nil {
			t.Fatal(err)
		}
	}
	send(1)
	c.Advance(100 * fabric.Microsecond)
	if st := c.Stats(); st.RNRNaks != 1 {
		t.Fatalf("stats %+v, want one RNR NAK", st)
	}
	rvConnect(t, a, b, fabric.QPAttr{MinRNRTimer: 1}, fabric.QPAttr{Timeout: 14, RNRRetry: 7})
	if _, err := drain(a.scq); err != nil {
		t.Fatal(err)
	}
	if _, err := b.qp.PostRecv([]fabric.RecvWR{{ID: 7, Local: b.mr.SGE(0, 64)}}); err != nil {
		t.Fatal(err)
	}
	send(2)
	c.Advance(fabric.Millisecond)
	wantWCs(t, "sender after reconnecting", a.scq, []fabric.WC{{ID: 2, Status: fabric.StatusSuccess}})
}

// TestResetStaleAckTimer: the ACK timer of an earlier connection
// with a long timeout (4.3 s) must not delay the retransmission of a new
// connection with a short one (65.5 us).
func TestResetStaleAckTimer(t *testing.T) {
	c := newCluster(t, sim.Config{Nodes: 2, Seed: 1})
	a := rvEndpoint(t, c.Node(0), fabric.RC, 16, 16)
	b := rvEndpoint(t, c.Node(1), fabric.RC, 16, 16)
	rvConnect(t, a, b, fabric.QPAttr{}, fabric.QPAttr{Timeout: 20, RetryCnt: 7})
	write := func(id uint64) {
		wr := fabric.SendWR{ID: id, Op: fabric.OpWrite, Flags: fabric.Signaled, Local: a.mr.SGE(0, 64), RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey()}
		if _, err := a.qp.PostSend([]fabric.SendWR{wr}); err != nil {
			t.Fatal(err)
		}
	}
	write(1)
	c.Advance(100 * fabric.Microsecond)
	wantWCs(t, "first connection", a.scq, []fabric.WC{{ID: 1}})

	rvConnect(t, a, b, fabric.QPAttr{}, fabric.QPAttr{Timeout: 4, RetryCnt: 7})
	dropped := false
	c.SetFilter(func(p sim.PacketInfo) sim.Verdict {
		if p.Op == "WRITE" && !dropped {
			dropped = true
			return sim.Drop
		}
		return sim.Pass
	})
	write(2)
	c.Advance(fabric.Millisecond)
	wantWCs(t, "second connection", a.scq, []fabric.WC{{ID: 2, Status: fabric.StatusSuccess}})
}

// TestBadReceiveBuffer: a receive whose SGE is invalid completes with
// StatusLocalProtection and moves the queue pair to ERROR (contract:
// only UD receive length errors leave it usable). UC has no NAKs, so
// none may be sent; UD used to stay in RTS.
func TestBadReceiveBuffer(t *testing.T) {
	for _, typ := range []fabric.QPType{fabric.UC, fabric.UD} {
		t.Run(typ.String(), func(t *testing.T) {
			c := newCluster(t, sim.Config{Nodes: 2, Seed: 1})
			var a, b *endpoint
			var ah fabric.AH
			if typ == fabric.UD {
				a, b, ah = udPair(t, c)
			} else {
				a = rvEndpoint(t, c.Node(0), typ, 16, 16)
				b = rvEndpoint(t, c.Node(1), typ, 16, 16)
				rvConnect(t, a, b, fabric.QPAttr{}, fabric.QPAttr{})
			}
			var fromB []string
			c.SetFilter(func(p sim.PacketInfo) sim.Verdict {
				if p.Src == 1 {
					fromB = append(fromB, p.Op)
				}
				return sim.Pass
			})
			bad := b.mr.SGE(0, 2048)
			bad.LKey ^= 0x4400
			if _, err := b.qp.PostRecv([]fabric.RecvWR{{ID: 1, Local: bad}, {ID: 2, Local: b.mr.SGE(4096, 2048)}}); err != nil {
				t.Fatal(err)
			}
			wr := fabric.SendWR{ID: 5, Op: fabric.OpSend, Flags: fabric.Signaled, Local: a.mr.SGE(0, 100),
				AH: ah, RemoteQPN: b.qp.QPN(), QKey: udQKey}
			if _, err := a.qp.PostSend([]fabric.SendWR{wr}); err != nil {
				t.Fatal(err)
			}
			c.Advance(100 * fabric.Microsecond)
			wantWCs(t, "receiver", b.rcq, []fabric.WC{{ID: 1, Status: fabric.StatusLocalProtection}, {ID: 2, Status: fabric.StatusFlushed}})
			if s := b.qp.State(); s != fabric.StateError {
				t.Errorf("receiver in %v, want ERROR", s)
			}
			if len(fromB) != 0 {
				t.Errorf("the receiver sent %v; %v has no acknowledgements", fromB, typ)
			}
		})
	}
}

// TestUDControlledQKey: a send's Q_Key with the high bit set means
// "use the sending queue pair's own Q_Key" (IBA 10.2.5; ibv_post_send).
func TestUDControlledQKey(t *testing.T) {
	c := newCluster(t, sim.Config{Nodes: 2, Seed: 1})
	a, b, ah := udPair(t, c)
	if _, err := b.qp.PostRecv([]fabric.RecvWR{{ID: 1, Local: b.mr.SGE(0, 2048)}}); err != nil {
		t.Fatal(err)
	}
	wr := fabric.SendWR{ID: 5, Op: fabric.OpSend, Local: a.mr.SGE(0, 100), AH: ah, RemoteQPN: b.qp.QPN(), QKey: 0x80000000}
	if _, err := a.qp.PostSend([]fabric.SendWR{wr}); err != nil {
		t.Fatal(err)
	}
	c.Advance(100 * fabric.Microsecond)
	wantWCs(t, "receiver", b.rcq, []fabric.WC{{ID: 1, Status: fabric.StatusSuccess}})
	if st := c.Stats(); st.UDDropsQKey != 0 {
		t.Errorf("stats %+v: dropped for its Q_Key", st)
	}
}

// TestGRHPayloadLength: the GRH's payload length counts the bytes
// after the GRH up to and including the ICRC, not the VCRC.
func TestGRHPayloadLength(t *testing.T) {
	cases := []struct {
		n    int
		imm  bool
		want int // BTH 12 + DETH 8 + [ImmDt 4] + payload + pad + ICRC 4
	}{
		{100, false, 12 + 8 + 100 + 4},
		{101, false, 12 + 8 + 101 + 3 + 4},
		{0, true, 12 + 8 + 4 + 4},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("n=%d/imm=%v", tc.n, tc.imm), func(t *testing.T) {
			c := newCluster(t, sim.Config{Nodes: 2, Seed: 1})
			a, b, ah := udPair(t, c)
			if _, err := b.qp.PostRecv([]fabric.RecvWR{{ID: 1, Local: b.mr.SGE(0, 2048)}}); err != nil {
				t.Fatal(err)
			}
			wr := fabric.SendWR{ID: 5, Op: fabric.OpSend, Local: a.mr.SGE(0, tc.n), AH: ah, RemoteQPN: b.qp.QPN(), QKey: udQKey}
			if tc.imm {
				wr.Op, wr.Imm = fabric.OpSendImm, 3
			}
			if _, err := a.qp.PostSend([]fabric.SendWR{wr}); err != nil {
				t.Fatal(err)
			}
			c.Advance(100 * fabric.Microsecond)
			wantWCs(t, "receiver", b.rcq, []fabric.WC{{ID: 1}})
			if got := int(binary.BigEndian.Uint16(b.mr.Bytes()[4:6])); got != tc.want {
				t.Errorf("GRH payload length %d, want %d", got, tc.want)
			}
		})
	}
}

// TestSpawnBadCore: Spawn on a core the node does not have fails the
// run with an error wrapping ErrInvalidArg, not a panic.
func TestSpawnBadCore(t *testing.T) {
	for _, core := range []int{-1, 1 << 20} {
		t.Run(fmt.Sprint(core), func(t *testing.T) {
			c := newCluster(t, sim.Config{Nodes: 1, Seed: 1})
			err := c.Run(func(th fabric.Thread) error {
				th.Spawn("w", core, func(fabric.Thread) error { return nil })
				th.Sync()
				return nil
			})
			if !errors.Is(err, fabric.ErrInvalidArg) || strings.Contains(fmt.Sprint(err), "panic") {
				t.Errorf("Run: %v; want an error wrapping ErrInvalidArg", err)
			}
		})
	}
}

// TestModifyRejectsOddAttributes: negative read depths used to be
// accepted; a negative MaxRdAtomic then held every RDMA Read back forever.
func TestModifyRejectsOddAttributes(t *testing.T) {
	cases := []struct {
		name     string
		rtr, rts fabric.QPAttr
	}{
		{"MaxDestRdAtomic<0", fabric.QPAttr{MaxDestRdAtomic: -1}, fabric.QPAttr{}},
		{"MaxRdAtomic<0", fabric.QPAttr{}, fabric.QPAttr{MaxRdAtomic: -1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, sim.Config{Nodes: 2, Seed: 1})
			a := rvEndpoint(t, c.Node(0), fabric.RC, 16, 16)
			b := rvEndpoint(t, c.Node(1), fabric.RC, 16, 16)
			if err := a.qp.Modify(fabric.StateInit, fabric.QPAttr{}); err != nil {
				t.Fatal(err)
			}
			rtr := tc.rtr
			rtr.Dest = b.qp.Info().Address()
			err := a.qp.Modify(fabric.StateRTR, rtr)
			if err == nil {
				err = a.qp.Modify(fabric.StateRTS, tc.rts)
			}
			if !errors.Is(err, fabric.ErrBadTransition) {
				t.Errorf("Modify: %v, want ErrBadTransition", err)
			}
		})
	}
}

// TestCreateAHOnDeallocatedPD: like every other constructor of a
// protection domain, CreateAH fails once the PD is deallocated.
func TestCreateAHOnDeallocatedPD(t *testing.T) {
	c := newCluster(t, sim.Config{Nodes: 2, Seed: 1})
	pd, err := c.Node(0).Device().AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	if err := pd.Dealloc(); err != nil {
		t.Fatal(err)
	}
	if _, err := pd.CreateAH(fabric.Address{LID: 2}); !errors.Is(err, fabric.ErrClosed) {
		t.Errorf("CreateAH on a deallocated PD: %v, want ErrClosed", err)
	}
}

// TestSlotsFreedByPoll: as with libibverbs providers, a work queue
// slot is free again only once its completion (or, for unsignaled sends, a
// later one) has been polled, not when the completion is generated.
func TestSlotsFreedByPoll(t *testing.T) {
	c := newCluster(t, sim.Config{Nodes: 2, Seed: 1})
	a := rvEndpoint(t, c.Node(0), fabric.RC, 2, 16)
	b := rvEndpoint(t, c.Node(1), fabric.RC, 16, 2)
	rvConnect(t, a, b, fabric.QPAttr{}, fabric.QPAttr{Timeout: 14, RetryCnt: 7})
	recvs := []fabric.RecvWR{{ID: 1, Local: b.mr.SGE(0, 64)}, {ID: 2, Local: b.mr.SGE(64, 64)}}
	if _, err := b.qp.PostRecv(recvs); err != nil {
		t.Fatal(err)
	}
	sends := []fabric.SendWR{{ID: 1, Op: fabric.OpSend, Local: a.mr.SGE(0, 8)}, {ID: 2, Op: fabric.OpSend, Local: a.mr.SGE(0, 8), Flags: fabric.Signaled}}
	if _, err := a.qp.PostSend(sends); err != nil {
		t.Fatal(err)
	}
	c.Advance(100 * fabric.Microsecond)
	if _, err := a.qp.PostSend(sends[:1]); !errors.Is(err, fabric.ErrQueueFull) {
		t.Errorf("PostSend before polling: %v, want ErrQueueFull", err)
	}
	if _, err := b.qp.PostRecv(recvs[:1]); !errors.Is(err, fabric.ErrQueueFull) {
		t.Errorf("PostRecv before polling: %v, want ErrQueueFull", err)
	}
	wantWCs(t, "sender", a.scq, []fabric.WC{{ID: 2}})
	wantWCs(t, "receiver", b.rcq, []fabric.WC{{ID: 1}, {ID: 2}})
	if _, err := a.qp.PostSend(sends); err != nil {
		t.Errorf("PostSend after polling: %v", err)
	}
	if _, err := b.qp.PostRecv(recvs); err != nil {
		t.Errorf("PostRecv after polling: %v", err)
	}
}

// TestReadResponseLossRewindsOnce: one lost response of a long RDMA
// Read is one go-back-N rewind and one repeated request. Every later
// response of the original request used to rewind again and ask for the
// whole read once more: a quadratic storm of responses.
func TestReadResponseLossRewindsOnce(t *testing.T) {
	const size = 64 * 4096 // 64 responses
	for _, lost := range []int{1, 2, 33, 64} {
		t.Run(fmt.Sprintf("response-%d", lost), func(t *testing.T) {
			c := newCluster(t, sim.Config{Nodes: 2, Seed: 1})
			a := rvEndpoint(t, c.Node(0), fabric.RC, 16, 16)
			b := rvEndpoint(t, c.Node(1), fabric.RC, 16, 16)
			rvConnect(t, a, b, fabric.QPAttr{MaxDestRdAtomic: 4}, fabric.QPAttr{Timeout: 14, RetryCnt: 7, MaxRdAtomic: 4})
			fillKey(b.mr.Bytes()[:size], key('r', lost))
			responses, requests := 0, 0
			c.SetFilter(func(p sim.PacketInfo) sim.Verdict {
				switch p.Op {
				case "READ_REQ":
					requests++
				case "READ_RESP":
					responses++
					if responses == lost {
						return sim.Drop
					}
				}
				return sim.Pass
			})
			wr := fabric.SendWR{ID: 1, Op: fabric.OpRead, Flags: fabric.Signaled, Local: a.mr.SGE(0, size), RemoteAddr: b.mr.Addr(), RKey: b.mr.RKey()}
			if _, err := a.qp.PostSend([]fabric.SendWR{wr}); err != nil {
				t.Fatal(err)
			}
			c.Advance(200 * fabric.Millisecond) // losing the last response takes the ACK timeout (67 ms)
			wantWCs(t, "requester", a.scq, []fabric.WC{{ID: 1, Status: fabric.StatusSuccess}})
			if err := checkBytes("read", a.mr.Bytes()[:size], key('r', lost)); err != nil {
				t.Fatal(err)
			}
			if st := c.Stats(); st.RCRetransmits != 1 || requests != 2 || responses > 2*64 {
				t.Errorf("%d rewinds, %d read requests, %d responses; want 1, 2 and at most 128 (stats %+v)", st.RCRetransmits, requests, responses, st)
			}
		})
	}
}

// TestZeroLength: zero-length operations of every kind complete, and
// a zero-length RDMA access checks no rkey (IBA: a zero-length DMA has no
// memory to protect).
func TestZeroLength(t *testing.T) {
	cases := []struct {
		typ  fabric.QPType
		op   fabric.Opcode
		rkey bool // use a bad rkey
		recv fabric.Opcode
	}{
		{fabric.RC, fabric.OpSend, false, fabric.OpRecv},
		{fabric.RC, fabric.OpSendImm, false, fabric.OpRecv},
		{fabric.RC, fabric.OpWrite, true, 0},
		{fabric.RC, fabric.OpWriteImm, true, fabric.OpRecvWriteImm},
		{fabric.RC, fabric.OpRead, true, 0},
		{fabric.UC, fabric.OpSend, false, fabric.OpRecv},
		{fabric.UC, fabric.OpWriteImm, false, fabric.OpRecvWriteImm},
		{fabric.UD, fabric.OpSend, false, fabric.OpRecv},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%v/%v", tc.typ, tc.op), func(t *testing.T) {
			c := newCluster(t, sim.Config{Nodes: 2, Seed: 1})
			var a, b *endpoint
			var ah fabric.AH
			if tc.typ == fabric.UD {
				a, b, ah = udPair(t, c)
			} else {
				a = rvEndpoint(t, c.Node(0), tc.typ, 16, 16)
				b = rvEndpoint(t, c.Node(1), tc.typ, 16, 16)
				rvConnect(t, a, b, fabric.QPAttr{MaxDestRdAtomic: 1}, fabric.QPAttr{Timeout: 10, RetryCnt: 3, MaxRdAtomic: 1})
			}
			if _, err := b.qp.PostRecv([]fabric.RecvWR{{ID: 7, Local: b.mr.SGE(0, 64)}}); err != nil {
				t.Fatal(err)
			}
			rkey := b.mr.RKey()
			if tc.rkey {
				rkey ^= 0x1100
			}
			wr := fabric.SendWR{ID: 1, Op: tc.op, Flags: fabric.Signaled, Local: a.mr.SGE(0, 0), Imm: 9,
				RemoteAddr: b.mr.Addr(), RKey: rkey, AH: ah, RemoteQPN: b.qp.QPN(), QKey: udQKey}
			if _, err := a.qp.PostSend([]fabric.SendWR{wr}); err != nil {
				t.Fatal(err)
			}
			c.Advance(fabric.Millisecond)
			wantWCs(t, "requester", a.scq, []fabric.WC{{ID: 1, Status: fabric.StatusSuccess}})
			wcs, err := drain(b.rcq)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.recv == 0 && len(wcs) != 0:
				t.Errorf("target completions %v, want none", wcs)
			case tc.recv != 0 && (len(wcs) != 1 || wcs[0].Status != fabric.StatusSuccess || wcs[0].Op != tc.recv):
				t.Errorf("target completions %v, want one successful %v", wcs, tc.recv)
			case tc.recv != 0 && tc.typ == fabric.UD && wcs[0].Bytes != fabric.GRHBytes:
				t.Errorf("UD receive of %d bytes, want just the GRH", wcs[0].Bytes)
			case tc.recv != 0 && tc.typ != fabric.UD && wcs[0].Bytes != 0:
				t.Errorf("receive of %d bytes, want 0", wcs[0].Bytes)
			}
		})
	}
}

// TestBadInput: verbs called with odd arguments or on dead objects
// return the documented error and never panic.
func TestBadInput(t *testing.T) {
	type env struct {
		c    *sim.Cluster
		a, b *endpoint
	}
	send := func(e env, wr fabric.SendWR) error { _, err := e.a.qp.PostSend([]fabric.SendWR{wr}); return err }
	cases := []struct {
		name string
		typ  fabric.QPType
		call func(e env) error
		want error // nil: must succeed
	}{
		{"PostSend-empty", fabric.RC, func(e env) error { _, err := e.a.qp.PostSend(nil); return err }, nil},
		{"PostRecv-empty", fabric.RC, func(e env) error { _, err := e.a.qp.PostRecv(nil); return err }, nil},
		{"Poll-empty-slice", fabric.RC, func(e env) error { _, err := e.a.scq.Poll(nil); return err }, nil},
		{"opcode-0", fabric.RC, func(e env) error { return send(e, fabric.SendWR{}) }, fabric.ErrInvalidWR},
		{"opcode-recv", fabric.RC, func(e env) error { return send(e, fabric.SendWR{Op: fabric.OpRecv}) }, fabric.ErrInvalidWR},
		{"opcode-255", fabric.RC, func(e env) error { return send(e, fabric.SendWR{Op: 255}) }, fabric.ErrInvalidWR},
		{"inline-read", fabric.RC, func(e env) error {
			return send(e, fabric.SendWR{Op: fabric.OpRead, Flags: fabric.Inline, Local: e.a.mr.SGE(0, 8)})
		}, fabric.ErrInvalidWR},
		{"UC-read", fabric.UC, func(e env) error { return send(e, fabric.SendWR{Op: fabric.OpRead, Local: e.a.mr.SGE(0, 8)}) }, fabric.ErrInvalidWR},
		{"message-above-2GiB", fabric.RC, func(e env) error {
			return send(e, fabric.SendWR{Op: fabric.OpSend, Local: fabric.SGE{Addr: e.a.mr.Addr(), Length: 1<<31 + 1, LKey: e.a.mr.LKey()}})
		}, fabric.ErrMsgTooLarge},
		{"PostSend-destroyed", fabric.RC, func(e env) error {
			if err := e.a.qp.Destroy(); err != nil {
				return err
			}
			return send(e, fabric.SendWR{Op: fabric.OpSend})
		}, fabric.ErrClosed},
		{"PostRecv-destroyed", fabric.RC, func(e env) error {
			if err := e.a.qp.Destroy(); err != nil {
				return err
			}
			_, err := e.a.qp.PostRecv([]fabric.RecvWR{{}})
			return err
		}, fabric.ErrClosed},
		{"Modify-destroyed", fabric.RC, func(e env) error {
			if err := e.a.qp.Destroy(); err != nil {
				return err
			}
			return e.a.qp.Modify(fabric.StateReset, fabric.QPAttr{})
		}, fabric.ErrClosed},
		{"Destroy-twice", fabric.RC, func(e env) error {
			if err := e.a.qp.Destroy(); err != nil {
				return err
			}
			return e.a.qp.Destroy()
		}, fabric.ErrClosed},
		{"CQ-destroy-in-use", fabric.RC, func(e env) error { return e.a.scq.Destroy() }, fabric.ErrBusy},
		{"Modify-unknown-state", fabric.RC, func(e env) error { return e.a.qp.Modify(fabric.QPState(9), fabric.QPAttr{}) }, fabric.ErrInvalidArg},
		{"Modify-RTS-to-RTS", fabric.RC, func(e env) error { return e.a.qp.Modify(fabric.StateRTS, fabric.QPAttr{}) }, fabric.ErrBadTransition},
		{"Modify-Error-to-Init", fabric.RC, func(e env) error {
			if err := e.a.qp.Modify(fabric.StateError, fabric.QPAttr{}); err != nil {
				return err
			}
			return e.a.qp.Modify(fabric.StateInit, fabric.QPAttr{})
		}, fabric.ErrBadTransition},
		{"UD-no-AH", fabric.UD, func(e env) error { return send(e, fabric.SendWR{Op: fabric.OpSend}) }, fabric.ErrInvalidWR},
		{"UD-write", fabric.UD, func(e env) error { return send(e, fabric.SendWR{Op: fabric.OpWrite}) }, fabric.ErrInvalidWR},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, sim.Config{Nodes: 2, Seed: 1})
			var e env
			e.c = c
			if tc.typ == fabric.UD {
				e.a, e.b, _ = udPair(t, c)
			} else {
				e.a = rvEndpoint(t, c.Node(0), tc.typ, 16, 16)
				e.b = rvEndpoint(t, c.Node(1), tc.typ, 16, 16)
				rvConnect(t, e.a, e.b, fabric.QPAttr{}, fabric.QPAttr{Timeout: 10, RetryCnt: 3})
			}
			noPanic(t, tc.name, func() {
				err := tc.call(e)
				if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
					t.Errorf("got %v, want %v", err, tc.want)
				}
				c.Advance(fabric.Millisecond)
			})
		})
	}
}

// TestRNRNakNotReplaced: the responder answers a send that finds no
// receive with an RNR NAK and ignores the packets behind it until the
// retry, as it does after a sequence NAK. When its uplink was busy (here
// with its own RDMA Write), the next packet's sequence-error NAK used to
// replace the RNR NAK still waiting to leave: the requester then resent at
// once, without the RNR wait and without counting rnr_retry.
func TestRNRNakNotReplaced(t *testing.T) {
	c := newCluster(t, sim.Config{Nodes: 2, Seed: 1})
	a := rvEndpoint(t, c.Node(0), fabric.RC, 16, 16)
	b := rvEndpoint(t, c.Node(1), fabric.RC, 16, 16)
	rvConnect(t, a, b, fabric.QPAttr{MinRNRTimer: 14}, fabric.QPAttr{Timeout: 14, RetryCnt: 7, RNRRetry: 0})
	naks := 0
	c.SetFilter(func(p sim.PacketInfo) sim.Verdict {
		if p.Op == "NAK" {
			naks++
		}
		return sim.Pass
	})
	// b keeps its uplink busy with a long write to a.
	big := fabric.SendWR{ID: 9, Op: fabric.OpWrite, Flags: fabric.Signaled, Local: b.mr.SGE(0, 256<<10), RemoteAddr: a.mr.Addr(), RKey: a.mr.RKey()}
	if _, err := b.qp.PostSend([]fabric.SendWR{big}); err != nil {
		t.Fatal(err)
	}
	c.Advance(2 * fabric.Microsecond)
	sends := []fabric.SendWR{{ID: 1, Op: fabric.OpSend, Flags: fabric.Signaled, Local: a.mr.SGE(0, 64)},
		{ID: 2, Op: fabric.OpSend, Flags: fabric.Signaled, Local: a.mr.SGE(0, 64)}}
	if _, err := a.qp.PostSend(sends); err != nil {
		t.Fatal(err)
	}
	c.Advance(fabric.Millisecond)
	wantWCs(t, "requester", a.scq, []fabric.WC{{ID: 1, Status: fabric.StatusRNRRetryExceeded}, {ID: 2, Status: fabric.StatusFlushed}})
	if st := c.Stats(); naks != 1 || st.RNRNaks != 1 || st.RCRetransmits != 0 {
		t.Errorf("%d NAKs, stats %+v; want one RNR NAK and no retransmission", naks, st)
	}
}

// TestQueueDepthNotPowerOfTwo: work-request rings are allocated at a power
// of two, but a queue pair accepts exactly the depth it was created with,
// and requests keep their order and slots through many wrap-arounds.
func TestQueueDepthNotPowerOfTwo(t *testing.T) {
	for _, depth := range []int{1, 3, 5, 7} {
		c := newCluster(t, sim.Config{Nodes: 2, Seed: 1})
		a := rvEndpoint(t, c.Node(0), fabric.RC, depth, depth)
		b := rvEndpoint(t, c.Node(1), fabric.RC, depth, depth)
		rvConnect(t, a, b, fabric.QPAttr{}, fabric.QPAttr{Timeout: 14, RetryCnt: 7})
		next := uint64(0)
		for round := 0; round < 5; round++ {
			var recvs []fabric.RecvWR
			var sends []fabric.SendWR
			var wantR, wantS []fabric.WC
			for i := 0; i < depth; i++ {
				id := next + uint64(i)
				recvs = append(recvs, fabric.RecvWR{ID: id, Local: b.mr.SGE(i*64, 64)})
				sends = append(sends, fabric.SendWR{ID: id, Op: fabric.OpSend, Local: a.mr.SGE(i*64, 8+i), Flags: fabric.Signaled})
				wantR = append(wantR, fabric.WC{ID: id, Bytes: 8 + i})
				wantS = append(wantS, fabric.WC{ID: id})
			}
			next += uint64(depth)
			if _, err := b.qp.PostRecv(recvs); err != nil {
				t.Fatalf("depth %d, round %d: PostRecv of %d: %v", depth, round, depth, err)
			}
			if _, err := b.qp.PostRecv(recvs[:1]); !errors.Is(err, fabric.ErrQueueFull) {
				t.Fatalf("depth %d, round %d: receive %d accepted (%v), want ErrQueueFull", depth, round, depth+1, err)
			}
			if _, err := a.qp.PostSend(sends); err != nil {
				t.Fatalf("depth %d, round %d: PostSend of %d: %v", depth, round, depth, err)
			}
			if _, err := a.qp.PostSend(sends[:1]); !errors.Is(err, fabric.ErrQueueFull) {
				t.Fatalf("depth %d, round %d: send %d accepted (%v), want ErrQueueFull", depth, round, depth+1, err)
			}
			c.Advance(100 * fabric.Microsecond)
			wantWCs(t, "sender", a.scq, wantS)
			got, err := drain(b.rcq)
			if err != nil || len(got) != len(wantR) {
				t.Fatalf("depth %d, round %d: receive completions %v (%v), want %v", depth, round, got, err, wantR)
			}
			for i := range got {
				if got[i].ID != wantR[i].ID || got[i].Bytes != wantR[i].Bytes || got[i].Status != fabric.StatusSuccess {
					t.Fatalf("depth %d, round %d: receive completion %d is %v, want %v", depth, round, i, got[i], wantR[i])
				}
			}
		}
	}
}

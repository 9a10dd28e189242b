package sim_test

import (
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// TestCheckerBlindSpots commits, one per case, the hazards the checker
// used to miss in payload mode, and checks the finding each now yields
// (and that no misleading one comes with it).
func TestCheckerBlindSpots(t *testing.T) {
	cases := []struct {
		name   string
		run    func(h *hazardPair)
		kind   sim.FindingKind
		detail string
		not    sim.FindingKind // a finding that must not be reported
	}{
		{"send modified mid-transfer and restored before the poll", func(h *hazardPair) {
			h.recv(h.b, 1, h.b.mr.SGE(0, bigMsg))
			h.post(h.a, fabric.SendWR{ID: 1, Op: fabric.OpSend, Local: h.a.mr.SGE(0, bigMsg)})
			h.c.Advance(midway)
			buf := h.a.mr.Bytes()
			old := buf[bigMsg-100]
			buf[bigMsg-100] = ^old
			h.c.Advance(done)
			buf[bigMsg-100] = old
			if st := h.statuses(h.a.scq); st[1] != fabric.StatusSuccess {
				h.t.Fatalf("send: %v", st)
			}
			if st := h.statuses(h.b.rcq); st[1] != fabric.StatusSuccess {
				h.t.Fatalf("receive: %v", st)
			}
			if err := checkBytes("received", h.b.mr.Bytes()[:bigMsg], 1); err == nil {
				h.t.Fatal("the receiver got the right bytes: the hazard did not happen")
			}
		}, sim.SendBufferModified, "when the NIC read packet 256 of 256 (message bytes [1044480, 1048576))", 0},
		{"RDMA Write source modified mid-transfer and restored", func(h *hazardPair) {
			h.post(h.a, fabric.SendWR{ID: 1, Op: fabric.OpWrite, Local: h.a.mr.SGE(0, bigMsg), RemoteAddr: h.b.mr.Addr(), RKey: h.b.mr.RKey()})
			h.c.Advance(midway)
			buf := h.a.mr.Bytes()
			old := buf[bigMsg/2]
			buf[bigMsg/2] = ^old
			h.c.Advance(done)
			buf[bigMsg/2] = old
			h.statuses(h.a.scq)
		}, sim.SendBufferModified, "when the NIC read packet 129 of 256", 0},
		{"CPU writes into an RDMA Read's destination before the data arrives", func(h *hazardPair) {
			h.post(h.a, fabric.SendWR{ID: 1, Op: fabric.OpRead, Local: h.a.mr.SGE(0, bigMsg), RemoteAddr: h.b.mr.Addr(), RKey: h.b.mr.RKey()})
			h.a.mr.Bytes()[bigMsg-1]++
			h.c.Advance(done)
			if st := h.statuses(h.a.scq); st[1] != fabric.StatusSuccess {
				h.t.Fatalf("read: %v", st)
			}
		}, sim.ReadDestModified, "detected when the NIC wrote packet 256 of 256", 0},
		{"CPU writes into an RDMA Read's destination after the data, before the poll", func(h *hazardPair) {
			h.post(h.a, fabric.SendWR{ID: 1, Op: fabric.OpRead, Local: h.a.mr.SGE(0, bigMsg), RemoteAddr: h.b.mr.Addr(), RKey: h.b.mr.RKey()})
			h.c.Advance(done)
			h.a.mr.Bytes()[5]++
			h.statuses(h.a.scq)
		}, sim.ReadDestModified, "detected when its completion was polled", 0},
		{"send from a buffer posted as a receive", func(h *hazardPair) {
			h.recv(h.a, 7, h.a.mr.SGE(8192, 4096))
			h.post(h.a, fabric.SendWR{ID: 1, Op: fabric.OpSend, Local: h.a.mr.SGE(4096, 8192)})
			h.recv(h.b, 1, h.b.mr.SGE(0, 8192))
			h.c.Advance(done)
			h.statuses(h.a.scq)
		}, sim.SendFromPostedRecv, "bytes [4096, 12288) overlap bytes [8192, 12288) posted as a receive", 0},
		{"receive posted over a send's buffer", func(h *hazardPair) {
			h.post(h.a, fabric.SendWR{ID: 1, Op: fabric.OpSend, Local: h.a.mr.SGE(0, 4096)})
			h.recv(h.a, 7, h.a.mr.SGE(0, 4096))
			h.recv(h.b, 1, h.b.mr.SGE(0, 4096))
			h.c.Advance(done)
			h.statuses(h.a.scq)
		}, sim.SendFromPostedRecv, "overlap bytes [0, 4096) posted as a receive", 0},
		{"one buffer posted as two receives", func(h *hazardPair) {
			h.recv(h.b, 1, h.b.mr.SGE(0, 4096))
			h.recv(h.b, 2, h.b.mr.SGE(2048, 4096))
			for i := 0; i < 2; i++ {
				h.post(h.a, fabric.SendWR{ID: uint64(i), Op: fabric.OpSend, Local: h.a.mr.SGE(i*4096, 4096)})
			}
			h.c.Advance(done)
			h.statuses(h.a.scq)
			h.statuses(h.b.rcq)
		}, sim.RecvPostedTwice, "bytes [2048, 6144) overlap bytes [0, 4096) already posted as a receive", sim.RecvBufferModified},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHazardPair(t, false)
			tc.run(h)
			found := false
			for _, f := range h.c.Findings() {
				found = found || f.Kind == tc.kind && strings.Contains(f.Detail, tc.detail)
				if tc.not != 0 && f.Kind == tc.not {
					t.Errorf("misleading finding: %v", f)
				}
			}
			if !found {
				t.Errorf("no %v finding mentioning %q", tc.kind, tc.detail)
			}
			if !tc.kind.Hazard() || h.c.CheckError() == nil {
				t.Errorf("%v is not reported as a hazard", tc.kind)
			}
			if t.Failed() {
				for _, f := range h.c.Findings() {
					t.Log(f)
				}
			}
		})
	}
}

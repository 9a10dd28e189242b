package sim_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// hazardPair is two connected RC endpoints in payload mode, driven from the
// test goroutine (the driver), for the checker's hazard tests.
type hazardPair struct {
	t    *testing.T
	c    *sim.Cluster
	a, b *endpoint
}

func newHazardPair(t *testing.T, noCheck bool) *hazardPair {
	c := newCluster(t, sim.Config{Nodes: 2, Seed: 5, NoCheck: noCheck})
	a := newEndpoint(t, c.Node(0), fabric.RC, 4<<20)
	b := newEndpoint(t, c.Node(1), fabric.RC, 4<<20)
	connectPair(t, a, b, 0, 0, 14, 7)
	fillKey(a.mr.Bytes(), 1)
	fillKey(b.mr.Bytes(), 2)
	return &hazardPair{t: t, c: c, a: a, b: b}
}

func (h *hazardPair) post(e *endpoint, wr fabric.SendWR) {
	h.t.Helper()
	wr.Flags |= fabric.Signaled
	if _, err := e.qp.PostSend([]fabric.SendWR{wr}); err != nil {
		h.t.Fatal(err)
	}
}

func (h *hazardPair) recv(e *endpoint, id uint64, s fabric.SGE) {
	h.t.Helper()
	if _, err := e.qp.PostRecv([]fabric.RecvWR{{ID: id, Local: s}}); err != nil {
		h.t.Fatal(err)
	}
}

// regMR registers a further region on e's protection domain.
func (h *hazardPair) regMR(e *endpoint, n int) fabric.MR {
	h.t.Helper()
	m, err := e.pd.RegMR(n, fabric.AccessLocalWrite|fabric.AccessRemoteWrite|fabric.AccessRemoteRead)
	if err != nil {
		h.t.Fatal(err)
	}
	return m
}

func (h *hazardPair) dereg(m fabric.MR) {
	h.t.Helper()
	if err := m.Dereg(); err != nil {
		h.t.Fatal(err)
	}
}

// statuses drains cq and returns its completions' statuses, by wr_id.
func (h *hazardPair) statuses(cq fabric.CQ) map[uint64]fabric.Status {
	h.t.Helper()
	wcs, err := drain(cq)
	if err != nil {
		h.t.Fatal(err)
	}
	out := map[uint64]fabric.Status{}
	for _, wc := range wcs {
		out[wc.ID] = wc.Status
	}
	return out
}

const (
	bigMsg = 1 << 20                 // 256 packets of 4 KiB: about 90 us on the wire
	midway = 20 * fabric.Microsecond // the first packets have left, the last have not
	done   = 500 * fabric.Microsecond
)

// TestDeregisteredMRFails: work on a region deregistered while it was
// posted completes with a protection error, as on hardware, whether the
// checker is on or off; with it on, the deregistration is a finding.
func TestDeregisteredMRFails(t *testing.T) {
	cases := []struct {
		name string
		run  func(h *hazardPair) (got, want fabric.Status)
	}{
		{"send from a deregistered region", func(h *hazardPair) (fabric.Status, fabric.Status) {
			m := h.regMR(h.a, 4096)
			h.recv(h.b, 1, h.b.mr.SGE(0, 4096))
			h.post(h.a, fabric.SendWR{ID: 1, Op: fabric.OpSend, Local: m.SGE(0, 4096)})
			h.dereg(m)
			h.c.Advance(done)
			return h.statuses(h.a.scq)[1], fabric.StatusLocalProtection
		}},
		{"send whose region is deregistered mid-transfer", func(h *hazardPair) (fabric.Status, fabric.Status) {
			m := h.regMR(h.a, bigMsg)
			h.recv(h.b, 1, h.b.mr.SGE(0, bigMsg))
			h.post(h.a, fabric.SendWR{ID: 1, Op: fabric.OpSend, Local: m.SGE(0, bigMsg)})
			h.c.Advance(midway)
			h.dereg(m)
			h.c.Advance(done)
			return h.statuses(h.a.scq)[1], fabric.StatusLocalProtection
		}},
		{"RDMA Write from a deregistered region", func(h *hazardPair) (fabric.Status, fabric.Status) {
			m := h.regMR(h.a, 4096)
			h.post(h.a, fabric.SendWR{ID: 1, Op: fabric.OpWrite, Local: m.SGE(0, 4096), RemoteAddr: h.b.mr.Addr(), RKey: h.b.mr.RKey()})
			h.dereg(m)
			h.c.Advance(done)
			return h.statuses(h.a.scq)[1], fabric.StatusLocalProtection
		}},
		{"RDMA Read into a deregistered region", func(h *hazardPair) (fabric.Status, fabric.Status) {
			m := h.regMR(h.a, 4096)
			h.post(h.a, fabric.SendWR{ID: 1, Op: fabric.OpRead, Local: m.SGE(0, 4096), RemoteAddr: h.b.mr.Addr(), RKey: h.b.mr.RKey()})
			h.dereg(m)
			h.c.Advance(done)
			return h.statuses(h.a.scq)[1], fabric.StatusLocalProtection
		}},
		{"RDMA Read whose destination is deregistered mid-transfer", func(h *hazardPair) (fabric.Status, fabric.Status) {
			m := h.regMR(h.a, bigMsg)
			h.post(h.a, fabric.SendWR{ID: 1, Op: fabric.OpRead, Local: m.SGE(0, bigMsg), RemoteAddr: h.b.mr.Addr(), RKey: h.b.mr.RKey()})
			h.c.Advance(midway)
			h.dereg(m)
			h.c.Advance(done)
			return h.statuses(h.a.scq)[1], fabric.StatusLocalProtection
		}},
		{"receive into a deregistered region", func(h *hazardPair) (fabric.Status, fabric.Status) {
			m := h.regMR(h.b, 4096)
			h.recv(h.b, 1, m.SGE(0, 4096))
			h.dereg(m)
			h.post(h.a, fabric.SendWR{ID: 1, Op: fabric.OpSend, Local: h.a.mr.SGE(0, 4096)})
			h.c.Advance(done)
			return h.statuses(h.b.rcq)[1], fabric.StatusLocalProtection
		}},
		{"receive whose region is deregistered mid-message", func(h *hazardPair) (fabric.Status, fabric.Status) {
			m := h.regMR(h.b, bigMsg)
			h.recv(h.b, 1, m.SGE(0, bigMsg))
			h.post(h.a, fabric.SendWR{ID: 1, Op: fabric.OpSend, Local: h.a.mr.SGE(0, bigMsg)})
			h.c.Advance(midway)
			h.dereg(m)
			h.c.Advance(done)
			return h.statuses(h.b.rcq)[1], fabric.StatusLocalProtection
		}},
		{"RDMA Write to a deregistered remote region", func(h *hazardPair) (fabric.Status, fabric.Status) {
			m := h.regMR(h.b, 4096)
			addr, rkey := m.Addr(), m.RKey()
			h.dereg(m)
			h.post(h.a, fabric.SendWR{ID: 1, Op: fabric.OpWrite, Local: h.a.mr.SGE(0, 4096), RemoteAddr: addr, RKey: rkey})
			h.c.Advance(done)
			return h.statuses(h.a.scq)[1], fabric.StatusRemoteAccess
		}},
		{"RDMA Write whose remote region is deregistered mid-transfer", func(h *hazardPair) (fabric.Status, fabric.Status) {
			m := h.regMR(h.b, bigMsg)
			h.post(h.a, fabric.SendWR{ID: 1, Op: fabric.OpWrite, Local: h.a.mr.SGE(0, bigMsg), RemoteAddr: m.Addr(), RKey: m.RKey()})
			h.c.Advance(midway)
			h.dereg(m)
			h.c.Advance(done)
			return h.statuses(h.a.scq)[1], fabric.StatusRemoteAccess
		}},
		{"RDMA Read whose remote region is deregistered mid-transfer", func(h *hazardPair) (fabric.Status, fabric.Status) {
			m := h.regMR(h.b, bigMsg)
			h.post(h.a, fabric.SendWR{ID: 1, Op: fabric.OpRead, Local: h.a.mr.SGE(0, bigMsg), RemoteAddr: m.Addr(), RKey: m.RKey()})
			h.c.Advance(midway)
			h.dereg(m)
			h.c.Advance(done)
			return h.statuses(h.a.scq)[1], fabric.StatusRemoteAccess
		}},
	}
	for _, tc := range cases {
		for _, noCheck := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/checker=%v", tc.name, !noCheck), func(t *testing.T) {
				h := newHazardPair(t, noCheck)
				if got, want := tc.run(h); got != want {
					t.Errorf("completion status %v, want %v", got, want)
				}
				if noCheck {
					return
				}
				found := false
				for _, f := range h.c.Findings() {
					found = found || f.Kind == sim.DeregBusy
				}
				if !found && !strings.Contains(tc.name, "remote region") {
					t.Errorf("no %v finding: %v", sim.DeregBusy, h.c.Findings())
				}
			})
		}
	}
}

package fabric_test

import (
	"errors"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

type named string

func (n named) String() string { return string(n) }

// TestObjectChecks: the lifecycle rules and argument checks the backends
// that keep verbs objects share: each error's sentinel and wording, and
// nil where nothing is wrong.
func TestObjectChecks(t *testing.T) {
	s, d, qp := named("SRQ 1 on node 0"), named("XRCD 1 on node 0"), named("RC QP 0x100 on node 0")
	xrcd := struct{ fabric.XRCD }{}
	cq := struct{ fabric.CQ }{}
	for _, tc := range []struct {
		name string
		err  error
		want error // nil: no error
		msg  string
	}{
		{"PD alive", fabric.CheckPDAlive(false), nil, ""},
		{"PD dead", fabric.CheckPDAlive(true), fabric.ErrClosed, "protection domain deallocated"},
		{"dealloc", fabric.CheckDeallocPD(false, 0), nil, ""},
		{"dealloc twice", fabric.CheckDeallocPD(true, 0), fabric.ErrClosed, "protection domain deallocated twice"},
		{"dealloc in use", fabric.CheckDeallocPD(false, 2), fabric.ErrBusy, "protection domain still has 2 memory regions, queue pairs or address handles"},
		{"CQ depth", fabric.CheckCQDepth(0, 8, "nic.max_cqe"), fabric.ErrLimit, "CQ depth 0 outside 1..8 (nic.max_cqe)"},
		{"CQ depth, no source", fabric.CheckCQDepth(9, 8, ""), fabric.ErrLimit, "CQ depth 9 outside 1..8"},
		{"CQ destroy twice", fabric.CheckDestroyCQ(true, 1), fabric.ErrClosed, "completion queue destroyed twice"},
		{"CQ in use", fabric.CheckDestroyCQ(false, 1), fabric.ErrBusy, "completion queue still used by 1 queue pairs"},
		{"MR", fabric.CheckRegMR(64, 64, fabric.AccessLocalWrite|fabric.AccessRemoteWrite, ""), nil, ""},
		{"MR length", fabric.CheckRegMR(0, 64, 0, "nic.max_mr_bytes"), fabric.ErrInvalidArg, "memory region of 0 bytes outside 1..64 (nic.max_mr_bytes)"},
		{"MR access", fabric.CheckRegMR(1, 64, fabric.AccessRemoteWrite, ""), fabric.ErrInvalidArg, "remote write access requires local write access (as in ibv_reg_mr)"},
		{"dereg twice", fabric.CheckDeregMR(0x142, true), fabric.ErrClosed, "memory region 0x142 deregistered twice"},
		{"AH twice", fabric.CheckDestroyAH(true), fabric.ErrClosed, "address handle destroyed twice"},
		{"QP twice", fabric.CheckDestroyQP(named("RC QP 0x100 on node 0"), true), fabric.ErrClosed, "RC QP 0x100 on node 0 destroyed twice"},
		{"SRQ", fabric.CheckSRQInit(fabric.SRQInit{MaxWR: 8, MaxSGE: 1}, 8, "", "the loopback device"), nil, ""},
		{"SRQ depth", fabric.CheckSRQInit(fabric.SRQInit{MaxWR: 9}, 8, "nic.max_qp_wr", "d"), fabric.ErrLimit, "shared receive queue depth 9 outside 1..8 (nic.max_qp_wr)"},
		{"SRQ SGEs", fabric.CheckSRQInit(fabric.SRQInit{MaxWR: 1, MaxSGE: 2}, 8, "", "the loopback device"), fabric.ErrLimit, "2 scatter/gather elements per receive; the loopback device has 1"},
		{"SRQ dead", fabric.CheckSRQAlive(s, true), fabric.ErrClosed, "SRQ 1 on node 0"},
		{"SRQ limit", fabric.CheckSRQLimit(s, 7, 8), nil, ""},
		{"SRQ limit at depth", fabric.CheckSRQLimit(s, 8, 8), fabric.ErrInvalidArg, "SRQ 1 on node 0: limit 8 outside 0..7 (below its depth)"},
		{"SRQ limit negative", fabric.CheckSRQLimit(s, -1, 8), fabric.ErrInvalidArg, "SRQ 1 on node 0: limit -1 outside 0..7 (below its depth)"},
		{"SRQ destroy twice", fabric.CheckDestroySRQ(s, true, 0), fabric.ErrClosed, "SRQ 1 on node 0 destroyed twice"},
		{"SRQ in use", fabric.CheckDestroySRQ(s, false, 3), fabric.ErrBusy, "SRQ 1 on node 0 still has 3 queue pairs attached"},
		{"attach", fabric.CheckAttachSRQ(s, true, false, true, "x"), nil, ""},
		{"attach foreign", fabric.CheckAttachSRQ(nil, false, false, false, "this simulator's"), fabric.ErrInvalidArg, "CreateQP with a shared receive queue that is not this simulator's"},
		{"attach dead", fabric.CheckAttachSRQ(s, true, true, true, "x"), fabric.ErrClosed, "CreateQP with a destroyed shared receive queue"},
		{"attach other PD", fabric.CheckAttachSRQ(s, true, false, false, "x"), fabric.ErrInvalidArg, "SRQ 1 on node 0 belongs to another protection domain"},
		{"XRCD close twice", fabric.CheckCloseXRCD(d, true, 0), fabric.ErrClosed, "XRCD 1 on node 0 closed twice"},
		{"XRCD in use", fabric.CheckCloseXRCD(d, false, 2), fabric.ErrBusy, "XRCD 1 on node 0 still has 2 XRC SRQs and target queue pairs"},
		{"XRCD foreign", fabric.CheckXRCD("CreateSRQ", false, false), fabric.ErrInvalidArg, "CreateSRQ with an XRC domain that is not this node's"},
		{"XRCD closed", fabric.CheckXRCD("CreateQP", true, true), fabric.ErrClosed, "CreateQP with a closed XRC domain"},
		{"SRQ CQ without domain", fabric.CheckSRQCQ(fabric.SRQInit{CQ: cq}, false, false), fabric.ErrInvalidArg, "CreateSRQ with a completion queue but no XRC domain (only XRC SRQs have a CQ)"},
		{"SRQ without either", fabric.CheckSRQCQ(fabric.SRQInit{}, false, false), nil, ""},
		{"XRC SRQ CQ foreign", fabric.CheckSRQCQ(fabric.SRQInit{XRCD: xrcd}, false, false), fabric.ErrInvalidArg, "an XRC SRQ needs a completion queue of this node"},
		{"XRC SRQ CQ destroyed", fabric.CheckSRQCQ(fabric.SRQInit{XRCD: xrcd, CQ: cq}, true, true), fabric.ErrClosed, "CreateSRQ with a destroyed CQ"},
		{"XRC SRQ", fabric.CheckSRQCQ(fabric.SRQInit{XRCD: xrcd, CQ: cq}, true, false), nil, ""},
		{"XRC QP with SRQ", fabric.CheckXRCQPInit(fabric.QPInit{Type: fabric.XRCSend, SRQ: struct{ fabric.SRQ }{}}), fabric.ErrInvalidArg, "an XRC_SEND queue pair takes no shared receive queue"},
		{"XRC target without domain", fabric.CheckXRCQPInit(fabric.QPInit{Type: fabric.XRCRecv}), fabric.ErrInvalidArg, "an XRC_RECV queue pair needs an XRC domain"},
		{"XRC initiator in a domain", fabric.CheckXRCQPInit(fabric.QPInit{Type: fabric.XRCSend, XRCD: xrcd}), fabric.ErrInvalidArg, "only XRC_RECV queue pairs are created in an XRC domain"},
		{"XRC target", fabric.CheckXRCQPInit(fabric.QPInit{Type: fabric.XRCRecv, XRCD: xrcd}), nil, ""},
		{"send CQ foreign", fabric.CheckSendCQ(false, false, "this loopback device"), fabric.ErrInvalidArg, "CreateQP needs a send CQ of this loopback device"},
		{"send CQ destroyed", fabric.CheckSendCQ(true, true, "x"), fabric.ErrClosed, "CreateQP with a destroyed CQ"},
		{"send slot", fabric.CheckSendSlot(qp, 3, 4), nil, ""},
		{"send queue full", fabric.CheckSendSlot(qp, 4, 4), fabric.ErrQueueFull, "RC QP 0x100 on node 0 send queue holds 4 requests; poll completions (a slot is free again once its completion, or for an unsignaled request a later one, has been polled)"},
		{"UD send", fabric.CheckUDSend(true, true, 4096, 4096, "simulator"), nil, ""},
		{"UD send, dead AH", fabric.CheckUDSend(false, false, 1, 4096, "simulator"), fabric.ErrInvalidWR, "UD send needs a live address handle of this simulator"},
		{"UD send, other PD", fabric.CheckUDSend(true, false, 1, 4096, "x"), fabric.ErrInvalidWR, "address handle from another protection domain"},
		{"UD send above the MTU", fabric.CheckUDSend(true, true, 4097, 4096, "x"), fabric.ErrMsgTooLarge, "UD message of 4097 bytes exceeds the MTU of 4096 bytes"},
		{"size", (&fabric.SendWR{Local: fabric.SGE{Length: 1 << 31}}).CheckSize(fabric.RC, 0), nil, ""},
		{"size above 2 GiB", (&fabric.SendWR{Local: fabric.SGE{Length: 1<<31 + 1}}).CheckSize(fabric.RC, 0), fabric.ErrMsgTooLarge, "message of 2147483649 bytes exceeds 2 GiB"},
		{"inline too large", (&fabric.SendWR{Local: fabric.SGE{Length: 65}, Flags: fabric.Inline}).CheckSize(fabric.UD, 64), fabric.ErrInlineTooLarge, "65 bytes inline, queue pair allows 64"},
		{"post recv", fabric.CheckPostRecv(qp, fabric.RC, fabric.StateInit, false, nil, false), nil, ""},
		{"post recv destroyed", fabric.CheckPostRecv(qp, fabric.RC, fabric.StateInit, true, nil, false), fabric.ErrClosed, "RC QP 0x100 on node 0"},
		{"post recv XRC", fabric.CheckPostRecv(qp, fabric.XRCRecv, fabric.StateInit, false, nil, false), fabric.ErrInvalidArg, "RC QP 0x100 on node 0 has no receive queue (XRC receives are posted to an XRC SRQ)"},
		{"post recv attached", fabric.CheckPostRecv(qp, fabric.RC, fabric.StateInit, false, s, true), fabric.ErrInvalidArg, "RC QP 0x100 on node 0 takes its receives from SRQ 1 on node 0: post them there"},
		{"post recv in RESET", fabric.CheckPostRecv(qp, fabric.RC, fabric.StateReset, false, nil, false), fabric.ErrBadState, "RC QP 0x100 on node 0 is in RESET; PostRecv needs INIT or later"},
	} {
		switch {
		case tc.want == nil && tc.err != nil:
			t.Errorf("%s: %v, want nil", tc.name, tc.err)
		case tc.want == nil:
		case !errors.Is(tc.err, tc.want):
			t.Errorf("%s: %v, want %v", tc.name, tc.err, tc.want)
		case tc.err.Error() != tc.want.Error()+": "+tc.msg:
			t.Errorf("%s: %q, want %q", tc.name, tc.err.Error(), tc.want.Error()+": "+tc.msg)
		}
	}
}

// TestSRQLimitFires: the limit event fires when the receives left fall
// below an armed limit, never while disarmed.
func TestSRQLimitFires(t *testing.T) {
	for _, tc := range []struct {
		limit, left int
		want        bool
	}{{0, 0, false}, {2, 2, false}, {2, 1, true}, {1, 0, true}} {
		if got := fabric.SRQLimitFires(tc.limit, tc.left); got != tc.want {
			t.Errorf("SRQLimitFires(%d, %d) = %v, want %v", tc.limit, tc.left, got, tc.want)
		}
	}
}

// TestXRCSRQObjects: the domain is checked before the completion queue,
// and an SRQ that is not XRC gets neither.
func TestXRCSRQObjects(t *testing.T) {
	xrcd, cq := struct{ fabric.XRCD }{}, struct{ fabric.CQ }{}
	closed := func(fabric.XRCD, string) (int, error) { return 0, fabric.CheckXRCD("CreateSRQ", true, true) }
	open := func(fabric.XRCD, string) (int, error) { return 7, nil }
	local := func(x fabric.CQ) (int, bool, bool) { return 3, x != nil, false }
	foreign := func(fabric.CQ) (int, bool, bool) { return 0, false, false }
	if d, q, err := fabric.XRCSRQObjects(fabric.SRQInit{XRCD: xrcd, CQ: cq}, open, local); d != 7 || q != 3 || err != nil {
		t.Errorf("XRC SRQ: %d, %d, %v", d, q, err)
	}
	if d, q, err := fabric.XRCSRQObjects(fabric.SRQInit{}, open, local); d != 0 || q != 0 || err != nil {
		t.Errorf("plain SRQ: %d, %d, %v", d, q, err)
	}
	if _, _, err := fabric.XRCSRQObjects(fabric.SRQInit{XRCD: xrcd}, closed, foreign); !errors.Is(err, fabric.ErrClosed) {
		t.Errorf("closed domain and foreign CQ: %v, want ErrClosed (the domain first)", err)
	}
	if d, _, err := fabric.XRCSRQObjects(fabric.SRQInit{XRCD: xrcd}, open, foreign); d != 0 || !errors.Is(err, fabric.ErrInvalidArg) {
		t.Errorf("foreign CQ: %d, %v, want ErrInvalidArg", d, err)
	}
	if _, _, err := fabric.XRCSRQObjects(fabric.SRQInit{CQ: cq}, open, local); !errors.Is(err, fabric.ErrInvalidArg) {
		t.Errorf("CQ without a domain: %v, want ErrInvalidArg", err)
	}
}

// TestDomainAndRegionLifecycle walks a protection domain and a memory
// region through their lives as the backends drive them: a step's
// sentinel (nil: none), and the domain's users and deadness after it.
func TestDomainAndRegionLifecycle(t *testing.T) {
	var d fabric.Domain
	r := &fabric.Region{Node: 1, Key: 0x142, Base: 4096, Access: fabric.AccessLocalWrite, Domain: &d}
	for _, step := range []struct {
		name  string
		do    func() error
		want  error
		users int
		dead  bool
	}{
		{"register out of range", func() error { return d.Register(0, 64, 0, "") }, fabric.ErrInvalidArg, 0, false},
		{"register", func() error { return d.Register(64, 64, fabric.AccessLocalWrite, "") }, nil, 1, false},
		{"free in use", d.Free, fabric.ErrBusy, 1, false},
		{"deregister", r.Deregister, nil, 0, false},
		{"deregister twice", r.Deregister, fabric.ErrClosed, 0, false},
		{"free", d.Free, nil, 0, true},
		{"free twice", d.Free, fabric.ErrClosed, 0, true},
		{"register on a freed domain", func() error { return d.Register(64, 64, 0, "") }, fabric.ErrClosed, 0, true},
	} {
		err := step.do()
		if step.want == nil && err != nil || step.want != nil && !errors.Is(err, step.want) {
			t.Fatalf("%s: %v, want %v", step.name, err, step.want)
		}
		if d.Users() != step.users || d.Dead() != step.dead {
			t.Fatalf("%s: domain has %d users, dead %v; want %d, %v", step.name, d.Users(), d.Dead(), step.users, step.dead)
		}
	}
	if !r.Dead() || r.String() != "MR(node 1, key 0x142)" || r.SGE(8, 16) != (fabric.SGE{Addr: 4104, Length: 16, LKey: 0x142}) {
		t.Errorf("region after its life: dead %v, %v, %+v", r.Dead(), r, r.SGE(8, 16))
	}
	for _, tc := range []struct {
		addr, n uint64
		off     uint64
		ok      bool
	}{
		{4096, 64, 0, true}, {4100, 60, 4, true}, {4100, 61, 0, false}, {4095, 1, 0, false}, {^uint64(0), 2, 0, false},
	} {
		if off, ok := r.Offset(tc.addr, tc.n, 64); off != tc.off || ok != tc.ok {
			t.Errorf("Offset(%d, %d) in 64 bytes at 4096 = %d, %v; want %d, %v", tc.addr, tc.n, off, ok, tc.off, tc.ok)
		}
	}
}

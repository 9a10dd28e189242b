package sim_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// TestCheckerFindsHazards runs a deliberately broken endpoint that commits
// every hazard the verbs-usage checker knows, and checks that each is
// reported with the thread and the operation.
func TestCheckerFindsHazards(t *testing.T) {
	c := newCluster(t, sim.Config{Nodes: 2, Seed: 1})
	a := newEndpoint(t, c.Node(0), fabric.RC, 1<<16)
	b := newEndpoint(t, c.Node(1), fabric.RC, 1<<16)
	connectPair(t, a, b, 0, 0, 14, 7)
	// A UD pair: node 1's queue pair never posts a receive.
	ua, ub := brokenUDPair(t, c)
	ah, err := ua.pd.CreateAH(ub.qp.Info().Address())
	if err != nil {
		t.Fatal(err)
	}
	wcs := make([]fabric.WC, 8)
	await := func(th fabric.Thread, cq fabric.CQ, n int) error {
		for got := 0; got < n; {
			k, err := cq.Poll(wcs)
			if err != nil {
				return err
			}
			got += k
			if k == 0 {
				th.Wait(th.Now().Add(fabric.Millisecond), cq)
			}
		}
		return nil
	}
	err = c.Run(func(th fabric.Thread) error {
		if th.Node().ID() == 1 {
			// The receiver: three receives; it scribbles on the second
			// while it is posted, and deregisters a region a posted
			// receive names.
			for i := 0; i < 3; i++ {
				if _, err := b.qp.PostRecv([]fabric.RecvWR{{ID: uint64(i), Local: b.mr.SGE(i*8192, 4096)}}); err != nil {
					return err
				}
			}
			b.mr.Bytes()[8200] = 1
			// Late enough that node 0's UD messages (5 below) have found
			// no receive; a message that took this one would put the
			// queue pair in the error state instead.
			th.Busy(60 * fabric.Microsecond)
			m2, err := ub.pd.RegMR(4096, fabric.AccessLocalWrite)
			if err != nil {
				return err
			}
			if _, err := ub.qp.PostRecv([]fabric.RecvWR{{ID: 9, Local: m2.SGE(0, 4096)}}); err != nil {
				return err
			}
			return m2.Dereg()
		}
		th.Busy(10 * fabric.Microsecond)
		// 1. A send buffer changed before the NIC has read it.
		send := func(off int) error {
			_, err := a.qp.PostSend([]fabric.SendWR{{ID: uint64(off), Op: fabric.OpSend, Local: a.mr.SGE(off, 4096), Flags: fabric.Signaled}})
			return err
		}
		if err := send(0); err != nil {
			return err
		}
		a.mr.Bytes()[10]++
		if err := await(th, a.scq, 1); err != nil {
			return err
		}
		// 2. A message into the receive the receiver scribbled on.
		if err := send(4096); err != nil {
			return err
		}
		if err := await(th, a.scq, 1); err != nil {
			return err
		}
		// 3. An RDMA Write into a buffer posted as a receive.
		if _, err := a.qp.PostSend([]fabric.SendWR{{ID: 3, Op: fabric.OpWrite, Local: a.mr.SGE(0, 64), Flags: fabric.Signaled,
			RemoteAddr: b.mr.Addr() + 16384 + 128, RKey: b.mr.RKey()}}); err != nil {
			return err
		}
		if err := await(th, a.scq, 1); err != nil {
			return err
		}
		// 4. Two more sends: one takes the last receive, one finds none (RNR).
		if err := send(8192); err != nil {
			return err
		}
		if err := send(12288); err != nil {
			return err
		}
		// 5. Unsignaled UD sends that fill the send queue (depth 4),
		// then one more (queue full); they find no receive.
		for i := 0; i < 5; i++ {
			_, err := ua.qp.PostSend([]fabric.SendWR{{ID: 7, Op: fabric.OpSend, Local: ua.mr.SGE(0, 256), AH: ah, RemoteQPN: ub.qp.QPN(), QKey: checkQKey}})
			if i < 4 && err != nil {
				return err
			}
			if i == 4 && !errors.Is(err, fabric.ErrQueueFull) {
				return errors.New("the fifth post on a queue of four was accepted")
			}
		}
		th.Wait(th.Now().Add(100*fabric.Microsecond), a.scq)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	c.Advance(fabric.Millisecond) // the last packets arrive
	open := c.ReportOpen()        // 6. nothing was freed
	if len(open) < 10 {
		t.Fatalf("open objects: %v", open)
	}
	want := []struct {
		kind       sim.FindingKind
		thread, op string
		detail     string
	}{
		{sim.SendBufferModified, "n0/main", "PostSend", "detected when the NIC read it"},
		{sim.RecvBufferModified, "n1/main", "PostRecv", "detected when a message arrived"},
		{sim.WriteIntoPostedRecv, "NIC", "RDMA Write", "overlaps bytes [16384, 20480) posted as a receive"},
		{sim.RNRNak, "NIC", "receive", "found no receive posted"},
		{sim.UnsignaledWrap, "n0/main", "PostSend", "4 unsignaled requests in a row"},
		{sim.QueueFull, "n0/main", "PostSend", "rejected: ErrQueueFull"},
		{sim.NoRecvDrop, "NIC", "receive", "found no receive posted"},
		{sim.CQCanOverflow, "driver", "CreateQP", "CQ of depth 2"},
		{sim.DeregBusy, "n1/main", "Dereg", "1 posted work requests name it"},
		{sim.StillOpen, "driver", "end of run", "was never freed"},
	}
	got := c.Findings()
	for _, w := range want {
		found := false
		for _, f := range got {
			found = found || f.Kind == w.kind && f.Thread == w.thread && f.Op == w.op && strings.Contains(f.Detail, w.detail)
		}
		if !found {
			t.Errorf("no %v finding by %s in %s mentioning %q", w.kind, w.thread, w.op, w.detail)
		}
	}
	if t.Failed() {
		for _, f := range got {
			t.Log(f)
		}
	}
	if err := c.CheckError(); !errors.Is(err, sim.ErrVerbsUsage) || !strings.Contains(err.Error(), "send buffer modified before completion") {
		t.Fatalf("CheckError: %v", err)
	}
}

// brokenUDPair makes a UD queue pair on each of nodes 0 and 1; node 0's has a
// send queue of 4 on a CQ of 2 (a CQ that can overflow).
func brokenUDPair(t *testing.T, c *sim.Cluster) (*endpoint, *endpoint) {
	t.Helper()
	var eps [2]*endpoint
	for i := range eps {
		e := &endpoint{}
		dev := c.Node(i).Device()
		var err error
		if e.pd, err = dev.AllocPD(); err != nil {
			t.Fatal(err)
		}
		depth := 64
		if i == 0 {
			depth = 2
		}
		if e.scq, err = dev.CreateCQ(depth); err != nil {
			t.Fatal(err)
		}
		e.rcq = e.scq
		if e.mr, err = e.pd.RegMR(4096, fabric.AccessLocalWrite); err != nil {
			t.Fatal(err)
		}
		if e.qp, err = e.pd.CreateQP(fabric.QPInit{Type: fabric.UD, SendCQ: e.scq, RecvCQ: e.rcq,
			Caps: fabric.QPCaps{MaxSendWR: 4, MaxRecvWR: 1 + i}}); err != nil {
			t.Fatal(err)
		}
		for _, s := range []fabric.QPState{fabric.StateInit, fabric.StateRTR, fabric.StateRTS} {
			if err := e.qp.Modify(s, fabric.QPAttr{QKey: checkQKey}); err != nil {
				t.Fatal(err)
			}
		}
		eps[i] = e
	}
	return eps[0], eps[1]
}

// TestCheckerOff: with NoCheck nothing is recorded, and the trace is the
// same as with the checker on (it only observes).
func TestCheckerOff(t *testing.T) {
	var hashes []uint64
	for _, off := range []bool{false, true} {
		c := newCluster(t, sim.Config{Nodes: 2, Seed: 3, NoCheck: off})
		a := newEndpoint(t, c.Node(0), fabric.RC, 1<<16)
		b := newEndpoint(t, c.Node(1), fabric.RC, 1<<16)
		connectPair(t, a, b, 0, 0, 14, 7)
		if _, err := a.qp.PostSend([]fabric.SendWR{{ID: 1, Op: fabric.OpSend, Local: a.mr.SGE(0, 4096), Flags: fabric.Signaled}}); err != nil {
			t.Fatal(err)
		}
		c.Advance(100 * fabric.Microsecond)
		if n := len(c.Findings()); off && n != 0 || !off && n == 0 {
			t.Fatalf("checker off=%v: %d findings", off, n)
		}
		hashes = append(hashes, c.TraceHash())
	}
	if hashes[0] != hashes[1] {
		t.Fatal("the checker changed the trace")
	}
}

const checkQKey = 0x11

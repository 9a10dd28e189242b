package algos_test

import (
	"fmt"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// wrRun is what one small shuffle through an endpoint design produced:
// the simulator's trace hash and every node's endpoint counters, summed.
type wrRun struct {
	trace uint64
	info  algos.EndpointInfo
}

// runDesign runs one repartition shuffle (3 EDR nodes, one sending and
// one receiving thread each, 4 KiB messages unless cfg sets a size)
// through the endpoints open makes with cfg, checks the tallies and
// returns the trace hash and the summed endpoint counters.
func runDesign(t *testing.T, open func(fabric.Thread, algos.Config) (algos.Endpoint, error), cfg algos.Config, cycles int64) wrRun {
	t.Helper()
	return runShuffle(t, 3, open, cfg, cycles)
}

// runShuffle is runDesign on a cluster of the given size.
func runShuffle(t *testing.T, nodes int, open func(fabric.Thread, algos.Config) (algos.Endpoint, error), cfg algos.Config, cycles int64) wrRun {
	t.Helper()
	prof, err := sim.LoadProfile("edr-cx4")
	if err != nil {
		t.Fatal(err)
	}
	c, err := sim.New(sim.Config{Nodes: nodes, Profile: prof, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	g, err := algos.NewGroups(algos.Repartition, nodes)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Nodes = nodes
	if cfg.MsgBytes == 0 {
		cfg.MsgBytes = 4096
	}
	sent, got := make([][]algos.Tally, nodes), make([][]algos.Tally, nodes)
	infos := make([]algos.EndpointInfo, nodes)
	err = c.Run(func(th fabric.Thread) error {
		me := th.Node().ID()
		ep, err := open(th, cfg)
		if err != nil {
			return err
		}
		done := th.Node().NewSignal()
		var rerr error
		finished := false
		th.Spawn("receive", 1, func(rt fabric.Thread) error {
			st, err := algos.Receive(rt, ep, nodes, cycles)
			got[me], rerr, finished = st.From, err, true
			done.Notify()
			return err
		})
		rel := algos.Relation{Seed: 9, Node: me, Tuples: 20000}
		s, err := algos.Shuffle(th, ep, algos.ShuffleInput{Rel: rel, From: 0, To: rel.Tuples}, g, func() bool { return true })
		if err != nil {
			return err
		}
		sent[me] = s
		for !finished {
			th.Wait(fabric.Forever, done)
		}
		if rerr != nil {
			return rerr
		}
		infos[me] = ep.Info()
		return ep.Close(th)
	})
	if err != nil {
		t.Fatal(err)
	}
	var r wrRun
	for s := 0; s < nodes; s++ {
		r.info.Add(infos[s])
		for d := 0; d < nodes; d++ {
			if sent[s][d] != got[d][s] {
				t.Fatalf("node %d to %d: sent %+v, received %+v", s, d, sent[s][d], got[d][s])
			}
		}
	}
	r.trace = c.TraceHash()
	return r
}

// TestMQWRCWIsTodaysProtocol: MQ/WR+cw is the RDMA Write design as it was
// before MQ/WR returned slots through FreeArr, event for event: with
// polling not charged (the model of that time), a small shuffle of each
// notification variant left the simulator's trace hash it left then. The
// hashes were taken again when the QP context cache model changed under
// both (set-associative, overlapping fetches), and again when a lock's
// hand-off became a measured cost by core placement, and again when a
// payload fetch began to cost a PCIe round trip, and again when a received
// packet's payload began to be written to host memory before it is
// delivered, and again when the control-path costs (creating completion
// queues and queue pairs) came from the evidence suite, so they now pin
// the credit-word design on the current model.
func TestMQWRCWIsTodaysProtocol(t *testing.T) {
	for _, tc := range []struct {
		notify algos.Notify
		every  int
		trace  uint64
	}{
		{algos.NotifyCQ, 1, 0xe2f60cdd59cd01b4},
		{algos.NotifyCQ, 2, 0x503a8a62bf87fd4b},
		{algos.NotifyBuffers, 1, 0x177900582828e32a},
		{algos.NotifyBuffers, 2, 0x2f95dc103c873f0e},
		{algos.NotifyQueue, 1, 0x177900582828e32a},
		{algos.NotifyQueue, 2, 0x2f95dc103c873f0e},
	} {
		t.Run(fmt.Sprintf("%s/f=%d", tc.notify, tc.every), func(t *testing.T) {
			r := runDesign(t, algos.OpenMQWRCW, algos.Config{Buffers: 2, CreditEvery: tc.every, Notify: tc.notify, PollLineCycles: -1}, 0)
			if r.trace != tc.trace {
				t.Fatalf("trace %#x, want %#x: MQ/WR+cw no longer behaves as the credit-word design did", r.trace, tc.trace)
			}
			if r.info.FreeWrites != 0 {
				t.Fatalf("%d FreeArr writes: MQ/WR+cw returns slots through the credit word only", r.info.FreeWrites)
			}
		})
	}
}

// TestFreeArrWrites counts the RDMA Writes of a transfer: MQ/WR returns
// every slot with a FreeArr write of its own (one per transfer, whatever
// the notification variant), so poll-buffers and poll-queue spend 3 (data,
// notice, FreeArr) and poll-CQ 2 + 1/f (data with immediate, FreeArr, and
// a credit write every f receives); MQ/WR+cw writes no FreeArr entry.
func TestFreeArrWrites(t *testing.T) {
	for _, tc := range []struct {
		name   string
		open   func(fabric.Thread, algos.Config) (algos.Endpoint, error)
		notify algos.Notify
		every  int
		free   float64 // FreeArr writes per transfer
		lo, hi float64 // RDMA Writes per transfer
	}{
		{"MQ/WR cq f=1", algos.OpenMQWR, algos.NotifyCQ, 1, 1, 3, 3.1},
		{"MQ/WR cq f=2", algos.OpenMQWR, algos.NotifyCQ, 2, 1, 2.5, 2.6},
		{"MQ/WR buffers", algos.OpenMQWR, algos.NotifyBuffers, 2, 1, 3, 3},
		{"MQ/WR queue", algos.OpenMQWR, algos.NotifyQueue, 2, 1, 3, 3},
		{"MQ/WR+cw cq f=2", algos.OpenMQWRCW, algos.NotifyCQ, 2, 0, 1.5, 1.6},
		{"MQ/WR+cw queue", algos.OpenMQWRCW, algos.NotifyQueue, 2, 0, 2.5, 2.6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			i := runDesign(t, tc.open, algos.Config{Buffers: 2, CreditEvery: tc.every, Notify: tc.notify}, 0).info
			if i.Transfers == 0 {
				t.Fatal("no transfers")
			}
			tr := float64(i.Transfers)
			free := float64(i.FreeWrites) / tr
			writes := float64(i.Transfers+i.NoticeWrites+i.CreditWrites+i.FreeWrites) / tr
			if free != tc.free || writes < tc.lo || writes > tc.hi {
				t.Fatalf("%d transfers: %.3f FreeArr writes and %.3f RDMA Writes per transfer, want %.0f and %.2f-%.2f (%+v)",
					i.Transfers, free, writes, tc.free, tc.lo, tc.hi, i)
			}
		})
	}
}

// TestPollBuffersScansEverySeal: MQ/WR's poll-buffers receiver cannot know
// which slot a source writes next (slots return out of order), so every
// scan reads the seal of all n*k slots; MQ/WR+cw reads only the next slot
// of each source (and the ones after it that have arrived).
func TestPollBuffersScansEverySeal(t *testing.T) {
	const nodes, k = 3, 4
	for _, tc := range []struct {
		name  string
		open  func(fabric.Thread, algos.Config) (algos.Endpoint, error)
		every bool // every scan reads n*k seals
	}{
		{"MQ/WR", algos.OpenMQWR, true},
		{"MQ/WR+cw", algos.OpenMQWRCW, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			i := runDesign(t, tc.open, algos.Config{Buffers: k, CreditEvery: 2, Notify: algos.NotifyBuffers}, 0).info
			if i.NoticeScans == 0 {
				t.Fatal("no scans")
			}
			per := float64(i.NoticeLines) / float64(i.NoticeScans)
			if got := per == nodes*k; got != tc.every || per > nodes*k {
				t.Fatalf("%.2f seals read per scan (%d scans), n*k = %d", per, i.NoticeScans, nodes*k)
			}
		})
	}
}

// holdRun opens design on 2 nodes (Buffers per destination, credit every
// receive, a 300 us timeout): node 0 sends three buffers to node 1; node 1
// takes the first take deliveries, releases those release names (by
// position) and holds the others for 2 ms. It returns the error of node
// 0's third Acquire and PutData: nil if a buffer and a slot came back in
// time.
func holdRun(t *testing.T, open func(fabric.Thread, algos.Config) (algos.Endpoint, error), buffers, take int, release []int, notify algos.Notify) error {
	t.Helper()
	prof, err := sim.LoadProfile("edr-cx4")
	if err != nil {
		t.Fatal(err)
	}
	c, err := sim.New(sim.Config{Nodes: 2, Profile: prof, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var third error
	err = c.Run(func(th fabric.Thread) error {
		ep, err := open(th, algos.Config{Nodes: 2, MsgBytes: 4096, Buffers: buffers, CreditEvery: 1, Notify: notify, Timeout: 300 * fabric.Microsecond})
		if err != nil {
			return err
		}
		if th.Node().ID() == 1 {
			var ds []algos.Delivery
			for range take {
				d, err := ep.GetData(th)
				if err != nil {
					return err
				}
				ds = append(ds, d)
			}
			for _, i := range release {
				if err := ep.Release(th, ds[i]); err != nil {
					return err
				}
			}
			th.Busy(2 * fabric.Millisecond) // hold the rest
			return nil
		}
		for i := 0; i < 3; i++ {
			b, err := ep.Acquire(th)
			if err == nil {
				err = ep.PutData(th, b, []int{1}, algos.MoreData)
			}
			if i == 2 {
				third = err
			} else if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return third
}

// TestSlotReuseWaitsForRelease: a sender reuses a buffer (MQ/RD) or a
// slot of the receiver (MQ/WR) only once the receiver has released it:
// MQ/RD writes FreeArr at Release (Liu17 Algorithm 3), not when its read
// completes; MQ/WR returns each slot on its own, so releasing a later
// slot frees it while an earlier one is held, where MQ/WR+cw's credit
// counts slots in ring order and must wait for the held one.
func TestSlotReuseWaitsForRelease(t *testing.T) {
	for _, tc := range []struct {
		name    string
		open    func(fabric.Thread, algos.Config) (algos.Endpoint, error)
		notify  algos.Notify
		buffers int
		take    int
		release []int
		reuse   bool
	}{
		{"MQ/RD read and held", algos.OpenMQRD, "", 1, 1, nil, false},
		{"MQ/RD read and released", algos.OpenMQRD, "", 1, 1, []int{0}, true},
		{"MQ/WR cq both held", algos.OpenMQWR, algos.NotifyCQ, 2, 2, nil, false},
		{"MQ/WR cq second released", algos.OpenMQWR, algos.NotifyCQ, 2, 2, []int{1}, true},
		{"MQ/WR buffers second released", algos.OpenMQWR, algos.NotifyBuffers, 2, 2, []int{1}, true},
		{"MQ/WR queue second released", algos.OpenMQWR, algos.NotifyQueue, 2, 2, []int{1}, true},
		{"MQ/WR+cw cq second released", algos.OpenMQWRCW, algos.NotifyCQ, 2, 2, []int{1}, false},
		{"MQ/WR+cw cq first released", algos.OpenMQWRCW, algos.NotifyCQ, 2, 2, []int{0}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := holdRun(t, tc.open, tc.buffers, tc.take, tc.release, tc.notify)
			if tc.reuse && err != nil {
				t.Fatalf("the sender could not reuse the released buffer or slot: %v", err)
			}
			if !tc.reuse && err == nil {
				t.Fatal("the sender reused a buffer or slot the receiver still holds")
			}
		})
	}
}

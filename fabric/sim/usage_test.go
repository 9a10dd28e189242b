package sim_test

import (
	"math"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// TestUsageCountsBusyTime: a stream of RDMA Writes from node 0 to node 1
// keeps node 0's uplink and node 1's downlink busy for the wire bytes'
// serialization, node 0's PCIe for the payload's DMA reads, node 1's
// receive pipeline for each packet, and node 0's processing units for one
// request time per work request; node 1 sends only acknowledgements.
func TestUsageCountsBusyTime(t *testing.T) {
	c := newCluster(t, sim.Config{Nodes: 2, Seed: 1})
	a := newEndpoint(t, c.Node(0), fabric.RC, 1<<20)
	b := newEndpoint(t, c.Node(1), fabric.RC, 1<<20)
	connectPair(t, a, b, 0, 0, 14, 7)
	before := c.Usage()
	const writes, size = 16, 64 << 10
	var wrs []fabric.SendWR
	for i := range writes {
		wrs = append(wrs, fabric.SendWR{ID: uint64(i), Op: fabric.OpWrite, Local: a.mr.SGE(i*size, size),
			RemoteAddr: b.mr.Addr() + uint64(i*size), RKey: b.mr.RKey()})
	}
	wrs[len(wrs)-1].Flags = fabric.Signaled
	if _, err := a.qp.PostSend(wrs); err != nil {
		t.Fatal(err)
	}
	c.Advance(time1ms)
	if wcs, err := drain(a.scq); err != nil || len(wcs) != 1 {
		t.Fatalf("completions %v, %v", wcs, err)
	}
	u := c.Usage()
	st := c.Stats()
	prof := sim.DefaultProfile()
	wire := float64(st.WireBytes) * 8 / prof.DataRateBps() * 1e12 // ps for every byte sent, both nodes (the rate is in bits)
	send, ack := u.Nodes[0].Uplink-before.Nodes[0].Uplink, u.Nodes[1].Uplink-before.Nodes[1].Uplink
	if d := math.Abs(float64(send+ack)-wire) / wire; d > 0.01 {
		t.Errorf("uplinks busy %v + %v, want about %v ps of serialization", send, ack, wire)
	}
	if ack >= send/20 {
		t.Errorf("node 1 (acknowledgements only) sent for %v, node 0 for %v", ack, send)
	}
	if got := u.Nodes[1].Downlink - before.Nodes[1].Downlink; got != send {
		t.Errorf("node 1's downlink busy %v, want node 0's uplink's %v (one switch hop, same rate)", got, send)
	}
	dma := float64(writes*size) / prof.PCIe.GBps * 1e3 // ps
	if got := float64(u.Nodes[0].PCIeRead - before.Nodes[0].PCIeRead); math.Abs(got-dma)/dma > 0.01 {
		t.Errorf("node 0's PCIe reads %v ps, want about %v", got, dma)
	}
	if u.Nodes[1].Rx-before.Nodes[1].Rx < fabric.Duration(dma*0.99) {
		t.Errorf("node 1's receive pipeline busy %v, less than the payload's DMA time %v ps", u.Nodes[1].Rx-before.Nodes[1].Rx, dma)
	}
	wqe := fabric.Duration(writes * prof.NIC.WQENS * 1000)
	var units fabric.Duration
	for k, d := range u.Nodes[0].Units {
		units += d - before.Nodes[0].Units[k]
	}
	if units != wqe {
		t.Errorf("node 0's processing units busy %v, want %d requests x %v ns = %v", units, writes, prof.NIC.WQENS, wqe)
	}
	if len(u.Nodes[0].Units) != prof.NIC.ProcessingUnits || u.Trunk != 0 {
		t.Errorf("units %d (want %d), trunk %v on a single switch", len(u.Nodes[0].Units), prof.NIC.ProcessingUnits, u.Trunk)
	}
}

const time1ms = fabric.Millisecond

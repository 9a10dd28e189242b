package sim

import (
	"slices"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// NodeUsage is how long one node's link and NIC units were busy since the
// cluster was built. Divided by a run's duration, each is a utilisation:
// the one near 1 is what limited the run (a design's bottleneck).
type NodeUsage struct {
	Uplink   fabric.Duration // the node's link to its switch, sending
	Downlink fabric.Duration // the switch port cabled to the node, sending to it
	// Each NIC processing unit's time processing work requests, and
	// its time held waiting for a context or translation fetch (a queue
	// pair is served by one unit, so the busiest unit can limit a run
	// while the others idle).
	Units, UnitsWait []fabric.Duration
	Rx               fabric.Duration // the receive pipeline moving packets into host memory
	PCIeRead         fabric.Duration // DMA reads of payload over PCIe
}

// Usage is what a cluster's links and NICs were busy with.
type Usage struct {
	Nodes []NodeUsage
	// Trunk is the busiest cable between two switches (sending, either
	// direction); 0 on a single switch.
	Trunk fabric.Duration
}

// Usage returns the busy times so far.
func (c *Cluster) Usage() Usage {
	n := c.net
	u := Usage{Nodes: make([]NodeUsage, len(c.nodes))}
	for i, nd := range c.nodes {
		x := &nd.nic.use
		u.Nodes[i] = NodeUsage{Uplink: n.up[i].busy, Units: slices.Clone(x.units), UnitsWait: slices.Clone(x.unitsWait), Rx: x.rx, PCIeRead: x.pcieRead}
	}
	for s := range n.sws {
		for _, o := range n.sws[s].out {
			switch {
			case o.toNode >= 0:
				u.Nodes[o.toNode].Downlink += o.busy
			case o.toSw >= 0:
				u.Trunk = max(u.Trunk, o.busy)
			}
		}
	}
	return u
}

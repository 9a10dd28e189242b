package sim

import (
	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim/trace"
)

// Tracer sees every event a cluster fires, in order, with who it belongs
// to (Config.Trace): exactly what the trace hash is made of, so that
// trace.Hasher over the events gives Cluster.TraceHash. A trace.Writer is
// one. A tracer only observes: it changes no result.
type Tracer interface {
	Event(trace.Event)
}

// qpEventNames and netEventNames name the events of a queue pair (by the
// top byte of the argument) and of the network (by its low byte).
var (
	qpEventNames  = map[uint64]string{qpDoorbell: "doorbell", qpTxDone: "tx-done", qpTimer: "timer", qpRNR: "rnr-wait", qpReady: "wr-ready"}
	netEventNames = map[uint64]string{evSwitch: "switch-in", evDeliver: "deliver", evDirect: "direct-out", evPort: "port-head", evOutFree: "output-free", evHop: "hop"}
)

// traceEvent describes a fired queue event to the tracer.
func (c *Cluster) traceEvent(at fabric.Time, b *evBody) {
	e := trace.Event{At: at, Source: trace.Source(kindOf(b.h)), Arg: b.arg, Pkt: tracePacket(b.p)}
	switch h := b.h.(type) {
	case *thread:
		e.Node, e.Unit, e.Name, e.What = h.node.id, uint64(h.nameID), h.name, "wake"
	case *network:
		e.Node, e.Unit, e.What, e.Value = -1, b.arg>>8, netEventNames[b.arg&0xff], b.arg>>8
		if b.arg&0xff == evSwitch && b.p != nil {
			// A packet from a host: the argument holds no port; the
			// host's switch port is the one it enters.
			a := h.attach[b.p.src]
			e.Unit, e.Value = uint64(h.sws[a.sw].base+a.port), 0
		}
	case *nic:
		e.Node, e.What = h.node.id, "tx-step"
	case *qp:
		e.Node, e.Unit, e.What, e.Value = h.nic.node.id, uint64(h.qpn), qpEventNames[b.arg&^valMask], b.arg&valMask
	default:
		e.Node, e.What = -1, "event"
	}
	c.tracer.Event(e)
}

// traceDeadline tells the tracer that th's Wait deadline passed at at.
func (c *Cluster) traceDeadline(at fabric.Time, th *thread) {
	c.tracer.Event(trace.Event{At: at, Source: trace.Deadline, Node: th.node.id, Unit: uint64(th.nameID), Name: th.name, What: "wait-deadline"})
}

// traceDelivery tells the tracer that p reached its destination NIC.
func (c *Cluster) traceDelivery(p *packet) {
	c.tracer.Event(trace.Event{At: c.now, Source: trace.Delivery, Node: p.dst, Unit: uint64(p.dstQPN), What: "rx", Pkt: tracePacket(p)})
}

func tracePacket(p *packet) trace.Packet {
	if p == nil {
		return trace.Packet{}
	}
	return trace.Packet{ID: p.id, Src: p.src, Dst: p.dst, DstQPN: p.dstQPN, Op: p.op.String(), PSN: uint32(p.psn), Bytes: p.n}
}

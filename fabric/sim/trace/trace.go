// Package trace records the event sequence of a simulated run and finds
// where two runs first part.
//
// The simulator (fabric/sim) hashes every event it fires into a trace hash
// (sim.Cluster.TraceHash), which the golden records pin. A hash says only
// that two runs differ; a trace says where: it holds, in order, exactly
// what the hash is made of (each event's time, source and argument, each
// passed Wait deadline, each packet delivered to a NIC), together with who
// the event belongs to (node, thread, queue pair, switch port) and the
// packet it carries, so that Hash over a trace gives the run's trace hash
// and Diff names the first event where two traces disagree.
//
// A trace file is gzip-compressed: a magic line, a JSON header describing
// the run, then one varint-coded record per event (File format below).
// The package holds data and files only; it knows nothing of the
// simulator's internals.
package trace

import (
	"fmt"
	"strings"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// Source is what fired an event: the simulator's handler kinds (the
// numbers it hashes), and the two records that are not queue events.
type Source uint8

// Sources. The first five are the simulator's handler kinds and must keep
// their numbers: the trace hash is made of them.
const (
	Thread   Source = 1  // a thread woken by an event
	Network  Source = 2  // the network: a switch, a port, a delivery
	NIC      Source = 3  // a NIC's transmit step
	QP       Source = 4  // a queue pair: doorbell, transmit done, timer
	Other    Source = 9  // any other handler (tests)
	Deadline Source = 16 // a thread's Wait deadline passed
	Delivery Source = 17 // a packet reached its destination NIC
)

var sourceNames = map[Source]string{Thread: "thread", Network: "network", NIC: "nic", QP: "qp", Other: "other", Deadline: "deadline", Delivery: "delivery"}

// MarshalText writes a source by name (JSON output of traces).
func (s Source) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

func (s Source) String() string {
	if n, ok := sourceNames[s]; ok {
		return n
	}
	return fmt.Sprintf("source(%d)", uint8(s))
}

// Packet is the identity of a packet an event carries or delivers.
type Packet struct {
	ID     uint64 `json:"id"` // the simulator's packet number (0: no packet)
	Src    int    `json:"src"`
	Dst    int    `json:"dst"` // node ids
	DstQPN uint32 `json:"dst_qpn"`
	Op     string `json:"op"` // SEND, WRITE, READ_REQ, READ_RESP, ACK, NAK
	PSN    uint32 `json:"psn"`
	Bytes  int    `json:"bytes"` // payload bytes
}

// Event is one record of a trace.
type Event struct {
	At     fabric.Time `json:"at_ps"`
	Source Source      `json:"source"`
	// Arg is the event's argument as the simulator hashes it (its
	// meaning depends on the source; What and Value decode it).
	Arg uint64 `json:"arg"`
	// Node is the node the event belongs to; -1 for a switch.
	Node int `json:"node"`
	// Unit is the component within the node or network: a queue pair
	// number, a global switch port, a thread's name number; 0 for a NIC.
	Unit uint64 `json:"unit"`
	// Name is the thread's name for thread events and deadlines.
	Name string `json:"name,omitempty"`
	// What says what happened ("doorbell", "hop", "wake", ...) and Value
	// is its decoded argument (a send-queue position, a port number).
	What  string `json:"what"`
	Value uint64 `json:"value,omitempty"`
	// Pkt is the packet the event carries or delivers (Pkt.ID 0: none).
	Pkt Packet `json:"packet,omitzero"`
}

// Who names the component an event belongs to.
func (e *Event) Who() string {
	switch {
	case e.Source == Thread || e.Source == Deadline:
		return e.Name
	case e.Source == QP:
		return fmt.Sprintf("n%d qp %#x", e.Node, e.Unit)
	case e.Source == NIC:
		return fmt.Sprintf("n%d nic", e.Node)
	case e.Source == Delivery:
		return fmt.Sprintf("n%d nic rx", e.Node)
	case e.Node < 0:
		return fmt.Sprintf("switch port %d", e.Unit)
	}
	return fmt.Sprintf("n%d", e.Node)
}

// String renders an event on one line (without its position in the run).
func (e *Event) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%15s %-8s %-18s %s", Microseconds(e.At), e.Source, e.Who(), e.What)
	if e.Value != 0 {
		fmt.Fprintf(&b, " %d", e.Value)
	}
	if p := e.Pkt; p.ID != 0 {
		fmt.Fprintf(&b, "  pkt %d %s n%d->n%d qp %#x psn %d %dB", p.ID, p.Op, p.Src, p.Dst, p.DstQPN, p.PSN, p.Bytes)
	}
	return b.String()
}

// Microseconds renders a time exactly, in microseconds with picosecond
// digits ("1314.210345us"), so that two times that differ by a
// picosecond print differently.
func Microseconds(t fabric.Time) string {
	sign := ""
	if t < 0 {
		sign, t = "-", -t
	}
	return fmt.Sprintf("%s%d.%06dus", sign, int64(t)/1e6, int64(t)%1e6)
}

// Hasher computes the simulator's trace hash from a trace's events, in
// the simulator's own order of mixing.
type Hasher struct{ h uint64 }

// NewHasher starts a hash as a fresh cluster does.
func NewHasher() *Hasher { return &Hasher{h: 14695981039346656037} }

func (h *Hasher) mix(v uint64) { h.h = (h.h ^ v) * 1099511628211 }

// Add mixes one event.
func (h *Hasher) Add(e *Event) {
	switch e.Source {
	case Deadline:
		h.mix(uint64(e.At))
	case Delivery:
		h.mix(e.Pkt.ID)
	default:
		h.mix(uint64(e.At))
		h.mix(e.Arg ^ uint64(e.Source)<<56)
	}
}

// Sum is the hash of the events added so far.
func (h *Hasher) Sum() uint64 { return h.h }

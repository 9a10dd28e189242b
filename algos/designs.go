package algos

import (
	"fmt"
	"github.com/rdmashuffle/rdmashuffle/internal/setting"
	"strings"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// This file is the catalogue of the endpoint designs this package
// implements: one descriptor per design, saying what it is built of, what
// it accepts, and how to open it. Everything above (runs, sweeps, the
// judge, the command line) asks a descriptor instead of reading a design's
// name.

// Family groups designs by where they come from.
type Family string

// Families.
const (
	FamilyDesign   Family = "design"   // one of Liu19's eight endpoint designs
	FamilyVariant  Family = "variant"  // our improvement on one of them
	FamilyBaseline Family = "baseline" // what Liu19 compares them with
	FamilyPeer     Family = "peer"     // a peer system's design (MW-DQE and Roediger15)
)

// Verb is how a design moves a message's bytes.
type Verb string

// Verbs.
const (
	VerbSend    Verb = "Send/Receive"
	VerbRead    Verb = "RDMA Read"
	VerbWrite   Verb = "RDMA Write"
	VerbSockets Verb = "sockets" // the kernel's TCP stack (over IPoIB or Ethernet)
	VerbMPI     Verb = "MPI"     // an MPI library: eager sends, RDMA Write rendezvous
	VerbMux     Verb = "multiplexer"
)

// Design describes one endpoint design. Descriptors are values, immutable
// once listed, and safe to share between goroutines.
type Design struct {
	Name   string // as the papers write it: "MESQ/SR", "MPI", "HyPer"
	About  string // one line for help texts
	Family Family
	// Transport is the queue-pair type that carries the data (UD or RC);
	// Verb how the data moves on it.
	Transport fabric.QPType
	Verb      Verb
	// Shared: one endpoint per node that every thread shares (the SE
	// designs, and the baselines and peers whose library, kernel or
	// multiplexer is per node); otherwise one endpoint per thread.
	Shared bool
	// MsgBytes is the default message (buffer) size, header included.
	MsgBytes int
	// What the design accepts beyond the common configuration: a
	// notification variant (Config.Notify), recovery from lost UD
	// messages (Config.Recover), adaptive registered buffers
	// (Config.Adaptive), and multicast groups (a node in several
	// transmission groups).
	Notify, Recovery, Adaptive, Groups bool
	// ServiceLevels: the design's traffic travels on InfiniBand queue
	// pairs whose service level it sets (Config.SL): not the kernel-TCP
	// designs, whose level is their IP interface's. ControlChannel: its
	// control messages (credit) have queue pairs of their own, so they
	// can travel on another service level than its data
	// (Config.ControlSL); the other designs write credit on their data
	// queue pairs.
	ServiceLevels, ControlChannel bool
	// Open opens one endpoint of the design on th's node. Nil for a
	// design that is not an Endpoint of this package (Run says how it is
	// run instead).
	Open func(th fabric.Thread, cfg Config) (Endpoint, error) `json:"-"`
}

// Names of the designs that code elsewhere (the judge, the figures) singles
// out; the descriptors below carry them.
const (
	NameMESQSR    = "MESQ/SR"
	NameMEMQSR    = "MEMQ/SR"
	NameIPoIB     = "IPoIB"
	NameMPI       = "MPI"
	NameHyPer     = "HyPer"
	NameSocketsMW = "Sockets-MW"
	NameSEMQWR    = "SEMQ/WR"
	NameMEMQWR    = "MEMQ/WR"
	NameSEMQWRCW  = "SEMQ/WR+cw"
	NameMEMQWRCW  = "MEMQ/WR+cw"
	NameMEMQSRSRQ = "MEMQ/SR+srq"
	NameMEMQSRXRC = "MEMQ/SR+xrc"
	NameMEMQSRDC  = "MEMQ/SR+dc"
	NameMEMQWRDC  = "MEMQ/WR+dc"
)

// Options are the parts of a run's configuration that only some designs
// accept.
type Options struct {
	Pattern  Pattern
	Notify   Notify
	Recover  bool
	Adaptive bool
	// SL is the data's service level; ControlSL, when set, the control
	// messages' (nil: the data's).
	SL        uint8
	ControlSL *uint8
}

// Check tells whether the design accepts o, naming the option and what
// would be accepted instead.
func (d Design) Check(o Options) error {
	switch {
	case o.Notify != "" && !d.Notify:
		return setting.New("Notify", o.Notify, "applies to the RDMA Write designs (%s), not %s", strings.Join(names(append(Designs(), Variants()...), func(x Design) bool { return x.Notify }), ", "), d.Name)
	case strings.HasPrefix(string(o.Pattern), string(Multicast)) && !d.Groups:
		return setting.New("Pattern", o.Pattern, "not with %s: the UD designs number their messages per destination in one header that every send of a buffer shares, so a node cannot belong to two transmission groups; use an MQ design, or repartition or broadcast", d.Name)
	case o.Recover && !d.Recovery:
		return setting.New("UDRecovery", o.Recover, "applies to the UD designs (%s); %s runs over %v, which recovers in hardware", strings.Join(names(Designs(), func(x Design) bool { return x.Recovery }), ", "), d.Name, d.Transport)
	case o.SL != 0 && !d.ServiceLevels:
		return setting.New("SL", o.SL, "not with %s: %s", d.Name, kernelSL)
	case o.ControlSL != nil && *o.ControlSL != 0 && !d.ServiceLevels:
		return setting.New("ControlSL", *o.ControlSL, "not with %s: %s", d.Name, kernelSL)
	case o.ControlSL != nil && *o.ControlSL != o.SL && !d.ControlChannel:
		return setting.New("ControlSL", *o.ControlSL, "not with %s: it writes its credit on its data queue pairs, so its control messages travel on the data's service level; designs with queue pairs for control: %s", d.Name, strings.Join(names(Designs(), func(x Design) bool { return x.ControlChannel }), ", "))
	case o.Adaptive && !d.Adaptive:
		return setting.New("Adaptive", o.Adaptive, "not with %s: adaptive buffers apply to Liu19's eight designs (%s), not the baselines or the peer designs (docs/model.md §5 says why)", d.Name, strings.Join(names(Designs(), func(x Design) bool { return x.Adaptive }), ", "))
	}
	return nil
}

// kernelSL says why a design over the kernel's TCP takes no service level.
const kernelSL = "it sends over the kernel's TCP, whose service level is its IP interface's (the IPoIB group's, set by the subnet manager), not the run's"

// names lists the names of the designs that keep returns true for.
func names(ds []Design, keep func(Design) bool) []string {
	var out []string
	for _, d := range ds {
		if keep(d) {
			out = append(out, d.Name)
		}
	}
	return out
}

// rcMsgBytes is the RC designs' default message size.
const rcMsgBytes = 64 << 10

// paperDesign is one of Liu19's eight: shared or per-thread endpoint
// (SE/ME), single or multiple queue pairs (SQ: one UD queue pair; MQ: an
// RC queue pair per peer) and the verb.
func paperDesign(shared bool, verb Verb, open func(fabric.Thread, Config) (Endpoint, error)) Design {
	se := map[bool]string{true: "SE", false: "ME"}[shared]
	d := Design{Family: FamilyDesign, Shared: shared, Verb: verb, Transport: fabric.RC, MsgBytes: rcMsgBytes, Adaptive: true, Groups: true, ServiceLevels: true, Open: open}
	switch verb {
	case VerbSend:
		d.Name = se + "MQ/SR"
		d.About = "Send/Receive over an RC queue pair per peer"
	case VerbRead:
		d.Name = se + "MQ/RD"
		d.About = "receivers pull buffers with RDMA Read over an RC queue pair per peer"
	case VerbWrite:
		d.Name, d.Notify = se+"MQ/WR", true
		d.About = "senders push buffers with RDMA Write into free slots of the receiver over an RC queue pair per peer; each slot returns with an RDMA Write into the sender's FreeArr at Release"
	}
	if shared {
		d.About = "one endpoint per node shared by every thread: " + d.About
	} else {
		d.About = "one endpoint per thread: " + d.About
	}
	return d
}

// Variants returns our improvements on Liu19's designs, each named after
// the design it changes with a suffix: MQ/WR+cw returns RDMA Write slots
// through a credit word in ring order (one credit write every CreditEvery
// releases) instead of a FreeArr write per slot; MEMQ/SR+srq attaches an
// endpoint's queue pairs to one shared receive queue, whose pool of
// receives is credited to the sources in shares (OpenMQSRQ); MEMQ/SR+xrc
// does the same with an XRC shared receive queue reached through XRC
// queue pairs (OpenMQXRC); MEMQ/SR+dc and MEMQ/WR+dc send MEMQ/SR+srq's
// messages and MEMQ/WR+cw's writes through a few DC initiators into a DC
// target per endpoint (OpenMQSRDC, OpenMQWRDC).
func Variants() []Design {
	var out []Design
	for _, shared := range []bool{true, false} {
		d := paperDesign(shared, VerbWrite, OpenMQWRCW)
		d.Name += "+cw"
		d.Family = FamilyVariant
		d.About = strings.Replace(d.About, "into free slots of the receiver", "into the receiver's slots in ring order", 1)
		d.About = strings.Replace(d.About, "each slot returns with an RDMA Write into the sender's FreeArr at Release",
			"slots return through a credit word counting those released in ring order (our improvement: no write per slot)", 1)
		out = append(out, d)
	}
	d := paperDesign(false, VerbSend, OpenMQSRQ)
	d.Name, d.Family, d.Adaptive = NameMEMQSRSRQ, FamilyVariant, false
	d.About = "one endpoint per thread: Send/Receive over an RC queue pair per peer, all attached to one shared receive queue whose pool is credited to the sources in shares (our variant: receive memory O(pool), not O(peers x buffers))"
	out = append(out, d)
	d = paperDesign(false, VerbSend, OpenMQXRC)
	d.Name, d.Family, d.Adaptive, d.Transport = NameMEMQSRXRC, FamilyVariant, false, fabric.XRCSend
	d.About = "one endpoint per thread: MEMQ/SR+srq over XRC: each peer sends through an XRC initiator of its own into the endpoint's XRC shared receive queue, which it names (our variant: receive memory O(pool); 2 queue pairs per peer, initiator and target)"
	out = append(out, d)
	d = paperDesign(false, VerbSend, OpenMQSRDC)
	d.Name, d.Family, d.Adaptive, d.Transport = NameMEMQSRDC, FamilyVariant, false, fabric.DCI
	d.About = "one endpoint per thread: MEMQ/SR+srq over DC: up to 4 DC initiators per endpoint, each kept on its last target, send into a DC target per endpoint on its shared receive queue; the header names the source (our variant: receive memory O(pool), queue pairs O(threads))"
	out = append(out, d)
	d = paperDesign(false, VerbWrite, OpenMQWRDC)
	d.Name, d.Family, d.Adaptive, d.Transport = NameMEMQWRDC, FamilyVariant, false, fabric.DCI
	d.About = "one endpoint per thread: MEMQ/WR+cw over DC: up to 4 DC initiators per endpoint write into the receiver's slots in ring order, a write's immediate naming source and slot (our variant: queue pairs O(threads))"
	return append(out, d)
}

// udDesign is an SQ/SR design: one UD queue pair, messages of one MTU.
func udDesign(shared bool) Design {
	se := map[bool]string{true: "SE", false: "ME"}[shared]
	about := map[bool]string{true: "one endpoint per node shared by every thread", false: "one endpoint per thread"}[shared]
	return Design{Name: se + "SQ/SR", About: about + ": Send/Receive over one UD queue pair, messages of one MTU",
		Family: FamilyDesign, Transport: fabric.UD, Verb: VerbSend, Shared: shared, MsgBytes: 4096,
		Recovery: true, Adaptive: true, ServiceLevels: true, ControlChannel: true, Open: OpenSQSR}
}

// Designs returns Liu19's eight endpoint designs in the paper's order
// (a fresh slice on every call).
func Designs() []Design {
	return []Design{
		udDesign(true), udDesign(false),
		paperDesign(true, VerbSend, OpenMQSR), paperDesign(false, VerbSend, OpenMQSR),
		paperDesign(true, VerbRead, OpenMQRD), paperDesign(false, VerbRead, OpenMQRD),
		paperDesign(true, VerbWrite, OpenMQWR), paperDesign(false, VerbWrite, OpenMQWR),
	}
}

// Baselines returns the endpoint baselines of Liu19 (TCP over IPoIB
// and MVAPICH-style MPI), with their default costs.
func Baselines() []Design {
	return []Design{
		{Name: NameIPoIB, About: "TCP sockets over IPoIB: the kernel's costs per call, segment and byte on a shared RC endpoint",
			Family: FamilyBaseline, Transport: fabric.RC, Verb: VerbSockets, Shared: true, MsgBytes: IPoIBMsgBytes, Groups: true,
			Open: func(th fabric.Thread, c Config) (Endpoint, error) { return OpenIPoIB(th, c, c.ipoibCosts()) }},
		{Name: NameMPI, About: "MVAPICH-style MPI: one library lock per node, eager sends below 16 KiB, RDMA Write rendezvous above",
			Family: FamilyBaseline, Transport: fabric.RC, Verb: VerbMPI, Shared: true, MsgBytes: MPIMsgBytes, Groups: true, ServiceLevels: true,
			Open: func(th fabric.Thread, c Config) (Endpoint, error) { return OpenMPI(th, c, c.mpiCosts()) }},
	}
}

// MWThresholds are the write thresholds of the RDMA-MW/siw variants (seed
// 003's figure 4 sweep); 16 KiB is RDMA-MW/siw itself.
var MWThresholds = [...]int{2 << 10, 4 << 10, 8 << 10, 16 << 10, 32 << 10}

// MWDesign is the name of the soft-iWARP RDMA-MW design with a write
// threshold of bytes.
func MWDesign(threshold int) string {
	if threshold == 16<<10 {
		return "RDMA-MW/siw"
	}
	return fmt.Sprintf("RDMA-MW/siw/%dK", threshold>>10)
}

// Peers returns the peer systems' designs: Roediger15's HyPer multiplexer
// (scheduled or not, over RDMA or TCP) and MW-DQE's RDMA-Write shuffle
// middleware (on RDMA hardware and over software iWARP at several write
// thresholds) with its sockets baseline.
func Peers() []Design {
	hyper := func(name, about string, o HyPerOptions) Design {
		return Design{Name: name, About: about, Family: FamilyPeer, Transport: fabric.RC, Verb: VerbMux, Shared: true, MsgBytes: rcMsgBytes, Groups: true,
			ServiceLevels: o.TCP == nil, Open: func(th fabric.Thread, c Config) (Endpoint, error) {
				opt := o                              // o is shared by every Open of the design
				if opt.TCP != nil && c.IPoIB != nil { // the IPoIB baseline's kernel costs, moved
					opt.TCP = c.IPoIB
				}
				return OpenHyPer(th, c, opt)
			}}
	}
	mw := func(name, about string, threshold int, stack *IPoIBCosts) Design {
		return Design{Name: name, About: about, Family: FamilyPeer, Transport: fabric.RC, Verb: VerbWrite, Shared: true, MsgBytes: rcMsgBytes, Groups: true,
			ServiceLevels: stack == nil, Open: func(th fabric.Thread, c Config) (Endpoint, error) {
				// A ring smaller than the paper's 64 KB keeps the threshold
				// within half of it, so that a ring still pipelines.
				return OpenRDMAMW(th, c, MWOptions{Threshold: min(threshold, c.MsgBytes/2), Stack: stack})
			}}
	}
	tcp, siw, sock := DefaultIPoIBCosts, SoftIWARPCosts, GbESocketCosts
	out := []Design{
		hyper(NameHyPer, "Roediger15's multiplexer: one thread per node owns n-1 RC connections; round-robin phases, a barrier every 8 messages",
			HyPerOptions{Schedule: ScheduleRR}),
		hyper("HyPer/unsched", "HyPer without network scheduling: messages in hand-over order, 2 in flight",
			HyPerOptions{Schedule: ScheduleNone}),
		hyper("HyPer-TCP", "HyPer's multiplexer over TCP/IPoIB (the IPoIB baseline's kernel costs on the multiplexer thread), scheduled",
			HyPerOptions{Schedule: ScheduleRR, TCP: &tcp}),
		hyper("HyPer-TCP/unsched", "HyPer-TCP without network scheduling",
			HyPerOptions{Schedule: ScheduleNone, TCP: &tcp}),
		mw("RDMA-MW", "MW-DQE's middleware: per worker pair 64 KB rings, RDMA Write past a 16 KB threshold, batched Send/Recv notices (hardware RDMA)",
			16<<10, nil),
		{Name: NameSocketsMW, About: "MW-DQE's sockets baseline: TCP sockets with a Gigabit NIC's kernel costs, 64 KB buffers",
			Family: FamilyPeer, Transport: fabric.RC, Verb: VerbSockets, Shared: true, MsgBytes: rcMsgBytes, Groups: true,
			Open: func(th fabric.Thread, c Config) (Endpoint, error) { return OpenIPoIB(th, c, sock) }},
	}
	for _, t := range MWThresholds {
		out = append(out, mw(MWDesign(t), fmt.Sprintf("RDMA-MW over software iWARP (the kernel's costs on the host), write threshold %d KB", t>>10), t, &siw))
	}
	return out
}

package engine

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/experiments/catalogue"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/netspec"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
	"github.com/rdmashuffle/rdmashuffle/internal/setting"
)

// ErrUnsupported marks a configuration that asks for something the
// runner it reached cannot do (a network of switches for a TPC-H point,
// say), refused rather than silently ignored.
var ErrUnsupported = errors.New("not supported")

// Config is one point: a design, a cluster and a workload. It is
// portable: the same configuration runs on the simulator (Simulator)
// and on any other fabric (On); what only the simulator can do with a
// run is in SimOptions.
type Config struct {
	Design       string // e.g. "MEMQ/SR"
	Nodes        int
	Threads      int // sending threads per node, and as many receiving threads
	Pattern      algos.Pattern
	Profile      string // built-in profile name or YAML path
	MsgBytes     int
	Buffers      int // per thread (endpoint) per destination
	CreditEvery  int
	BytesPerNode int64 // payload each node sends
	// BytesPerPair, when positive, sizes the input instead of BytesPerNode:
	// each sending thread sends about this many payload bytes to each
	// destination, whatever the cluster size and pattern, so that runs of
	// different sizes are equally far from their start-up and drain.
	BytesPerPair   int64
	CyclesPerTuple int64 // receiving fragment's work per tuple
	Seed           uint64
	// QPNumbering picks the numbers the simulated NICs give their queue
	// pairs (sim.Config.QPNumbering), and with them which queue pairs
	// share a set of a NIC's context cache; 0, the default, is the
	// numbering the profiles were fitted with. The simulator only.
	QPNumbering uint64
	// Doorbells chooses whether the simulated hosts' queue pairs share
	// doorbell registers (DoorbellsShared) or each thread has its own
	// (DoorbellsPerThread); empty keeps the profile's choice. The
	// simulator only; on hardware libmlx5's environment decides.
	Doorbells Doorbells
	// Network is the simulated cluster's switches, routing and placement;
	// the zero value is one ideal crossbar. The simulator only.
	Network netspec.Spec
	Payload bool // move real bytes (checks content, slower)
	Timeout fabric.Duration
	// Notify selects the MQ/WR notification variant (default poll-CQ).
	Notify algos.Notify
	// Adaptive makes registered buffers adaptive (Liu19 §6), from a
	// pool per node: Buffers is where each flow starts, MaxBuffers (per
	// thread and peer) its ceiling, PinnedCapMiB the pool's pinned-memory
	// cap per node (0: none).
	Adaptive     bool
	MaxBuffers   int
	PinnedCapMiB int64
	// UDRecovery recovers from lost UD messages (SQ/SR designs):
	// acknowledgements, retransmission, duplicate detection.
	UDRecovery bool
	// SL is the InfiniBand service level of the run's traffic, 0-15
	// (fabric.Address.SL); ControlSL, when set, that of the designs'
	// control messages (credit), for designs that send them on queue
	// pairs of their own (algos.Design.ControlChannel); nil: the data's.
	// On the simulator a level reaches a virtual lane through the
	// network's SL-to-VL table (netspec.Spec.VLs).
	SL        uint8
	ControlSL *uint8
	// Workload is what the point runs: the zero value is the synthetic
	// shuffle of R(a, b); a TPC-H query or an I-Store experiment otherwise
	// (results.Workload). The run layer's root (experiments.Exec) runs
	// every kind: the shuffle here (Run), the others in their runners.
	Workload results.Workload
	// Label tags the run in its record (figures mark special points, such
	// as the bandwidth-delay-product depth); a point with a workload and
	// no label of its own is labelled with the workload's (Label).
	Label string
	// NodeCycles, when set, gives each node's receiving fragment its own
	// cycles per tuple (node i gets NodeCycles[i mod len]), for skewed
	// processing; it overrides CyclesPerTuple.
	NodeCycles []int64
	// Software replaces estimated software costs (the baselines' and the
	// polling loops'); the zero value keeps the defaults.
	Software results.SoftwareCosts
}

// DefaultConfig returns the Config of `explore run` without flags: the
// base every sweep starts from before its own base parameters.
func DefaultConfig() Config {
	return Config{Design: "MEMQ/SR", Nodes: 8, Threads: 2, Pattern: algos.Repartition, Profile: sim.DefaultProfileName,
		Buffers: 2, CreditEvery: 2, BytesPerNode: 64 << 20, Seed: 1, Timeout: algos.DefaultTimeout}
}

func (c *Config) normalize(cores int) error {
	if c.Pattern == "" {
		c.Pattern = algos.Repartition
	}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.Threads, 2)
	def(&c.Buffers, 2)
	def(&c.CreditEvery, 2)
	d, err := catalogue.LookupDesign(c.Design)
	if err != nil {
		return err
	}
	c.Design = d.Name // as the catalogue spells it, whatever case it was given in
	def(&c.MsgBytes, d.MsgBytes)
	if c.BytesPerNode == 0 {
		c.BytesPerNode = 64 << 20
	}
	if c.BytesPerPair > 0 {
		if n := int64(max(c.Threads, 1)) * int64(max(c.Nodes, 1)); c.BytesPerPair > math.MaxInt64/n {
			return setting.New("BytesPerPair", c.BytesPerPair, "times %d threads and %d destinations overflows the input size", c.Threads, c.Nodes)
		}
		c.BytesPerNode = c.bytesForPairs()
	}
	if c.Adaptive && c.MaxBuffers == 0 {
		// Room for growth, within a receive queue of 16,000 requests.
		c.MaxBuffers = max(c.Buffers, min(256, 16000/max(1, c.Nodes*c.Threads)))
	}
	switch {
	case c.Nodes < 1:
		return setting.New("Nodes", c.Nodes, "need at least 1")
	case c.Threads < 1 || 2*c.Threads > cores:
		return ThreadsRefused(c.Threads, cores)
	case c.MsgBytes < 0:
		return setting.New("MsgBytes", c.MsgBytes, "must be positive (0: the design's default)")
	case c.Buffers < 1:
		return setting.New("Buffers", c.Buffers, "need at least 1 buffer per peer (0: the default, 2)")
	case c.CreditEvery < 1:
		return setting.New("CreditEvery", c.CreditEvery, "must be at least 1 (0: the default, 2)")
	case c.BytesPerNode < 0:
		return setting.New("BytesPerNode", c.BytesPerNode, "must not be negative")
	case c.Nodes < 2 && c.Pattern != algos.Repartition:
		return setting.New("Nodes", c.Nodes, "a %s sends to other nodes: use at least 2 (one node only repartitions to itself)", c.Pattern)
	case d.Ceiling && c.Nodes < 2:
		return setting.New("Nodes", c.Nodes, "the %s baseline sends between distinct nodes; use at least 2", d.Name)
	case d.Ceiling && c.Pattern != algos.Repartition:
		return setting.New("Pattern", c.Pattern, "the %s baseline is all-to-all traffic (a repartition ceiling, as in Liu19); use repartition", d.Name)
	case c.BytesPerPair < 0:
		return setting.New("BytesPerPair", c.BytesPerPair, "must not be negative")
	case c.CyclesPerTuple < 0:
		return setting.New("CyclesPerTuple", c.CyclesPerTuple, "must not be negative")
	case slices.ContainsFunc(c.NodeCycles, func(v int64) bool { return v < 0 }):
		return setting.New("NodeCycles", c.NodeCycles, "cycles per tuple must not be negative")
	case c.Adaptive && c.MaxBuffers != 0 && c.MaxBuffers < c.Buffers:
		return setting.New("MaxBuffers", c.MaxBuffers, "below the %d buffers per peer to start with", c.Buffers)
	case c.PinnedCapMiB < 0:
		return setting.New("PinnedCapMiB", c.PinnedCapMiB, "must not be negative (0: no cap)")
	case c.PinnedCapMiB > MaxPinnedCapMiB:
		return setting.New("PinnedCapMiB", c.PinnedCapMiB, "above %d MiB (a pebibyte): no host pins that much", MaxPinnedCapMiB)
	case !c.Adaptive && c.MaxBuffers != 0:
		return setting.New("MaxBuffers", c.MaxBuffers, "applies to adaptive buffers only")
	case !c.Adaptive && c.PinnedCapMiB != 0:
		return setting.New("PinnedCapMiB", c.PinnedCapMiB, "applies to adaptive buffers only")
	case c.SL > fabric.MaxSL:
		return setting.New("SL", c.SL, "above %d: InfiniBand has service levels 0-%d", fabric.MaxSL, fabric.MaxSL)
	case c.ControlSL != nil && *c.ControlSL > fabric.MaxSL:
		return setting.New("ControlSL", *c.ControlSL, "above %d: InfiniBand has service levels 0-%d", fabric.MaxSL, fabric.MaxSL)
	}
	if d.Ceiling {
		if c.SL != 0 || c.ControlSL != nil {
			return setting.New("SL", c.SL, "the %s baseline runs on service level 0; service levels apply to the designs", d.Name)
		}
		return nil
	}
	return d.Check(algos.Options{Pattern: c.Pattern, Notify: c.Notify, Recover: c.UDRecovery, Adaptive: c.Adaptive, SL: c.SL, ControlSL: c.ControlSL})
}

// MaxPinnedCapMiB is the largest pinned-memory cap: a pebibyte, far above
// any host, and far below where MiB times 2^20 overflows.
const MaxPinnedCapMiB = 1 << 30

// checkFeasible refuses a simulated run that could not end within its
// time limit whatever the design: its input at the link's data rate, or
// its receivers' work at the host's clock spread over its threads, would
// alone take longer. Such a run would only end in the time limit (or, at
// the largest values, overflow the simulated clock).
func checkFeasible(cfg Config, prof *sim.Profile, limit fabric.Duration) error {
	if limit == 0 {
		limit = sim.DefaultTimeLimit
	}
	secs := limit.Seconds()
	if wire := float64(cfg.BytesPerNode) * 8 / prof.DataRateBps(); wire > secs {
		return setting.New("BytesPerNode", cfg.BytesPerNode, "sending it at the link's %.3g Gb/s alone takes %.3g s of simulated time, beyond the run's limit of %v", prof.DataRateBps()/1e9, wire, limit)
	}
	cycles := cfg.CyclesPerTuple
	for _, c := range cfg.NodeCycles {
		cycles = max(cycles, c)
	}
	tuples := float64(cfg.BytesPerNode) / algos.TupleBytes
	if work := tuples * float64(cycles) / (prof.Host.GHz * 1e9) / float64(max(cfg.Threads, 1)); work > secs {
		name := "CyclesPerTuple"
		if len(cfg.NodeCycles) > 0 {
			name = "NodeCycles"
		}
		return setting.New(name, cycles, "%.3g tuples per node at that many cycles on %d receiving threads of %v GHz take %.3g s of simulated time, beyond the run's limit of %v", tuples, cfg.Threads, prof.Host.GHz, work, limit)
	}
	return nil
}

// bytesForPairs is the input per node that makes each of Threads sending
// threads send BytesPerPair to each destination: repartition spreads a
// node's input over its destinations, multicast:K sends every tuple to K
// of them, broadcast to all.
func (c *Config) bytesForPairs() int64 {
	perDest := c.BytesPerPair * int64(c.Threads)
	switch {
	case c.Pattern == algos.Broadcast:
		return perDest
	case strings.HasPrefix(string(c.Pattern), string(algos.Multicast)+":"):
		var k int64
		fmt.Sscanf(string(c.Pattern), string(algos.Multicast)+":%d", &k)
		return perDest * int64(c.Nodes) / max(k, 1)
	}
	return perDest * int64(c.Nodes)
}

// Validate checks a point for the simulator without running it: its
// workload, its profile (loaded, so a file is read), its configuration
// against the profile's cores and its design (normalize, Design.Check),
// the pattern's groups, and that its input can finish within the default
// simulated time limit. What only a run finds (an endpoint's own limits,
// the network's wiring) is left to the run. Errors are setting.Errors
// naming the field where one is to blame.
func (c Config) Validate() error {
	if err := c.Workload.Validate(); err != nil {
		return setting.New("Workload", nil, "%v", err).Sentinel(err)
	}
	prof, err := sim.LoadProfile(c.Profile)
	if err != nil {
		return err
	}
	if !c.Workload.IsShuffle() {
		return c.ShuffleOnly() // a query or I-Store point's runner checks the rest
	}
	if err := c.normalize(prof.Host.Cores); err != nil {
		return err
	}
	if _, err := algos.NewGroups(c.Pattern, c.Nodes); err != nil {
		return setting.New("Pattern", c.Pattern, "%v", err).Sentinel(err)
	}
	return checkFeasible(c, prof, 0)
}

// ShuffleOnly refuses, for a query or I-Store point, what only the
// synthetic shuffle's endpoints take: service levels.
func (c Config) ShuffleOnly() error {
	if c.Workload.IsShuffle() {
		return nil
	}
	if c.SL != 0 || c.ControlSL != nil {
		return setting.New("SL", c.SL, "service levels apply to the synthetic shuffle; the %s runner puts its traffic on level 0", c.Workload.Kind).Sentinel(ErrUnsupported)
	}
	if c.Doorbells != DoorbellsProfile {
		return setting.New("Doorbells", string(c.Doorbells), "applies to the synthetic shuffle; the %s runner keeps the profile's choice (host.shared_doorbells in a profile file sets it there)", c.Workload.Kind).Sentinel(ErrUnsupported)
	}
	return nil
}

// ScaledInput is c with f times its input, as steady-state growth runs a
// point again: a shuffle's bytes per node or per pair, a TPC-H query's
// scale factor per node. False for a point with no input size to scale
// (its input is then as it was).
func (c Config) ScaledInput(f int64) (Config, bool) {
	if c.Workload.Kind == results.TPCH {
		c.Workload.SFPerNode *= float64(f)
		return c, true
	}
	if c.BytesPerNode <= 0 && c.BytesPerPair <= 0 {
		return c, false
	}
	c.BytesPerNode, c.BytesPerPair = c.BytesPerNode*f, c.BytesPerPair*f
	return c, true
}

// PointLabel is the label a point's record carries: its own, or its
// workload's.
func PointLabel(cfg Config) string {
	if cfg.Label == "" {
		return cfg.Workload.Label()
	}
	return cfg.Label
}

// fitPort sizes a UD design's messages from the port's active MTU (attr)
// when cfg leaves the size to the design (MsgBytes 0): a UD message
// travels in one packet, and a RoCE port on 1500-byte frames (MTU 1024) or
// an InfiniBand port at MTU 2048 carries less than the design's 4096. A
// size set above the MTU is refused, naming it. Every node of a job is
// expected to have the same active MTU (the SQ/SR designs refuse to start
// when their nodes' message sizes differ). The simulator keeps the
// design's size: its profiles' MTU is 4096, the size of the UD designs.
func fitPort(cfg *Config, attr fabric.DeviceAttr) error {
	d, err := catalogue.LookupDesign(cfg.Design)
	if err != nil || d.Transport != fabric.UD || attr.MTU <= 0 {
		return nil // normalize names an unknown design
	}
	switch {
	case cfg.MsgBytes == 0:
		cfg.MsgBytes = min(d.MsgBytes, attr.MTU)
	case cfg.MsgBytes > attr.MTU:
		return setting.New("MsgBytes", cfg.MsgBytes, "above the active MTU of %s, %d bytes: a %s message travels in one packet; use at most %d (0 sizes messages to the MTU)",
			attr.Name, attr.MTU, d.Name, attr.MTU)
	}
	return nil
}

// ErrFewCores: the nodes of a real backend have fewer than the two cores a
// sending and a receiving thread need (the CPUs of the process divided
// among the nodes it runs).
var ErrFewCores = errors.New("too few cores per node")

// ThreadsRefused is the error for a thread count the node's cores cannot
// hold: every thread pair (a sender and a receiver) needs two cores.
func ThreadsRefused(threads, cores int) error {
	if cores < 2 {
		return setting.New("Threads", threads, "each node runs that many sending and receiving threads, two cores per thread, and a node has %d core: give the nodes at least 2 cores each", cores).Sentinel(ErrFewCores)
	}
	return setting.New("Threads", threads, "each node runs that many sending and receiving threads on its %d cores; use 1..%d", cores, cores/2)
}

// ApplySoftware sets s's costs in an endpoint configuration.
func ApplySoftware(s results.SoftwareCosts, c *algos.Config) {
	c.MPI, c.IPoIB, c.Credit = s.MPI, s.IPoIB, s.Credit
	if s.PollLineCycles != 0 {
		c.PollLineCycles = s.PollLineCycles
	}
}

// softwareRecord is s as a run record shows it: nil for the defaults.
func softwareRecord(s results.SoftwareCosts) *results.SoftwareCosts {
	if s.IsZero() {
		return nil
	}
	return &s
}

// Stamp records what a run was asked to do beyond its design and
// cluster, so that Config gives it back: payload mode, a timeout other
// than the default, and software costs other than the defaults.
func Stamp(r *results.Record, cfg Config) {
	r.Payload, r.Software = cfg.Payload, softwareRecord(cfg.Software)
	r.SL, r.ControlSL = cfg.SL, cfg.ControlSL
	if w := cfg.Workload; !w.IsShuffle() {
		r.Workload = &w
	}
	if cfg.Timeout != 0 && cfg.Timeout != algos.DefaultTimeout {
		r.TimeoutS = cfg.Timeout.Seconds()
	}
}

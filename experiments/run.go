package experiments

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"

	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/fabric/netbuild"
	"github.com/rdmashuffle/rdmashuffle/fabric/netspec"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/buildinfo"
	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
	"github.com/rdmashuffle/rdmashuffle/internal/setting"
)

// ErrUnsupported marks a configuration that asks for something the
// runner it reached cannot do (a network of switches for a TPC-H point,
// say), refused rather than silently ignored.
var ErrUnsupported = errors.New("not supported")

// RunConfig is one shuffle: a design, a cluster and a workload. It is
// portable: the same configuration runs on the simulator (Run, RunSim)
// and on any other fabric (RunOn); what only the simulator can do with a
// run is in SimOptions.
type RunConfig struct {
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
	// (results.Workload). Run runs every kind.
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

// applySoftware sets s's costs in an endpoint configuration.
func applySoftware(s results.SoftwareCosts, c *algos.Config) {
	c.MPI, c.IPoIB = s.MPI, s.IPoIB
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

// SimOptions are what only the simulator does with a run: inject faults,
// change the loaded profile, bound the run in simulated time and show the
// cluster to the caller afterwards. RunSim takes them; RunOn, for other
// fabrics, has no place for them. The zero value is a plain run.
type SimOptions struct {
	// Faults on every link (seeded): for testing how designs behave.
	Faults sim.Faults
	// Plan is a fault schedule for the simulated cluster (package faults
	// builds one from YAML or flags).
	Plan *sim.Plan
	// ProfileOverride changes the loaded profile (a schedule's
	// context-cache thrashing, say); the result is validated again.
	ProfileOverride func(*sim.Profile)
	// TimeLimit bounds the run in simulated time (0: the simulator's
	// default).
	TimeLimit fabric.Duration
	// Inspect, if set, sees the cluster once the run is over, whatever its
	// outcome (fault counts, the checker's findings, the trace hash). The
	// cluster is closed when Inspect returns.
	Inspect func(*sim.Cluster)
	// Progress, if set, is told the simulated time and the events so far
	// every few tenths of a second of the run (sim.Config.Progress).
	Progress func(now fabric.Time, events uint64)
	// NoCheck turns the verbs-usage checker off (sim.Config.NoCheck): the
	// run is faster (the checker is about a tenth of a run's work) and its
	// result the same, but a misuse of the verbs goes unreported. The
	// record says so (verbs_check "off").
	NoCheck bool
	// Trace, if set, is told every event of the run (sim.Config.Trace;
	// a trace.Writer writes them to a file). It changes no result.
	Trace sim.Tracer
}

// InjectsFaults reports whether o changes what the simulated hardware does
// (link faults, a fault plan or a profile change), as opposed to only
// bounding or watching the run.
func (o SimOptions) InjectsFaults() bool {
	return o.Faults != (sim.Faults{}) || o.Plan != nil || o.ProfileOverride != nil
}

// DefaultConfig returns the RunConfig of `explore run` without flags: the
// base every sweep starts from before its own base parameters.
func DefaultConfig() RunConfig {
	return RunConfig{Design: "MEMQ/SR", Nodes: 8, Threads: 2, Pattern: algos.Repartition, Profile: sim.DefaultProfileName,
		Buffers: 2, CreditEvery: 2, BytesPerNode: 64 << 20, Seed: 1, Timeout: algos.DefaultTimeout}
}

// stampRun records what a run was asked to do beyond its design and
// cluster, so that Config gives it back: payload mode, a timeout other
// than the default, and software costs other than the defaults.
func stampRun(r *results.Record, cfg RunConfig) {
	r.Payload, r.Software = cfg.Payload, softwareRecord(cfg.Software)
	r.SL, r.ControlSL = cfg.SL, cfg.ControlSL
	if w := cfg.Workload; !w.IsShuffle() {
		r.Workload = &w
	}
	if cfg.Timeout != 0 && cfg.Timeout != algos.DefaultTimeout {
		r.TimeoutS = cfg.Timeout.Seconds()
	}
}

// profileLabel is how a record names a simulated profile: its name when
// built in, "file:<path>" when loaded from a file.
func profileLabel(prof *sim.Profile) string {
	if prof.Source() != "builtin" {
		return "file:" + prof.Source()
	}
	return prof.Name
}

func (c *RunConfig) normalize(cores int) error {
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
	d, err := LookupDesign(c.Design)
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
		return threadsRefused(c.Threads, cores)
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
	case c.PinnedCapMiB > maxPinnedCapMiB:
		return setting.New("PinnedCapMiB", c.PinnedCapMiB, "above %d MiB (a pebibyte): no host pins that much", maxPinnedCapMiB)
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

// maxPinnedCapMiB is the largest pinned-memory cap: a pebibyte, far above
// any host, and far below where MiB times 2^20 overflows.
const maxPinnedCapMiB = 1 << 30

// checkFeasible refuses a simulated run that could not end within its
// time limit whatever the design: its input at the link's data rate, or
// its receivers' work at the host's clock spread over its threads, would
// alone take longer. Such a run would only end in the time limit (or, at
// the largest values, overflow the simulated clock).
func checkFeasible(cfg RunConfig, prof *sim.Profile, limit fabric.Duration) error {
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
func (c *RunConfig) bytesForPairs() int64 {
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

// Run runs one point on a simulated cluster: the shuffle (checking that
// every node received exactly the tuples sent to it), or the TPC-H query
// or I-Store experiment of its workload. It is RunSim without options.
func Run(cfg RunConfig) (*results.Record, error) { return RunSim(cfg, SimOptions{}) }

// Validate checks a point for the simulator without running it: its
// workload, its profile (loaded, so a file is read), its configuration
// against the profile's cores and its design (normalize, Design.Check),
// the pattern's groups, and that its input can finish within the default
// simulated time limit. What only a run finds (an endpoint's own limits,
// the network's wiring) is left to the run. Errors are setting.Errors
// naming the field where one is to blame.
func (c RunConfig) Validate() error {
	if err := c.Workload.Validate(); err != nil {
		return setting.New("Workload", nil, "%v", err).Sentinel(err)
	}
	prof, err := sim.LoadProfile(c.Profile)
	if err != nil {
		return err
	}
	if !c.Workload.IsShuffle() {
		return c.shuffleOnly() // a query or I-Store point's runner checks the rest
	}
	if err := c.normalize(prof.Host.Cores); err != nil {
		return err
	}
	if _, err := algos.NewGroups(c.Pattern, c.Nodes); err != nil {
		return setting.New("Pattern", c.Pattern, "%v", err).Sentinel(err)
	}
	return checkFeasible(c, prof, 0)
}

// shuffleOnly refuses, for a query or I-Store point, what only the
// synthetic shuffle's endpoints take: service levels.
func (c RunConfig) shuffleOnly() error {
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
func (c RunConfig) ScaledInput(f int64) (RunConfig, bool) {
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

// pointLabel is the label a point's record carries: its own, or its
// workload's.
func pointLabel(cfg RunConfig) string {
	if cfg.Label == "" {
		return cfg.Workload.Label()
	}
	return cfg.Label
}

// firstCause puts first, before a run's error, what caused it when the
// error is a flushed work request: the failure of its queue pair (a
// request that ended in a retry exceeded, a NAK, a bad buffer), which the
// simulator recorded; the flush is its consequence.
func firstCause(c *sim.Cluster, err error) error {
	var ce *fabric.CompletionError
	if !errors.As(err, &ce) || ce.WC.Status != fabric.StatusFlushed {
		return err
	}
	cause, ok := c.QPFailure(ce.Node, ce.WC.QPN)
	if !ok {
		return err
	}
	return fmt.Errorf("node %d's queue pair %d failed (%s); after it: %w", ce.Node, ce.WC.QPN, cause, err)
}

// failedRun is the error of a simulated run that failed with err: its
// first cause first, then the faults injected. A failed run is checked
// too: a hazard is one whatever the outcome, and a node whose driver
// thread ended (with its error: ended[i]) could close what it opened.
// Nodes that crashed, and nodes whose threads the run's end stopped
// mid-call, could not. A nil ended checks no node for objects left open.
func failedRun(c *sim.Cluster, err error, ended []bool) error {
	err = firstCause(c, err)
	if s := c.FaultSummary(); s != "" {
		err = fmt.Errorf("%w [faults injected: %s]", err, s)
	}
	if hazard := c.CheckError(); hazard != nil {
		err = fmt.Errorf("%w; and %w", err, hazard)
	}
	if leak := leaksAfterFailure(c, ended); leak != nil {
		err = fmt.Errorf("%w; and %w", err, leak)
	}
	return err
}

// checkedRun is the verbs-usage checker's verdict on a simulated run that
// succeeded: no hazard, and nothing left open.
func checkedRun(c *sim.Cluster) error {
	if err := c.CheckClosed(); err != nil {
		return err
	}
	return c.CheckError()
}

// RunSim runs one shuffle on a simulated cluster with the simulator's
// options (faults, fault plan, profile change, time limit, inspector) and
// checks that every node received exactly the tuples sent to it. A failed
// run's error names the faults injected.
func RunSim(cfg RunConfig, opt SimOptions) (*results.Record, error) {
	if err := cfg.Workload.Validate(); err != nil {
		return nil, setting.New("Workload", nil, "%v", err).Sentinel(err)
	}
	if err := cfg.shuffleOnly(); err != nil {
		return nil, err
	}
	switch cfg.Workload.Kind {
	case results.Shuffle:
		return stamped(runSim(cfg, opt))
	case results.TPCH:
		return stamped(runQueryPoint(cfg, opt))
	case results.IStoreJoin:
		return stamped(runIStorePoint(cfg, opt))
	case results.IStoreMicro:
		if opt.InjectsFaults() || opt.Trace != nil || opt.Inspect != nil || opt.TimeLimit != 0 || opt.NoCheck {
			return nil, setting.New("Workload", cfg.Workload.Label(), "faults, traces, time limits, inspectors and turning the checker off are the shuffles' and queries'; the I-Store microbenchmark runs without them").Sentinel(ErrUnsupported)
		}
		return stamped(runIStorePoint(cfg, opt))
	}
	return nil, setting.New("Workload", cfg.Workload.Kind, "unknown kind").Sentinel(results.ErrWorkload)
}

// stamped adds the build's provenance to a record.
func stamped(rec *results.Record, err error) (*results.Record, error) {
	if rec != nil {
		b := buildinfo.Get()
		rec.Version, rec.Commit, rec.GoVersion = b.Version, b.Commit, b.Go
	}
	return rec, err
}

func runSim(cfg RunConfig, opt SimOptions) (*results.Record, error) {
	prof, err := sim.LoadProfile(cfg.Profile)
	if err != nil {
		return nil, err
	}
	if err := cfg.normalize(prof.Host.Cores); err != nil {
		return nil, err
	}
	if err := checkFeasible(cfg, prof, opt.TimeLimit); err != nil {
		return nil, err
	}
	if err := cfg.Doorbells.Check(); err != nil {
		return nil, err
	}
	cfg.Doorbells.apply(prof)
	if opt.ProfileOverride != nil {
		opt.ProfileOverride(prof)
		if err := prof.Validate(); err != nil {
			return nil, err
		}
	}
	d := DesignOf(cfg.Design) // known: normalize looked it up
	if d.Ceiling {
		rec, err := runQperf(cfg, opt, prof)
		if rec != nil {
			rec.Doorbells = string(cfg.Doorbells)
		}
		return rec, err
	}
	if d.RealOnly {
		return nil, setting.New("Design", cfg.Design, "moves real bytes through real sockets in real time, which a simulated cluster cannot host: run it on the tcp backend (one process per node, or every node in one process)").Sentinel(ErrUnsupported)
	}
	c, net, done, err := newCluster(cfg, opt, prof)
	if err != nil {
		return nil, err
	}
	defer done()
	ended := make([]bool, cfg.Nodes)
	rec, err := shuffleOn(c, cfg, ended)
	if err != nil {
		return nil, failedRun(c, err, ended)
	}
	if err := checkedRun(c); err != nil {
		return nil, err
	}
	rec.Profile, rec.ProfileHash, rec.QPNumbering, rec.Network = profileLabel(prof), prof.Hash(), cfg.QPNumbering, cfg.Network
	rec.Doorbells = string(cfg.Doorbells)
	rec.SimEvents, rec.QPCacheMiss = c.Events(), c.Stats().QPCacheMissRate()
	if rec.NodeLeaf = nodeLeaves(net.Fabric); rec.NodeLeaf != nil {
		rec.LeafFinishMS = results.LeafMeans(rec.NodeFinishMS, rec.NodeLeaf)
	}
	if opt.NoCheck {
		rec.VerbsCheck = "off"
	}
	return rec, nil
}

// newCluster builds the simulated cluster of a run with the options'
// faults, fault plan, time limit and inspector, and says what network it
// built; done runs the inspector and closes the cluster.
func newCluster(cfg RunConfig, opt SimOptions, prof *sim.Profile) (c *sim.Cluster, net *netbuild.Built, done func(), err error) {
	net, err = netbuild.Build(cfg.Network, cfg.Nodes, prof, cfg.Seed)
	if err != nil {
		return nil, nil, nil, err
	}
	c, err = sim.New(sim.Config{Nodes: cfg.Nodes, Profile: prof, Seed: cfg.Seed, QPNumbering: cfg.QPNumbering, SizeOnly: !cfg.Payload, TimeLimit: opt.TimeLimit, Progress: opt.Progress, NoCheck: opt.NoCheck, Fabric: net.Fabric, Trace: opt.Trace})
	if err != nil {
		return nil, nil, nil, err
	}
	done = func() {
		if opt.Inspect != nil {
			opt.Inspect(c)
		}
		c.Close()
	}
	for i := 0; i < cfg.Nodes; i++ {
		if err := c.SetFaults(i, opt.Faults); err != nil {
			c.Close()
			return nil, nil, nil, err
		}
	}
	if err := c.SetPlan(opt.Plan); err != nil {
		c.Close()
		return nil, nil, nil, err
	}
	return c, net, done, nil
}

// nodeLeaves gives each node of a network of switches the leaf switch it
// hangs off, the leaves numbered from 0 in the topology's order
// (topo.Topology.Leaves) counting only those that host a node; nil for
// the single switch.
func nodeLeaves(f *sim.Fabric) []int {
	if f == nil {
		return nil
	}
	used := make(map[int]bool, len(f.Hosts))
	for _, h := range f.Hosts {
		used[f.Topology.Hosts[h].Switch] = true
	}
	number := make(map[int]int, len(used))
	for _, sw := range f.Topology.Leaves() {
		if used[sw] {
			number[sw] = len(number)
		}
	}
	out := make([]int, len(f.Hosts))
	for i, h := range f.Hosts {
		out[i] = number[f.Topology.Hosts[h].Switch]
	}
	return out
}

// RunOn runs one shuffle on a fabric built elsewhere, such as the
// real-hardware backend (fabric/ibv): in one process for every node, or one
// process per node, in which case every process runs its node and gets the
// whole record (the nodes' results travel over the out-of-band channel).
// cfg.Profile does not apply; fault injection is the simulator's
// (SimOptions, RunSim). The record's profile says what ran instead of a
// model: "hardware" on RDMA hardware (ibv), "software" on the loopback
// verbs provider and on hosts without a device, whose timing models
// nothing.
func RunOn(f fabric.Fabric, cfg RunConfig) (*results.Record, error) {
	return stamped(runOn(f, cfg))
}

func runOn(f fabric.Fabric, cfg RunConfig) (*results.Record, error) {
	if !cfg.Workload.IsShuffle() {
		return nil, setting.New("Workload", cfg.Workload.Label(), "queries and I-Store points run on the simulator only; the %s backend runs the synthetic shuffle", f.Backend()).Sentinel(ErrUnsupported)
	}
	if !cfg.Network.IsSingle() {
		return nil, setting.New("Network", fmt.Sprintf("%q", cfg.Network.String()), "chooses the simulator's switches and routing; the %s backend runs on the network it has: leave it empty", f.Backend()).Sentinel(ErrUnsupported)
	}
	if cfg.QPNumbering != 0 {
		return nil, setting.New("QPNumbering", cfg.QPNumbering, "chooses the simulator's queue-pair numbers; the %s backend has none to choose: leave it 0", f.Backend()).Sentinel(ErrUnsupported)
	}
	if cfg.Doorbells != DoorbellsProfile {
		return nil, setting.New("Doorbells", string(cfg.Doorbells), "chooses the simulated hosts' doorbell registers; on the %s backend the provider allocates them (with libmlx5, per thread through MLX5_TOTAL_UUARS and MLX5_NUM_LOW_LAT_UUARS in the environment): leave it empty", f.Backend()).Sentinel(ErrUnsupported)
	}
	if len(f.Local()) == 0 {
		return nil, fmt.Errorf("the fabric hosts no node in this process")
	}
	if cfg.Nodes == 0 {
		cfg.Nodes = f.Size()
	}
	if cfg.Nodes != f.Size() {
		return nil, setting.New("Nodes", cfg.Nodes, "the %s fabric has %d nodes", f.Backend(), f.Size())
	}
	if err := fitPort(&cfg, f.Local()[0].Device().Attr()); err != nil {
		return nil, err
	}
	if err := cfg.normalize(f.Local()[0].Cores()); err != nil {
		return nil, err
	}
	if DesignOf(cfg.Design).Ceiling {
		return nil, setting.New("Design", cfg.Design, "the network's ceiling is measured, not run as a shuffle, on the %s backend: run qperf itself, or the alltoall_bw benchmark", f.Backend()).Sentinel(ErrUnsupported)
	}
	rec, err := shuffleOn(f, cfg, nil)
	if err != nil {
		return nil, err
	}
	switch f.Backend() {
	case "sim":
	case "ibv":
		rec.Profile = "hardware"
	default:
		rec.Profile = "software"
	}
	rec.Loopback = fabric.SharesAdapter(f)
	return rec, nil
}

// fitPort sizes a UD design's messages from the port's active MTU (attr)
// when cfg leaves the size to the design (MsgBytes 0): a UD message
// travels in one packet, and a RoCE port on 1500-byte frames (MTU 1024) or
// an InfiniBand port at MTU 2048 carries less than the design's 4096. A
// size set above the MTU is refused, naming it. Every node of a job is
// expected to have the same active MTU (the SQ/SR designs refuse to start
// when their nodes' message sizes differ). The simulator keeps the
// design's size: its profiles' MTU is 4096, the size of the UD designs.
func fitPort(cfg *RunConfig, attr fabric.DeviceAttr) error {
	d, err := LookupDesign(cfg.Design)
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

// leaksAfterFailure reports the objects left open on nodes whose driver
// thread ended (ended[i]) and that did not crash: after a failure, each
// node's driver closes what it opened before it returns its error.
func leaksAfterFailure(c *sim.Cluster, ended []bool) error {
	crashed := c.FaultCounts().Crashed
	var left []string
	for _, o := range c.OpenObjects() {
		if n := o.Node; n < len(ended) && ended[n] && !slices.Contains(crashed, n) {
			left = append(left, o.Desc)
		}
	}
	if len(left) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %d objects still open after the failure on nodes that could close them: %s", sim.ErrVerbsUsage, len(left), strings.Join(left[:min(len(left), 5)], "; "))
}

// integrity compares what every node sent to each destination with what
// each destination received from it.
func integrity(sent, got [][]algos.Tally, corrupt []int) string {
	for i := range corrupt {
		if corrupt[i] > 0 {
			return "corrupt"
		}
	}
	for s := range sent {
		for d := range sent[s] {
			a, b := sent[s][d], got[d][s]
			switch {
			case b.Tuples < a.Tuples:
				return "missing"
			case b.Tuples > a.Tuples:
				return "duplicate"
			case a.Sum != b.Sum:
				return "corrupt"
			}
		}
	}
	return "ok"
}

// ConfigOf returns the run configuration that produced r, for running it
// again: every field of RunConfig that the record holds (a run's faults
// and simulator options are not in it: they are not part of the
// configuration). For a shuffle (Experiment "run") it gives back the
// configuration exactly, once normalized (SameRun); a TPC-H or I-Store
// record holds its point in Label.
func ConfigOf(r *results.Record) RunConfig {
	c := DefaultConfig()
	c.Design, c.Notify, c.Nodes, c.Threads, c.Pattern = r.Design, algos.Notify(r.Notify), r.Nodes, r.Threads, algos.Pattern(r.Pattern)
	c.Profile, c.MsgBytes, c.Buffers, c.CreditEvery, c.Seed, c.QPNumbering = strings.TrimPrefix(r.Profile, "file:"), r.MsgBytes, r.Buffers, r.CreditEvery, r.Seed, r.QPNumbering
	c.Network, c.Doorbells = r.Network, Doorbells(r.Doorbells)
	c.BytesPerNode, c.BytesPerPair, c.CyclesPerTuple, c.NodeCycles = r.BytesPerNode, r.BytesPerPair, r.CyclesPerTuple, r.NodeCycles
	c.Adaptive, c.MaxBuffers, c.PinnedCapMiB, c.Label, c.UDRecovery = r.Adaptive, r.MaxBuffers, r.PinnedCapMiB, r.Label, r.UDRecovery
	c.Payload, c.SL, c.ControlSL = r.Payload, r.SL, r.ControlSL
	if w, err := results.WorkloadOf(r); err == nil && !w.IsShuffle() {
		c.Workload = w
		if r.Label == w.Label() {
			c.Label = "" // the workload's label, not the point's own
		}
	}
	if r.TimeoutS > 0 {
		c.Timeout = fabric.Duration(math.Round(r.TimeoutS * 1e12))
	}
	if r.Software != nil {
		c.Software = *r.Software
	}
	return c
}

// SameRun says whether record r was made by the configuration cfg: nil if
// so, otherwise an error naming the first field (of RunConfig) that
// differs. Both sides are compared normalized (defaults filled in), every
// field of a shuffle's configuration; for TPC-H and I-Store records, whose
// point is in the label, the fields their records hold.
func SameRun(r *results.Record, cfg RunConfig) error {
	want, got := cfg, ConfigOf(r)
	for _, c := range []*RunConfig{&want, &got} {
		if c.Timeout == 0 {
			c.Timeout = algos.DefaultTimeout
		}
		if r.Experiment == "run" {
			// The checks normalize makes are not the question here;
			// only its defaults are.
			_ = c.normalize(math.MaxInt32)
		}
	}
	if r.Experiment != "run" {
		want.Pattern, want.MsgBytes, want.BytesPerNode, want.BytesPerPair = got.Pattern, got.MsgBytes, got.BytesPerNode, got.BytesPerPair
		want.Buffers, want.CreditEvery, want.Threads = got.Buffers, got.CreditEvery, got.Threads
	}
	wv, gv := reflect.ValueOf(want), reflect.ValueOf(got)
	for i := 0; i < wv.NumField(); i++ {
		if !reflect.DeepEqual(wv.Field(i).Interface(), gv.Field(i).Interface()) {
			return &MismatchError{Field: wv.Type().Field(i).Name, Want: wv.Field(i).Interface(), Got: gv.Field(i).Interface()}
		}
	}
	return nil
}

// MismatchError is SameRun's answer when a record was made by another
// configuration: Field (of RunConfig) is Got in the record and Want in
// the configuration asked about.
type MismatchError struct {
	Field     string
	Want, Got any
}

func (e *MismatchError) Error() string {
	show := func(v any) string {
		if sc, ok := v.(results.SoftwareCosts); ok {
			if sc.IsZero() {
				return "the defaults"
			}
			return fmt.Sprintf("%+v", sc)
		}
		return fmt.Sprintf("%v", v)
	}
	return fmt.Sprintf("%s is %s in the record but %s in the configuration", e.Field, show(e.Got), show(e.Want))
}

// meter wraps a thread and measures the time it spends in Wait.
type meter struct {
	fabric.Thread
	idle fabric.Duration
}

// Wait waits as the wrapped thread does and adds the time to idle.
func (m *meter) Wait(deadline fabric.Time, on ...fabric.Waitable) {
	t0 := m.Now()
	m.Thread.Wait(deadline, on...)
	m.idle += m.Now().Sub(t0)
}

// releaseMeter wraps an endpoint for one receiving thread and measures the
// time that thread spends in Release.
type releaseMeter struct {
	algos.Endpoint
	spent fabric.Duration
}

func (r *releaseMeter) Release(th fabric.Thread, d algos.Delivery) error {
	t0 := th.Now()
	err := r.Endpoint.Release(th, d)
	r.spent += th.Now().Sub(t0)
	return err
}

// nodeMeter sums one node's thread meters.
type nodeMeter struct {
	sendIdle, sendTime, recvIdle, recvTime, release fabric.Duration
}

func (a *nodeMeter) add(b nodeMeter) {
	a.sendIdle += b.sendIdle
	a.sendTime += b.sendTime
	a.recvIdle += b.recvIdle
	a.recvTime += b.recvTime
	a.release += b.release
}

func ratio(a, b fabric.Duration) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// ErrFewCores: the nodes of a real backend have fewer than the two cores a
// sending and a receiving thread need (the CPUs of the process divided
// among the nodes it runs).
var ErrFewCores = errors.New("too few cores per node")

// threadsRefused is the error for a thread count the node's cores cannot
// hold: every thread pair (a sender and a receiver) needs two cores.
func threadsRefused(threads, cores int) error {
	if cores < 2 {
		return setting.New("Threads", threads, "each node runs that many sending and receiving threads, two cores per thread, and a node has %d core: give the nodes at least 2 cores each", cores).Sentinel(ErrFewCores)
	}
	return setting.New("Threads", threads, "each node runs that many sending and receiving threads on its %d cores; use 1..%d", cores, cores/2)
}

package engine

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/rdmashuffle/rdmashuffle/experiments/catalogue"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/netbuild"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
	"github.com/rdmashuffle/rdmashuffle/internal/setting"
)

// SimOptions are what only the simulator does with a run: inject faults,
// change the loaded profile, bound the run in simulated time and show the
// cluster to the caller afterwards. the Simulator backend carries them; On, for other
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

// ProfileLabel is how a record names a simulated profile: its name when
// built in, "file:<path>" when loaded from a file.
func ProfileLabel(prof *sim.Profile) string {
	if prof.Source() != "builtin" {
		return "file:" + prof.Source()
	}
	return prof.Name
}

// Simulator is a simulated cluster as a backend. Options are what only the
// simulator does with a run (faults, a trace, a time limit, an
// inspector); the zero value is a plain simulated run.
type Simulator struct{ Options SimOptions }

// Name is "sim".
func (Simulator) Name() string { return "sim" }

// open loads cfg's profile, checks cfg against it (normalize, and that
// its input can finish within the time limit), applies the options'
// profile change and builds the cluster.
func (s Simulator) open(cfg *Config) (Opened, error) {
	prof, err := sim.LoadProfile(cfg.Profile)
	if err != nil {
		return nil, err
	}
	if err := cfg.normalize(prof.Host.Cores); err != nil {
		return nil, err
	}
	if err := checkFeasible(*cfg, prof, s.Options.TimeLimit); err != nil {
		return nil, err
	}
	if err := cfg.Doorbells.Check(); err != nil {
		return nil, err
	}
	cfg.Doorbells.apply(prof)
	if err := s.Options.ChangeProfile(prof); err != nil {
		return nil, err
	}
	if catalogue.DesignOf(cfg.Design).RealOnly { // known: normalize looked it up
		return nil, setting.New("Design", cfg.Design, "moves real bytes through real sockets in real time, which a simulated cluster cannot host: run it on the tcp backend (one process per node, or every node in one process)").Sentinel(ErrUnsupported)
	}
	return s.Open(*cfg, prof)
}

// ChangeProfile applies the options' profile change (ProfileOverride)
// to prof and checks the result; without one it does nothing.
func (o SimOptions) ChangeProfile(prof *sim.Profile) error {
	if o.ProfileOverride == nil {
		return nil
	}
	o.ProfileOverride(prof)
	return prof.Validate()
}

// SimCluster is the simulator opened for one point: the cluster, the
// network it was built on, the profile it runs and the options it
// carries.
type SimCluster struct {
	Cluster *sim.Cluster
	net     *netbuild.Built
	prof    *sim.Profile
	cfg     Config
	opt     SimOptions
}

// Open builds the simulated cluster of a point: cfg's nodes, seed,
// queue-pair numbering, payload mode and network, on the profile prof
// (loaded, and changed with ChangeProfile where the options ask), with
// the options' faults, fault plan, time limit, progress, checker and
// trace. Close runs the inspector and closes the cluster.
func (s Simulator) Open(cfg Config, prof *sim.Profile) (*SimCluster, error) {
	opt := s.Options
	net, err := netbuild.Build(cfg.Network, cfg.Nodes, prof, cfg.Seed)
	if err != nil {
		return nil, err
	}
	c, err := sim.New(sim.Config{Nodes: cfg.Nodes, Profile: prof, Seed: cfg.Seed, QPNumbering: cfg.QPNumbering, SizeOnly: !cfg.Payload, TimeLimit: opt.TimeLimit, Progress: opt.Progress, NoCheck: opt.NoCheck, Fabric: net.Fabric, Trace: opt.Trace})
	if err != nil {
		return nil, err
	}
	for i := 0; i < cfg.Nodes; i++ {
		if err := c.SetFaults(i, opt.Faults); err != nil {
			c.Close()
			return nil, err
		}
	}
	if err := c.SetPlan(opt.Plan); err != nil {
		c.Close()
		return nil, err
	}
	return &SimCluster{Cluster: c, net: net, prof: prof, cfg: cfg, opt: opt}, nil
}

// Cluster opens a single-switch simulated cluster for a runner of its
// own (a query, an I-Store point): nodes nodes, seed, queue-pair
// numbering and payload mode, on the profile prof changed as the options
// ask (ChangeProfile), with the options' faults and the rest (Open).
func (s Simulator) Cluster(nodes int, seed, qpNumbering uint64, payload bool, prof *sim.Profile) (*SimCluster, error) {
	if err := s.Options.ChangeProfile(prof); err != nil {
		return nil, err
	}
	return s.Open(Config{Nodes: nodes, Seed: seed, QPNumbering: qpNumbering, Payload: payload}, prof)
}

// Fabric is the simulated cluster.
func (s *SimCluster) Fabric() fabric.Fabric { return s.Cluster }

// Close shows the cluster to the options' inspector, if any, and closes
// it.
func (s *SimCluster) Close() {
	if s.opt.Inspect != nil {
		s.opt.Inspect(s.Cluster)
	}
	s.Cluster.Close()
}

// Finish checks a shuffle that succeeded (Check) and adds to its record
// what the simulator knows: the profile, the network, the events and the
// queue-pair cache's misses, each node's leaf switch.
func (s *SimCluster) Finish(rec *results.Record) error {
	if err := s.Check(); err != nil {
		return err
	}
	c, prof, cfg := s.Cluster, s.prof, s.cfg
	rec.Profile, rec.ProfileHash, rec.QPNumbering, rec.Network = ProfileLabel(prof), prof.Hash(), cfg.QPNumbering, cfg.Network
	rec.Doorbells = string(cfg.Doorbells)
	rec.SimEvents, rec.QPCacheMiss = c.Events(), c.Stats().QPCacheMissRate()
	rec.Faults = c.FaultSummary()
	if rec.NodeLeaf = nodeLeaves(s.net.Fabric); rec.NodeLeaf != nil {
		rec.LeafFinishMS = results.LeafMeans(rec.NodeFinishMS, rec.NodeLeaf)
	}
	s.NoteCheck(rec)
	return nil
}

// NoteCheck marks rec as made without the verbs-usage checker when the
// options turned it off.
func (s *SimCluster) NoteCheck(rec *results.Record) {
	if s.opt.NoCheck {
		rec.VerbsCheck = "off"
	}
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

// Failed is the error of a simulated run that failed with err: its
// first cause first, then the faults injected. A failed run is checked
// too: a hazard is one whatever the outcome, and a node whose driver
// thread ended (with its error: ended[i]) could close what it opened.
// Nodes that crashed, and nodes whose threads the run's end stopped
// mid-call, could not. A nil ended checks no node for objects left open.
func (s *SimCluster) Failed(err error, ended []bool) error {
	c := s.Cluster
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

// Check is the verbs-usage checker's verdict on a simulated run that
// succeeded: no hazard, and nothing left open.
func (s *SimCluster) Check() error {
	c := s.Cluster
	if err := c.CheckClosed(); err != nil {
		return err
	}
	return c.CheckError()
}

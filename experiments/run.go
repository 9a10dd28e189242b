package experiments

import (
	"github.com/rdmashuffle/rdmashuffle/buildinfo"
	"github.com/rdmashuffle/rdmashuffle/experiments/engine"
	"github.com/rdmashuffle/rdmashuffle/experiments/istorerun"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/experiments/tpchrun"
	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/internal/setting"
)

// RunConfig is one point: a design, a cluster and a workload (package
// engine has its fields and checks). It is portable: the same
// configuration runs on the simulator and on any other fabric; what only
// the simulator can do with a run is in SimOptions.
type RunConfig = engine.Config

// SimOptions are what only the simulator does with a run (faults, a fault
// plan, a profile change, a time limit, an inspector, a trace); the
// Simulator backend carries them.
type SimOptions = engine.SimOptions

// Backend is where Exec runs a point: a simulated cluster (Simulator,
// which carries what only the simulator does) or a fabric opened
// elsewhere (On: real hardware, the loopback verbs provider, TCP).
type Backend = engine.Backend

// Simulator is a simulated cluster as a backend; its Options are what
// only the simulator does with a run, and the zero value is a plain run.
type Simulator = engine.Simulator

// MismatchError is SameRun's answer when a record was made by another
// configuration.
type MismatchError = engine.MismatchError

// Doorbells is how a simulated host's queue pairs ring their send
// queues' doorbells (engine.Doorbells).
type Doorbells = engine.Doorbells

// The doorbell choices a run may name (engine.DoorbellChoices).
const (
	DoorbellsProfile   = engine.DoorbellsProfile
	DoorbellsShared    = engine.DoorbellsShared
	DoorbellsPerThread = engine.DoorbellsPerThread
)

// DoorbellChoices are the values a run may name, the profile's first.
var DoorbellChoices = engine.DoorbellChoices

// Sentinels of refused configurations.
var (
	// ErrUnsupported marks a configuration that asks for something the
	// runner it reached cannot do (a network of switches for a TPC-H
	// point, say), refused rather than silently ignored.
	ErrUnsupported = engine.ErrUnsupported
	// ErrFewCores: the nodes of a real backend have fewer than the two
	// cores a sending and a receiving thread need.
	ErrFewCores = engine.ErrFewCores
)

// On is the fabric f as a backend: every node of a run in this process,
// or one node per process (engine.On says how).
func On(f fabric.Fabric) Backend { return engine.On(f) }

// DefaultConfig returns the RunConfig of `explore run` without flags: the
// base every sweep starts from before its own base parameters.
func DefaultConfig() RunConfig { return engine.DefaultConfig() }

// ConfigOf returns the run configuration that produced r, for running it
// again (engine.ConfigOf).
func ConfigOf(r *results.Record) RunConfig { return engine.ConfigOf(r) }

// SameRun says whether record r was made by the configuration cfg: nil if
// so, otherwise a *MismatchError naming the first field that differs.
func SameRun(r *results.Record, cfg RunConfig) error { return engine.SameRun(r, cfg) }

// Exec runs the point cfg on backend b: the one entry to the run layer
// for every backend and every workload. It checks the workload as data
// and hands the point, once, to the runner of its kind: the synthetic
// shuffle to the engine (engine.Run, on any backend), a TPC-H query to
// tpchrun, an I-Store experiment to istorerun (both on the simulator,
// whose options they take from the backend). The record carries the
// build that made it. Run, RunSim and RunOn are its shorthands.
func Exec(b Backend, cfg RunConfig) (*results.Record, error) {
	rec, err := dispatch(b, cfg)
	if rec != nil {
		bi := buildinfo.Get()
		rec.Version, rec.Commit, rec.GoVersion = bi.Version, bi.Commit, bi.Go
	}
	return rec, err
}

func dispatch(b Backend, cfg RunConfig) (*results.Record, error) {
	s, onSim := b.(Simulator)
	if ps, ok := b.(*Simulator); ok && ps != nil {
		s, onSim = *ps, true
	}
	if !onSim && !cfg.Workload.IsShuffle() {
		return nil, setting.New("Workload", cfg.Workload.Label(), "queries and I-Store points run on the simulator only; the %s backend runs the synthetic shuffle", b.Name()).Sentinel(ErrUnsupported)
	}
	if err := cfg.Workload.Validate(); err != nil {
		return nil, setting.New("Workload", nil, "%v", err).Sentinel(err)
	}
	if err := cfg.ShuffleOnly(); err != nil {
		return nil, err
	}
	switch cfg.Workload.Kind {
	case results.Shuffle:
		return engine.Run(b, cfg)
	case results.TPCH:
		return tpchrun.RunPoint(cfg, s.Options)
	case results.IStoreJoin, results.IStoreMicro:
		return istorerun.RunPoint(cfg, s.Options)
	}
	return nil, setting.New("Workload", cfg.Workload.Kind, "unknown kind").Sentinel(results.ErrWorkload)
}

// Run runs one point on a simulated cluster: the shuffle (checking that
// every node received exactly the tuples sent to it), or the TPC-H query
// or I-Store experiment of its workload. It is RunSim without options.
func Run(cfg RunConfig) (*results.Record, error) { return Exec(Simulator{}, cfg) }

// RunSim runs one point on a simulated cluster with the simulator's
// options (faults, fault plan, profile change, time limit, inspector): a
// failed run's error names the faults injected.
func RunSim(cfg RunConfig, opt SimOptions) (*results.Record, error) {
	return Exec(Simulator{Options: opt}, cfg)
}

// RunOn runs one shuffle on a fabric built elsewhere, such as the
// real-hardware backend (fabric/ibv): Exec(On(f), cfg).
func RunOn(f fabric.Fabric, cfg RunConfig) (*results.Record, error) { return Exec(On(f), cfg) }

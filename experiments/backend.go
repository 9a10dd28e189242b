package experiments

import (
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// Backend is where Exec runs a point: a simulated cluster (Simulator,
// which carries what only the simulator does) or a fabric opened
// elsewhere (On: real hardware, the loopback verbs provider, TCP).
type Backend interface {
	exec(cfg RunConfig) (*results.Record, error)
}

// Simulator is a simulated cluster as a backend. Options are what only the
// simulator does with a run (faults, a trace, a time limit, an
// inspector); the zero value is a plain simulated run.
type Simulator struct{ Options SimOptions }

func (s Simulator) exec(cfg RunConfig) (*results.Record, error) { return RunSim(cfg, s.Options) }

// onFabric is a fabric built elsewhere as a backend.
type onFabric struct{ f fabric.Fabric }

func (o onFabric) exec(cfg RunConfig) (*results.Record, error) { return RunOn(o.f, cfg) }

// On is the fabric f as a backend: every node of a run in this process,
// or one node per process (RunOn says how).
func On(f fabric.Fabric) Backend { return onFabric{f} }

// Exec runs the point cfg on backend b: the one entry to the run layer
// for every backend and every workload. Run, RunSim and RunOn are its
// shorthands.
func Exec(b Backend, cfg RunConfig) (*results.Record, error) { return b.exec(cfg) }

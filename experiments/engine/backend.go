package engine

import (
	"errors"

	"github.com/rdmashuffle/rdmashuffle/experiments/catalogue"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// Backend is where a point runs: a simulated cluster (Simulator, which
// carries what only the simulator does) or a fabric opened elsewhere
// (On: real hardware, the loopback verbs provider, TCP).
type Backend interface {
	// Name is the backend as records and errors name it: "sim", or
	// the fabric's own (fabric.Fabric.Backend).
	Name() string
	// open checks cfg against the backend, fills in the defaults that
	// depend on it (the cores of a node, a port's MTU) and opens the
	// fabric the shuffle runs on.
	open(cfg *Config) (Opened, error)
}

// Opened is a backend opened for one point: the fabric its nodes run
// on, and what the backend adds to the run's outcome.
type Opened interface {
	Fabric() fabric.Fabric
	// Failed is the error of a run that failed with err; ended marks
	// each node whose driver thread returned (nil: none is known to).
	Failed(err error, ended []bool) error
	// Finish checks a shuffle that succeeded and completes its record
	// with what only this backend knows.
	Finish(rec *results.Record) error
	// Close releases the backend (and, on the simulator, shows the
	// cluster to the options' inspector first).
	Close()
}

// Run runs one synthetic shuffle (cfg's workload is the shuffle) on
// backend b: open the backend, run one driver per node on its fabric
// (shuffleOn), check the outcome and build the record. qperf's ceiling
// runs as perftest's all-to-all instead, on the simulator only.
func Run(b Backend, cfg Config) (*results.Record, error) {
	if !cfg.Workload.IsShuffle() {
		return nil, errors.New("the engine runs the synthetic shuffle; queries and I-Store points have runners of their own")
	}
	o, err := b.open(&cfg)
	if err != nil {
		return nil, err
	}
	defer o.Close()
	if sc, ok := o.(*SimCluster); ok && catalogue.DesignOf(cfg.Design).Ceiling {
		return runQperf(cfg, sc)
	}
	ended := make([]bool, cfg.Nodes)
	rec, err := shuffleOn(o.Fabric(), cfg, ended)
	if err != nil {
		return nil, o.Failed(err, ended)
	}
	if err := o.Finish(rec); err != nil {
		return nil, err
	}
	return rec, nil
}

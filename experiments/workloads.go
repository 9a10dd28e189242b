package experiments

import (
	"github.com/rdmashuffle/rdmashuffle/experiments/istorerun"
	"github.com/rdmashuffle/rdmashuffle/experiments/tpchrun"
)

// The runners of the other workloads, as the run layer's callers name
// them: TPC-H queries (package tpchrun) and I-Store experiments (package
// istorerun). Exec reaches them through a point's workload.

// QueryConfig is one TPC-H query on a simulated cluster.
type QueryConfig = tpchrun.QueryConfig

// QueryRecord is the record of one query run.
type QueryRecord = tpchrun.QueryRecord

// StepStat is what one exchange of a query plan moved.
type StepStat = tpchrun.StepStat

// MaxSF is the largest scale factor a query takes.
const MaxSF = tpchrun.MaxSF

// RunQuery runs one TPC-H query on a simulated cluster.
func RunQuery(cfg QueryConfig) (*QueryRecord, error) { return tpchrun.RunQuery(cfg) }

// RunQuerySim is RunQuery with the simulator's options.
func RunQuerySim(cfg QueryConfig, opt SimOptions) (*QueryRecord, error) {
	return tpchrun.RunQuerySim(cfg, opt)
}

// The designs of I-Store points.
const (
	IStoreDesign          = istorerun.IStoreDesign
	IStoreUnicastDesign   = istorerun.IStoreUnicastDesign
	IStoreReadDesign      = istorerun.IStoreReadDesign
	IStoreMulticastDesign = istorerun.IStoreMulticastDesign
)

// StarJoinConfig is one star join on a simulated cluster.
type StarJoinConfig = istorerun.StarJoinConfig

// StarJoinResult is a star join's outcome.
type StarJoinResult = istorerun.StarJoinResult

// RunStarJoin runs one star join.
func RunStarJoin(cfg StarJoinConfig) (*StarJoinResult, error) { return istorerun.RunStarJoin(cfg) }

// RunStarJoinSim is RunStarJoin with the simulator's options.
func RunStarJoinSim(cfg StarJoinConfig, opt SimOptions) (*StarJoinResult, error) {
	return istorerun.RunStarJoinSim(cfg, opt)
}

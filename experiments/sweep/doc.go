// Package sweep runs experiments in bulk: a sweep is a base
// experiments.RunConfig and a cartesian product of parameter values (the
// parameters are `explore run`'s flags, see Params), from a YAML spec
// (ParseSweep, docs/sweeps.md) or Go code (NewSweep). RunSweep runs its
// points in parallel through experiments.Run (or another runner) and
// writes one JSON line per point (a results.Result); Merge joins the files of
// shards; the statistics and plots turn results into tables and figures.
// It sits above the run layer (package experiments) and below the
// figures (package figures) and cmd/explore.
package sweep

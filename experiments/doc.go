// Package experiments is the run layer's root: Exec runs one point (a
// shuffle, a TPC-H query, an I-Store experiment) on a backend and returns
// its record (docs/results.md). It checks the point's workload and hands
// the point, once, to the runner of its kind: package engine for the
// shuffle (on any backend), tpchrun and istorerun for the others; the
// catalogue of designs is package catalogue. It also estimates a run's
// memory and compares a fabric with the model. Sweeps (package
// experiments/sweep) and the figures and their judge (package
// experiments/figures) build on it. It is the one layer (with those
// packages and cmd/explore) that may choose a backend; algorithm packages
// never do.
package experiments

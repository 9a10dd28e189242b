// Package experiments is the run layer: it runs one workload (a shuffle, a
// TPC-H query, an I-Store point, a soak, a calibration) on a backend and
// reports results in the records of docs/results.md. Sweeps (package
// experiments/sweep) and the figures and their judge (package
// experiments/figures) build on it. It is the one layer (with those
// packages and cmd/explore) that may choose a backend; algorithm packages
// never do.
package experiments

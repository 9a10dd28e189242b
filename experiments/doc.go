// Package experiments runs workloads on a backend and reports results in
// the records of docs/results.md. It is the one layer (with cmd/explore)
// that may choose a backend; algorithm packages never do.
package experiments

// Package figures reproduces the evaluation of the papers this project
// follows: each Figure is a set of sweeps (package sweep) with the plots
// drawn from their results, Claims is the table of published observations
// the results are checked against, Judge turns results into a verdict per
// claim, and Reproduce runs every figure and writes the validation report
// (docs/validation.md). It is the top layer under cmd/explore.
package figures

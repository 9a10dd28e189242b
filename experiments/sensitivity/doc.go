// Package sensitivity answers "which of the papers' claims does the model
// decide on an estimate?". It moves each model parameter that has no
// hardware measurement behind it (Estimates; docs/model.md marks them (E)):
// a simulator profile parameter in every built-in profile, or a software
// cost outside the profiles (the baselines' cycle counts, the cycles per
// polled cache line) in every run, by a factor, x0.5 and x2 by default,
// reruns the figures that judge the claims (quick scale), and reports per
// claim which changes flip its verdict. docs/validation.md's robustness
// column comes from its report: a verdict that flips under an estimate is
// fragile, and a fragile pass is not counted as a pass.
//
// It sits above experiments/figures (it drives Reproduce with a wrapped
// run function) and below cmd/explore (explore sensitivity).
package sensitivity

package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/experiments/sweep"
)

// addRunFlags registers a flag per sweep parameter on fs, as explore run
// declares them: named by the parameter's key, with its help text, bound
// to cfg's field and defaulting to its current value (start from
// experiments.DefaultConfig for explore run's defaults).
func addRunFlags(fs *pflag.FlagSet, cfg *experiments.RunConfig) {
	for _, b := range sweep.Bindings(cfg) {
		switch t := b.Target.(type) {
		case *string:
			fs.StringVar(t, b.Key, *t, b.Help)
		case *int:
			fs.IntVar(t, b.Key, *t, b.Help)
		case *int64:
			fs.Int64Var(t, b.Key, *t, b.Help)
		case *uint64:
			fs.Uint64Var(t, b.Key, *t, b.Help)
		case *bool:
			fs.BoolVar(t, b.Key, *t, b.Help)
		case sweep.Value:
			fs.Var(t, b.Key, b.Help)
		default:
			panic(fmt.Sprintf("sweep parameter %s binds a %T, which has no flag type", b.Key, b.Target))
		}
	}
}

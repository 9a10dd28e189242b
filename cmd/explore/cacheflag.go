package main

// cacheflag.go: --cache, --no-cache and --clear-cache, the cache of
// finished points that reproduce and sensitivity keep across invocations
// (sweep.Cache), and the line that says what it did.

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/rdmashuffle/rdmashuffle/buildinfo"
	"github.com/rdmashuffle/rdmashuffle/experiments/sweep"
)

// cacheFlags are the cache flags of a command that runs figures.
type cacheFlags struct {
	dir        string
	off, clear bool
}

// cacheBuild is the build whose records the cache keeps (tests stand for
// a stamped build: go test stamps none).
var cacheBuild = buildinfo.Get

func (c *cacheFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&c.dir, "cache", filepath.Join("results", "cache"), "where finished points are kept across invocations, by the build's commit and the point's whole configuration (profile parameters included): a second run takes the points it has instead of running them")
	fl.BoolVar(&c.off, "no-cache", false, "neither take points from the cache nor add any to it")
	fl.BoolVar(&c.clear, "clear-cache", false, "empty the cache (every commit's points) before running")
}

// open clears the cache if asked and opens it for this build; nil (and
// a note on w saying why) when it is off or the build cannot use one.
func (c *cacheFlags) open(w io.Writer) (*sweep.Cache, error) {
	if c.clear {
		n, err := sweep.ClearCache(c.dir)
		if err != nil {
			return nil, fmt.Errorf("--clear-cache: %w", err)
		}
		fmt.Fprintf(w, "cache: removed the points of %d build(s) from %s\n", n, c.dir)
	}
	if c.off {
		return nil, nil
	}
	code, err := sweep.Code(cacheBuild())
	if errors.Is(err, sweep.ErrNoCode) {
		fmt.Fprintf(w, "cache off: %v; its points could come from any code, so none is taken or kept (build with make build, from a checkout with every change committed)\n", err)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return sweep.OpenCache(c.dir, code)
}

// cacheSummary says how many points the cache answered and kept, and
// how many took the record of the same point in another figure or sweep.
func cacheSummary(w io.Writer, c *sweep.Cache, shared int) {
	if c != nil && c.Hits()+c.Kept() > 0 {
		fmt.Fprintf(w, "cache: %d runs taken from %s, %d run and kept\n", c.Hits(), c.Dir(), c.Kept())
	}
	if shared > 0 {
		fmt.Fprintf(w, "%d points took the record of the same point in another figure or sweep instead of running\n", shared)
	}
}

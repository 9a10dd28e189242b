package main

// memflag.go: --max-memory, the memory budget that the commands running
// figures (figure, reproduce, query --figure, report, sensitivity) admit
// their parallel runs against (experiments.MemoryBudget), and that explore
// run and explore bench check their one run against.

import (
	"fmt"
	"strconv"

	"github.com/dustin/go-humanize"
	"github.com/spf13/pflag"

	"github.com/rdmashuffle/rdmashuffle/experiments"
)

// byteSize is a flag holding a number of bytes written with a unit: 8GiB,
// 500MB, 2.5 GiB (go-humanize's ParseBytes: KB, MB, GB are powers of 1000,
// KiB, MiB, GiB of 1024).
type byteSize struct{ n *int64 }

func (f byteSize) String() string {
	if f.n == nil || *f.n == 0 {
		return ""
	}
	return humanize.IBytes(uint64(*f.n))
}

func (byteSize) Type() string { return "bytes" }

func (f byteSize) Set(text string) error {
	n, err := humanize.ParseBytes(text)
	if err != nil || n == 0 || n > 1<<60 {
		return fmt.Errorf("want a positive size with a unit, e.g. 8GiB or 500MB")
	}
	*f.n = int64(n)
	return nil
}

// memoryLimits are the memory flags of a command that runs figures.
type memoryLimits struct {
	off bool  // --no-memory-check
	max int64 // --max-memory, bytes; 0: what the system has available
}

// budget is the budget that admits the command's parallel runs: --max-memory,
// or the memory available when it starts; nil (no limit) when the check is
// off or the system does not say.
func (m memoryLimits) budget() (*experiments.MemoryBudget, error) {
	switch {
	case m.off && m.max > 0:
		return nil, fmt.Errorf("--max-memory with --no-memory-check: choose one (a budget for the runs, or none)")
	case m.off:
		return nil, nil
	case m.max > 0:
		return experiments.NewMemoryBudget(m.max), nil
	}
	if avail, ok := experiments.AvailableMemory(); ok {
		return experiments.NewMemoryBudget(avail), nil
	}
	return nil, nil
}

// register adds --no-memory-check and --max-memory to fl.
func (m *memoryLimits) register(fl *pflag.FlagSet) {
	fl.BoolVar(&m.off, "no-memory-check", false, "run points in parallel (and grow them, in reproduce) whatever their estimated memory (by default the runs running at once must fit in the memory available at the start, and growth stops before a run that alone would not)")
	fl.Var(byteSize{&m.max}, "max-memory", "the memory the runs may take together, e.g. 8GiB (default: what the system has available at the start)")
}

// single is the limit one run (explore run, explore bench) is checked
// against before it starts: --max-memory, else what system says (the
// memory available, or installed); ok is false when the check is off or
// nothing is known.
func (m memoryLimits) single(system func() (int64, bool)) (limit int64, ok bool, err error) {
	switch {
	case m.off && m.max > 0:
		_, err = m.budget()
		return 0, false, err
	case m.off:
		return 0, false, nil
	case m.max > 0:
		return m.max, true, nil
	}
	limit, ok = system()
	return limit, ok, nil
}

// mustBudget is budget for flags already checked (a PreRunE called budget).
func (m memoryLimits) mustBudget() *experiments.MemoryBudget {
	b, _ := m.budget()
	return b
}

// sizeFlag is a message size in bytes, with or without a unit (bench -s
// 65536, -s 64KiB, -s 1MB).
type sizeFlag struct{ n *int }

func (f sizeFlag) String() string { return strconv.Itoa(*f.n) }
func (sizeFlag) Type() string     { return "bytes" }

func (f sizeFlag) Set(text string) error {
	n, err := humanize.ParseBytes(text)
	if err != nil || n > 1<<40 {
		return fmt.Errorf("want a size in bytes, e.g. 4096 or 64KiB")
	}
	*f.n = int(n)
	return nil
}

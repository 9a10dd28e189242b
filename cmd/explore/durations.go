package main

// durations.go: every time flag of explore takes a Go duration (30s,
// 1.5ms, 10m). The older spellings in milliseconds or seconds
// (--timeout-ms, soak's --wall-limit-s) still work as hidden aliases that
// print a one-line deprecation note.

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// maxSimDuration is the longest simulated duration a flag takes (far
// below what picoseconds in an int64 hold).
const maxSimDuration = 24 * time.Hour

// simDuration is a flag holding a simulated duration (fabric.Duration,
// picoseconds) written as a Go duration: --timeout 100ms.
type simDuration struct{ d *fabric.Duration }

func (f simDuration) String() string {
	if f.d == nil {
		return "0s"
	}
	return f.d.Std().String()
}

func (simDuration) Type() string { return "duration" }

func (f simDuration) Set(text string) error {
	d, err := time.ParseDuration(text)
	if err != nil {
		return fmt.Errorf("want a duration with a unit, e.g. 100ms or 1.5s")
	}
	if d > maxSimDuration {
		return fmt.Errorf("at most %s of simulated time", maxSimDuration)
	}
	*f.d = fabric.Duration(d) * fabric.Nanosecond
	return nil
}

// scaledAlias is a deprecated flag holding a number of units (--timeout-ms
// 100: 100 milliseconds) that sets the flag that replaced it.
type scaledAlias struct {
	to   pflag.Value   // the new flag's value, set as a Go duration
	unit time.Duration // what one unit of the old flag is
	text string
}

func (a *scaledAlias) String() string { return a.text }
func (*scaledAlias) Type() string     { return "float64" }

func (a *scaledAlias) Set(text string) error {
	var v float64
	if _, err := fmt.Sscanf(text, "%g", &v); err != nil {
		return fmt.Errorf("want a number")
	}
	a.text = text
	return a.to.Set(time.Duration(v * float64(a.unit)).String())
}

// addDurationAlias registers old as a hidden, deprecated spelling of the
// duration flag to in units of unit (--timeout-ms for --timeout: old
// "timeout-ms", unit time.Millisecond, example "100ms"). Using it prints one line naming
// the new flag.
func addDurationAlias(fl *pflag.FlagSet, old, to string, unit time.Duration, example string) {
	fl.Var(&scaledAlias{to: fl.Lookup(to).Value, unit: unit}, old, "deprecated: --"+to)
	fl.MarkDeprecated(old, fmt.Sprintf("use --%s with a unit (e.g. --%s %s)", to, to, example))
}

// perftestSeconds is a perftest time flag (-D, -f): whole seconds as
// perftest takes them (-D 5), or a Go duration (-D 10ms), which suits
// simulated runs.
type perftestSeconds fabric.Duration

func (f *perftestSeconds) String() string {
	if *f == 0 {
		return ""
	}
	return fabric.Duration(*f).Std().String()
}

func (*perftestSeconds) Type() string { return "seconds" }

func (f *perftestSeconds) Set(text string) error {
	var d time.Duration
	var n int64
	if _, err := fmt.Sscanf(text, "%d", &n); err == nil && fmt.Sprint(n) == text {
		d = time.Duration(n) * time.Second
	} else if d, err = time.ParseDuration(text); err != nil {
		return fmt.Errorf("want whole seconds (5) or a duration with a unit (10ms)")
	}
	if d < 0 || d > maxSimDuration {
		return fmt.Errorf("want a duration from 0 to %s", maxSimDuration)
	}
	*f = perftestSeconds(fabric.Duration(d) * fabric.Nanosecond)
	return nil
}

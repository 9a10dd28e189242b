package fabric

import (
	"fmt"
	"time"
)

// Time is a point on a run's clock in picoseconds since the run started.
// The simulator advances it in integer steps; the hardware backend reads the
// monotonic clock. Integer picoseconds make every simulated event order exact.
type Time int64

// Duration is a span of Time in picoseconds.
type Duration int64

// Common durations.
const (
	Picosecond  Duration = 1
	Nanosecond  Duration = 1000
	Microsecond Duration = 1000 * Nanosecond
	Millisecond Duration = 1000 * Microsecond
	Second      Duration = 1000 * Millisecond
)

// Forever is a deadline that never passes.
const Forever Time = 1<<63 - 1

// Add returns t+d, saturating at Forever.
func (t Time) Add(d Duration) Time {
	if d > 0 && t > Forever-Time(d) {
		return Forever
	}
	return t + Time(d)
}

// Sub returns t-u.
func (t Time) Sub(u Time) Duration { return Duration(t - u) }

// Seconds returns t in seconds since the start of the run.
func (t Time) Seconds() float64 { return float64(t) / 1e12 }

func (t Time) String() string { return Duration(t).String() }

// Seconds returns d in seconds.
func (d Duration) Seconds() float64 { return float64(d) / 1e12 }

// Microseconds returns d in microseconds as a float.
func (d Duration) Microseconds() float64 { return float64(d) / 1e6 }

// Std converts d to a time.Duration (nanosecond resolution, truncated).
func (d Duration) Std() time.Duration { return time.Duration(d / Nanosecond) }

// FromStd converts a time.Duration to a Duration.
func FromStd(d time.Duration) Duration { return Duration(d) * Nanosecond }

func (d Duration) String() string {
	switch a := d; {
	case a < 0:
		return "-" + (-d).String()
	case a < Nanosecond:
		return fmt.Sprintf("%dps", int64(d))
	case a < Microsecond:
		return fmt.Sprintf("%.3fns", float64(d)/1e3)
	case a < Millisecond:
		return fmt.Sprintf("%.3fus", float64(d)/1e6)
	case a < Second:
		return fmt.Sprintf("%.3fms", float64(d)/1e9)
	default:
		return fmt.Sprintf("%.6fs", float64(d)/1e12)
	}
}

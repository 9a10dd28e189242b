package algos

import (
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// CreditTimers are SQ/SR's credit timers (repeats.go, owed.go). No source
// gives them: they are this implementation's choices, so the sensitivity
// analysis moves them like the model's estimates (docs/model.md §4,
// "credit.*"), and Config.Credit replaces them for a run.
type CreditTimers struct {
	// RepeatQuiet is a connection's first gap before its credit is
	// repeated (the gap doubles with every repeat, up to 32 times this),
	// and how long a receiving thread finds nothing before it looks for
	// repeats at all.
	RepeatQuiet fabric.Duration `json:"repeat_quiet_ps"`
	// RepeatScan is the shortest time between two looks at a thread's
	// connections for repeats that fell due, and how soon a walk that
	// stopped at a full credit queue goes on.
	RepeatScan fabric.Duration `json:"repeat_scan_ps"`
	// OwedRetry is how often a waiting receiver with credit owed polls
	// its credit queue's completions for room.
	OwedRetry fabric.Duration `json:"owed_retry_ps"`
}

// DefaultCreditTimers are the timers every run uses unless Config.Credit
// says otherwise. A change of them changes what the model computes: list
// it in the sensitivity analysis's Mechanisms and refresh the golden
// records in the same change.
var DefaultCreditTimers = CreditTimers{
	RepeatQuiet: 50 * fabric.Microsecond,
	RepeatScan:  25 * fabric.Microsecond,
	OwedRetry:   fabric.Microsecond,
}

// maxBackoff bounds the doubling gap between repeats of the credit of a
// connection that stays quiet at RepeatQuiet << maxBackoff (32 times):
// a stalled cluster sent every source its credit from every receiving
// thread every 50 us (16,000 credit messages a second per thread at 4
// nodes) for as long as the stall lasted.
const maxBackoff = 5

// check reports a timer that is not positive.
func (t CreditTimers) check() error {
	for _, f := range []struct {
		name string
		d    fabric.Duration
	}{{"RepeatQuiet", t.RepeatQuiet}, {"RepeatScan", t.RepeatScan}, {"OwedRetry", t.OwedRetry}} {
		if f.d <= 0 {
			return fmt.Errorf("%w: credit timer %s is %v: it must be positive (leave Config.Credit nil for the defaults)", ErrConfig, f.name, f.d)
		}
	}
	return nil
}

// creditTimers is c.Credit, or the defaults.
func (c Config) creditTimers() CreditTimers {
	if c.Credit != nil {
		return *c.Credit
	}
	return DefaultCreditTimers
}

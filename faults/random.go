package faults

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// Scenario names the kinds of fault Random draws from.
var Scenarios = []string{"loss", "ud-loss", "drop-kind", "drop-packet", "duplicate", "reorder", "corrupt",
	"link-down", "slow-receiver", "crash", "retry-exhaustion", "cache-thrash"}

// HighUDLoss is a scenario family Random does not draw: random loss of
// 10% to 50% of UD packets, for the UD designs with loss recovery (which
// must deliver exactly, or stop with an error, never hang).
const HighUDLoss = "ud-loss-high"

// Phases are how long a shuffle's setup and data phase last without
// faults; timed faults fall in either, half the time each.
type Phases struct{ Setup, Data fabric.Duration }

func (p Phases) at(r *rand.Rand) Duration {
	if r.IntN(2) == 0 || p.Data <= 0 {
		return Duration(r.Int64N(int64(max(p.Setup, 1))))
	}
	return Duration(p.Setup + fabric.Duration(r.Int64N(int64(p.Data))))
}

// Random draws a fault schedule for a cluster of nodes nodes whose shuffle
// has the given phases: one scenario, and a second one in a third of the
// draws. It returns the schedule and the names of its scenarios.
func Random(r *rand.Rand, nodes int, span Phases) (*Schedule, []string) {
	s := &Schedule{}
	k := 1
	if r.IntN(3) == 0 {
		k = 2
	}
	var names []string
	for i := 0; i < k; i++ {
		sc := Scenarios[r.IntN(len(Scenarios))]
		names = append(names, sc)
		addScenario(r, s, sc, nodes, span)
	}
	return s, names
}

// ErrUnknownScenario is a scenario name that is not one of Scenarios.
var ErrUnknownScenario = errors.New("unknown fault scenario")

// Scenario returns a schedule of one named scenario (Scenarios).
func Scenario(r *rand.Rand, name string, nodes int, span Phases) (*Schedule, error) {
	if !contains(Scenarios, name) && name != HighUDLoss {
		return nil, fmt.Errorf("%w %q (scenarios: %v)", ErrUnknownScenario, name, Scenarios)
	}
	s := &Schedule{}
	addScenario(r, s, name, nodes, span)
	return s, nil
}

func addScenario(r *rand.Rand, s *Schedule, sc string, nodes int, span Phases) {
	at := func() Duration { return span.at(r) }
	node := func() int { return r.IntN(nodes) }
	pick := func(v ...float64) float64 { return v[r.IntN(len(v))] }
	switch sc {
	case "loss":
		s.Loss = append(s.Loss, RateFault{Rate: pick(1e-4, 5e-4, 1e-3, 5e-3, 2e-2)})
	case "ud-loss": // below 0.1%: UD designs with recovery must deliver exactly
		s.Loss = append(s.Loss, RateFault{Selector: Selector{Transport: "UD"}, Rate: pick(1e-4, 3e-4, 9e-4)})
	case HighUDLoss:
		s.Loss = append(s.Loss, RateFault{Selector: Selector{Transport: "UD"}, Rate: pick(0.1, 0.2, 0.3, 0.5)})
	case "drop-kind":
		d := Drop{Selector: Selector{Kind: Kinds[1+r.IntN(3)]}, Nth: 1 + r.IntN(5)}
		if r.IntN(2) == 0 {
			src, dst := node(), node()
			d.Src, d.Dst = &src, &dst
		}
		s.Drop = append(s.Drop, d)
	case "drop-packet":
		src, dst := node(), node()
		if nodes > 1 {
			for dst == src {
				dst = node()
			}
		}
		s.Drop = append(s.Drop, Drop{Selector: Selector{Src: &src, Dst: &dst}, Packet: 1 + r.IntN(300)})
	case "duplicate":
		s.Duplicate = append(s.Duplicate, RateFault{Rate: pick(0.005, 0.02, 0.05)})
	case "reorder":
		s.Reorder = append(s.Reorder, RateFault{Rate: pick(0.02, 0.1, 0.2), Delay: Duration(fabric.Microsecond) * Duration(1+r.IntN(5))})
	case "corrupt":
		s.Corrupt = append(s.Corrupt, RateFault{Rate: pick(1e-3, 5e-3, 1e-2)})
	case "link-down":
		from := at()
		s.LinkDown = append(s.LinkDown, Window{Node: node(), From: from, To: from + Duration(fabric.Microsecond)*Duration(20+r.IntN(2000))})
	case "slow-receiver":
		from := at()
		s.SlowReceiver = append(s.SlowReceiver, Window{Node: node(), From: from, To: from + Duration(fabric.Microsecond)*Duration(20+r.IntN(500))})
	case "crash":
		s.Crash = append(s.Crash, Crash{Node: node(), At: at()})
	case "retry-exhaustion":
		from := at()
		s.RCRetry = &RCRetry{RetryCnt: r.IntN(3), Timeout: uint8(8 + r.IntN(3))} // 1 to 4 ms
		s.LinkDown = append(s.LinkDown, Window{Node: node(), From: from, To: from + 20*Duration(fabric.Millisecond)})
	case "cache-thrash":
		s.QPCacheEntries = 1 + r.IntN(4)
	}
}

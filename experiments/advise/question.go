// Package advise answers "which shuffle design on this cluster?": it runs
// every applicable design on the simulated cluster, ranks them by the
// expected time of the asked shuffle including connection set-up, gives
// each a band from real reruns (other seeds, other queue-pair numberings,
// the decisive estimated parameters at half and double), says which are
// tied with the winner, names each design's bottleneck from the
// simulator's own busy times and counters, and refuses the designs that do
// not fit the registered-memory budget, with the reason.
//
// The asked input is rarely simulated whole: each design runs at a
// screening input and twice that, and its response time is extrapolated
// linearly from the two (a fixed part and a marginal rate). The
// contenders are grown further, doubling, until their marginal rate moves
// by less than SteadyTolerance. docs/advise.md says how, and what that
// cannot see.
package advise

import (
	"errors"
	"fmt"
	"slices"

	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/internal/setting"
)

// Connect says whether the shuffle pays connection set-up.
type Connect string

const (
	// PerQuery: every query sets its endpoints up and tears them down, so
	// the set-up time is part of the shuffle's time (the default: it is
	// what the papers measure, and what an engine without connection
	// caching pays).
	PerQuery Connect = "per-query"
	// PreConnected: the endpoints are set up once and reused, so only
	// the data phase counts.
	PreConnected Connect = "pre-connected"
)

// Connects lists the accepted values.
var Connects = []Connect{PerQuery, PreConnected}

// Question is what a user asks: the cluster and workload (Base, whose
// Design is ignored), and how the answer should weigh the designs.
type Question struct {
	// Base is the cluster and the workload: profile, nodes, threads,
	// pattern, cycles per tuple (or per node), network, seed, message
	// size and buffers (0: each design's default). BytesPerNode is the
	// shuffle's input per node: what the ranked time is for.
	Base experiments.RunConfig
	// Connect: whether set-up counts (PerQuery, the default when empty).
	Connect Connect
	// MemoryBudget is the registered memory a node may use, in bytes (0:
	// no budget). A design that registers more is refused.
	MemoryBudget int64
	// Designs limits the candidates (nil: every design the simulator
	// runs that moves tuples and supports the pattern).
	Designs []string
	// ScreenBytes is the screening input per node (0: DefaultScreenBytes,
	// or the asked input when smaller).
	ScreenBytes int64
	// Band chooses the reruns behind each contender's band.
	Band Band
	// MaxGrowth bounds a contender's growth: its largest run has at most
	// this many times the screening input (0: DefaultMaxGrowth).
	MaxGrowth int64
}

// Band chooses the reruns behind a contender's band.
type Band string

const (
	// BandFull: other seeds, other numberings, and the decisive
	// estimates at half and double (the default).
	BandFull Band = "full"
	// BandControls: other seeds and numberings only.
	BandControls Band = "controls"
	// BandNone: no reruns; every band is the point itself, and nothing is
	// called tied unless equal.
	BandNone Band = "none"
)

// Bands lists the accepted values.
var Bands = []Band{BandFull, BandControls, BandNone}

const (
	// DefaultScreenBytes is the default screening input per node.
	DefaultScreenBytes = 16 << 20
	// DefaultMaxGrowth is how far a contender grows by default.
	DefaultMaxGrowth = 8
	// SteadyTolerance: a contender stops growing when its marginal rate
	// moves by less than this from one doubling to the next.
	SteadyTolerance = 0.03
	// ContenderFactor: a design whose screened time is within this factor
	// of the best one's is grown and given a band.
	ContenderFactor = 1.25
)

// maxGrowthLimit bounds MaxGrowth: a million doublings' worth of input is
// past any run the simulator could finish (growthLimit keeps the product
// from overflowing whatever the value).
const maxGrowthLimit = 1 << 20

// ErrNoCandidates: no design applies to the question.
var ErrNoCandidates = errors.New("no design applies")

// normalized returns q with its defaults filled in, or an error naming the
// setting at fault.
func (q Question) normalized() (Question, error) {
	if q.Connect == "" {
		q.Connect = PerQuery
	}
	if q.Band == "" {
		q.Band = BandFull
	}
	if q.MaxGrowth == 0 {
		q.MaxGrowth = DefaultMaxGrowth
	}
	if q.ScreenBytes == 0 {
		q.ScreenBytes = DefaultScreenBytes
	}
	switch {
	case !slices.Contains(Connects, q.Connect):
		return q, setting.New("Connect", q.Connect, "choose one of %v", Connects)
	case !slices.Contains(Bands, q.Band):
		return q, setting.New("Band", q.Band, "choose one of %v", Bands)
	case q.MemoryBudget < 0:
		return q, setting.New("MemoryBudget", q.MemoryBudget, "must not be negative (0: no budget)")
	case q.ScreenBytes < 0:
		return q, setting.New("ScreenBytes", q.ScreenBytes, "must be positive")
	case q.MaxGrowth < 1:
		return q, setting.New("MaxGrowth", q.MaxGrowth, "must be at least 1")
	case q.MaxGrowth > maxGrowthLimit:
		return q, setting.New("MaxGrowth", q.MaxGrowth, "above %d: no simulated run grows that far", maxGrowthLimit)
	case q.Base.BytesPerNode <= 0:
		return q, setting.New("BytesPerNode", q.Base.BytesPerNode, "the shuffle's input per node must be positive")
	case q.Base.BytesPerPair != 0:
		return q, setting.New("BytesPerPair", q.Base.BytesPerPair, "advice is for an input per node; give BytesPerNode")
	case !q.Base.Workload.IsShuffle():
		return q, setting.New("Workload", q.Base.Workload.Label(), "advice is for a shuffle; TPC-H and I-Store points are not ranked")
	}
	q.ScreenBytes = min(q.ScreenBytes, q.Base.BytesPerNode)
	return q, nil
}

// String is how the question reads in a heading.
func (q Question) String() string { return q.describe(nil) }

// describe is String with each parameter of swept written as swept.
func (q Question) describe(swept []Param) string {
	b := q.Base
	show := func(p Param, v string) string {
		if slices.Contains(swept, p) {
			return string(p) + " swept"
		}
		return v
	}
	s := fmt.Sprintf("%s, %s x %s, %s of %s per node, %s", b.Profile, show(ParamNodes, fmt.Sprintf("%d nodes", b.Nodes)),
		show(ParamThreads, fmt.Sprintf("%d threads", b.Threads)), b.Pattern, show(ParamBytesPerNode, experiments.GiB(b.BytesPerNode)), q.Connect)
	if q.MemoryBudget > 0 || slices.Contains(swept, ParamMemoryBudget) {
		s += ", memory budget " + show(ParamMemoryBudget, experiments.GiB(q.MemoryBudget))
	}
	if slices.Contains(swept, ParamCycles) {
		s += ", cycles-per-tuple swept"
	}
	return s
}

package advise

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/experiments/sensitivity"
	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// Status is where a design ended in the advice.
type Status string

const (
	Ranked     Status = "ranked"      // screened, and (if a contender) grown and given a band
	Refused    Status = "refused"     // over the memory budget or a device limit
	Failed     Status = "failed"      // its run failed for another reason
	NotApplied Status = "not-applied" // the design does not support the question's workload
)

// Point is one run of a design: its input per node and what it measured.
type Point struct {
	BytesPerNode int64   `json:"bytes_per_node"`
	ResponseS    float64 `json:"response_s"`
	SetupMS      float64 `json:"setup_ms"`
}

// Variant is one rerun behind a band: what was changed and the expected
// time it gives.
type Variant struct {
	Change string  `json:"change"`
	TimeS  float64 `json:"time_s"`
}

// Design is one design's answer.
type Design struct {
	Name   string `json:"design"`
	Family string `json:"family"`
	Status Status `json:"status"`
	Reason string `json:"reason,omitempty"` // why refused, failed or not applied
	// Expected time of the asked shuffle: set-up (per-query) plus the
	// data phase extrapolated to the asked input.
	TimeS     float64 `json:"time_s,omitempty"`
	SetupS    float64 `json:"setup_s,omitempty"`
	ResponseS float64 `json:"response_s,omitempty"`
	// RateGiBs is the marginal rate per node of the last two runs.
	RateGiBs float64 `json:"rate_gibps,omitempty"`
	// Steady: the marginal rate (RateChange) and the average rate
	// (AverageChange) each moved by less than SteadyTolerance at the last
	// doubling.
	Steady        bool    `json:"steady"`
	RateChange    float64 `json:"rate_change,omitempty"`
	AverageChange float64 `json:"average_change,omitempty"`
	// Contender: within ContenderFactor of the best, so grown and banded.
	Contender bool `json:"contender"`
	// The band: the least and greatest expected time over the point and
	// its reruns, and which rerun gave each.
	BandLowS   float64   `json:"band_low_s,omitempty"`
	BandHighS  float64   `json:"band_high_s,omitempty"`
	BandLowBy  string    `json:"band_low_by,omitempty"`
	BandHighBy string    `json:"band_high_by,omitempty"`
	Variants   []Variant `json:"variants,omitempty"`
	// Tied: not the winner, but at least as fast as the winner under one
	// of the reruns both had (TiedBy names it): which of the two is
	// faster depends on a seed, a numbering or an estimate.
	Tied   bool   `json:"tied,omitempty"`
	TiedBy string `json:"tied_by,omitempty"`
	// Overlaps: its band reaches the winner's (a weaker sign than Tied:
	// an estimate that slows both can leave their order as it is).
	Overlaps bool `json:"band_overlaps,omitempty"`
	// What it costs a node.
	RegisteredBytes int64   `json:"registered_bytes_per_node,omitempty"`
	QPs             int     `json:"qps_per_node,omitempty"`
	SenderIdle      float64 `json:"sender_idle,omitempty"`
	ReceiverIdle    float64 `json:"receiver_idle,omitempty"`
	// Bottleneck of its largest run.
	Bottleneck *Bottleneck `json:"bottleneck,omitempty"`
	Points     []Point     `json:"points,omitempty"`

	points []*job // the runs behind Points, smallest first
}

// Answer is the advice.
type Answer struct {
	Question    string  `json:"question"`
	Profile     string  `json:"profile"`
	Nodes       int     `json:"nodes"`
	Threads     int     `json:"threads"`
	Pattern     string  `json:"pattern"`
	Network     string  `json:"network,omitempty"`
	BytesNode   int64   `json:"bytes_per_node"`
	Connect     Connect `json:"connect"`
	Budget      int64   `json:"memory_budget_bytes,omitempty"`
	ScreenBytes int64   `json:"screen_bytes_per_node"`
	Band        Band    `json:"band"`
	Seed        uint64  `json:"seed"`
	// Winner is the design of least expected time; Tied the designs whose
	// band reaches the winner's.
	Winner string   `json:"winner,omitempty"`
	Tied   []string `json:"tied,omitempty"`
	// CeilingGiBs is the network's ceiling for the repartition's traffic
	// per node: the qperf baseline's throughput, grown as a contender is
	// (0 when not measured).
	CeilingGiBs float64  `json:"ceiling_gibps,omitempty"`
	Designs     []Design `json:"designs"`
	// Runs is how many simulated runs the answer took, Reused how many
	// of them were taken from the store instead of run again.
	Runs    int    `json:"runs"`
	Reused  int    `json:"reused_runs"`
	ModelID string `json:"model_id"`
	Version string `json:"version,omitempty"`
	Commit  string `json:"commit,omitempty"`
}

// Advise answers q, running its points as o says.
func Advise(q Question, o Options) (*Answer, error) {
	q, err := q.normalized()
	if err != nil {
		return nil, err
	}
	ds, err := candidates(q)
	if err != nil {
		return nil, err
	}
	a := &Answer{Question: q.String(), Profile: q.Base.Profile, Nodes: q.Base.Nodes, Threads: q.Base.Threads, Pattern: string(q.Base.Pattern),
		Network: q.Base.Network.String(), BytesNode: q.Base.BytesPerNode, Connect: q.Connect, Budget: q.MemoryBudget, ScreenBytes: q.ScreenBytes,
		Band: q.Band, Seed: q.Base.Seed, ModelID: sensitivity.ModelID()}
	o.tally = &tally{}
	ceiling := screen(q, ds, o)
	for i := range ds {
		judge(q, &ds[i])
	}
	grow(q, ds, o)
	band(q, ds, o)
	a.Designs = rank(ds)
	ceiling = growCeiling(q, ceiling, o)
	if n := len(ceiling); n > 0 && ceiling[n-1].err == nil {
		a.CeilingGiBs = ceiling[n-1].rec.ThroughputGiBs
	}
	a.Runs, a.Reused = o.tally.made+o.tally.reused, o.tally.reused
	for _, d := range a.Designs {
		if d.Tied {
			a.Tied = append(a.Tied, d.Name)
		}
	}
	if len(a.Designs) > 0 && a.Designs[0].Status == Ranked {
		a.Winner = a.Designs[0].Name
	}
	if r := firstRecord(ds); r != nil {
		a.Version, a.Commit = r.Version, r.Commit
	}
	return a, nil
}

// Summary is the answer in a sentence or two: the winner and why,
// and what is within its band.
func (a *Answer) Summary() string {
	if a.Winner == "" {
		return "No design ran: see the reasons below."
	}
	w := a.Designs[0]
	s := fmt.Sprintf("Use %s: %.1f ms expected (band %.1f-%.1f ms), %s", w.Name, w.TimeS*1e3, w.BandLowS*1e3, w.BandHighS*1e3, w.Bottleneck.Why)
	if w.SetupS > 0 {
		s += fmt.Sprintf("; set-up %.1f ms of it", w.SetupS*1e3)
	}
	s += "."
	if len(a.Tied) > 0 {
		s += " Tied with it (as fast under one of the same reruns): " + strings.Join(a.Tied, ", ") + "."
	} else if len(a.Designs) > 1 && a.Designs[1].Status == Ranked {
		r := a.Designs[1]
		s += fmt.Sprintf(" Next: %s, %.1f ms (%.0f%% slower), not tied: slower under every rerun both had.", r.Name, r.TimeS*1e3, 100*(r.TimeS/w.TimeS-1))
	}
	return s
}

// candidates lists the designs to screen: q.Designs, or every design the
// simulator runs that moves tuples; each not applicable to the workload
// is kept with the reason.
func candidates(q Question) ([]Design, error) {
	names := q.Designs
	if names == nil {
		names = experiments.DesignNames(func(d experiments.CatalogueEntry) bool {
			return experiments.MovesTuples(d) && !slices.Contains(OtherHardware(), d.Name)
		})
	}
	var ds []Design
	var first error
	for _, name := range names {
		d, err := experiments.LookupDesign(name)
		if err != nil {
			return nil, err
		}
		if !experiments.MovesTuples(d) {
			return nil, fmt.Errorf("design %s moves no tuples on the simulator (a ceiling or a real-hosts design); choose among %s", name, strings.Join(experiments.DesignNames(experiments.MovesTuples), ", "))
		}
		x := Design{Name: name, Family: string(d.Family), Status: Ranked}
		if err := q.config(name, q.ScreenBytes).Validate(); err != nil {
			x.Status, x.Reason = NotApplied, err.Error()
			first = cmp.Or(first, err)
		}
		ds = append(ds, x)
	}
	for _, d := range ds {
		if d.Status == Ranked {
			return ds, nil
		}
	}
	// Every design refused the question: the cluster or the workload is
	// at fault (or the one design asked for does not apply).
	return nil, fmt.Errorf("%w: %w", ErrNoCandidates, first)
}

// OtherHardware are the designs that model another host stack than an
// RDMA NIC's (the MW-DQE paper's sockets over a Gigabit NIC, and its
// middleware over software iWARP): they reproduce that paper's
// comparisons, and are no choice on the profile's cluster, so they are
// screened only when asked for by name.
func OtherHardware() []string {
	out := []string{algos.NameSocketsMW}
	for _, t := range algos.MWThresholds {
		out = append(out, algos.MWDesign(t))
	}
	return out
}

// config is the question's run of design with bytes per node.
func (q Question) config(design string, bytes int64) experiments.RunConfig {
	c := q.Base
	c.Design, c.BytesPerNode, c.Label = design, bytes, ""
	return c
}

// screen runs every applicable design at the screening input and twice
// it (capped at the asked input), and the network's ceiling for a
// repartition; it returns the ceiling's runs (none when not measured).
func screen(q Question, ds []Design, o Options) []*job {
	var jobs []*job
	for i := range ds {
		d := &ds[i]
		if d.Status != Ranked {
			continue
		}
		for _, b := range screenSizes(q) {
			j := &job{cfg: q.config(d.Name, b)}
			d.points = append(d.points, j)
			jobs = append(jobs, j)
		}
	}
	var ceiling []*job
	if q.Base.Pattern == algos.Repartition && q.Base.Nodes >= 2 {
		for _, b := range screenSizes(q) {
			j := &job{cfg: q.config("qperf", b)}
			j.cfg.CyclesPerTuple, j.cfg.NodeCycles = 0, nil
			ceiling = append(ceiling, j)
			jobs = append(jobs, j)
		}
	}
	o.runAll("screening", jobs)
	return ceiling
}

// growthLimit is the largest input growth may reach: the asked input, or
// MaxGrowth times the screening input when that is less (compared without
// multiplying, which could overflow).
func (q Question) growthLimit() int64 {
	if q.ScreenBytes > q.Base.BytesPerNode/q.MaxGrowth {
		return q.Base.BytesPerNode
	}
	return q.ScreenBytes * q.MaxGrowth
}

// growCeiling doubles the ceiling's input until its throughput moves by
// less than SteadyTolerance, as growth does for a contender (its marginal
// rate is not used: while its pipelines fill it runs above the link).
func growCeiling(q Question, runs []*job, o Options) []*job {
	limit := q.growthLimit()
	for len(runs) >= 2 {
		a, b := runs[len(runs)-2], runs[len(runs)-1]
		if a.err != nil || b.err != nil || math.Abs(b.rec.ThroughputGiBs/a.rec.ThroughputGiBs-1) < SteadyTolerance || 2*b.cfg.BytesPerNode > limit {
			break
		}
		j := &job{cfg: b.cfg}
		j.cfg.BytesPerNode *= 2
		o.runAll("growing", []*job{j})
		runs = append(runs, j)
	}
	return runs
}

// screenSizes are the screening inputs: the screening input and twice
// it, or the asked input alone when it is no larger.
func screenSizes(q Question) []int64 {
	s := q.ScreenBytes
	if s >= q.Base.BytesPerNode {
		return []int64{q.Base.BytesPerNode}
	}
	return []int64{s, min(2*s, q.Base.BytesPerNode)}
}

// judge reads a design's screening runs: a failure or a refusal, or its
// costs, its expected time and its bottleneck.
func judge(q Question, d *Design) {
	if d.Status != Ranked {
		return
	}
	for _, j := range d.points {
		if j.err != nil {
			d.Status, d.Reason = Failed, j.err.Error()
			if errors.Is(j.err, fabric.ErrLimit) { // a device limit (queue pairs, regions, queue sizes)
				d.Status = Refused
			}
			return
		}
		if j.rec.Integrity != "ok" {
			d.Status, d.Reason = Failed, "integrity: "+j.rec.Integrity
			return
		}
	}
	last := d.points[len(d.points)-1].rec
	d.RegisteredBytes, d.QPs = last.RegisteredPer, last.QPsPerNode
	if q.MemoryBudget > 0 && d.RegisteredBytes > q.MemoryBudget {
		d.Status = Refused
		d.Reason = fmt.Sprintf("registers %s per node, over the budget of %s", experiments.GiB(d.RegisteredBytes), experiments.GiB(q.MemoryBudget))
		return
	}
	estimate(q, d)
}

// estimate fits the design's last two runs: a fixed part and a marginal
// rate, extrapolated to the asked input, plus set-up when it counts; and
// reads the last run's costs and bottleneck.
func estimate(q Question, d *Design) {
	last := d.points[len(d.points)-1]
	r := last.rec
	d.SetupS = 0
	if q.Connect == PerQuery {
		d.SetupS = r.SetupMS / 1e3
	}
	d.ResponseS, d.RateGiBs = extrapolate(d.points, q.Base.BytesPerNode)
	d.TimeS = d.SetupS + d.ResponseS
	d.SenderIdle, d.ReceiverIdle = r.SenderIdle, r.ReceiverIdle
	threads := 2 * q.Base.Threads * q.Base.Nodes
	b := diagnose(measure(r, last.usage, last.stats, threads))
	d.Bottleneck = &b
	d.Points = d.Points[:0]
	for _, j := range d.points {
		d.Points = append(d.Points, Point{BytesPerNode: j.cfg.BytesPerNode, ResponseS: j.rec.ResponseS, SetupMS: j.rec.SetupMS})
	}
}

// extrapolate returns the response time at bytes from the last two
// points (their marginal rate; the last point's own rate when there is
// one point or the time did not grow), and that rate in GiB/s per node.
func extrapolate(ps []*job, bytes int64) (respS, rateGiBs float64) {
	b := ps[len(ps)-1]
	rate := float64(b.cfg.BytesPerNode) / b.rec.ResponseS // bytes per second per node
	if len(ps) >= 2 {
		a := ps[len(ps)-2]
		if dt := b.rec.ResponseS - a.rec.ResponseS; dt > 0 {
			rate = float64(b.cfg.BytesPerNode-a.cfg.BytesPerNode) / dt
		}
	}
	return b.rec.ResponseS + float64(bytes-b.cfg.BytesPerNode)/rate, rate / (1 << 30)
}

// best is the least expected time of the ranked designs.
func best(ds []Design) float64 {
	t := math.Inf(1)
	for _, d := range ds {
		if d.Status == Ranked {
			t = min(t, d.TimeS)
		}
	}
	return t
}

// grow doubles the contenders' input (and that of any design whose line
// is not linear) until their marginal rate settles, the asked input is
// reached, or MaxGrowth; the contenders are then chosen again against
// the grown times.
func grow(q Question, ds []Design, o Options) {
	limit := q.growthLimit()
	for {
		t := best(ds)
		var jobs []*job
		for i := range ds {
			d := &ds[i]
			d.Contender = d.Status == Ranked && d.TimeS <= t*ContenderFactor
			if d.Status != Ranked || len(d.points) < 2 {
				d.Steady = d.Contender && len(d.points) == 1 // the asked input itself
				continue
			}
			if !d.Contender && d.linear() {
				continue // out of the running, and its line can be trusted to say by how much
			}
			if d.settled() {
				continue
			}
			next := 2 * d.points[len(d.points)-1].cfg.BytesPerNode
			if next > limit {
				continue
			}
			j := &job{cfg: q.config(d.Name, next)}
			d.points = append(d.points, j)
			jobs = append(jobs, j)
		}
		if len(jobs) == 0 {
			return
		}
		o.runAll("growing", jobs)
		for i := range ds {
			if ds[i].Status == Ranked {
				judge(q, &ds[i]) // the ones not grown are judged as before
			}
		}
	}
}

// linear reports whether the line through d's last two runs could be a
// fixed part plus a rate: its time at no input is not below zero (by
// more than SteadyTolerance of the last run's time). A design whose time
// grew faster than its input (MPI on 16 EDR nodes: 3.7 ms at 16 MiB per
// node, 9.9 ms at 32 MiB) is still changing how it works, and its line
// would say it is slower than it is at the asked input: it grows
// further, contender or not.
func (d *Design) linear() bool {
	n := len(d.points)
	if n < 2 {
		return true
	}
	a, b := d.points[n-2], d.points[n-1]
	dt := b.rec.ResponseS - a.rec.ResponseS
	if dt <= 0 {
		return true
	}
	fixed := b.rec.ResponseS - float64(b.cfg.BytesPerNode)*dt/float64(b.cfg.BytesPerNode-a.cfg.BytesPerNode)
	return fixed >= -SteadyTolerance*b.rec.ResponseS
}

// settled reports whether d's marginal rate, and its average rate, moved
// by less than SteadyTolerance at its last doubling, recording both
// changes. The average is watched too because a run still filling its
// pipelines can show a marginal rate above what its links carry (the
// start-up it hides shrinks as the input grows).
func (d *Design) settled() bool {
	n := len(d.points)
	if n < 3 {
		return false
	}
	_, r1 := extrapolate(d.points[:n-1], 0)
	_, r2 := extrapolate(d.points, 0)
	d.RateChange = (r2 - r1) / r1
	a, b := d.points[n-2], d.points[n-1]
	avg := func(j *job) float64 { return float64(j.cfg.BytesPerNode) / j.rec.ResponseS }
	d.AverageChange = (avg(b) - avg(a)) / avg(a)
	d.Steady = math.Abs(d.RateChange) < SteadyTolerance && math.Abs(d.AverageChange) < SteadyTolerance
	return d.Steady
}

// rank orders the designs: ranked ones by expected time, then refused,
// failed and not applied ones by name; and marks the ones tied with the
// winner.
func rank(ds []Design) []Design {
	order := map[Status]int{Ranked: 0, Refused: 1, Failed: 2, NotApplied: 3}
	sort.SliceStable(ds, func(i, j int) bool {
		a, b := ds[i], ds[j]
		if order[a.Status] != order[b.Status] {
			return order[a.Status] < order[b.Status]
		}
		if a.Status == Ranked {
			return a.TimeS < b.TimeS
		}
		return false
	})
	if len(ds) == 0 || ds[0].Status != Ranked {
		return ds
	}
	w := ds[0]
	for i := 1; i < len(ds); i++ {
		d := &ds[i]
		if d.Status != Ranked || !d.Contender {
			continue
		}
		d.Overlaps = d.BandLowS <= w.BandHighS
		d.Tied, d.TiedBy = pairedTie(w, *d)
	}
	return ds
}

// pairedTie reports whether d is at least as fast as the winner w under
// one of the reruns both had, and which. An estimate moves every design
// together, so overlapping bands alone would call designs tied that no
// single model orders differently; the same rerun for both is the fair
// comparison.
func pairedTie(w, d Design) (bool, string) {
	wt := map[string]float64{}
	for _, v := range w.Variants {
		wt[v.Change] = v.TimeS
	}
	for _, v := range d.Variants {
		if t, ok := wt[v.Change]; ok && v.TimeS <= t {
			return true, v.Change
		}
	}
	return false, ""
}

// firstRecord returns any record of the advice's runs, for provenance.
func firstRecord(ds []Design) *results.Record {
	for _, d := range ds {
		for _, j := range d.points {
			if j.rec != nil {
				return j.rec
			}
		}
	}
	return nil
}

package advise

import (
	"fmt"
	"slices"

	"github.com/rdmashuffle/rdmashuffle/experiments/sensitivity"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// Decisive are the estimated parameters whose halving or doubling flipped
// most claim verdicts in the project's sensitivity analysis (three or
// more claims each in docs/sensitivity.json; TestDecisiveFollowsTheAnalysis
// keeps the list equal to it, and, while that analysis is written before
// it finished, holds every estimate with three flips so far). Every
// contender is rerun with each at half and double.
var Decisive = []string{"host.hash_tuple_ns", "host.memcpy_gbps", "host.lock_ns", "host.poll_empty_ns", "nic.tx_latency_ns", "switch.input_buffer_bytes"}

// SetupEstimates are the estimated set-up costs that decide a design's
// set-up time, which counts when set-up is per query: queue-pair creation
// and state changes (a design with a queue pair per thread and peer pays
// them most).
var SetupEstimates = []string{"setup.create_qp_us", "setup.modify_qp_us"}

// bandFactors are the factors every estimate is moved by.
var bandFactors = []float64{0.5, 2}

// changesFor lists the reruns behind design's band.
func changesFor(q Question, design string) []sensitivity.Change {
	if q.Band == BandNone {
		return nil
	}
	cs := append([]sensitivity.Change(nil), sensitivity.Controls...)
	if q.Band != BandFull {
		return cs
	}
	fields := Decisive
	if q.Connect == PerQuery {
		fields = append(slices.Clip(fields), SetupEstimates...)
	}
	for _, f := range fields {
		if reach := sensitivity.Reach(f); reach != nil && !slices.Contains(reach, design) {
			continue // the change cannot move this design's run
		}
		for _, x := range bandFactors {
			cs = append(cs, sensitivity.Change{Field: f, Factor: x})
		}
	}
	return cs
}

// isSetup reports whether c moves a set-up cost only.
func isSetup(c sensitivity.Change) bool { return slices.Contains(SetupEstimates, c.Field) }

// setupBytes is the input of the runs that measure a set-up change: the
// set-up does not depend on it, so the least that still runs the design.
const setupBytes = 1 << 20

// setupBase is the configuration a set-up change is run on: d's at
// setupBytes (or its first point's input when smaller). Only the
// variant's set-up time is read, so the base itself is not run.
func (d *Design) setupBase(q Question) *job {
	return &job{cfg: q.config(d.Name, min(setupBytes, d.points[0].cfg.BytesPerNode))}
}

// variantJob is the run of design's band point under change c, or an
// error when c cannot be applied to the question's profile prof.
func variantJob(prof *sim.Profile, base *job, c sensitivity.Change) (*job, error) {
	j := &job{cfg: base.cfg}
	switch {
	case c.IsSeed():
		j.cfg.Seed += uint64(c.Factor)
	case c.IsNumbering():
		j.cfg.QPNumbering = uint64(c.Factor)
	default:
		if s, err := sensitivity.ApplySoftware(c); err == nil {
			j.cfg.Software = s
			break
		}
		if prof == nil {
			return nil, fmt.Errorf("%s: the profile could not be loaded", c)
		}
		moved, err := sensitivity.Apply(prof, c)
		if err != nil {
			return nil, err
		}
		j.moved = moved
	}
	return j, nil
}

// band reruns each contender's first screening point under every change
// and spreads the change's effect over the expected time: a variant's
// expected time is its own set-up (when it counts) plus the extrapolated
// data phase scaled by its response time over the point's. A set-up
// change runs at setupBytes and moves the set-up alone. The band is the
// least and greatest of the point and its variants.
func band(q Question, ds []Design, o Options) {
	type pending struct {
		d    *Design
		c    sensitivity.Change
		j    *job
		base *job
	}
	var all []pending
	var jobs []*job
	// Loaded once for every estimate change (the runs before loaded it
	// too); should it fail now, only the controls run.
	prof, _ := sim.LoadProfile(q.Base.Profile)
	for i := range ds {
		d := &ds[i]
		if !d.Contender || d.Status != Ranked {
			continue
		}
		base := d.points[0]
		for _, c := range changesFor(q, d.Name) {
			b := base
			if isSetup(c) {
				b = d.setupBase(q)
			}
			j, err := variantJob(prof, b, c)
			if err != nil {
				continue // the change leaves the profile's range: nothing to rerun
			}
			all = append(all, pending{d, c, j, base})
			jobs = append(jobs, j)
		}
	}
	o.runAll("band", jobs)
	for i := range ds {
		d := &ds[i]
		d.BandLowS, d.BandHighS = d.TimeS, d.TimeS
		d.BandLowBy, d.BandHighBy = "", ""
	}
	for _, p := range all {
		d := p.d
		if p.j.err != nil || p.j.rec.Integrity != "ok" {
			continue // a variant that fails widens nothing; the JSON lists only the ones that ran
		}
		t := d.ResponseS // a set-up cost moves no data-phase time
		if !isSetup(p.c) {
			t *= p.j.rec.ResponseS / p.base.rec.ResponseS
		}
		if q.Connect == PerQuery {
			t += p.j.rec.SetupMS / 1e3
		}
		d.widen(Variant{Change: p.c.String(), TimeS: t})
	}
	for i := range ds {
		if d := &ds[i]; d.Contender && len(d.points) >= 3 {
			// The data phase extrapolated from the doubling before the
			// last: how far the prediction still moved as it grew.
			r, _ := extrapolate(d.points[:len(d.points)-1], q.Base.BytesPerNode)
			d.widen(Variant{Change: ExtrapolationChange, TimeS: d.SetupS + r})
		}
	}
}

// ExtrapolationChange names the band's variant that extrapolates from the
// doubling before the last instead of the last.
const ExtrapolationChange = "previous doubling"

// widen adds v to d's variants and stretches d's band over it.
func (d *Design) widen(v Variant) {
	d.Variants = append(d.Variants, v)
	if v.TimeS < d.BandLowS {
		d.BandLowS, d.BandLowBy = v.TimeS, v.Change
	}
	if v.TimeS > d.BandHighS {
		d.BandHighS, d.BandHighBy = v.TimeS, v.Change
	}
}

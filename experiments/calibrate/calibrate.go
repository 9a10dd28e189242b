// Package calibrate fits a simulated profile to a fabric: it measures
// the fabric with perftest, starts from a base profile, and moves the
// profile's fitted fields until the simulator reproduces the measurements
// (explore calibrate, docs/hardware.md).
package calibrate

import (
	"fmt"
	"math"

	"go.yaml.in/yaml/v3"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/perftest"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// FabricFactory makes a fresh fabric of n nodes for one measurement (real
// hardware, or a simulated cluster when the calibration itself is tested).
type FabricFactory func(nodes int) (fabric.Fabric, error)

// Measurement is one quantity Run measured, on the fabric under
// calibration, on the simulator with the base profile, and on the
// simulator with the calibrated profile.
type Measurement struct {
	Name       string  `json:"name"`
	Unit       string  `json:"unit"`
	Fabric     float64 `json:"fabric"`
	Base       float64 `json:"base"`
	Calibrated float64 `json:"calibrated"`
	// Sets names the profile fields this measurement sets, and how.
	Sets string `json:"sets"`
	// NotFitted says why the measurement set none of its fields (they
	// keep the base profile's values); empty when it set them.
	NotFitted string `json:"not_fitted,omitempty"`
	// Loopback: measured on a fabric whose two nodes shared one adapter
	// (Calibration.Loopback).
	Loopback bool `json:"loopback,omitempty"`
}

// Calibration is the profile Run derived and what it measured.
type Calibration struct {
	Profile      *sim.Profile
	Measurements []Measurement
	// Loopback: the fabric's two nodes were contexts of one adapter in
	// one process (fabric.SharesAdapter), so its measurements are of the
	// adapter's loopback: no link or switch crossed, both ends' work on
	// one adapter. Run fits what that measures and keeps the rest from
	// the base profile (Measurement.Sets and NotFitted say which).
	Loopback bool
}

// bench is a calibration benchmark, which sets some profile fields.
type bench struct {
	name, unit string
	cfg        perftest.Config
	value      func(*perftest.Result) float64
	sets       string
}

// calibrationBenches are the benchmarks Run fits by, besides the knee.
var calibrationBenches = []bench{
	{"send latency, 8 B", "us", perftest.Config{Test: "send_lat", Size: 8, Iters: 500},
		func(r *perftest.Result) float64 { return r.TTypicalUS },
		"nic.tx_latency_ns and nic.rx_latency_ns: the difference to the base profile's simulated latency, split evenly"},
	{"send bandwidth, 64 KiB", "Gb/s", perftest.Config{Test: "send_bw", Size: 65536, Iters: 400},
		func(r *perftest.Result) float64 { return r.BWAvgGbps },
		"link.lane_gbaud (and pcie.gbps when faster), scaled by the ratio when they differ by more than 2% (effective rates: choose the base of the right generation)"},
	{"send message rate, 2 B, 8 QPs", "M/s", perftest.Config{Test: "send_bw", Size: 2, Iters: 4000, QPs: 8, Interleave: true},
		func(r *perftest.Result) float64 { return r.MsgRateMpps },
		"nic.processing_units, scaled by the ratio to the base's simulated rate"},
	{"registration, 64 MiB", "us", perftest.Config{Test: "reg_mr", Size: 64 << 20, Iters: 3},
		func(r *perftest.Result) float64 { return r.TTypicalUS },
		"setup.reg_mr_per_page_ns, scaled by the ratio (the registration alone: the memory allocated and touched first)"},
}

// Loopback notes: what each measurement is on a fabric whose two nodes
// share one adapter, and why a field is not fitted.
const (
	loopLatency  = "; the loopback crosses no link or switch, so against the base simulated without link.propagation_ns and switch.latency_ns (which keep the base's values)"
	loopBW       = "the loopback crosses no link: link.lane_gbaud and pcie.gbps keep the base's values"
	loopRate     = "; measured with both ends on one adapter"
	loopKnee     = "; one adapter held both ends' queue-pair contexts, so the knee fitted is twice the one measured (and the calibrated column half the simulator's)"
	regWithAlloc = "the backend cannot time a registration apart from allocating and zeroing its memory (fabric.RegTimer), and the time includes them: setup.reg_mr_per_page_ns keeps the base's value"
)

// Run measures the fabrics open makes with perftest microbenchmarks
// (latency, bandwidth, message rate, registration, and the queue-pair
// count where RDMA Read rates collapse) and returns base with the fields
// those measure replaced: the rest of the model is taken from base, so
// each field is fitted by comparing the fabric with the simulator running
// base on the same benchmark. name names the new profile. A fabric whose
// two nodes share one adapter (fabric.SharesAdapter) measures that
// adapter's loopback: Run fits only what the loopback measures, says so
// in each measurement, and sets Calibration.Loopback.
func Run(open FabricFactory, base *sim.Profile, name string) (*Calibration, error) {
	prof := *base
	prof.Name, prof.Description = name, "calibrated from "+base.Name+" by explore calibrate"
	cal := &Calibration{}
	for _, b := range calibrationBenches {
		hw, shared, err := measure(open, b.cfg)
		if err != nil {
			return nil, fmt.Errorf("calibrate %s: %w", b.name, err)
		}
		cal.Loopback = cal.Loopback || shared
		m, err := fit(&prof, base, b, b.value(hw), shared, hw.RegWithAlloc)
		if err != nil {
			return nil, fmt.Errorf("calibrate %s: %w", b.name, err)
		}
		m.Name, m.Unit, m.Sets, m.Loopback = b.name, b.unit, b.sets+m.Sets, shared
		cal.Measurements = append(cal.Measurements, m)
	}
	m, shared, err := fitKnee(&prof, open, base)
	if err != nil {
		return nil, err
	}
	cal.Loopback = cal.Loopback || shared
	cal.Measurements = append(cal.Measurements, m)
	// The derived profile must load as any profile file does.
	text, err := yaml.Marshal(&prof)
	if err != nil {
		return nil, err
	}
	p, err := sim.ParseProfile(text)
	if err != nil {
		return nil, fmt.Errorf("the calibrated profile does not validate (a measurement out of range?): %w", err)
	}
	cal.Profile = p
	// How close the calibrated simulator comes to the fabric (on a
	// loopback fabric, latency as the loopback saw it: without the wire).
	for i, b := range calibrationBenches {
		q := p
		if cal.Loopback && b.cfg.Test == "send_lat" {
			q = noWire(p)
		}
		r, _, err := measure(onSim(q), b.cfg)
		if err != nil {
			return nil, err
		}
		cal.Measurements[i].Calibrated = b.value(r)
	}
	kc, _, err := knee(onSim(p))
	if err != nil {
		return nil, err
	}
	if cal.Loopback {
		kc /= 2 // as the loopback, holding both ends' contexts, would show it
	}
	cal.Measurements[len(cal.Measurements)-1].Calibrated = float64(kc)
	return cal, nil
}

// fit sets the fields benchmark b measures in prof from x, its value on
// the fabric, and returns the measurement (its Sets: only what to add to
// the benchmark's). shared: the fabric's nodes share one adapter;
// withAlloc: a registration time includes the allocation.
func fit(prof, base *sim.Profile, b bench, x float64, shared, withAlloc bool) (Measurement, error) {
	cfg, ref := b.cfg, base
	if shared && cfg.Test == "send_lat" {
		ref = noWire(base)
	}
	sb, _, err := measure(onSim(ref), cfg)
	if err != nil {
		return Measurement{}, fmt.Errorf("on the base profile: %w", err)
	}
	y := b.value(sb)
	if !(x > 0) || !(y > 0) {
		return Measurement{}, fmt.Errorf("measured %g on the fabric and %g on the base profile; both must be positive", x, y)
	}
	m := Measurement{Fabric: x, Base: y}
	switch cfg.Test + fmt.Sprint(cfg.Size) {
	case "send_lat8":
		d := (x - y) * 1e3 / 2 // ns per side
		prof.NIC.TxLatencyNS = math.Max(1, prof.NIC.TxLatencyNS+d)
		prof.NIC.RxLatencyNS = math.Max(1, prof.NIC.RxLatencyNS+d)
		if shared {
			m.Sets = loopLatency
		}
	case "send_bw65536":
		switch {
		case shared:
			m.NotFitted = loopBW
		case math.Abs(x-y) > 0.02*y: // effective rates
			prof.Link.LaneGbaud *= x / y
			if x > y { // whichever of link and PCIe bounded the base must allow more
				prof.PCIe.GBps *= x / y
			}
		}
	case "send_bw2":
		prof.NIC.ProcessingUnits = max(1, int(math.Round(float64(prof.NIC.ProcessingUnits)*x/y)))
		if shared {
			m.Sets = loopRate
		}
	case "reg_mr67108864":
		if withAlloc {
			m.NotFitted = regWithAlloc
			break
		}
		prof.Setup.RegMRPerPageNS *= x / y
	}
	return m, nil
}

// fitKnee fits the queue-pair context cache: the largest QP count at
// which 32-byte RDMA Reads spread over the QPs keep 80% of their best
// rate sets the capacity, and the rate at the largest count (where the
// cache thrashes) relative to the best sets how many fetches overlap. On
// an adapter that both nodes share, every read holds two contexts in its
// cache (the requester's and the responder's), so the knee counts twice.
func fitKnee(prof *sim.Profile, open FabricFactory, base *sim.Profile) (Measurement, bool, error) {
	kh, fh, shared, err := kneeShared(open)
	if err != nil {
		return Measurement{}, false, fmt.Errorf("calibrate the QP context cache: %w", err)
	}
	kb, fb, err := knee(onSim(base))
	if err != nil {
		return Measurement{}, false, err
	}
	m := Measurement{Name: "RDMA Read rate holds up to", Unit: "QPs", Fabric: float64(kh), Base: float64(kb),
		Sets: "nic.qp_cache_entries, scaled by the ratio of the knees; nic.qp_cache_fetches, by the ratio of the rates at 4096 QPs"}
	if shared {
		kh *= 2
		m.Sets += loopKnee
		m.Loopback = true
	}
	if kh > 0 && kb > 0 {
		prof.NIC.QPCacheEntries = max(1, prof.NIC.QPCacheEntries*kh/kb)
	}
	if fh > 0 && fb > 0 {
		prof.NIC.QPCacheFetches = max(1, int(math.Round(float64(max(prof.NIC.QPCacheFetches, 1))*fh/fb)))
	}
	return m, shared, nil
}

// knee measures where the RDMA Read rate collapses on the fabrics open
// makes: the largest QP count keeping 80% of the best rate, and the rate
// at 4096 QPs over the best.
func knee(open FabricFactory) (int, float64, error) {
	k, f, _, err := kneeShared(open)
	return k, f, err
}

// kneeShared is knee, and whether the fabric's nodes share one adapter.
func kneeShared(open FabricFactory) (int, float64, bool, error) {
	best, last, floor, shared := 0.0, 0, 0.0, false
	for q := 16; q <= 4096; q *= 2 {
		r, sh, err := measure(open, perftest.Config{Test: "read_bw", Size: 32, Iters: 40, QPs: q, Interleave: true})
		if err != nil {
			return 0, 0, false, err
		}
		shared = shared || sh
		best = math.Max(best, r.MsgRateMpps)
		floor = r.MsgRateMpps / best
		if r.MsgRateMpps >= 0.8*best {
			last = q
		}
	}
	return last, floor, shared, nil
}

// onSim makes simulated fabrics running p.
func onSim(p *sim.Profile) FabricFactory {
	return func(n int) (fabric.Fabric, error) {
		return sim.New(sim.Config{Nodes: n, Profile: p, Seed: 1, SizeOnly: true})
	}
}

// noWire is p without the latency of the link's cable and the switch:
// what a message looped back inside one adapter does not cross.
func noWire(p *sim.Profile) *sim.Profile {
	q := *p
	q.Link.PropagationNS, q.Switch.LatencyNS = 0, 0
	return &q
}

// measure runs cfg on a fresh two-node fabric from open, and reports
// whether its nodes share one adapter.
func measure(open FabricFactory, cfg perftest.Config) (*perftest.Result, bool, error) {
	f, err := open(2)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	if err := cfg.Normalize(2); err != nil {
		return nil, false, err
	}
	r, err := perftest.Run(f, cfg)
	return r, fabric.SharesAdapter(f), err
}

// ProfileYAML renders a profile as a profile file.
func ProfileYAML(p *sim.Profile) ([]byte, error) { return yaml.Marshal(p) }

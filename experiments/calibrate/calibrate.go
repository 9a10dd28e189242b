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
}

// Calibration is the profile Run derived and what it measured.
type Calibration struct {
	Profile      *sim.Profile
	Measurements []Measurement
}

// calibration benchmarks, each of which sets some profile fields.
var calibrationBenches = []struct {
	name, unit string
	cfg        perftest.Config
	value      func(*perftest.Result) float64
	sets       string
}{
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
		"setup.reg_mr_per_page_ns, scaled by the ratio"},
}

// Run measures the fabrics open makes with perftest microbenchmarks
// (latency, bandwidth, message rate, registration, and the queue-pair
// count where RDMA Read rates collapse) and returns base with the fields
// those measure replaced: the rest of the model is taken from base, so
// each field is fitted by comparing the fabric with the simulator running
// base on the same benchmark. name names the new profile.
func Run(open FabricFactory, base *sim.Profile, name string) (*Calibration, error) {
	measure := func(f fabric.Fabric, cfg perftest.Config, err error) (*perftest.Result, error) {
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if err := cfg.Normalize(2); err != nil {
			return nil, err
		}
		return perftest.Run(f, cfg)
	}
	onSim := func(p *sim.Profile) FabricFactory {
		return func(n int) (fabric.Fabric, error) {
			return sim.New(sim.Config{Nodes: n, Profile: p, Seed: 1, SizeOnly: true})
		}
	}
	prof := *base
	prof.Name, prof.Description = name, "calibrated from "+base.Name+" by explore calibrate"
	cal := &Calibration{}
	for _, b := range calibrationBenches {
		hw, err := measure2(measure, open, b.cfg)
		if err != nil {
			return nil, fmt.Errorf("calibrate %s: %w", b.name, err)
		}
		sb, err := measure2(measure, onSim(base), b.cfg)
		if err != nil {
			return nil, fmt.Errorf("calibrate %s on the base profile: %w", b.name, err)
		}
		x, y := b.value(hw), b.value(sb)
		if !(x > 0) || !(y > 0) {
			return nil, fmt.Errorf("calibrate %s: measured %g on the fabric and %g on the base profile; both must be positive", b.name, x, y)
		}
		switch b.cfg.Test + fmt.Sprint(b.cfg.Size) {
		case "send_lat8":
			d := (x - y) * 1e3 / 2 // ns per side
			prof.NIC.TxLatencyNS = math.Max(1, prof.NIC.TxLatencyNS+d)
			prof.NIC.RxLatencyNS = math.Max(1, prof.NIC.RxLatencyNS+d)
		case "send_bw65536":
			if math.Abs(x-y) > 0.02*y { // effective rates
				prof.Link.LaneGbaud *= x / y
				if x > y { // whichever of link and PCIe bounded the base must allow more
					prof.PCIe.GBps *= x / y
				}
			}
		case "send_bw2":
			prof.NIC.ProcessingUnits = max(1, int(math.Round(float64(prof.NIC.ProcessingUnits)*x/y)))
		case "reg_mr67108864":
			prof.Setup.RegMRPerPageNS *= x / y
		}
		cal.Measurements = append(cal.Measurements, Measurement{Name: b.name, Unit: b.unit, Fabric: x, Base: y, Sets: b.sets})
	}
	// The queue-pair context cache: the largest QP count at which 32-byte
	// RDMA Reads spread over the QPs keep 80% of their best rate sets the
	// capacity, and the rate at the largest count (where the cache
	// thrashes) relative to the best sets how many fetches overlap.
	knee := func(f FabricFactory) (int, float64, error) {
		best, last, floor := 0.0, 0, 0.0
		for q := 16; q <= 4096; q *= 2 {
			r, err := measure2(measure, f, perftest.Config{Test: "read_bw", Size: 32, Iters: 40, QPs: q, Interleave: true})
			if err != nil {
				return 0, 0, err
			}
			best = math.Max(best, r.MsgRateMpps)
			floor = r.MsgRateMpps / best
			if r.MsgRateMpps >= 0.8*best {
				last = q
			}
		}
		return last, floor, nil
	}
	kh, fh, err := knee(open)
	if err != nil {
		return nil, fmt.Errorf("calibrate the QP context cache: %w", err)
	}
	kb, fb, err := knee(onSim(base))
	if err != nil {
		return nil, err
	}
	if kh > 0 && kb > 0 {
		prof.NIC.QPCacheEntries = max(1, prof.NIC.QPCacheEntries*kh/kb)
	}
	if fh > 0 && fb > 0 {
		prof.NIC.QPCacheFetches = max(1, int(math.Round(float64(max(prof.NIC.QPCacheFetches, 1))*fh/fb)))
	}
	cal.Measurements = append(cal.Measurements, Measurement{Name: "RDMA Read rate holds up to", Unit: "QPs", Fabric: float64(kh), Base: float64(kb),
		Sets: "nic.qp_cache_entries, scaled by the ratio of the knees; nic.qp_cache_fetches, by the ratio of the rates at 4096 QPs"})
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
	// How close the calibrated simulator comes to the fabric.
	for i, b := range calibrationBenches {
		r, err := measure2(measure, onSim(p), b.cfg)
		if err != nil {
			return nil, err
		}
		cal.Measurements[i].Calibrated = b.value(r)
	}
	kc, _, err := knee(onSim(p))
	if err != nil {
		return nil, err
	}
	cal.Measurements[len(cal.Measurements)-1].Calibrated = float64(kc)
	return cal, nil
}

func measure2(m func(fabric.Fabric, perftest.Config, error) (*perftest.Result, error), open FabricFactory, cfg perftest.Config) (*perftest.Result, error) {
	f, err := open(2)
	return m(f, cfg, err)
}

// ProfileYAML renders a profile as a profile file.
func ProfileYAML(p *sim.Profile) ([]byte, error) { return yaml.Marshal(p) }

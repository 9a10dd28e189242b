package sensitivity

import (
	"fmt"
	"math"
	"strings"

	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
	yaml "go.yaml.in/yaml/v3"
)

// Estimate is a profile parameter whose value is an estimate rather than a
// measurement or a vendor figure, in at least one built-in profile.
type Estimate struct {
	Field string // dotted YAML path in a profile, e.g. "host.lock_handoff_ns"
	Why   string // what the value rests on (docs/model.md)
}

// ProfileEstimates are the profile parameters marked (E) in docs/model.md
// for the InfiniBand profiles the figures use.
var ProfileEstimates = []Estimate{
	{"link.propagation_ns", "cable length assumed (2 m)"},
	{"switch.latency_ns", "vendor figures, unverified, for QDR and EDR switches"},
	{"switch.input_buffer_bytes", "no public figure; about 64 KB per port in a vendor-contributed model"},
	{"nic.tx_latency_ns", "an even split of measured end-to-end latency between sender and receiver"},
	{"nic.rx_latency_ns", "an even split of measured end-to-end latency between sender and receiver"},
	{"nic.rx_buffer_bytes", "no public figure"},
	{"nic.qp_cache_entries", "fitted to READ-rate sweeps over QP counts (a Connect-IB sweep stands in for ConnectX-4; ConnectX-6's own sweep bounds its capacity from below only)"},
	{"nic.qp_cache_fetches", "fitted with the entries; no public figure for concurrent context fetches"},
	{"host.post_send_ns", "a communication library's cost-model constant per posted send (75 ns), not measured on the profiles' hosts"},
	{"host.post_recv_ns", "a communication library's cost-model constant per posted receive (40 ns), not measured on the profiles' hosts"},
	{"host.doorbell_ns", "hdr-cx6's doorbell write, fitted to one benchmark's per-thread rates on one ConnectX-6 host (0 elsewhere: inside post_send_ns)"},
	{"host.poll_empty_ns", "one cached load of a completion's owner bit"},
	{"host.poll_per_cqe_ns", "order of magnitude from a communication library's cost model"},
	{"host.lock_ns", "an atomic on a cached line"},
	{"host.hash_tuple_ns", "a multiplicative hash and a modulo on a 2-3 GHz core"},
	{"setup.reg_mr_us", "fixed part of registration"},
	{"setup.create_qp_us", "order of magnitude of verbs connection set-up"},
	{"setup.modify_qp_us", "order of magnitude of verbs connection set-up"},
	{"oob.rtt_us", "a small TCP request and response through the kernel"},
	{"nic.max_inline_rc", "ConnectX-3's inline limit taken from perftest's limits, not probed"},
	{"nic.wqe_ns", "the per-QP request rate (6, 10, 15 M/s by generation); the aggregate is measured or vendor"},
	{"host.memcpy_gbps", "one Broadwell (EDR) or EPYC (HDR) core's copy rate, not measured on those hosts"},
	{"setup.reg_mr_per_page_ns", "the older hosts' registration cost per page (ConnectX-3)"},
	{"setup.dereg_mr_us", "fixed part of deregistration"},
	{"setup.dereg_mr_per_page_ns", "the older hosts' deregistration cost per page (ConnectX-3)"},
	{"setup.create_cq_us", "order of magnitude of verbs set-up"},
	{"host.futex_wake_ns", "a FUTEX_WAKE that wakes a sleeper: a bare one (80-163 ns, CPU not stated) plus a cross-core wake, unmeasured"},
	{"host.wakeup_ns", "a futex wake-up's latency measured on an Atom C3758, not on the profiles' Xeons and EPYCs"},
	{"host.wakeup_tail_ns", "the wake-up's spread, from the same Atom measurement"},
	{"host.syscall_ns", "a FUTEX_WAKE with nobody asleep: 163 ns measured, CPU not stated"},
	{"nic.ooo_window", "how far past a gap a ConnectX-5-or-later NIC places RC packets: no public figure (hdr-cx6 only)"},
}

// MechanismSwitches are the profile's switches between two behaviours of the
// model where no source says which the hardware has: a change sets one
// (Change{Field, 1}, "nic.rx_miss_blocks =1") instead of scaling it, and
// a verdict that flips under it is as fragile as under an estimate.
var MechanismSwitches = []Estimate{
	{"nic.rx_miss_blocks", "whether a packet waiting for its queue-pair context holds the NIC's receive pipeline (1) or the pipeline goes on with later packets (0, the profiles' choice)"},
	{"switch.ar_ties", "whether adaptive routing breaks a tie between equally loaded minimal ports with the static table's port (0, the profiles' choice) or takes them in turn (1)"},
	{"pcie.read_request_bytes", "whether a packet waits for the whole PCIe read request (4 KiB) that holds its last byte before it leaves (4096, the profiles' choice, which makes a message's latency independent of the path MTU as measured) or only for its own bytes (1: the NIC passes a request's completions on as they arrive)"},
	{"host.shared_doorbells", "whether queue pairs share doorbell registers as libmlx5 allocates them by default (1: four of a context's queue pairs ring registers of their own, the rest share eleven behind spinlocks) or every thread rings its own (0, the profiles' choice: a thread domain per thread)"},
}

// IsMechanism reports whether c sets a mechanism switch (MechanismSwitches).
func (c Change) IsMechanism() bool {
	for _, m := range MechanismSwitches {
		if m.Field == c.Field {
			return true
		}
	}
	return false
}

// Estimates are every estimate the analysis moves: the profile parameters
// and the software costs outside profiles (SoftwareEstimates).
var Estimates = append(append([]Estimate(nil), ProfileEstimates...), SoftwareEstimates...)

// Change is one parameter moved by one factor.
type Change struct {
	Field  string  `json:"field"`
	Factor float64 `json:"factor"`
}

// SeedField names the control change that moves every run's random
// seed instead of a parameter: Change{SeedField, k} runs with each seed
// plus k (k a whole number, at least 1), printed "seed +k". A verdict
// that flips under it is decided by the runs' random draws (sleeping
// mutexes' wake-ups, threads' random choices, cache victims, the
// synthetic and TPC-H data) at the analysis's quick scale, not by any
// number of the model.
const SeedField = "seed"

// SeedControls are the seed changes every analysis judges beside the
// estimates, so that a flip under an estimate can be told from one that
// any other seed would give.
var SeedControls = []Change{{SeedField, 1}, {SeedField, 2}}

// NumberingField names the control change that gives every run another
// queue-pair numbering instead of moving a parameter:
// Change{NumberingField, k} runs every point under numbering k
// (experiments.RunConfig.QPNumbering; k a whole number, at least 1),
// printed "qp-numbering k". The numbering decides which queue pairs share
// a set of a NIC's context cache, which on a real host is chance (a
// driver hands out whichever numbers are free) and which the seed does
// not move; a verdict that flips under it rests on which queue pairs
// happen to conflict, not on any number of the model.
const NumberingField = "qp-numbering"

// NumberingControls are the numbering changes every analysis judges
// beside the estimates and the seed controls.
var NumberingControls = []Change{{NumberingField, 1}, {NumberingField, 2}}

// Controls are every control change an analysis judges: the seed
// controls, then the numbering controls.
var Controls = append(append([]Change(nil), SeedControls...), NumberingControls...)

// String is "field x0.5", "seed +1" for a seed control or "qp-numbering 1"
// for a numbering control.
func (c Change) String() string {
	switch c.Field {
	case SeedField:
		return fmt.Sprintf("seed +%d", int64(c.Factor))
	case NumberingField:
		return fmt.Sprintf("qp-numbering %d", int64(c.Factor))
	}
	if c.IsMechanism() {
		return fmt.Sprintf("%s =%g", c.Field, c.Factor)
	}
	return fmt.Sprintf("%s x%g", c.Field, c.Factor)
}

// IsSeed reports whether c is a seed control (SeedField).
func (c Change) IsSeed() bool { return c.Field == SeedField }

// IsNumbering reports whether c is a numbering control (NumberingField).
func (c Change) IsNumbering() bool { return c.Field == NumberingField }

// IsControl reports whether c is a control (a seed or a numbering), which
// moves no parameter.
func (c Change) IsControl() bool { return c.IsSeed() || c.IsNumbering() }

// ParseChange reads "field x0.5" or "field*2" (as printed by String),
// "seed +k" or "qp-numbering k".
func ParseChange(s string) (Change, error) {
	f := strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '*' })
	if len(f) == 2 && f[0] == SeedField {
		var k int64
		if _, err := fmt.Sscanf(f[1], "+%d", &k); err == nil && k >= 1 && strings.Join(strings.Fields(s), " ") == fmt.Sprintf("seed +%d", k) {
			return Change{SeedField, float64(k)}, nil
		}
		return Change{}, fmt.Errorf("change %q: a seed control is \"seed +k\", k a whole number of at least 1, e.g. \"seed +1\" (the seed moves by an offset, not a factor)", s)
	}
	if len(f) == 2 && f[0] == NumberingField {
		var k int64
		if _, err := fmt.Sscanf(f[1], "%d", &k); err == nil && k >= 1 && strings.Join(strings.Fields(s), " ") == fmt.Sprintf("%s %d", NumberingField, k) {
			return Change{NumberingField, float64(k)}, nil
		}
		return Change{}, fmt.Errorf("change %q: a numbering control is \"qp-numbering k\", k a whole number of at least 1, e.g. \"qp-numbering 1\" (it names a numbering, not a factor)", s)
	}
	if m := strings.Split(strings.ReplaceAll(s, " ", ""), "="); len(m) == 2 {
		c := Change{Field: m[0]}
		if _, err := fmt.Sscanf(m[1], "%g", &c.Factor); err == nil && c.IsMechanism() {
			return c, nil
		}
		return Change{}, fmt.Errorf("change %q: \"field =value\" sets a mechanism switch: %s", s, mechanismNames())
	}
	if len(f) == 2 {
		var c Change
		c.Field = f[0]
		if _, err := fmt.Sscanf(strings.TrimPrefix(f[1], "x"), "%g", &c.Factor); err == nil && c.Factor > 0 {
			return c, nil
		}
	}
	return Change{}, fmt.Errorf("change %q: want <profile field> x<factor>, e.g. \"host.lock_ns x2\"", s)
}

// mechanismNames lists the switches for an error message.
func mechanismNames() string {
	var names []string
	for _, m := range MechanismSwitches {
		names = append(names, m.Field+" =1")
	}
	return strings.Join(names, ", ")
}

// DefaultChanges is every estimate at each of the factors, every
// mechanism switched on, then the controls (Controls).
func DefaultChanges(factors ...float64) []Change {
	var cs []Change
	for _, e := range Estimates {
		for _, f := range factors {
			cs = append(cs, Change{e.Field, f})
		}
	}
	for _, m := range MechanismSwitches {
		cs = append(cs, Change{m.Field, 1})
	}
	return append(cs, Controls...)
}

// Apply returns a copy of p with c's field multiplied by c's factor
// (whole-number fields rounded, and kept at 1 or more when they were
// positive). The copy is validated as a profile file would be, so a change
// that leaves the parameter's range is an error naming it.
func Apply(p *sim.Profile, c Change) (*sim.Profile, error) {
	was, whole, err := p.Field(c.Field)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c, err)
	}
	v := was * c.Factor
	if c.IsMechanism() {
		v = c.Factor // a switch is set, not scaled
	} else if whole {
		v = math.Max(math.Round(v), math.Min(was, 1))
	}
	q, err := p.WithField(c.Field, v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c, err)
	}
	return q, nil
}

// marshalProfile encodes a profile as a profile file.
func marshalProfile(p *sim.Profile) ([]byte, error) { return yaml.Marshal(p) }

// Package faults describes fault schedules for the simulated cluster: a
// YAML file or command-line flags that say which faults to inject (random
// loss, corruption, duplication and reordering by rate; the loss of a
// chosen message or packet; a link down for an interval; receivers too
// slow to post; a node crashing; RC retry exhaustion; context-cache
// thrashing), parsed strictly, with errors that name the field. A Schedule
// becomes a fabric/sim Plan for a cluster of a given size.
//
// Message kinds are recognized by the shuffle designs' wire format (package
// algos): every data message starts with a 32-byte header whose first byte
// is 0xa5 and whose second holds flags (1: the end of the stream); the UD
// designs' credit messages start with 0xc5; the RC designs return credit
// with RDMA Writes of at most 16 bytes.
package faults

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
	"github.com/rdmashuffle/rdmashuffle/internal/yamldoc"
)

// Wire-format constants of package algos that kinds match on.
const (
	HeaderMagic  = 0xa5 // first byte of every data message
	FlagDepleted = 1    // header flag: the last message of a stream
	CreditMagic  = 0xc5 // first byte of a UD credit message
	CreditWrite  = 16   // RC credit returns are RDMA Writes of at most this many bytes
)

// Kinds of messages a rule can select.
var Kinds = []string{"any", "data", "eos", "credit"}

// Transports a rule can select.
var Transports = []string{"any", "UD", "RC", "UC"}

// Duration is a simulated duration written with a unit: 500ns, 20us, 1.5ms, 2s.
type Duration fabric.Duration

// ParseDuration parses a duration with a unit (ns, us, ms or s).
func ParseDuration(s string) (Duration, error) {
	s = strings.TrimSpace(s)
	units := []struct {
		suffix string
		d      fabric.Duration
	}{{"ns", fabric.Nanosecond}, {"us", fabric.Microsecond}, {"µs", fabric.Microsecond}, {"ms", fabric.Millisecond}, {"s", fabric.Second}}
	for _, u := range units {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			v, err := strconv.ParseFloat(num, 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return 0, invalid("%q is not a duration: want a number and a unit, such as 500us", s)
			}
			if v < 0 {
				return 0, invalid("%q: a duration must not be negative", s)
			}
			if v*float64(u.d) > float64(1000*fabric.Second) {
				return 0, invalid("%q: longer than 1000 s of simulated time", s)
			}
			return Duration(math.Round(v * float64(u.d))), nil
		}
	}
	return 0, invalid("%q has no unit: write it as 500ns, 20us, 1.5ms or 2s", s)
}

func (d Duration) String() string { return fabric.Duration(d).String() }

// UnmarshalYAML reads a duration with a unit.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return errors.New("want a duration such as 500us")
	}
	v, err := ParseDuration(n.Value)
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// MarshalYAML writes the duration in microseconds.
func (d Duration) MarshalYAML() (any, error) {
	return strconv.FormatFloat(float64(d)/float64(fabric.Microsecond), 'g', -1, 64) + "us", nil
}

// Selector picks packets: by source and destination node (nil: any), by
// transport and by message kind.
type Selector struct {
	Src       *int     `yaml:"src,omitempty"`
	Dst       *int     `yaml:"dst,omitempty"`
	Transport string   `yaml:"transport,omitempty"` // any (default), UD, RC, UC
	Kind      string   `yaml:"kind,omitempty"`      // any (default), data, eos, credit
	From      Duration `yaml:"from,omitempty"`
	To        Duration `yaml:"to,omitempty"` // 0: until the end
}

// RateFault hits each selected packet with a probability.
type RateFault struct {
	Selector `yaml:",inline"`
	Rate     float64  `yaml:"rate"`
	Delay    Duration `yaml:"delay,omitempty"` // reorder only: how long a packet is held back (default 2us)
}

// Drop loses chosen packets: the Nth selected message's packet (and the
// Count-1 after it), or with Packet the Packet-th packet of any kind on the
// link from Src to Dst (counted as they leave the switch).
type Drop struct {
	Selector `yaml:",inline"`
	Nth      int `yaml:"nth,omitempty"`    // 1-based; default 1
	Count    int `yaml:"count,omitempty"`  // default 1
	Packet   int `yaml:"packet,omitempty"` // 1-based packet index on the link src->dst
}

// Window is a node fault active from From to To.
type Window struct {
	Node int      `yaml:"node"`
	From Duration `yaml:"from"`
	To   Duration `yaml:"to"`
}

// Cable is a cable between two switches of a network, down from From to
// To (0: for the rest of the run): named by one end, a switch (its name,
// a GUID 0x... or an index #N) and a port from 1.
type Cable struct {
	Switch string   `yaml:"switch"`
	Port   int      `yaml:"port"`
	From   Duration `yaml:"from"`
	To     Duration `yaml:"to,omitempty"`
}

// SwitchFault is a whole switch of a network down from From to To (0:
// for the rest of the run), every cable of it with it: named as a
// Cable's switch is.
type SwitchFault struct {
	Switch string   `yaml:"switch"`
	From   Duration `yaml:"from"`
	To     Duration `yaml:"to,omitempty"`
}

// Crash stops a node at At.
type Crash struct {
	Node int      `yaml:"node"`
	At   Duration `yaml:"at"`
}

// RCRetry caps RC queue pairs' transport retries and sets their local ACK
// timeout (IB encoding: 4.096 us * 2^Timeout), so that a link down for
// longer than (RetryCnt+1) timeouts moves them to the error state.
type RCRetry struct {
	RetryCnt int   `yaml:"retry_cnt"`
	Timeout  uint8 `yaml:"timeout"`
}

// Schedule is a fault schedule. The zero value injects nothing.
type Schedule struct {
	Loss         []RateFault   `yaml:"loss,omitempty"`
	Corrupt      []RateFault   `yaml:"corrupt,omitempty"`
	Duplicate    []RateFault   `yaml:"duplicate,omitempty"`
	Reorder      []RateFault   `yaml:"reorder,omitempty"`
	Drop         []Drop        `yaml:"drop,omitempty"`
	LinkDown     []Window      `yaml:"link_down,omitempty"`
	SlowReceiver []Window      `yaml:"slow_receiver,omitempty"`
	Crash        []Crash       `yaml:"crash,omitempty"`
	CableDown    []Cable       `yaml:"cable_down,omitempty"`
	SwitchDown   []SwitchFault `yaml:"switch_down,omitempty"`
	// RerouteAfter is how long the subnet manager takes to route around a
	// cable or switch that went down (and back over one that came up); empty: the
	// simulator's estimate (sim.DefaultReroute); "never" is not offered:
	// give a time past the run's end.
	RerouteAfter Duration `yaml:"reroute_after,omitempty"`
	RCRetry      *RCRetry `yaml:"rc_retry,omitempty"`
	// QPCacheEntries overrides the profile's NIC context-cache size
	// (nic.qp_cache_entries): a small value thrashes the cache.
	QPCacheEntries int `yaml:"qp_cache_entries,omitempty"`
}

// Empty reports whether s injects nothing.
func (s *Schedule) Empty() bool {
	return s == nil || len(s.Loss)+len(s.Corrupt)+len(s.Duplicate)+len(s.Reorder)+len(s.Drop)+len(s.LinkDown)+
		len(s.SlowReceiver)+len(s.Crash)+len(s.CableDown)+len(s.SwitchDown) == 0 && s.RCRetry == nil && s.QPCacheEntries == 0 && s.RerouteAfter == 0
}

// maxMatch bounds a drop's nth, count and packet: 2^31-1 messages or
// packets, far beyond any run, and far below where nth+count overflows.
const maxMatch = 1<<31 - 1

// ErrEmpty is a fault schedule file that injects no fault.
var ErrEmpty = errors.New("injects no fault")

// ErrInvalid is wrapped by every error that refuses what a schedule, a
// fault spec or a duration says (a field out of range, a node outside the
// cluster, a malformed value); the message names the field and the fix.
var ErrInvalid = errors.New("invalid fault schedule")

// invalidError is an error refusing a schedule's content: its message,
// and ErrInvalid beside whatever the message wraps.
type invalidError struct{ err error }

func (e *invalidError) Error() string { return e.err.Error() }

func (e *invalidError) Unwrap() []error {
	if inner := errors.Unwrap(e.err); inner != nil {
		return []error{ErrInvalid, inner}
	}
	return []error{ErrInvalid}
}

// invalid formats an error refusing a schedule's content (fmt.Errorf's
// verbs, %w included), wrapping ErrInvalid.
func invalid(format string, a ...any) error { return &invalidError{fmt.Errorf(format, a...)} }

// Load reads a schedule from a YAML file.
func Load(path string) (*Schedule, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("fault schedule: %w", err)
	}
	s, err := Parse(data)
	if err != nil {
		return nil, invalid("fault schedule %s: %s", path, strings.TrimPrefix(err.Error(), "fault schedule: "))
	}
	if s.Empty() {
		return nil, fmt.Errorf("fault schedule %s: %w (the file is empty or every list in it is): give at least one of loss, corrupt, duplicate, reorder, drop, link_down, slow_receiver, crash, cable_down, switch_down, qp_cache_entries (docs/reliability.md)", path, ErrEmpty)
	}
	return s, nil
}

var yamlTypeNames = map[string]string{
	"faults.Schedule":    "the schedule (fields: loss, corrupt, duplicate, reorder, drop, link_down, slow_receiver, crash, cable_down, switch_down, reroute_after, rc_retry, qp_cache_entries)",
	"faults.RateFault":   "a rate fault (fields: rate, src, dst, transport, kind, from, to, delay)",
	"faults.Drop":        "a drop (fields: src, dst, transport, kind, nth, count, packet, from, to)",
	"faults.Window":      "a node window (fields: node, from, to)",
	"faults.Crash":       "a crash (fields: node, at)",
	"faults.Cable":       "a cable_down (fields: switch, port, from, to)",
	"faults.SwitchFault": "a switch_down (fields: switch, from, to)",
	"faults.RCRetry":     "rc_retry (fields: retry_cnt, timeout)",
}

// Parse reads a schedule from YAML, strictly: unknown fields, wrong types
// and out-of-range values are errors naming the field.
func Parse(data []byte) (*Schedule, error) {
	if err := yamldoc.One(data); err != nil {
		return nil, invalid("fault schedule: %w", err)
	}
	var s Schedule
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil && err.Error() != "EOF" {
		return nil, invalid("fault schedule: %s", yamldoc.Explain(err, data, yamlTypeNames))
	}
	if err := s.Validate(0); err != nil {
		return nil, err
	}
	return &s, nil
}

// Validate checks every field; nodes, when positive, is the cluster size
// node numbers must fit.
func (s *Schedule) Validate(nodes int) error {
	node := func(field string, v int) error {
		if v < 0 {
			return invalid("fault schedule: %s: node %d is negative", field, v)
		}
		if nodes > 0 && v >= nodes {
			return invalid("fault schedule: %s: node %d outside the %d-node cluster (nodes 0..%d)", field, v, nodes, nodes-1)
		}
		return nil
	}
	sel := func(field string, x *Selector) error {
		if x.Src != nil {
			if err := node(field+".src", *x.Src); err != nil {
				return err
			}
		}
		if x.Dst != nil {
			if err := node(field+".dst", *x.Dst); err != nil {
				return err
			}
		}
		if x.Transport != "" && !contains(Transports, x.Transport) {
			return invalid("fault schedule: %s.transport: %q is not one of %s", field, x.Transport, strings.Join(Transports, ", "))
		}
		if x.Kind != "" && !contains(Kinds, x.Kind) {
			return invalid("fault schedule: %s.kind: %q is not one of %s", field, x.Kind, strings.Join(Kinds, ", "))
		}
		if x.To != 0 && x.To <= x.From {
			return invalid("fault schedule: %s: to %v is not after from %v", field, x.To, x.From)
		}
		return nil
	}
	for _, g := range []struct {
		name string
		list []RateFault
	}{{"loss", s.Loss}, {"corrupt", s.Corrupt}, {"duplicate", s.Duplicate}, {"reorder", s.Reorder}} {
		name, list := g.name, g.list
		for i := range list {
			f := &list[i]
			field := fmt.Sprintf("%s[%d]", name, i)
			if err := sel(field, &f.Selector); err != nil {
				return err
			}
			if !(f.Rate > 0 && f.Rate <= 1) {
				return invalid("fault schedule: %s.rate: %v is not a probability in (0, 1]", field, f.Rate)
			}
			if f.Delay != 0 && name != "reorder" {
				return invalid("fault schedule: %s.delay: only reorder faults have a delay", field)
			}
		}
	}
	for i := range s.Drop {
		d := &s.Drop[i]
		field := fmt.Sprintf("drop[%d]", i)
		if err := sel(field, &d.Selector); err != nil {
			return err
		}
		if d.Nth < 0 || d.Count < 0 || d.Packet < 0 {
			return invalid("fault schedule: %s: nth %d, count %d and packet %d must not be negative", field, d.Nth, d.Count, d.Packet)
		}
		if d.Nth > maxMatch || d.Count > maxMatch || d.Packet > maxMatch {
			return invalid("fault schedule: %s: nth %d, count %d and packet %d must be at most %d (no run sends more; larger values overflow the match window)", field, d.Nth, d.Count, d.Packet, maxMatch)
		}
		if d.Packet > 0 {
			if d.Nth > 0 || d.Kind != "" && d.Kind != "any" {
				return invalid("fault schedule: %s.packet: a packet index counts every packet of the link; it excludes nth and kind", field)
			}
			if d.Src == nil || d.Dst == nil {
				return invalid("fault schedule: %s.packet: needs src and dst (the link the index counts on)", field)
			}
		}
	}
	for _, g := range []struct {
		name string
		list []Window
	}{{"link_down", s.LinkDown}, {"slow_receiver", s.SlowReceiver}} {
		for i, w := range g.list {
			name := g.name
			field := fmt.Sprintf("%s[%d]", name, i)
			if err := node(field+".node", w.Node); err != nil {
				return err
			}
			if w.To == 0 {
				return invalid("fault schedule: %s.to: missing: when the window ends, after from, e.g. to: 300us", field)
			}
			if w.To <= w.From {
				return invalid("fault schedule: %s: to %v is not after from %v", field, w.To, w.From)
			}
		}
	}
	for i, c := range s.Crash {
		if err := node(fmt.Sprintf("crash[%d].node", i), c.Node); err != nil {
			return err
		}
	}
	for i, c := range s.CableDown {
		field := fmt.Sprintf("cable_down[%d]", i)
		if c.Switch == "" {
			return invalid("fault schedule: %s.switch: missing: the switch at one end of the cable, by name, GUID (0x...) or index (#N)", field)
		}
		if c.Port < 1 {
			return invalid("fault schedule: %s.port: %d: a switch port from 1", field, c.Port)
		}
		if c.To != 0 && c.To <= c.From {
			return invalid("fault schedule: %s: to %v is not after from %v (leave to out for a cable that stays down)", field, c.To, c.From)
		}
	}
	for i, f := range s.SwitchDown {
		field := fmt.Sprintf("switch_down[%d]", i)
		if f.Switch == "" {
			return invalid("fault schedule: %s.switch: missing: the switch, by name, GUID (0x...) or index (#N)", field)
		}
		if f.To != 0 && f.To <= f.From {
			return invalid("fault schedule: %s: to %v is not after from %v (leave to out for a switch that stays down)", field, f.To, f.From)
		}
	}
	return s.validateOverrides()
}

// validateOverrides checks the schedule's changes to the transport and
// the profile: rc_retry and qp_cache_entries.
func (s *Schedule) validateOverrides() error {
	if r := s.RCRetry; r != nil {
		if r.RetryCnt < 0 || r.RetryCnt > 7 {
			return invalid("fault schedule: rc_retry.retry_cnt: %d outside 0..7", r.RetryCnt)
		}
		if r.Timeout > 31 {
			return invalid("fault schedule: rc_retry.timeout: code %d outside 0..31 (4.096 us * 2^code)", r.Timeout)
		}
	}
	if s.QPCacheEntries < 0 {
		return invalid("fault schedule: qp_cache_entries: %d is negative", s.QPCacheEntries)
	}
	if most := qpCacheMost(); float64(s.QPCacheEntries) > most {
		return invalid("fault schedule: qp_cache_entries: %d above the most a profile's nic.qp_cache_entries takes, %.0f", s.QPCacheEntries, most)
	}
	return nil
}

// qpCacheMost is the largest nic.qp_cache_entries a profile takes.
func qpCacheMost() float64 {
	for _, l := range sim.DefaultProfile().Limits() {
		if l.Field == "nic.qp_cache_entries" {
			return l.Max
		}
	}
	return math.MaxInt32
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// Plan is the simulator plan of s on a cluster of nodes nodes.
func (s *Schedule) Plan(nodes int) (*sim.Plan, error) {
	if err := s.Validate(nodes); err != nil {
		return nil, err
	}
	p := sim.NewPlan()
	add := func(a sim.Action, x Selector, rate float64, nth, count int, delay Duration) {
		base := sim.Rule{Action: a, Src: -1, Dst: -1, Rate: rate, Nth: nth, Count: count,
			From: fabric.Time(x.From), To: fabric.Time(x.To), Delay: fabric.Duration(delay)}
		if x.Src != nil {
			base.Src = *x.Src
		}
		if x.Dst != nil {
			base.Dst = *x.Dst
		}
		switch x.Transport {
		case "UD":
			base.Transport = fabric.UD
		case "RC":
			base.Transport = fabric.RC
		case "UC":
			base.Transport = fabric.UC
		}
		switch x.Kind {
		case "data":
			base.Head = []sim.ByteMatch{{Off: 0, Mask: 0xff, Value: HeaderMagic}, {Off: 1, Mask: FlagDepleted, Value: 0}}
		case "eos":
			base.Head = []sim.ByteMatch{{Off: 0, Mask: 0xff, Value: HeaderMagic}, {Off: 1, Mask: FlagDepleted, Value: FlagDepleted}}
		case "credit":
			// UD credit messages by their magic; RC credit by its size.
			ud := base
			ud.Head = []sim.ByteMatch{{Off: 0, Mask: 0xff, Value: CreditMagic}}
			if ud.Transport == 0 || ud.Transport == fabric.UD {
				ud.Transport = fabric.UD
				p.Rules = append(p.Rules, ud)
			}
			if base.Transport == fabric.UD {
				return
			}
			base.Op, base.MaxBytes = "WRITE", CreditWrite
			if base.Transport == 0 {
				base.Transport = fabric.RC
			}
		}
		p.Rules = append(p.Rules, base)
	}
	for _, f := range s.Loss {
		add(sim.Lose, f.Selector, f.Rate, 0, 0, 0)
	}
	for _, f := range s.Corrupt {
		add(sim.Corrupt, f.Selector, f.Rate, 0, 0, 0)
	}
	for _, f := range s.Duplicate {
		add(sim.Dup, f.Selector, f.Rate, 0, 0, 0)
	}
	for _, f := range s.Reorder {
		add(sim.Delay, f.Selector, f.Rate, 0, 0, f.Delay)
	}
	for _, d := range s.Drop {
		nth := max(d.Nth, 1)
		if d.Packet > 0 {
			nth = d.Packet
		}
		add(sim.Lose, d.Selector, 0, nth, max(d.Count, 1), 0)
	}
	for _, w := range s.LinkDown {
		p.Rules = append(p.Rules, sim.Rule{Action: sim.LinkDown, Node: w.Node, From: fabric.Time(w.From), To: fabric.Time(w.To)})
	}
	for _, w := range s.SlowReceiver {
		p.Rules = append(p.Rules, sim.Rule{Action: sim.Starve, Node: w.Node, From: fabric.Time(w.From), To: fabric.Time(w.To)})
	}
	for _, c := range s.Crash {
		p.Rules = append(p.Rules, sim.Rule{Action: sim.Crash, Node: c.Node, From: fabric.Time(c.At)})
	}
	for _, c := range s.CableDown {
		p.Rules = append(p.Rules, sim.Rule{Action: sim.CableDown, Switch: c.Switch, Port: c.Port, From: fabric.Time(c.From), To: fabric.Time(c.To)})
	}
	for _, f := range s.SwitchDown {
		p.Rules = append(p.Rules, sim.Rule{Action: sim.SwitchDown, Switch: f.Switch, From: fabric.Time(f.From), To: fabric.Time(f.To)})
	}
	p.Reroute = fabric.Duration(s.RerouteAfter)
	if r := s.RCRetry; r != nil {
		p.RetryCnt, p.AckTimeout = r.RetryCnt, r.Timeout
	}
	return p, nil
}

// ProfileOverride is the change s makes to the hardware profile (nil when
// none).
func (s *Schedule) ProfileOverride() func(*sim.Profile) {
	if s == nil || s.QPCacheEntries == 0 {
		return nil
	}
	n := s.QPCacheEntries
	return func(p *sim.Profile) { p.NIC.QPCacheEntries = n }
}

// Exact reports whether s leaves exact delivery possible for a design that
// recovers from loss: no crash, and no RC retry cap with a link down (which
// ends in a queue-pair error by design).
func (s *Schedule) Exact() bool {
	return len(s.Crash) == 0 && !(s.RCRetry != nil && len(s.LinkDown) > 0)
}

// YAML renders s as a schedule file.
func (s *Schedule) YAML() string {
	b, _ := yaml.Marshal(s)
	return string(b)
}

// Merge appends t's faults to s (t's scalar settings win when set).
func (s *Schedule) Merge(t *Schedule) {
	if t == nil {
		return
	}
	s.Loss = append(s.Loss, t.Loss...)
	s.Corrupt = append(s.Corrupt, t.Corrupt...)
	s.Duplicate = append(s.Duplicate, t.Duplicate...)
	s.Reorder = append(s.Reorder, t.Reorder...)
	s.Drop = append(s.Drop, t.Drop...)
	s.LinkDown = append(s.LinkDown, t.LinkDown...)
	s.SlowReceiver = append(s.SlowReceiver, t.SlowReceiver...)
	s.Crash = append(s.Crash, t.Crash...)
	s.CableDown = append(s.CableDown, t.CableDown...)
	s.SwitchDown = append(s.SwitchDown, t.SwitchDown...)
	if t.RerouteAfter != 0 {
		s.RerouteAfter = t.RerouteAfter
	}
	if t.RCRetry != nil {
		s.RCRetry = t.RCRetry
	}
	if t.QPCacheEntries != 0 {
		s.QPCacheEntries = t.QPCacheEntries
	}
}

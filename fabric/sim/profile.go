package sim

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/topo"
	"github.com/rdmashuffle/rdmashuffle/internal/yamldoc"
)

// Profile is a hardware profile: the numbers the model is built from. Each
// number's source is given in docs/model.md. Profiles are data files
// (profiles/*.yaml, or any path); Validate rejects a missing or impossible
// value with a message naming the field.
type Profile struct {
	Name        string        `yaml:"name"`
	Description string        `yaml:"description,omitempty"` // the only optional field
	Link        LinkProfile   `yaml:"link"`
	Switch      SwitchProfile `yaml:"switch"`
	NIC         NICProfile    `yaml:"nic"`
	Host        HostProfile   `yaml:"host"`
	PCIe        PCIeProfile   `yaml:"pcie"`
	Setup       SetupProfile  `yaml:"setup"`
	OOB         OOBProfile    `yaml:"oob"`

	source string // "builtin" or the file path
}

// LinkProfile describes one 4X port and its cable.
type LinkProfile struct {
	Lanes         int     `yaml:"lanes"`          // lanes per port (4 for 4X)
	LaneGbaud     float64 `yaml:"lane_gbaud"`     // signalling rate per lane, Gbaud
	Encoding      string  `yaml:"encoding"`       // "64b/66b" or "8b/10b"
	MTU           int     `yaml:"mtu"`            // active path MTU, bytes (256..4096)
	PropagationNS float64 `yaml:"propagation_ns"` // cable delay per link, ns
}

// SwitchProfile describes the single switch: input-queued, one data
// virtual lane, link-level credits in 64-byte blocks.
type SwitchProfile struct {
	LatencyNS        float64 `yaml:"latency_ns"`         // port-to-port cut-through latency, ns
	InputBufferBytes int     `yaml:"input_buffer_bytes"` // buffer of one input port for the data VL, bytes
	// ARTies is how adaptive routing chooses among minimal ports that are
	// equally loaded: 0 keeps the static table's port (the profiles'
	// choice), 1 takes them in turn, one after another per switch and
	// destination leaf, so that an idle fabric spreads packets too. No
	// source says which a switch does: a mechanism switch of the
	// sensitivity analysis.
	ARTies int `yaml:"ar_ties,omitempty"`
}

// NICProfile describes the NIC (and its PCIe path, lumped into latencies).
type NICProfile struct {
	TxLatencyNS float64 `yaml:"tx_latency_ns"` // doorbell to first bit on the wire, ns
	RxLatencyNS float64 `yaml:"rx_latency_ns"` // receive pipeline done (payload written over PCIe) to data and completion visible in host memory, ns
	MaxQP       int     `yaml:"max_qp"`
	MaxQPWR     int     `yaml:"max_qp_wr"`
	MaxCQE      int     `yaml:"max_cqe"`
	MaxInlineRC int     `yaml:"max_inline_rc"` // bytes
	MaxInlineUD int     `yaml:"max_inline_ud"` // bytes
	MaxRdAtomic int     `yaml:"max_rd_atomic"` // outstanding RDMA Reads per QP
	MaxMRBytes  int64   `yaml:"max_mr_bytes"`
	LocalAckNS  float64 `yaml:"ack_delay_ns"` // responder delay before an ACK leaves, ns

	// Performance model.
	ProcessingUnits int     `yaml:"processing_units"` // send-side engines; a QP is served by one
	WQENS           float64 `yaml:"wqe_ns"`           // time a processing unit spends on one work request, ns
	RxPacketNS      float64 `yaml:"rx_packet_ns"`     // receive pipeline time per packet, ns
	RxBufferBytes   int     `yaml:"rx_buffer_bytes"`  // port buffer for arriving packets (credits to the switch), bytes
	QPCacheEntries  int     `yaml:"qp_cache_entries"` // queue-pair contexts held on the NIC
	QPCacheMissNS   float64 `yaml:"qp_cache_miss_ns"` // fetching a context from host memory, ns
	// The context cache's organisation (qpcache.go): contexts per set
	// (0: one fully associative set; the capacity is rounded down to a
	// multiple of it),
	// replaced at random, and how many context fetches may be in flight
	// at once (0 counts as 1).
	QPCacheWays    int `yaml:"qp_cache_ways"`
	QPCacheFetches int `yaml:"qp_cache_fetches"`
	// Outstanding reliable send work requests whose state the NIC holds
	// (wrcache.go): from the request's processing to its ACK or read
	// response; more are evicted at random and read again, through the
	// context fetch slots, when their ACK or response arrives. 0: not
	// modelled (omitted from the encoding, so profiles without it keep
	// their hash).
	WRCacheEntries int `yaml:"wr_cache_entries,omitempty"`
	// OOOWindow is out-of-order placement of RC packets (ConnectX-5 on):
	// how many PSNs past the expected one a responder accepts, and a
	// requester accepts read responses, ahead of a gap instead of
	// answering with a sequence NAK (responder.go, holdAhead). 0 (the
	// default, omitted from the encoding so profiles without it keep
	// their hash): packets are taken in PSN order only, and one that
	// overtakes an earlier one starts go-back-N.
	OOOWindow int `yaml:"ooo_window,omitempty"`
	// Address translation (tpt.go): memory-region protection entries and
	// 4 KiB page translations held on the NIC (LRU); a miss costs a PCIe
	// round trip (pcie.rtt_ns). Both 0: translation is not modelled.
	// RxMissBlocks 1: a packet whose context or translation is being
	// fetched holds the receive pipeline until it is on the NIC, so later
	// packets wait too; 0 (the default, omitted from the encoding): they go
	// on (nic.go, accept). A mechanism choice no source settles.
	RxMissBlocks    int `yaml:"rx_miss_blocks,omitempty"`
	MPTCacheEntries int `yaml:"mpt_cache_entries"` // memory regions
	MTTCacheEntries int `yaml:"mtt_cache_entries"` // page translations, a multiple of 8 (64-byte lines)
}

// HostProfile describes a node's CPU and the CPU cost of verbs calls.
type HostProfile struct {
	Cores         int     `yaml:"cores"`
	GHz           float64 `yaml:"ghz"`
	PostSendNS    float64 `yaml:"post_send_ns"`    // CPU time per posted send WR
	PostRecvNS    float64 `yaml:"post_recv_ns"`    // CPU time per posted receive WR
	PollEmptyNS   float64 `yaml:"poll_empty_ns"`   // CPU time of a poll that finds nothing
	PollPerCQENS  float64 `yaml:"poll_per_cqe_ns"` // CPU time per completion returned
	LockNS        float64 `yaml:"lock_ns"`         // uncontended lock acquire
	LockHandoffNS float64 `yaml:"lock_handoff_ns"` // contended lock passed to a waiting thread on the same socket
	// Sockets the cores are split over, evenly and numbered socket by
	// socket (cores 0 to cores/sockets-1 on the first); 0 or 1: one.
	Sockets int `yaml:"sockets"`
	// LockHandoffRemoteNS is a hand-off between cores of different
	// sockets (the lock's cache line crosses the interconnect); 0: as
	// lock_handoff_ns.
	LockHandoffRemoteNS float64 `yaml:"lock_handoff_remote_ns"`
	// A sleeping lock's (futex) costs: a FUTEX_WAKE system call that
	// wakes a sleeper, on the releasing core; the time until the woken
	// thread runs on its own core; a system call that finds nothing to
	// do (FUTEX_WAKE with nobody asleep, sched_yield with nothing else
	// to run).
	FutexWakeNS  float64 `yaml:"futex_wake_ns"`
	WakeupNS     float64 `yaml:"wakeup_ns"`
	WakeupTailNS float64 `yaml:"wakeup_tail_ns"` // mean of the wake-up's exponential excess over wakeup_ns
	SyscallNS    float64 `yaml:"syscall_ns"`
	MemcpyGBps   float64 `yaml:"memcpy_gbps"`   // one core's copy bandwidth, GB/s (10^9 bytes/s)
	HashTupleNS  float64 `yaml:"hash_tuple_ns"` // hashing one tuple's key and choosing its buffer, ns
	// SharedDoorbells 1: the send queues' doorbell (blue-flame) registers
	// are allocated as libmlx5 does by default, 16 per device context,
	// the first 4 queue pairs each with one of its own and later ones
	// sharing 11 others behind a spinlock (the driver keeps register 0;
	// doorbell.go); 0 (the
	// default, omitted from the encoding): every queue pair rings a
	// register no other thread uses, as with a thread domain per thread
	// or libmlx5's MLX5_TOTAL_UUARS and MLX5_NUM_LOW_LAT_UUARS raised. A
	// mechanism switch of the sensitivity analysis.
	SharedDoorbells int `yaml:"shared_doorbells,omitempty"`
	// DoorbellNS is the CPU time of writing a doorbell register, once per
	// PostSend call that posts something (doorbell.go); 0 (the default,
	// omitted from the encoding): included in post_send_ns.
	DoorbellNS float64 `yaml:"doorbell_ns,omitempty"`
}

// PCIeProfile describes the NIC's host interface.
type PCIeProfile struct {
	GBps  float64 `yaml:"gbps"`   // effective DMA bandwidth per direction after TLP overhead, GB/s
	RTTNS float64 `yaml:"rtt_ns"` // round trip of a DMA read (WQE fetch), ns
	// ReadRequestBytes is the unit in which the NIC reads a message's
	// payload from host memory before it sends it: a packet leaves once
	// the read request holding its last byte has completed, so at a path
	// MTU below it a message's first packets wait for a whole request
	// (nic.go, fetchBytes). 0 (omitted from the encoding, so profiles
	// without it keep their hash) or 1: each packet waits for its own
	// bytes only, the NIC passing a request's completions on as they
	// arrive. The request size is the PCIe device's maximum read request
	// (docs/model.md); whether the NIC waits for all of it, no source
	// says: a mechanism switch of the sensitivity analysis (=1).
	ReadRequestBytes int `yaml:"read_request_bytes,omitempty"`
}

// SetupProfile holds the costs of control-path verbs, charged to the
// calling thread.
type SetupProfile struct {
	RegMRUS        float64 `yaml:"reg_mr_us"`            // fixed cost of registering a region, us
	RegMRPerPageNS float64 `yaml:"reg_mr_per_page_ns"`   // pinning and mapping one 4 KiB page, ns
	DeregMRUS      float64 `yaml:"dereg_mr_us"`          // fixed cost of deregistering a region, us
	DeregPerPageNS float64 `yaml:"dereg_mr_per_page_ns"` // unpinning one 4 KiB page, ns
	CreateQPUS     float64 `yaml:"create_qp_us"`
	ModifyQPUS     float64 `yaml:"modify_qp_us"` // each state transition
	CreateCQUS     float64 `yaml:"create_cq_us"`
}

// OOBProfile describes the out-of-band network used for connection setup.
type OOBProfile struct {
	RTTUS float64 `yaml:"rtt_us"` // round trip of a small TCP exchange, us
}

//go:embed profiles/*.yaml
var builtinFS embed.FS

// DefaultProfileName is the profile used when none is given.
const DefaultProfileName = "edr-cx4"

// BuiltinProfiles lists the names of the profiles compiled into the binary.
func BuiltinProfiles() []string {
	ents, _ := builtinFS.ReadDir("profiles")
	var names []string
	for _, e := range ents {
		names = append(names, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	sort.Strings(names)
	return names
}

// DefaultProfile returns a fresh copy of the default profile.
func DefaultProfile() *Profile {
	p, err := LoadProfile(DefaultProfileName)
	if err != nil {
		panic("sim: built-in default profile is invalid: " + err.Error())
	}
	return p
}

// LoadProfile loads a built-in profile by name, or a YAML file when
// nameOrPath contains a path separator or ends in .yaml/.yml.
func LoadProfile(nameOrPath string) (*Profile, error) {
	if strings.ContainsRune(nameOrPath, os.PathSeparator) || strings.HasSuffix(nameOrPath, ".yaml") || strings.HasSuffix(nameOrPath, ".yml") {
		data, err := os.ReadFile(nameOrPath)
		if err != nil {
			return nil, fmt.Errorf("sim: profile %q: %w", nameOrPath, err)
		}
		p, err := ParseProfile(data)
		if err != nil {
			return nil, fmt.Errorf("sim: profile %s: %w", nameOrPath, err)
		}
		p.source = nameOrPath
		return p, nil
	}
	data, err := builtinFS.ReadFile("profiles/" + nameOrPath + ".yaml")
	if err != nil {
		return nil, fmt.Errorf("sim: unknown profile %q: built-in profiles are %s, or give a path to a .yaml file",
			nameOrPath, strings.Join(BuiltinProfiles(), ", "))
	}
	p, err := ParseProfile(data)
	if err != nil {
		return nil, fmt.Errorf("sim: built-in profile %s: %w", nameOrPath, err)
	}
	p.source = "builtin"
	return p, nil
}

// profileSections names a profile's sections and their fields for
// decoding errors.
var profileSections = yamldoc.SectionNames(reflect.TypeFor[Profile](), "profile")

// ParseProfile decodes and validates a YAML profile. Unknown fields are
// rejected so that a typo does not silently leave a default in place, and
// so are missing ones (every field but description is required): zero is a
// legitimate value of several fields, so Validate alone cannot tell a
// forgotten latency from a zero one.
func ParseProfile(data []byte) (*Profile, error) {
	if err := yamldoc.One(data); err != nil {
		return nil, fmt.Errorf("invalid YAML: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var p Profile
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("invalid YAML: %s", yamldoc.Explain(err, data, profileSections))
	}
	var raw map[string]any
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("invalid YAML: %w", err)
	}
	if missing := missingFields(raw, reflect.TypeOf(p), ""); len(missing) > 0 {
		errs := make([]error, len(missing))
		for i, f := range missing {
			errs[i] = fmt.Errorf("profile field %s: missing", f)
		}
		return nil, errors.Join(errs...)
	}
	if err := p.Validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

// missingFields lists, as dotted YAML paths, the required fields of struct
// type t that the decoded document m leaves out or sets to null. Fields
// tagged omitempty are optional.
func missingFields(m map[string]any, t reflect.Type, prefix string) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		name, opts, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if name == "" || name == "-" || opts == "omitempty" {
			continue
		}
		v := m[name]
		if ft := t.Field(i).Type; ft.Kind() == reflect.Struct {
			sub, _ := v.(map[string]any) // a missing section lacks every field
			out = append(out, missingFields(sub, ft, prefix+name+".")...)
		} else if v == nil {
			out = append(out, prefix+name)
		}
	}
	return out
}

// Source is "builtin" or the path the profile was loaded from.
func (p *Profile) Source() string { return p.source }

// Validate checks every field and names the first one that is missing or
// impossible.
func (p *Profile) Validate() error {
	var errs []error
	bad := func(field string, format string, args ...any) {
		errs = append(errs, fmt.Errorf("profile field %s: %s", field, fmt.Sprintf(format, args...)))
	}
	if p.Name == "" {
		bad("name", "missing")
	}
	if _, ok := topo.CodeRate(p.Link.Encoding); !ok {
		bad("link.encoding", "must be \"8b/10b\", \"64b/66b\" or \"rs-fec\", got %q", p.Link.Encoding)
	}
	switch p.Link.MTU {
	case 256, 512, 1024, 2048, 4096:
	default:
		bad("link.mtu", "must be one of 256, 512, 1024, 2048, 4096 bytes, got %d", p.Link.MTU)
	}
	if r := p.PCIe.ReadRequestBytes; r > 1 && (r < 128 || r&(r-1) != 0) {
		bad("pcie.read_request_bytes", "must be one of 128, 256, 512, 1024, 2048, 4096 bytes (a PCIe maximum read request), or 0 or 1 for a packet's own bytes, got %d", r)
	}
	for _, f := range p.numbers() {
		switch {
		case f.positive && !(f.v > 0):
			bad(f.field, "must be a positive number, got %v (missing?)", f.v)
		case f.v < f.min:
			num := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
			why := f.minWhy
			if why == "" {
				why = "the least the model's clock can hold"
			}
			bad(f.field, "%s %s is below %s, %s %s", num(f.v), f.unit, why, num(f.min), f.unit)
		case !(f.v >= 0):
			bad(f.field, "must be zero or positive, got %v", f.v)
		case f.v > f.max:
			// Beyond the bound the model's picosecond arithmetic can
			// overflow (1e13 us of registration became a shorter setup).
			lo := "0"
			if f.positive {
				lo = "above 0"
			}
			num := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
			bad(f.field, "%s %s outside the range %s to %s %s%s", num(f.v), f.unit, lo, num(f.max), f.unit, f.maxHint)
		}
	}
	if s := p.Host.Sockets; s > 1 && p.Host.Cores%s != 0 {
		bad("host.sockets", "%d sockets cannot share %d cores evenly: give the cores of all sockets together (host.cores) and a number of sockets that divides them", s, p.Host.Cores)
	}
	switch mpt, mtt := p.NIC.MPTCacheEntries, p.NIC.MTTCacheEntries; {
	case mtt%mttLinePages != 0:
		bad("nic.mtt_cache_entries", "%d is not a multiple of %d (entries are fetched in 64-byte lines of %d)", mtt, mttLinePages, mttLinePages)
	case mtt > 0 && mpt == 0:
		bad("nic.mpt_cache_entries", "0 with nic.mtt_cache_entries %d: set both to 0 to leave translation out of the model, or both positive", mtt)
	case mpt > 0 && mtt == 0:
		bad("nic.mtt_cache_entries", "0 with nic.mpt_cache_entries %d: set both to 0 to leave translation out of the model, or both positive", mpt)
	}
	return errors.Join(errs...)
}

// FieldLimit is one numeric field of a profile and the values Validate
// accepts for it: Min to Max, Min itself refused when AboveZero.
type FieldLimit struct {
	Field, Unit string // "nic.wqe_ns", "ns"
	Min, Max    float64
	AboveZero   bool
}

// Limits lists every numeric field of p with the range Validate accepts
// (the enumerated fields, link.encoding and link.mtu, aside). Two rules
// relate fields beyond these ranges: host.sockets must divide host.cores,
// and nic.mpt_cache_entries and nic.mtt_cache_entries are both 0 or both
// positive, the latter a multiple of 8.
func (p *Profile) Limits() []FieldLimit {
	var out []FieldLimit
	for _, f := range p.numbers() {
		out = append(out, FieldLimit{Field: f.field, Unit: f.unit, Min: f.min, Max: f.max, AboveZero: f.positive && f.min == 0})
	}
	return out
}

// profileNumber is one numeric field of a profile with its unit and its
// allowed range: zero (or, if positive, above zero) to max.
type profileNumber struct {
	field, unit string
	v, max      float64
	positive    bool
	min         float64 // the least value (0: none beyond positive): rates, so that derived durations fit the clock; buffers, one MTU packet
	minWhy      string  // what min is, if not the clock's bound
	maxHint     string  // appended to the error beyond max
}

// Upper bounds of the numeric fields: well above any real hardware, and
// low enough that the model's arithmetic (int64 picoseconds, products of
// per-page costs and region sizes) cannot overflow.
const (
	maxLatencyNS = 1e6     // 1 ms: a latency, delay or per-item CPU cost
	maxSetupUS   = 1e6     // 1 s: one control-path verb
	maxCount     = 1 << 24 // queue pairs, work requests, cache entries (QPNs are 24 bits)
	maxBytes     = 1 << 30 // a buffer on the NIC or switch, inline data
	maxRateGB    = 1e4     // GB/s or Gbaud: 10 TB/s
	maxGHz       = 10      // a core's clock: beyond it, a value in MHz given as GHz
	// minRateGB is the least rate (GB/s, Gbaud, GHz): 1 MB/s, 1 Mbaud,
	// 1 MHz. Slower, a packet's serialization, a copy or a computation
	// of realistic size takes longer than the picosecond clock holds
	// (a lane at 1e-15 Gbaud scheduled an event in the past, and a core
	// at 1e-15 GHz made work free).
	minRateGB = 1e-3
	// maxOOOWindow: PSNs are 24 bits and compared within half their
	// range, so an out-of-order window reaches at most 2^22 PSNs ahead.
	maxOOOWindow = 1 << 22
)

// numbers lists the profile's numeric fields with their units and ranges.
func (p *Profile) numbers() []profileNumber {
	n := func(field, unit string, v, max float64, positive bool) profileNumber {
		return profileNumber{field: field, unit: unit, v: v, max: max, positive: positive}
	}
	rate := func(field, unit string, v, max float64) profileNumber {
		return profileNumber{field: field, unit: unit, v: v, max: max, positive: true, min: minRateGB}
	}
	// A buffer holds at least one packet of the link's MTU in whole
	// 64-byte credit blocks (a buffer of fewer blocks never has the
	// credits a full packet needs: the link stalls for good).
	buffer := func(field string, v int) profileNumber {
		return profileNumber{field: field, unit: "bytes", v: float64(v), max: maxBytes, positive: true,
			min: float64(maxPacketBlocks(p) * creditBlock), minWhy: fmt.Sprintf("the credit blocks of one packet of the MTU (%d bytes and its headers)", p.Link.MTU)}
	}
	ghz := rate("host.ghz", "GHz", p.Host.GHz, maxGHz)
	ghz.maxHint = " (did you mean MHz?)"
	l, sw, nic, h, s := &p.Link, &p.Switch, &p.NIC, &p.Host, &p.Setup
	return []profileNumber{
		n("link.lanes", "lanes", float64(l.Lanes), 12, true),
		rate("link.lane_gbaud", "Gbaud", l.LaneGbaud, maxRateGB),
		n("link.propagation_ns", "ns", l.PropagationNS, maxLatencyNS, false),
		n("switch.latency_ns", "ns", sw.LatencyNS, maxLatencyNS, false),
		buffer("switch.input_buffer_bytes", sw.InputBufferBytes),
		n("switch.ar_ties", "(0 or 1)", float64(sw.ARTies), 1, false),
		n("nic.tx_latency_ns", "ns", nic.TxLatencyNS, maxLatencyNS, false),
		n("nic.rx_latency_ns", "ns", nic.RxLatencyNS, maxLatencyNS, false),
		n("nic.ack_delay_ns", "ns", nic.LocalAckNS, maxLatencyNS, false),
		n("nic.max_qp", "queue pairs", float64(nic.MaxQP), maxCount, true),
		n("nic.max_qp_wr", "work requests", float64(nic.MaxQPWR), maxCount, true),
		n("nic.max_cqe", "completions", float64(nic.MaxCQE), maxCount, true),
		n("nic.max_inline_rc", "bytes", float64(nic.MaxInlineRC), maxBytes, false),
		n("nic.max_inline_ud", "bytes", float64(nic.MaxInlineUD), maxBytes, false),
		n("nic.max_rd_atomic", "reads", float64(nic.MaxRdAtomic), 1<<16, true),
		n("nic.max_mr_bytes", "bytes", float64(nic.MaxMRBytes), 1<<rqeFlags, true), // a receive's offset has 44 bits (rqe)
		n("nic.processing_units", "units", float64(nic.ProcessingUnits), 1<<16, true),
		n("nic.wqe_ns", "ns", nic.WQENS, maxLatencyNS, true),
		n("nic.rx_packet_ns", "ns", nic.RxPacketNS, maxLatencyNS, false),
		buffer("nic.rx_buffer_bytes", nic.RxBufferBytes),
		n("nic.qp_cache_entries", "entries", float64(nic.QPCacheEntries), maxCount, true),
		n("nic.qp_cache_miss_ns", "ns", nic.QPCacheMissNS, maxLatencyNS, false),
		n("nic.qp_cache_ways", "entries", float64(nic.QPCacheWays), maxCount, false),
		n("nic.qp_cache_fetches", "fetches", float64(nic.QPCacheFetches), 1<<12, false),
		n("nic.wr_cache_entries", "work requests", float64(nic.WRCacheEntries), maxCount, false),
		n("nic.rx_miss_blocks", "(0 or 1)", float64(nic.RxMissBlocks), 1, false),
		n("nic.ooo_window", "PSNs", float64(nic.OOOWindow), maxOOOWindow, false),
		n("nic.mpt_cache_entries", "entries", float64(nic.MPTCacheEntries), maxCount, false),
		n("nic.mtt_cache_entries", "entries", float64(nic.MTTCacheEntries), maxCount, false),
		n("host.cores", "cores", float64(h.Cores), 1<<12, true),
		ghz,
		n("host.post_send_ns", "ns", h.PostSendNS, maxLatencyNS, false),
		n("host.post_recv_ns", "ns", h.PostRecvNS, maxLatencyNS, false),
		n("host.poll_empty_ns", "ns", h.PollEmptyNS, maxLatencyNS, false),
		n("host.poll_per_cqe_ns", "ns", h.PollPerCQENS, maxLatencyNS, false),
		n("host.lock_ns", "ns", h.LockNS, maxLatencyNS, false),
		n("host.lock_handoff_ns", "ns", h.LockHandoffNS, maxLatencyNS, false),
		n("host.sockets", "sockets", float64(h.Sockets), 64, false),
		n("host.lock_handoff_remote_ns", "ns", h.LockHandoffRemoteNS, maxLatencyNS, false),
		n("host.futex_wake_ns", "ns", h.FutexWakeNS, maxLatencyNS, false),
		n("host.wakeup_ns", "ns", h.WakeupNS, maxLatencyNS, false),
		n("host.wakeup_tail_ns", "ns", h.WakeupTailNS, maxLatencyNS, false),
		n("host.syscall_ns", "ns", h.SyscallNS, maxLatencyNS, false),
		rate("host.memcpy_gbps", "GB/s", h.MemcpyGBps, maxRateGB),
		n("host.hash_tuple_ns", "ns", h.HashTupleNS, maxLatencyNS, false),
		n("host.shared_doorbells", "(0 or 1)", float64(h.SharedDoorbells), 1, false),
		n("host.doorbell_ns", "ns", h.DoorbellNS, maxLatencyNS, false),
		rate("pcie.gbps", "GB/s", p.PCIe.GBps, maxRateGB),
		n("pcie.rtt_ns", "ns", p.PCIe.RTTNS, maxLatencyNS, false),
		n("pcie.read_request_bytes", "bytes", float64(p.PCIe.ReadRequestBytes), 4096, false),
		n("setup.reg_mr_us", "us", s.RegMRUS, maxSetupUS, false),
		n("setup.reg_mr_per_page_ns", "ns", s.RegMRPerPageNS, maxLatencyNS, false),
		n("setup.dereg_mr_us", "us", s.DeregMRUS, maxSetupUS, false),
		n("setup.dereg_mr_per_page_ns", "ns", s.DeregPerPageNS, maxLatencyNS, false),
		n("setup.create_qp_us", "us", s.CreateQPUS, maxSetupUS, false),
		n("setup.modify_qp_us", "us", s.ModifyQPUS, maxSetupUS, false),
		n("setup.create_cq_us", "us", s.CreateCQUS, maxSetupUS, false),
		n("oob.rtt_us", "us", p.OOB.RTTUS, maxSetupUS, false),
	}
}

// codeRate is the fraction of the signalling rate line code enc leaves
// for data (topo.CodeRate; 0 for a code not known, which Validate refuses).
func codeRate(enc string) float64 {
	r, _ := topo.CodeRate(enc)
	return r
}

// DataRateBps is the port's data rate after line encoding, in bits/s.
func (p *Profile) DataRateBps() float64 {
	return float64(p.Link.Lanes) * p.Link.LaneGbaud * 1e9 * codeRate(p.Link.Encoding)
}

func ns(v float64) fabric.Duration { return fabric.Duration(math.Round(v * 1000)) }

func (p *Profile) cycles(n int64) fabric.Duration {
	return fabric.Duration(math.Round(float64(n) * 1000 / p.Host.GHz))
}

func (h *HostProfile) lockCost() fabric.Duration { return ns(h.LockNS) }

// handoffCost is the time a lock takes to pass from a thread on core
// from to one on core to: a cache-line transfer within a socket or
// across the interconnect.
func (h *HostProfile) handoffCost(from, to int) fabric.Duration {
	if h.Sockets > 1 && h.LockHandoffRemoteNS > 0 && h.socket(from) != h.socket(to) {
		return ns(h.LockHandoffRemoteNS)
	}
	return ns(h.LockHandoffNS)
}

// socket is the socket of core c (cores beyond the host's count, which a
// design may name, wrap around).
func (h *HostProfile) socket(c int) int {
	per := max(h.Cores/max(h.Sockets, 1), 1)
	return (c % max(h.Cores, 1)) / per
}

func pages(bytes int) float64 { return float64((bytes + pageSize - 1) / pageSize) }

// regCost is the CPU time of registering a region of bytes.
func (s *SetupProfile) regCost(bytes int) fabric.Duration {
	return ns(s.RegMRUS*1000 + s.RegMRPerPageNS*pages(bytes))
}

// deregCost is the CPU time of deregistering a region of bytes.
func (s *SetupProfile) deregCost(bytes int) fabric.Duration {
	return ns(s.DeregMRUS*1000 + s.DeregPerPageNS*pages(bytes))
}

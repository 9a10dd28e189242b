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
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/rdmashuffle/rdmashuffle/fabric"
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
}

// NICProfile describes the NIC (and its PCIe path, lumped into latencies).
type NICProfile struct {
	TxLatencyNS float64 `yaml:"tx_latency_ns"` // doorbell to first bit on the wire, ns
	RxLatencyNS float64 `yaml:"rx_latency_ns"` // last bit in to data and completion in host memory, ns
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
	QPCacheEntries  int     `yaml:"qp_cache_entries"` // queue-pair contexts held on the NIC (LRU)
	QPCacheMissNS   float64 `yaml:"qp_cache_miss_ns"` // fetching a context from host memory, ns
	// Address translation (tpt.go): memory-region protection entries and
	// 4 KiB page translations held on the NIC (LRU); a miss costs a PCIe
	// round trip (pcie.rtt_ns). Both 0: translation is not modelled.
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
	LockHandoffNS float64 `yaml:"lock_handoff_ns"` // contended lock passed to a waiting thread
	MemcpyGBps    float64 `yaml:"memcpy_gbps"`     // one core's copy bandwidth, GB/s (10^9 bytes/s)
	HashTupleNS   float64 `yaml:"hash_tuple_ns"`   // hashing one tuple's key and choosing its buffer, ns
}

// PCIeProfile describes the NIC's host interface.
type PCIeProfile struct {
	GBps  float64 `yaml:"gbps"`   // effective DMA bandwidth per direction after TLP overhead, GB/s
	RTTNS float64 `yaml:"rtt_ns"` // round trip of a DMA read (WQE fetch), ns
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

// ParseProfile decodes and validates a YAML profile. Unknown fields are
// rejected so that a typo does not silently leave a default in place, and
// so are missing ones (every field but description is required): zero is a
// legitimate value of several fields, so Validate alone cannot tell a
// forgotten latency from a zero one.
func ParseProfile(data []byte) (*Profile, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var p Profile
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("invalid YAML: %w", err)
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
	pos := func(field string, v float64) {
		if !(v > 0) || math.IsInf(v, 0) {
			bad(field, "must be a positive number, got %v (missing?)", v)
		}
	}
	nonneg := func(field string, v float64) {
		if !(v >= 0) || math.IsInf(v, 0) {
			bad(field, "must be zero or positive, got %v", v)
		}
	}
	if p.Name == "" {
		bad("name", "missing")
	}
	pos("link.lanes", float64(p.Link.Lanes))
	pos("link.lane_gbaud", p.Link.LaneGbaud)
	if _, ok := encodings[p.Link.Encoding]; !ok {
		bad("link.encoding", "must be \"8b/10b\", \"64b/66b\" or \"rs-fec\", got %q", p.Link.Encoding)
	}
	switch p.Link.MTU {
	case 256, 512, 1024, 2048, 4096:
	default:
		bad("link.mtu", "must be one of 256, 512, 1024, 2048, 4096 bytes, got %d", p.Link.MTU)
	}
	nonneg("link.propagation_ns", p.Link.PropagationNS)
	nonneg("switch.latency_ns", p.Switch.LatencyNS)
	nonneg("nic.tx_latency_ns", p.NIC.TxLatencyNS)
	nonneg("nic.rx_latency_ns", p.NIC.RxLatencyNS)
	nonneg("nic.ack_delay_ns", p.NIC.LocalAckNS)
	pos("nic.max_qp", float64(p.NIC.MaxQP))
	pos("nic.max_qp_wr", float64(p.NIC.MaxQPWR))
	pos("nic.max_cqe", float64(p.NIC.MaxCQE))
	nonneg("nic.max_inline_rc", float64(p.NIC.MaxInlineRC))
	nonneg("nic.max_inline_ud", float64(p.NIC.MaxInlineUD))
	pos("nic.max_rd_atomic", float64(p.NIC.MaxRdAtomic))
	pos("nic.max_mr_bytes", float64(p.NIC.MaxMRBytes))
	pos("host.cores", float64(p.Host.Cores))
	pos("host.ghz", p.Host.GHz)
	if p.Host.GHz > 10 {
		bad("host.ghz", "%v GHz is not a plausible clock (did you mean MHz?)", p.Host.GHz)
	}
	nonneg("host.post_send_ns", p.Host.PostSendNS)
	nonneg("host.post_recv_ns", p.Host.PostRecvNS)
	nonneg("host.poll_empty_ns", p.Host.PollEmptyNS)
	nonneg("host.poll_per_cqe_ns", p.Host.PollPerCQENS)
	nonneg("host.lock_ns", p.Host.LockNS)
	nonneg("host.lock_handoff_ns", p.Host.LockHandoffNS)
	nonneg("oob.rtt_us", p.OOB.RTTUS)
	pos("switch.input_buffer_bytes", float64(p.Switch.InputBufferBytes))
	pos("nic.processing_units", float64(p.NIC.ProcessingUnits))
	pos("nic.wqe_ns", p.NIC.WQENS)
	nonneg("nic.rx_packet_ns", p.NIC.RxPacketNS)
	pos("nic.rx_buffer_bytes", float64(p.NIC.RxBufferBytes))
	pos("nic.qp_cache_entries", float64(p.NIC.QPCacheEntries))
	nonneg("nic.qp_cache_miss_ns", p.NIC.QPCacheMissNS)
	nonneg("nic.mpt_cache_entries", float64(p.NIC.MPTCacheEntries))
	nonneg("nic.mtt_cache_entries", float64(p.NIC.MTTCacheEntries))
	switch mpt, mtt := p.NIC.MPTCacheEntries, p.NIC.MTTCacheEntries; {
	case mtt%mttLinePages != 0:
		bad("nic.mtt_cache_entries", "%d is not a multiple of %d (entries are fetched in 64-byte lines of %d)", mtt, mttLinePages, mttLinePages)
	case mtt > 0 && mpt == 0:
		bad("nic.mpt_cache_entries", "0 with nic.mtt_cache_entries %d: set both to 0 to leave translation out of the model, or both positive", mtt)
	case mpt > 0 && mtt == 0:
		bad("nic.mtt_cache_entries", "0 with nic.mpt_cache_entries %d: set both to 0 to leave translation out of the model, or both positive", mpt)
	}
	pos("host.memcpy_gbps", p.Host.MemcpyGBps)
	nonneg("host.hash_tuple_ns", p.Host.HashTupleNS)
	pos("pcie.gbps", p.PCIe.GBps)
	nonneg("pcie.rtt_ns", p.PCIe.RTTNS)
	nonneg("setup.reg_mr_us", p.Setup.RegMRUS)
	nonneg("setup.reg_mr_per_page_ns", p.Setup.RegMRPerPageNS)
	nonneg("setup.dereg_mr_us", p.Setup.DeregMRUS)
	nonneg("setup.dereg_mr_per_page_ns", p.Setup.DeregPerPageNS)
	nonneg("setup.create_qp_us", p.Setup.CreateQPUS)
	nonneg("setup.modify_qp_us", p.Setup.ModifyQPUS)
	nonneg("setup.create_cq_us", p.Setup.CreateCQUS)
	if mtuPkt := p.Link.MTU + maxHeaderBytes; p.Switch.InputBufferBytes > 0 && p.Switch.InputBufferBytes < mtuPkt {
		bad("switch.input_buffer_bytes", "%d bytes cannot hold one MTU packet (%d bytes)", p.Switch.InputBufferBytes, mtuPkt)
	}
	if mtuPkt := p.Link.MTU + maxHeaderBytes; p.NIC.RxBufferBytes > 0 && p.NIC.RxBufferBytes < mtuPkt {
		bad("nic.rx_buffer_bytes", "%d bytes cannot hold one MTU packet (%d bytes)", p.NIC.RxBufferBytes, mtuPkt)
	}
	return errors.Join(errs...)
}

// encodings maps a line code to the fraction of the signalling rate that
// carries data. "rs-fec" is HDR's chain (64b/66b, 256b/257b transcoding,
// RS(544,514) forward error correction): 53.125 Gb/s of signal per lane
// carry 50 Gb/s of data.
var encodings = map[string]float64{"64b/66b": 64.0 / 66.0, "8b/10b": 0.8, "rs-fec": 50 / 53.125}

// DataRateBps is the port's data rate after line encoding, in bits/s.
func (p *Profile) DataRateBps() float64 {
	return float64(p.Link.Lanes) * p.Link.LaneGbaud * 1e9 * encodings[p.Link.Encoding]
}

func ns(v float64) fabric.Duration { return fabric.Duration(math.Round(v * 1000)) }

func (p *Profile) cycles(n int64) fabric.Duration {
	return fabric.Duration(math.Round(float64(n) * 1000 / p.Host.GHz))
}

func (h *HostProfile) lockCost() fabric.Duration    { return ns(h.LockNS) }
func (h *HostProfile) handoffCost() fabric.Duration { return ns(h.LockHandoffNS) }

func pages(bytes int) float64 { return float64((bytes + pageSize - 1) / pageSize) }

// regCost is the CPU time of registering a region of bytes.
func (s *SetupProfile) regCost(bytes int) fabric.Duration {
	return ns(s.RegMRUS*1000 + s.RegMRPerPageNS*pages(bytes))
}

// deregCost is the CPU time of deregistering a region of bytes.
func (s *SetupProfile) deregCost(bytes int) fabric.Duration {
	return ns(s.DeregMRUS*1000 + s.DeregPerPageNS*pages(bytes))
}

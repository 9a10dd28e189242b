package sweep

// The sweep parameters: the table params is the one place that maps a
// key (explore run's flag name) to a RunConfig field; a new parameter is
// added there once and becomes usable in specs, in NewSweep, in point keys
// and as a flag of explore run (Bindings).

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dustin/go-humanize"
	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/netspec"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// param is one sweep parameter: a key (explore run's flag name), what a
// value must be, how to set and print it on a RunConfig, and its flag.
type param struct {
	key    string
	expect string
	help   string                                      // the flag's help text
	set    func(c *experiments.RunConfig, v any) error // v is already known to be of the right kind
	get    func(c *experiments.RunConfig) string       // canonical text, used in point keys
	kind   func(v any) (any, bool)                     // converts a YAML or Go value to the setter's type
	// bind is the parameter's field of c, for a command line: a
	// *string, *int, *int64, *uint64 or *bool, or a Value (Binding).
	bind func(c *experiments.RunConfig) any
}

// params is the key -> RunConfig table, in the canonical order of point keys.
var params = []param{
	// Which designs exist is Run's to say (Validate asks it before a sweep starts).
	strParam("design", "a design name such as MEMQ/SR",
		"endpoint design: "+strings.Join(experiments.DesignNames(nil), ", "),
		func(c *experiments.RunConfig) *string { return &c.Design },
		func(s string) bool { return s != "" }),
	{key: "notify", expect: fmt.Sprintf("%s, %s or %s (RDMA Write designs only)", algos.NotifyCQ, algos.NotifyBuffers, algos.NotifyQueue),
		help: "RDMA Write designs: how receivers learn of a write: cq (write with immediate, default), buffers (a seal per buffer) or queue (a descriptor ring)",
		kind: asString,
		set: func(c *experiments.RunConfig, v any) error {
			n := algos.Notify(v.(string))
			if n != "" && n != algos.NotifyCQ && n != algos.NotifyBuffers && n != algos.NotifyQueue {
				return errBadValue
			}
			c.Notify = n
			return nil
		},
		get:  func(c *experiments.RunConfig) string { return string(c.Notify) },
		bind: func(c *experiments.RunConfig) any { return (*string)(&c.Notify) }},
	intParam("nodes", 1, "cluster size", func(c *experiments.RunConfig) *int { return &c.Nodes }),
	intParam("threads", 1, "sending threads per node (and as many receiving threads)", func(c *experiments.RunConfig) *int { return &c.Threads }),
	{key: "pattern", expect: fmt.Sprintf("%s, %s or %s:K", algos.Repartition, algos.Broadcast, algos.Multicast),
		help: "repartition, broadcast, or multicast:K (each tuple to K consecutive nodes)",
		kind: asString,
		set: func(c *experiments.RunConfig, v any) error {
			// algos.NewGroups is the judge; multicast:K's K is checked
			// against the node count by Validate.
			p := algos.Pattern(v.(string))
			if _, err := algos.NewGroups(p, 1); err != nil && !strings.HasPrefix(string(p), string(algos.Multicast)+":") {
				return errBadValue
			}
			c.Pattern = p
			return nil
		},
		get:  func(c *experiments.RunConfig) string { return string(c.Pattern) },
		bind: func(c *experiments.RunConfig) any { return (*string)(&c.Pattern) }},
	strParam("profile", "a built-in profile name ("+strings.Join(sim.BuiltinProfiles(), ", ")+") or a .yaml path",
		"hardware profile: a built-in name or a .yaml path",
		func(c *experiments.RunConfig) *string { return &c.Profile },
		func(s string) bool { return s != "" }),
	intParam("msg-bytes", 0, "message (buffer) size in bytes, header included (default 4096 for UD designs, or the port's active MTU on hardware when smaller; 65536 for RC)",
		func(c *experiments.RunConfig) *int { return &c.MsgBytes }),
	intParam("buffers", 1, "registered buffers per thread per destination", func(c *experiments.RunConfig) *int { return &c.Buffers }),
	intParam("credit-every", 1, "receives posted per credit write-back", func(c *experiments.RunConfig) *int { return &c.CreditEvery }),
	bytesParam("bytes-per-node", "payload bytes each node sends (a number, or with a unit: 64MiB, 1GB)", func(c *experiments.RunConfig) *int64 { return &c.BytesPerNode }),
	bytesParam("bytes-per-pair", "size the input so each sending thread sends about this many bytes to each destination (overrides --bytes-per-node; 64KiB and the like)",
		func(c *experiments.RunConfig) *int64 { return &c.BytesPerPair }),
	int64Param("cycles-per-tuple", "receiving fragment's processing per tuple, CPU cycles",
		func(c *experiments.RunConfig) *int64 { return &c.CyclesPerTuple }),
	{key: "node-cycles", expect: "comma-separated cycles per tuple, one per node in turn (e.g. 21,95)",
		help: "per-node cycles per tuple, comma-separated, node i taking entry i mod count (overrides --cycles-per-tuple), e.g. 21,95",
		kind: asString,
		set: func(c *experiments.RunConfig, v any) error {
			cy, err := ParseNodeCycles(v.(string))
			if err != nil {
				return errBadValue
			}
			c.NodeCycles = cy
			return nil
		},
		get:  func(c *experiments.RunConfig) string { return FormatNodeCycles(c.NodeCycles) },
		bind: func(c *experiments.RunConfig) any { return nodeCyclesFlag{c} }},
	boolParam("adaptive", "adaptive registered buffers from a pool per node (Liu19 §6): --buffers is where they start",
		func(c *experiments.RunConfig) *bool { return &c.Adaptive }),
	intParam("max-buffers", 0, "with --adaptive: the most buffers per thread and peer (default: room within a 16,000-entry receive queue, at most 256)",
		func(c *experiments.RunConfig) *int { return &c.MaxBuffers }),
	boolParam("ud-recovery", "UD designs: recover lost messages (acknowledgements, retransmission, duplicates dropped) instead of failing",
		func(c *experiments.RunConfig) *bool { return &c.UDRecovery }),
	levelParam("service-level", "InfiniBand service level of the designs' traffic, 0-15 (its virtual lane follows from the network's SL-to-VL table; docs/topology.md)",
		func(c *experiments.RunConfig) **uint8 { p := &c.SL; return &p }, false),
	levelParam("control-service-level", "service level of the designs' control messages (credit), 0-15, for the designs that send them on queue pairs of their own (MESQ/SR, SESQ/SR); empty: the data's",
		func(c *experiments.RunConfig) **uint8 { return &c.ControlSL }, true),
	int64Param("pinned-cap-mib", "with --adaptive: the pool's pinned-memory cap per node in MiB (0: none)",
		func(c *experiments.RunConfig) *int64 { return &c.PinnedCapMiB }),
	uint64Param("seed", "random seed", func(c *experiments.RunConfig) *uint64 { return &c.Seed }),
	uint64Param("qp-numbering", "simulator: the numbers the NICs give their queue pairs, which decide the queue pairs that share a set of a NIC's context cache (0: the numbering the profiles were fitted with; k > 0: a base per node drawn from k)",
		func(c *experiments.RunConfig) *uint64 { return &c.QPNumbering }),
	{key: "doorbells", expect: fmt.Sprintf("%s or %s (empty: the profile's choice)", experiments.DoorbellsShared, experiments.DoorbellsPerThread),
		help: "simulator: whether queue pairs share doorbell registers as libmlx5 does by default (shared: four per node ring their own, the rest share eleven behind locks) or every thread rings its own (per-thread, as with thread domains); empty: the profile's host.shared_doorbells",
		kind: asString,
		set: func(c *experiments.RunConfig, v any) error {
			d := experiments.Doorbells(v.(string))
			if d.Check() != nil {
				return errBadValue
			}
			c.Doorbells = d
			return nil
		},
		get:  func(c *experiments.RunConfig) string { return string(c.Doorbells) },
		bind: func(c *experiments.RunConfig) any { return (*string)(&c.Doorbells) }},
	{key: "network", expect: "a network as records write it, e.g. \"fat-tree radix=36 routing=ftree placement=contiguous\" (empty: the single switch; docs/topology.md)",
		help: "simulator: the switches, routing and placement in one string, as records write it (e.g. 'fat-tree oversub=2:1 routing=ftree placement=random:3'); --topology and the flags beside it say the same in parts",
		kind: asString,
		set: func(c *experiments.RunConfig, v any) error {
			n, err := netspec.Parse(v.(string))
			if err != nil {
				return errBadValue
			}
			c.Network = n
			return nil
		},
		get:  func(c *experiments.RunConfig) string { return c.Network.String() },
		bind: func(c *experiments.RunConfig) any { return networkFlag{c} }},
	boolParam("payload", "move every byte and check tuple contents (default: size-only, checksums in headers)",
		func(c *experiments.RunConfig) *bool { return &c.Payload }),
	{key: "timeout-ms", expect: "a number of simulated milliseconds > 0",
		help: "longest wait for progress, simulated milliseconds, before the run fails",
		kind: asFloat,
		set: func(c *experiments.RunConfig, v any) error {
			ms := v.(float64)
			d := ms * float64(fabric.Millisecond)
			if !(ms > 0) || d < 1 || d > math.MaxInt64/2 {
				return errBadValue
			}
			c.Timeout = fabric.Duration(d)
			return nil
		},
		get: func(c *experiments.RunConfig) string {
			return strconv.FormatFloat(float64(c.Timeout)/float64(fabric.Millisecond), 'g', -1, 64)
		},
		bind: func(c *experiments.RunConfig) any {
			return &timeoutFlag{c: c, ms: float64(c.Timeout) / float64(fabric.Millisecond)}
		}},
}

var errBadValue = errors.New("bad value")

// ParseNodeCycles parses "21,95" (empty: none).
func ParseNodeCycles(text string) ([]int64, error) {
	if strings.TrimSpace(text) == "" {
		return nil, nil
	}
	var out []int64
	for _, f := range strings.Split(text, ",") {
		v, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("node cycles %q: want comma-separated whole numbers >= 0, e.g. 21,95", text)
		}
		out = append(out, v)
	}
	return out, nil
}

// FormatNodeCycles is ParseNodeCycles' inverse.
func FormatNodeCycles(cy []int64) string {
	f := make([]string, len(cy))
	for i, v := range cy {
		f[i] = strconv.FormatInt(v, 10)
	}
	return strings.Join(f, ",")
}

// Params lists the sweep parameter keys (explore run's flag names) in the
// canonical order used in point keys.
func Params() []string {
	keys := make([]string, len(params))
	for i, p := range params {
		keys[i] = p.key
	}
	return keys
}

func lookupParam(key string) (*param, bool) {
	for i := range params {
		if params[i].key == key {
			return &params[i], true
		}
	}
	return nil, false
}

// SetParam sets the parameter key (an explore run flag name, see Params) of
// cfg to value. value may be a string, bool, any integer type or a float
// (integral for integer parameters), as YAML decoding or Go code gives them.
// Errors name the key, the value and what is expected. It checks each value
// on its own; combinations (threads against the profile's cores, message
// size against the MTU, ...) are checked by Validate.
func SetParam(cfg *experiments.RunConfig, key string, value any) error {
	p, ok := lookupParam(key)
	if !ok {
		return fmt.Errorf("unknown parameter %q: valid keys are %s", key, strings.Join(Params(), ", "))
	}
	v, ok := p.kind(value)
	if ok {
		if err := p.set(cfg, v); err == nil {
			return nil
		}
	}
	return fmt.Errorf("%s: %s: want %s", key, showValue(value), p.expect)
}

// ParamString returns the canonical text of cfg's parameter key, as it
// appears in point keys ("" for an unknown key).
func ParamString(cfg experiments.RunConfig, key string) string {
	p, ok := lookupParam(key)
	if !ok {
		return ""
	}
	return p.get(&cfg)
}

func showValue(v any) string {
	switch v := v.(type) {
	case string:
		return strconv.Quote(v)
	case nil:
		return "no value"
	}
	return fmt.Sprint(v)
}

func strParam(key, expect, help string, field func(*experiments.RunConfig) *string, ok func(string) bool) param {
	return param{key: key, expect: expect, help: help, kind: asString,
		set: func(c *experiments.RunConfig, v any) error {
			if !ok(v.(string)) {
				return errBadValue
			}
			*field(c) = v.(string)
			return nil
		},
		get:  func(c *experiments.RunConfig) string { return *field(c) },
		bind: func(c *experiments.RunConfig) any { return field(c) }}
}

func intParam(key string, lo int, help string, field func(*experiments.RunConfig) *int) param {
	return param{key: key, expect: fmt.Sprintf("an integer >= %d", lo), help: help, kind: asInt,
		set: func(c *experiments.RunConfig, v any) error {
			n := v.(int64)
			if n < int64(lo) || n > math.MaxInt32 {
				return errBadValue
			}
			*field(c) = int(n)
			return nil
		},
		get:  func(c *experiments.RunConfig) string { return strconv.Itoa(*field(c)) },
		bind: func(c *experiments.RunConfig) any { return field(c) }}
}

func uint64Param(key, help string, field func(*experiments.RunConfig) *uint64) param {
	return param{key: key, expect: "an integer >= 0", help: help, kind: asInt,
		set: func(c *experiments.RunConfig, v any) error {
			if v.(int64) < 0 {
				return errBadValue
			}
			*field(c) = uint64(v.(int64))
			return nil
		},
		get:  func(c *experiments.RunConfig) string { return strconv.FormatUint(*field(c), 10) },
		bind: func(c *experiments.RunConfig) any { return field(c) }}
}

func int64Param(key, help string, field func(*experiments.RunConfig) *int64) param {
	return param{key: key, expect: "an integer >= 0", help: help, kind: asInt,
		set: func(c *experiments.RunConfig, v any) error {
			if v.(int64) < 0 {
				return errBadValue
			}
			*field(c) = v.(int64)
			return nil
		},
		get:  func(c *experiments.RunConfig) string { return strconv.FormatInt(*field(c), 10) },
		bind: func(c *experiments.RunConfig) any { return field(c) }}
}

// bytesParam is a size in bytes: a whole number, or a number with a unit
// (go-humanize's ParseBytes: 64MiB, 1GB, 512 KiB) in a spec or a flag;
// keys write the number of bytes.
func bytesParam(key, help string, field func(*experiments.RunConfig) *int64) param {
	p := int64Param(key, help, field)
	p.expect = "a size in bytes, e.g. 1048576 or 64MiB"
	p.kind = func(v any) (any, bool) {
		if s, ok := v.(string); ok {
			n, err := parseBytes(s)
			return n, err == nil
		}
		return asInt(v)
	}
	p.bind = func(c *experiments.RunConfig) any { return bytesFlag{field(c)} }
	return p
}

// parseBytes reads a size with or without a unit.
func parseBytes(s string) (int64, error) {
	n, err := humanize.ParseBytes(s)
	if err != nil || n > math.MaxInt64 {
		return 0, fmt.Errorf("%q is not a size in bytes (e.g. 1048576, 64MiB, 1GB)", s)
	}
	return int64(n), nil
}

// bytesFlag is a size flag: --bytes-per-node 64MiB.
type bytesFlag struct{ n *int64 }

func (f bytesFlag) String() string { return strconv.FormatInt(*f.n, 10) }
func (bytesFlag) Type() string     { return "bytes" }
func (f bytesFlag) Set(text string) error {
	n, err := parseBytes(text)
	if err != nil {
		return err
	}
	*f.n = n
	return nil
}

func boolParam(key, help string, field func(*experiments.RunConfig) *bool) param {
	return param{key: key, expect: "true or false", help: help,
		kind: func(v any) (any, bool) { b, ok := v.(bool); return b, ok },
		set:  func(c *experiments.RunConfig, v any) error { *field(c) = v.(bool); return nil },
		get:  func(c *experiments.RunConfig) string { return strconv.FormatBool(*field(c)) },
		bind: func(c *experiments.RunConfig) any { return field(c) }}
}

func asString(v any) (any, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case algos.Pattern:
		return string(v), true
	case algos.Notify:
		return string(v), true
	case experiments.Doorbells:
		return string(v), true
	}
	return nil, false
}

func asInt(v any) (any, bool) {
	switch v := v.(type) {
	case int:
		return int64(v), true
	case int8:
		return int64(v), true
	case int16:
		return int64(v), true
	case int32:
		return int64(v), true
	case int64:
		return v, true
	case uint:
		return asInt(uint64(v))
	case uint8:
		return int64(v), true
	case uint16:
		return int64(v), true
	case uint32:
		return int64(v), true
	case uint64:
		if v > math.MaxInt64 {
			return nil, false
		}
		return int64(v), true
	case float64:
		if v != math.Trunc(v) || math.Abs(v) > 1<<53 {
			return nil, false
		}
		return int64(v), true
	}
	return nil, false
}

func asFloat(v any) (any, bool) {
	if f, ok := v.(float64); ok {
		return f, !math.IsNaN(f) && !math.IsInf(f, 0)
	}
	if f, ok := v.(float32); ok {
		return asFloat(float64(f))
	}
	if n, ok := asInt(v); ok {
		return float64(n.(int64)), true
	}
	return nil, false
}

// Bindings lists every parameter with its field of c, for a command line
// (explore run registers a flag per binding, defaulting to the field's
// current value). A flag's value is checked as its type requires (an
// integer, a bool, a node-cycles list); the rest is Run's to check, as
// for any RunConfig.
func Bindings(c *experiments.RunConfig) []Binding {
	out := make([]Binding, len(params))
	for i, p := range params {
		out[i] = Binding{Key: p.key, Help: p.help, Target: p.bind(c)}
	}
	return out
}

// Binding ties a parameter to its field of a configuration, for a
// command line (explore run has a flag per parameter): Key is the flag's
// name, Help its usage, and Target the field, a *string, *int, *int64,
// *uint64 or *bool, or a Value for the fields parsed from text.
type Binding struct {
	Key, Help string
	Target    any
}

// Value is a field set from text (the pflag.Value interface).
type Value interface {
	String() string
	Set(string) error
	Type() string
}

// networkFlag is --network: text parsed by netspec.Parse.
type networkFlag struct{ c *experiments.RunConfig }

func (f networkFlag) String() string { return f.c.Network.String() }
func (networkFlag) Type() string     { return "string" }
func (f networkFlag) Set(text string) error {
	n, err := netspec.Parse(text)
	if err != nil {
		return err
	}
	f.c.Network = n
	return nil
}

// nodeCyclesFlag is --node-cycles: text parsed by ParseNodeCycles.
type nodeCyclesFlag struct{ c *experiments.RunConfig }

func (f nodeCyclesFlag) String() string { return FormatNodeCycles(f.c.NodeCycles) }
func (nodeCyclesFlag) Type() string     { return "string" }

func (f nodeCyclesFlag) Set(text string) error {
	cy, err := ParseNodeCycles(text)
	if err != nil {
		return err
	}
	f.c.NodeCycles = cy
	return nil
}

// timeoutFlag is --timeout-ms: simulated milliseconds, a float as pflag
// reads one (GetFloat64 works on it), stored in RunConfig.Timeout.
type timeoutFlag struct {
	c  *experiments.RunConfig
	ms float64
}

func (f *timeoutFlag) String() string { return strconv.FormatFloat(f.ms, 'g', -1, 64) }
func (*timeoutFlag) Type() string     { return "float64" }

func (f *timeoutFlag) Set(text string) error {
	ms, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return err
	}
	f.ms, f.c.Timeout = ms, fabric.Duration(ms*float64(fabric.Millisecond))
	return nil
}

// levelParam is a service level, 0 to fabric.MaxSL. field gives the
// parameter's place: a pointer to the level's pointer, which for a level
// that must always have a value (optional false) points at the field
// itself and is never replaced. An optional level is nil when unset
// (empty text).
func levelParam(key, help string, field func(*experiments.RunConfig) **uint8, optional bool) param {
	expect := fmt.Sprintf("a service level, 0 to %d", fabric.MaxSL)
	if optional {
		expect += " (empty: unset)"
	}
	return param{key: key, expect: expect, help: help,
		kind: func(v any) (any, bool) {
			if s, ok := v.(string); ok {
				if optional && strings.TrimSpace(s) == "" {
					return int64(-1), true
				}
				n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
				return n, err == nil
			}
			return asInt(v)
		},
		set: func(c *experiments.RunConfig, v any) error {
			return setLevel(field(c), v.(int64), optional)
		},
		get: func(c *experiments.RunConfig) string {
			if p := *field(c); p != nil {
				return strconv.Itoa(int(*p))
			}
			return ""
		},
		bind: func(c *experiments.RunConfig) any { return levelFlag{field(c), optional} }}
}

// setLevel stores n (-1: unset, for an optional level) at *p.
func setLevel(p **uint8, n int64, optional bool) error {
	switch {
	case n == -1 && optional:
		*p = nil
	case n < 0 || n > fabric.MaxSL:
		return errBadValue
	case optional:
		v := uint8(n)
		*p = &v
	default:
		**p = uint8(n)
	}
	return nil
}

// levelFlag is --service-level and --control-service-level.
type levelFlag struct {
	p        **uint8
	optional bool
}

func (f levelFlag) String() string {
	if *f.p == nil {
		return ""
	}
	return strconv.Itoa(int(**f.p))
}
func (levelFlag) Type() string { return "level" }
func (f levelFlag) Set(text string) error {
	n, err := strconv.ParseInt(strings.TrimSpace(text), 10, 64)
	if err != nil || setLevel(f.p, n, f.optional) != nil {
		return fmt.Errorf("%q is not a service level (0 to %d)", text, fabric.MaxSL)
	}
	return nil
}

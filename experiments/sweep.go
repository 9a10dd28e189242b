package experiments

// Sweeps: a base RunConfig and a cartesian product of parameter values, the
// unit in which figures are produced. A sweep comes from a YAML spec
// (ParseSweep, docs/sweeps.md) or from Go code (NewSweep, for figure
// definitions); RunSweep runs its points in parallel and writes one JSON
// line per point (a Result), Merge joins the files of shards, and stats.go
// and plot.go turn results into tables and figures.
//
// The parameter keys are `explore run`'s flag names. The table params below
// is the one place that maps a key to a RunConfig field: a new parameter is
// added there once and becomes usable in specs, in NewSweep and in point
// keys.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// param is one sweep parameter: a key (explore run's flag name), what a
// value must be, and how to set and print it on a RunConfig.
type param struct {
	key    string
	expect string
	set    func(c *RunConfig, v any) error // v is already known to be of the right kind
	get    func(c *RunConfig) string       // canonical text, used in point keys
	kind   func(v any) (any, bool)         // converts a YAML or Go value to the setter's type
}

// params is the key -> RunConfig table, in the canonical order of point keys.
var params = []param{
	// Which designs exist is Run's to say (Validate asks it before a sweep starts).
	strParam("design", "a design name such as MEMQ/SR",
		func(c *RunConfig) *string { return &c.Design },
		func(s string) bool { return s != "" }),
	{key: "notify", expect: fmt.Sprintf("%s, %s or %s (RDMA Write designs only)", algos.NotifyCQ, algos.NotifyBuffers, algos.NotifyQueue),
		kind: asString,
		set: func(c *RunConfig, v any) error {
			n := algos.Notify(v.(string))
			if n != "" && n != algos.NotifyCQ && n != algos.NotifyBuffers && n != algos.NotifyQueue {
				return errBadValue
			}
			c.Notify = n
			return nil
		},
		get: func(c *RunConfig) string { return string(c.Notify) }},
	intParam("nodes", 1, func(c *RunConfig) *int { return &c.Nodes }),
	intParam("threads", 1, func(c *RunConfig) *int { return &c.Threads }),
	{key: "pattern", expect: fmt.Sprintf("%s, %s or %s:K", algos.Repartition, algos.Broadcast, algos.Multicast),
		kind: asString,
		set: func(c *RunConfig, v any) error {
			// algos.NewGroups is the judge; multicast:K's K is checked
			// against the node count by Validate.
			p := algos.Pattern(v.(string))
			if _, err := algos.NewGroups(p, 1); err != nil && !strings.HasPrefix(string(p), string(algos.Multicast)+":") {
				return errBadValue
			}
			c.Pattern = p
			return nil
		},
		get: func(c *RunConfig) string { return string(c.Pattern) }},
	strParam("profile", "a built-in profile name ("+strings.Join(sim.BuiltinProfiles(), ", ")+") or a .yaml path",
		func(c *RunConfig) *string { return &c.Profile },
		func(s string) bool { return s != "" }),
	intParam("msg-bytes", 0, func(c *RunConfig) *int { return &c.MsgBytes }),
	intParam("buffers", 1, func(c *RunConfig) *int { return &c.Buffers }),
	intParam("credit-every", 1, func(c *RunConfig) *int { return &c.CreditEvery }),
	int64Param("bytes-per-node", func(c *RunConfig) *int64 { return &c.BytesPerNode }),
	int64Param("bytes-per-pair", func(c *RunConfig) *int64 { return &c.BytesPerPair }),
	int64Param("cycles-per-tuple", func(c *RunConfig) *int64 { return &c.CyclesPerTuple }),
	{key: "node-cycles", expect: "comma-separated cycles per tuple, one per node in turn (e.g. 21,95)",
		kind: asString,
		set: func(c *RunConfig, v any) error {
			cy, err := ParseNodeCycles(v.(string))
			if err != nil {
				return errBadValue
			}
			c.NodeCycles = cy
			return nil
		},
		get: func(c *RunConfig) string { return FormatNodeCycles(c.NodeCycles) }},
	{key: "adaptive", expect: "true or false",
		kind: func(v any) (any, bool) { b, ok := v.(bool); return b, ok },
		set:  func(c *RunConfig, v any) error { c.Adaptive = v.(bool); return nil },
		get:  func(c *RunConfig) string { return strconv.FormatBool(c.Adaptive) }},
	intParam("max-buffers", 0, func(c *RunConfig) *int { return &c.MaxBuffers }),
	{key: "ud-recovery", expect: "true or false",
		kind: func(v any) (any, bool) { b, ok := v.(bool); return b, ok },
		set:  func(c *RunConfig, v any) error { c.UDRecovery = v.(bool); return nil },
		get:  func(c *RunConfig) string { return strconv.FormatBool(c.UDRecovery) }},
	int64Param("pinned-cap-mib", func(c *RunConfig) *int64 { return &c.PinnedCapMiB }),
	{key: "seed", expect: "an integer >= 0",
		kind: asInt,
		set: func(c *RunConfig, v any) error {
			if v.(int64) < 0 {
				return errBadValue
			}
			c.Seed = uint64(v.(int64))
			return nil
		},
		get: func(c *RunConfig) string { return strconv.FormatUint(c.Seed, 10) }},
	{key: "payload", expect: "true or false",
		kind: func(v any) (any, bool) { b, ok := v.(bool); return b, ok },
		set:  func(c *RunConfig, v any) error { c.Payload = v.(bool); return nil },
		get:  func(c *RunConfig) string { return strconv.FormatBool(c.Payload) }},
	{key: "timeout-ms", expect: "a number of simulated milliseconds > 0",
		kind: asFloat,
		set: func(c *RunConfig, v any) error {
			ms := v.(float64)
			d := ms * float64(fabric.Millisecond)
			if !(ms > 0) || d < 1 || d > math.MaxInt64/2 {
				return errBadValue
			}
			c.Timeout = fabric.Duration(d)
			return nil
		},
		get: func(c *RunConfig) string {
			return strconv.FormatFloat(float64(c.Timeout)/float64(fabric.Millisecond), 'g', -1, 64)
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
func SetParam(cfg *RunConfig, key string, value any) error {
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
func ParamString(cfg RunConfig, key string) string {
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

func strParam(key, expect string, field func(*RunConfig) *string, ok func(string) bool) param {
	return param{key: key, expect: expect, kind: asString,
		set: func(c *RunConfig, v any) error {
			if !ok(v.(string)) {
				return errBadValue
			}
			*field(c) = v.(string)
			return nil
		},
		get: func(c *RunConfig) string { return *field(c) }}
}

func intParam(key string, lo int, field func(*RunConfig) *int) param {
	return param{key: key, expect: fmt.Sprintf("an integer >= %d", lo), kind: asInt,
		set: func(c *RunConfig, v any) error {
			n := v.(int64)
			if n < int64(lo) || n > math.MaxInt32 {
				return errBadValue
			}
			*field(c) = int(n)
			return nil
		},
		get: func(c *RunConfig) string { return strconv.Itoa(*field(c)) }}
}

func int64Param(key string, field func(*RunConfig) *int64) param {
	return param{key: key, expect: "an integer >= 0", kind: asInt,
		set: func(c *RunConfig, v any) error {
			if v.(int64) < 0 {
				return errBadValue
			}
			*field(c) = v.(int64)
			return nil
		},
		get: func(c *RunConfig) string { return strconv.FormatInt(*field(c), 10) }}
}

func asString(v any) (any, bool) {
	switch v := v.(type) {
	case string:
		return v, true
	case algos.Pattern:
		return string(v), true
	case algos.Notify:
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

// DefaultConfig returns the RunConfig of `explore run` without flags: the
// base every sweep starts from before its own base parameters.
func DefaultConfig() RunConfig {
	return RunConfig{Design: "MEMQ/SR", Nodes: 8, Threads: 2, Pattern: algos.Repartition, Profile: sim.DefaultProfileName,
		Buffers: 2, CreditEvery: 2, BytesPerNode: 64 << 20, Seed: 1, Timeout: 100 * fabric.Millisecond}
}

// Axis is one varied parameter of a sweep: a key (see Params) and its
// values in the order they are run.
type Axis struct {
	Key    string
	Values []any
}

// Vary is shorthand for an Axis.
func Vary(key string, values ...any) Axis { return Axis{Key: key, Values: values} }

// Sweep is a base configuration and the parameters varied over it; its
// points are the cartesian product of the axes, the last axis varying
// fastest. A Sweep is immutable once built and safe for concurrent use.
type Sweep struct {
	Name string
	Base RunConfig
	Vary []Axis
}

// MaxPoints bounds the number of points of one sweep.
const MaxPoints = 1_000_000

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// NewSweep builds a sweep from Go code (figure definitions): base is
// usually DefaultConfig() with some fields set. It checks the name (used as
// a file name: letters, digits, '.', '_', '-'), every key and value, and
// that no key is varied twice or has a value twice.
func NewSweep(name string, base RunConfig, vary ...Axis) (*Sweep, error) {
	if !nameRE.MatchString(name) {
		return nil, fmt.Errorf("sweep name %q: want letters, digits, '.', '_' or '-' (it names the output file)", name)
	}
	s := &Sweep{Name: name, Base: base}
	total := 1
	for _, a := range vary {
		if _, ok := lookupParam(a.Key); !ok {
			return nil, fmt.Errorf("vary: unknown parameter %q: valid keys are %s", a.Key, strings.Join(Params(), ", "))
		}
		if slices.ContainsFunc(s.Vary, func(b Axis) bool { return b.Key == a.Key }) {
			return nil, fmt.Errorf("vary: %s given twice", a.Key)
		}
		if len(a.Values) == 0 {
			return nil, fmt.Errorf("vary: %s has no values", a.Key)
		}
		seen := map[string]bool{}
		for _, v := range a.Values {
			c := base
			if err := SetParam(&c, a.Key, v); err != nil {
				return nil, fmt.Errorf("vary: %w", err)
			}
			text := ParamString(c, a.Key)
			if seen[text] {
				return nil, fmt.Errorf("vary: %s=%s given twice", a.Key, text)
			}
			seen[text] = true
		}
		if total > MaxPoints/len(a.Values) {
			return nil, fmt.Errorf("vary: more than %d points", MaxPoints)
		}
		total *= len(a.Values)
		s.Vary = append(s.Vary, Axis{Key: a.Key, Values: slices.Clone(a.Values)})
	}
	return s, nil
}

// Point is one run of a sweep. Index counts from 0 in the sweep's order;
// Key names the point by its varied parameters in canonical order
// ("design=MESQ/SR nodes=2 seed=1"), or "base" when nothing is varied; it
// is unique within the sweep and is what output files are matched on.
type Point struct {
	Index  int
	Key    string
	Config RunConfig
}

// Len returns the number of points.
func (s *Sweep) Len() int {
	n := 1
	for _, a := range s.Vary {
		n *= len(a.Values)
	}
	return n
}

// Points returns every point of the sweep, the last axis varying fastest.
func (s *Sweep) Points() []Point {
	n := s.Len()
	pts := make([]Point, n)
	for i := range pts {
		cfg := s.Base
		rest := i
		pos := make([]int, len(s.Vary))
		for k := len(s.Vary) - 1; k >= 0; k-- {
			pos[k] = rest % len(s.Vary[k].Values)
			rest /= len(s.Vary[k].Values)
		}
		for k, a := range s.Vary {
			_ = SetParam(&cfg, a.Key, a.Values[pos[k]]) // checked by NewSweep
		}
		pts[i] = Point{Index: i, Key: s.key(cfg), Config: cfg}
	}
	return pts
}

// key names cfg by the varied parameters, in the canonical order.
func (s *Sweep) key(cfg RunConfig) string {
	var parts []string
	for _, p := range params {
		if slices.ContainsFunc(s.Vary, func(a Axis) bool { return a.Key == p.key }) {
			parts = append(parts, p.key+"="+p.get(&cfg))
		}
	}
	if len(parts) == 0 {
		return "base"
	}
	return strings.Join(parts, " ")
}

// Varied returns the varied keys in canonical order (the order of keys).
func (s *Sweep) Varied() []string {
	var keys []string
	for _, p := range params {
		if slices.ContainsFunc(s.Vary, func(a Axis) bool { return a.Key == p.key }) {
			keys = append(keys, p.key)
		}
	}
	return keys
}

// specKeys are the top-level keys of a sweep spec.
var specKeys = []string{"name", "base", "vary"}

// ParseSweep parses a YAML sweep spec (docs/sweeps.md). It is strict:
// unknown keys, values of the wrong type and keys both in base and vary are
// errors that name the line and what is valid.
func ParseSweep(data []byte) (s *Sweep, err error) {
	defer func() { // the YAML decoder is third-party code: never let it crash a run
		if r := recover(); r != nil {
			s, err = nil, fmt.Errorf("sweep spec: malformed YAML (%v)", r)
		}
	}()
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("sweep spec: %w", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, errors.New("sweep spec: empty; want a mapping with keys " + strings.Join(specKeys, ", "))
	}
	root := deref(doc.Content[0])
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("sweep spec: line %d: want a mapping with keys %s", root.Line, strings.Join(specKeys, ", "))
	}
	var name string
	var haveName bool
	base := DefaultConfig()
	inBase := map[string]int{} // key -> line
	var vary []Axis
	seenTop := map[string]int{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], deref(root.Content[i+1])
		if line, ok := seenTop[k.Value]; ok && slices.Contains(specKeys, k.Value) {
			return nil, fmt.Errorf("sweep spec: line %d: %s given twice (first on line %d)", k.Line, k.Value, line)
		}
		seenTop[k.Value] = k.Line
		switch k.Value {
		case "name":
			if v.Kind != yaml.ScalarNode || v.Tag == "!!null" {
				return nil, fmt.Errorf("sweep spec: line %d: name: want a string", v.Line)
			}
			name, haveName = v.Value, true
		case "base":
			pairs, err := mapping(v, "base")
			if err != nil {
				return nil, err
			}
			for j := 0; j+1 < len(pairs); j += 2 {
				pk, pv := pairs[j], deref(pairs[j+1])
				if err := checkKey(pk, "base"); err != nil {
					return nil, err
				}
				if line, ok := inBase[pk.Value]; ok {
					return nil, fmt.Errorf("sweep spec: line %d: base.%s given twice (first on line %d)", pk.Line, pk.Value, line)
				}
				val, err := scalar(pv, "base."+pk.Value)
				if err != nil {
					return nil, err
				}
				if err := SetParam(&base, pk.Value, val); err != nil {
					return nil, fmt.Errorf("sweep spec: line %d: base.%w", pv.Line, err)
				}
				inBase[pk.Value] = pk.Line
			}
		case "vary":
			pairs, err := mapping(v, "vary")
			if err != nil {
				return nil, err
			}
			for j := 0; j+1 < len(pairs); j += 2 {
				pk, pv := pairs[j], deref(pairs[j+1])
				if err := checkKey(pk, "vary"); err != nil {
					return nil, err
				}
				if pv.Kind != yaml.SequenceNode || len(pv.Content) == 0 {
					return nil, fmt.Errorf("sweep spec: line %d: vary.%s: want a non-empty list of values, e.g. [2, 4]", pv.Line, pk.Value)
				}
				a := Axis{Key: pk.Value}
				for _, e := range pv.Content {
					e = deref(e)
					val, err := scalar(e, "vary."+pk.Value)
					if err != nil {
						return nil, err
					}
					c := DefaultConfig()
					if err := SetParam(&c, pk.Value, val); err != nil {
						return nil, fmt.Errorf("sweep spec: line %d: vary.%w", e.Line, err)
					}
					a.Values = append(a.Values, val)
				}
				vary = append(vary, a)
			}
		default:
			return nil, fmt.Errorf("sweep spec: line %d: unknown key %q: valid keys are %s", k.Line, k.Value, strings.Join(specKeys, ", "))
		}
	}
	if !haveName {
		return nil, errors.New("sweep spec: name is required (it names the output file results/<name>.jsonl)")
	}
	for _, a := range vary {
		if line, ok := inBase[a.Key]; ok {
			return nil, fmt.Errorf("sweep spec: line %d: %s is both in base and in vary; keep it in one", line, a.Key)
		}
	}
	s, err = NewSweep(name, base, vary...)
	if err != nil {
		return nil, fmt.Errorf("sweep spec: %w", err)
	}
	return s, nil
}

func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n.Kind == yaml.AliasNode && n.Alias != nil && i < 100; i++ {
		n = n.Alias
	}
	return n
}

func mapping(n *yaml.Node, what string) ([]*yaml.Node, error) {
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("sweep spec: line %d: %s: want a mapping of parameter: value; valid keys are %s", n.Line, what, strings.Join(Params(), ", "))
	}
	return n.Content, nil
}

func checkKey(k *yaml.Node, what string) error {
	if k.Kind != yaml.ScalarNode {
		return fmt.Errorf("sweep spec: line %d: %s: want parameter names as keys", k.Line, what)
	}
	if _, ok := lookupParam(k.Value); !ok {
		return fmt.Errorf("sweep spec: line %d: %s: unknown parameter %q: valid keys are %s", k.Line, what, k.Value, strings.Join(Params(), ", "))
	}
	return nil
}

func scalar(n *yaml.Node, what string) (any, error) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return nil, fmt.Errorf("sweep spec: line %d: %s: want a single value", n.Line, what)
	}
	var v any
	if err := n.Decode(&v); err != nil {
		return nil, fmt.Errorf("sweep spec: line %d: %s: %w", n.Line, what, err)
	}
	return v, nil
}

// Validate reports what Run would reject in cfg without running the full
// shuffle: it builds the pattern's groups on cfg.Nodes nodes, then runs the
// same design and endpoint settings on at most two nodes with one tuple per
// node (milliseconds). Sweeps call it on every distinct configuration
// before starting, so that a bad value fails the sweep at once rather than
// after hours.
func Validate(cfg RunConfig) error {
	if cfg.Nodes < 1 {
		return fmt.Errorf("nodes %d: need at least 1", cfg.Nodes)
	}
	if cfg.Pattern != "" {
		if _, err := algos.NewGroups(cfg.Pattern, cfg.Nodes); err != nil {
			return err
		}
	}
	probe := cfg
	probe.Nodes = min(cfg.Nodes, 2)
	probe.BytesPerNode = algos.TupleBytes
	probe.CyclesPerTuple = 0
	probe.Payload = false
	probe.Faults = sim.Faults{}
	if strings.HasPrefix(string(cfg.Pattern), string(algos.Multicast)+":") {
		// still multicast (some designs reject it), with K <= probe.Nodes
		probe.Pattern = algos.Pattern(fmt.Sprintf("%s:%d", algos.Multicast, probe.Nodes))
	}
	_, err := Run(probe)
	return err
}

// validateKey identifies the configurations Validate treats alike.
func validateKey(c RunConfig) string {
	return fmt.Sprintf("%s|%s|%d|%d|%s|%s|%d|%d|%d|%d", c.Design, c.Notify, min(c.Nodes, 2), c.Threads, c.Pattern, c.Profile,
		c.MsgBytes, c.Buffers, c.CreditEvery, c.Timeout)
}

// ValidatePoints validates every distinct configuration among pts (see
// Validate) and returns the first error, naming its point.
func ValidatePoints(pts []Point) error {
	seen := map[string]bool{}
	for _, p := range pts {
		if p.Config.Nodes < 1 {
			return fmt.Errorf("point %d (%s): nodes %d: need at least 1", p.Index, p.Key, p.Config.Nodes)
		}
		if p.Config.Pattern != "" {
			if _, err := algos.NewGroups(p.Config.Pattern, p.Config.Nodes); err != nil {
				return fmt.Errorf("point %d (%s): %w", p.Index, p.Key, err)
			}
		}
		k := validateKey(p.Config)
		if seen[k] {
			continue
		}
		seen[k] = true
		if err := Validate(p.Config); err != nil {
			return fmt.Errorf("point %d (%s): %w", p.Index, p.Key, err)
		}
	}
	return nil
}

// Result is one line of a sweep's output file (JSON Lines): the point's
// index and key, then the run record's fields (flat), or an error for a
// point whose run failed. In sweep output the record's WallS is zero so
// that files are byte-identical across runs; Wall holds it in memory.
type Result struct {
	Point   int    `json:"point"`
	Key     string `json:"key"`
	*Record        // nil when the run failed
	Error   string `json:"error,omitempty"`

	Wall time.Duration `json:"-"` // wall-clock time of the run; 0 when read from a file
	raw  []byte        // the line as read or written, without its newline
}

// Failed reports whether the point's run returned an error.
func (r Result) Failed() bool { return r.Record == nil || r.Error != "" }

// line returns r's JSON line, without a newline.
func (r *Result) line() ([]byte, error) {
	if r.raw == nil {
		b, err := json.Marshal(r)
		if err != nil {
			return nil, err
		}
		r.raw = b
	}
	return r.raw, nil
}

// Shard selects the points with Index % N == I-1 (I counts from 1, as in a
// Slurm job array). The zero Shard selects every point.
type Shard struct{ I, N int }

// ParseShard parses "i/N" with 1 <= i <= N.
func ParseShard(s string) (Shard, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(strings.TrimSpace(a))
	n, err2 := strconv.Atoi(strings.TrimSpace(b))
	if !ok || err1 != nil || err2 != nil {
		return Shard{}, fmt.Errorf("shard %q: want i/N with whole numbers, e.g. 2/8", s)
	}
	sh := Shard{I: i, N: n}
	return sh, sh.check()
}

func (s Shard) check() error {
	if s == (Shard{}) {
		return nil
	}
	if s.N < 1 || s.I < 1 || s.I > s.N {
		return fmt.Errorf("shard %d/%d: want i/N with 1 <= i <= N", s.I, s.N)
	}
	return nil
}

// Has reports whether the shard includes point index i.
func (s Shard) Has(i int) bool { return s.N <= 1 || i%s.N == s.I-1 }

// String returns "i/N", or "all" for the zero Shard.
func (s Shard) String() string {
	if s == (Shard{}) {
		return "all"
	}
	return fmt.Sprintf("%d/%d", s.I, s.N)
}

// Progress reports one finished point to SweepOptions.Progress.
type Progress struct {
	Done, Total int    // points finished and to run in this invocation (skipped ones excluded)
	Result      Result // the point's result (Wall set)
}

// SweepOptions controls RunSweep. The zero value runs every point on
// GOMAXPROCS workers and keeps results in memory only.
type SweepOptions struct {
	Jobs  int    // parallel runs; 0 means runtime.GOMAXPROCS(0)
	Shard Shard  // which points to run; zero means all
	Out   string // JSONL output file: resumed if it exists, rewritten sorted at the end; "" for none
	// Progress, if set, is called after each point from a single goroutine
	// (it need not be thread-safe; a slow callback slows the sweep).
	Progress func(Progress)
	// Warn, if set, receives non-fatal problems (a truncated last line
	// left by a killed run); default: ignored.
	Warn func(string)
	// Run runs one point; default Run. Tests replace it.
	Run func(RunConfig) (*Record, error)
}

// SweepReport is what RunSweep did.
type SweepReport struct {
	Results []Result      // every result of this shard, sorted by point (those from a resumed file included)
	Ran     int           // points run now
	Skipped int           // points found done in the output file
	Failed  int           // results with an error (resumed ones included)
	Wall    time.Duration // wall-clock time of this invocation
}

// ErrPointsFailed is returned (wrapped) by RunSweep when some point's run
// failed; the report and the output file are complete nevertheless.
var ErrPointsFailed = errors.New("sweep points failed")

// RunSweep runs the points of sw selected by opts.Shard, opts.Jobs at a
// time, after checking every point with ValidatePoints (nothing runs if one
// is invalid). With opts.Out set, points whose key is already in the file
// with a record are skipped (points recorded as failed are run again);
// each finished point is appended at once, so a killed sweep loses only
// running points, and at the end the file is rewritten sorted by point
// (temporary file, then rename), so that it is byte-identical whatever
// Jobs and however often it was resumed. A failed point is recorded with
// its error and the sweep goes on; RunSweep then returns the report and an
// error wrapping ErrPointsFailed. When ctx is cancelled no new point
// starts; running ones finish and are written, and ctx.Err() is returned.
func RunSweep(ctx context.Context, sw *Sweep, opts SweepOptions) (*SweepReport, error) {
	t0 := time.Now()
	if err := opts.Shard.check(); err != nil {
		return nil, err
	}
	jobs := opts.Jobs
	if jobs <= 0 {
		jobs = runtime.GOMAXPROCS(0)
	}
	run := opts.Run
	if run == nil {
		run = Run
	}
	warn := opts.Warn
	if warn == nil {
		warn = func(string) {}
	}
	all := sw.Points()
	var pts []Point
	for _, p := range all {
		if opts.Shard.Has(p.Index) {
			pts = append(pts, p)
		}
	}
	if opts.Run == nil {
		if err := ValidatePoints(pts); err != nil {
			return nil, err
		}
	}
	rep := &SweepReport{}
	done := map[int]Result{}
	var f *os.File
	if opts.Out != "" {
		old, good, err := readResultsFile(opts.Out, warn)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		for _, r := range old {
			if r.Point < 0 || r.Point >= len(all) || all[r.Point].Key != r.Key {
				return nil, fmt.Errorf("%s: point %d (%s) is not a point of sweep %s as specified now: the file holds results of another spec; use another --out or remove it",
					opts.Out, r.Point, r.Key, sw.Name)
			}
			if !r.Failed() {
				if err := matches(all[r.Point].Config, r.Record); err != nil {
					return nil, fmt.Errorf("%s: point %d (%s): %v: the file holds results of another spec; use another --out or remove it", opts.Out, r.Point, r.Key, err)
				}
				done[r.Point] = r
			}
		}
		if err := os.MkdirAll(filepath.Dir(opts.Out), 0o755); err != nil {
			return nil, err
		}
		f, err = os.OpenFile(opts.Out, os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if err := f.Truncate(good); err != nil { // drop a truncated last line
			return nil, err
		}
		if _, err := f.Seek(good, io.SeekStart); err != nil {
			return nil, err
		}
	}
	var todo []Point
	for _, p := range pts {
		if r, ok := done[p.Index]; ok {
			rep.Results = append(rep.Results, r)
			rep.Skipped++
		} else {
			todo = append(todo, p)
		}
	}

	in := make(chan Point)
	out := make(chan Result)
	var wg sync.WaitGroup
	for w := 0; w < min(jobs, len(todo)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range in {
				out <- runPoint(run, p)
			}
		}()
	}
	go func() {
		defer close(in)
		for _, p := range todo {
			select {
			case in <- p:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(out) }()
	var werr error
	for r := range out {
		rep.Ran++
		if f != nil && werr == nil {
			b, err := r.line()
			if err == nil {
				_, err = f.Write(append(b, '\n'))
			}
			werr = err
		}
		rep.Results = append(rep.Results, r)
		if opts.Progress != nil {
			opts.Progress(Progress{Done: rep.Ran, Total: len(todo), Result: r})
		}
	}
	if werr != nil {
		return nil, fmt.Errorf("%s: %w", opts.Out, werr)
	}
	slices.SortFunc(rep.Results, func(a, b Result) int { return a.Point - b.Point })
	for _, r := range rep.Results {
		if r.Failed() {
			rep.Failed++
		}
	}
	if f != nil {
		// Failed points run again replace their old lines; lines of
		// other shards in the same file are kept.
		keep := map[int]Result{}
		old, _, err := readResultsFile(opts.Out, warn)
		if err != nil {
			return nil, err
		}
		for _, r := range old {
			keep[r.Point] = r
		}
		for _, r := range rep.Results {
			keep[r.Point] = r
		}
		if err := f.Close(); err != nil {
			return nil, err
		}
		if err := writeResults(opts.Out, sortedResults(keep)); err != nil {
			return nil, err
		}
	}
	rep.Wall = time.Since(t0)
	if err := ctx.Err(); err != nil {
		return rep, err
	}
	if rep.Failed > 0 {
		return rep, fmt.Errorf("%w: %d of %d", ErrPointsFailed, rep.Failed, len(pts))
	}
	return rep, nil
}

// runPoint runs one point, turning an error or a panic into a failed Result.
func runPoint(run func(RunConfig) (*Record, error), p Point) (r Result) {
	t0 := time.Now()
	r = Result{Point: p.Index, Key: p.Key}
	defer func() {
		if v := recover(); v != nil {
			r.Record, r.Error = nil, fmt.Sprintf("panic: %v", v)
		}
		r.Wall = time.Since(t0)
	}()
	rec, err := run(p.Config)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	if rec == nil {
		r.Error = "no record"
		return r
	}
	c := *rec
	c.WallS = 0 // sweep output is deterministic; the wall time is in r.Wall
	r.Record = &c
	return r
}

// matches checks that rec could be the record of cfg (a resumed file's
// lines must come from the same spec). Zero fields of cfg, which Run
// replaces by defaults, match anything; bytes_per_node is not compared
// (Run may size the input from other parameters).
func matches(cfg RunConfig, rec *Record) error {
	type field struct {
		name      string
		spec, got any
		zero      bool
	}
	for _, f := range []field{
		{"design", cfg.Design, rec.Design, cfg.Design == ""},
		{"nodes", cfg.Nodes, rec.Nodes, false},
		{"threads", cfg.Threads, rec.Threads, cfg.Threads == 0},
		{"seed", cfg.Seed, rec.Seed, false},
		{"cycles_per_tuple", cfg.CyclesPerTuple, rec.CyclesPerTuple, false},
		{"buffers", cfg.Buffers, rec.Buffers, cfg.Buffers == 0},
		{"credit_every", cfg.CreditEvery, rec.CreditEvery, cfg.CreditEvery == 0},
		{"msg_bytes", cfg.MsgBytes, rec.MsgBytes, cfg.MsgBytes == 0},
		{"pattern", string(cfg.Pattern), rec.Pattern, cfg.Pattern == ""},
		{"notify", string(cfg.Notify), rec.Notify, false},
	} {
		if !f.zero && f.spec != f.got {
			return fmt.Errorf("%s is %v in the file but %v in the spec", f.name, f.got, f.spec)
		}
	}
	return nil
}

func sortedResults(m map[int]Result) []Result {
	rs := make([]Result, 0, len(m))
	for _, r := range m {
		rs = append(rs, r)
	}
	slices.SortFunc(rs, func(a, b Result) int { return a.Point - b.Point })
	return rs
}

// ReadResults reads a sweep output file. A last line cut short (a killed
// run) is skipped and reported through warn (if not nil); any other bad
// line is an error naming the file and line.
func ReadResults(path string, warn func(string)) ([]Result, error) {
	if warn == nil {
		warn = func(string) {}
	}
	rs, _, err := readResultsFile(path, warn)
	return rs, err
}

// readResultsFile returns the results of path and the length of its valid
// prefix (where appending may continue).
func readResultsFile(path string, warn func(string)) ([]Result, int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, err
	}
	var rs []Result
	var good int64
	for n := 1; len(data) > 0; n++ {
		line, rest, complete := bytes.Cut(data, []byte("\n"))
		var r Result
		err := json.Unmarshal(line, &r)
		if err == nil && r.Key == "" {
			err = errors.New("no key")
		}
		if err != nil {
			if len(bytes.TrimSpace(rest)) == 0 {
				warn(fmt.Sprintf("%s:%d: ignoring a truncated last line (from a killed run?)", path, n))
				break
			}
			return nil, 0, fmt.Errorf("%s:%d: not a sweep result: %v", path, n, err)
		}
		r.raw = bytes.Clone(bytes.TrimSpace(line))
		rs = append(rs, r)
		if !complete { // a whole record without its newline: keep it, end it
			break
		}
		good += int64(len(line)) + 1
		data = rest
	}
	return rs, good, nil
}

// writeResults writes rs, one line each, to path atomically (a temporary
// file in the same directory, then rename).
func writeResults(path string, rs []Result) error {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	w := bufio.NewWriter(tmp)
	for i := range rs {
		b, err := rs[i].line()
		if err != nil {
			tmp.Close()
			return err
		}
		w.Write(b)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// MergeReport is what Merge did.
type MergeReport struct {
	Results []Result // the merged results, sorted by point
	Failed  int      // results with an error
	Missing []Point  // with a spec: its points in no input
}

// Merge writes to out the union of the sweep output files inputs (the
// shards of one sweep), sorted by point. The same point in several inputs
// is fine if its lines are identical and an error naming the point if not.
// With spec non-nil, every line must be one of its points, and the points
// in no input are listed in the report (the merged file is still written).
func Merge(out string, spec *Sweep, warn func(string), inputs ...string) (*MergeReport, error) {
	if len(inputs) == 0 {
		return nil, errors.New("merge: no input files")
	}
	var pts []Point
	if spec != nil {
		pts = spec.Points()
	}
	got := map[int]Result{}
	from := map[int]string{}
	for _, in := range inputs {
		rs, err := ReadResults(in, warn)
		if err != nil {
			return nil, err
		}
		for _, r := range rs {
			if spec != nil && (r.Point < 0 || r.Point >= len(pts) || pts[r.Point].Key != r.Key) {
				return nil, fmt.Errorf("merge: %s: point %d (%s) is not a point of sweep %s", in, r.Point, r.Key, spec.Name)
			}
			if prev, ok := got[r.Point]; ok {
				if !bytes.Equal(prev.raw, r.raw) {
					return nil, fmt.Errorf("merge: point %d (%s) differs between %s and %s", r.Point, r.Key, from[r.Point], in)
				}
				continue
			}
			got[r.Point], from[r.Point] = r, in
		}
	}
	rep := &MergeReport{Results: sortedResults(got)}
	for _, r := range rep.Results {
		if r.Failed() {
			rep.Failed++
		}
	}
	for _, p := range pts {
		if _, ok := got[p.Index]; !ok {
			rep.Missing = append(rep.Missing, p)
		}
	}
	if err := writeResults(out, rep.Results); err != nil {
		return nil, err
	}
	return rep, nil
}

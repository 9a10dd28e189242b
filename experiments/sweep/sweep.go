package sweep

// Sweeps: a base RunConfig and a cartesian product of parameter values, the
// unit in which figures are produced. A sweep comes from a YAML spec
// (ParseSweep, docs/sweeps.md) or from Go code (NewSweep, for figure
// definitions); RunSweep runs its points in parallel and writes one JSON
// line per point (a results.Result), Merge joins the files of shards, and stats.go
// and plot.go turn results into tables and figures.
//
// The parameter keys are `explore run`'s flag names. The table params below
// is the one place that maps a key to a RunConfig field: a new parameter is
// added there once and becomes usable in specs, in NewSweep and in point
// keys.

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/internal/yamldoc"
)

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
	Base experiments.RunConfig
	Vary []Axis
}

// MaxPoints bounds the number of points of one sweep.
const MaxPoints = 1_000_000

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)

// NewSweep builds a sweep from Go code (figure definitions): base is
// usually DefaultConfig() with some fields set. It checks the name (used as
// a file name: letters, digits, '.', '_', '-'), every key and value, and
// that no key is varied twice or has a value twice.
func NewSweep(name string, base experiments.RunConfig, vary ...Axis) (*Sweep, error) {
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
	Config experiments.RunConfig
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
func (s *Sweep) key(cfg experiments.RunConfig) string {
	var parts []string
	for _, p := range params {
		if slices.ContainsFunc(s.Vary, func(a Axis) bool { return a.Key == p.key }) {
			parts = append(parts, p.key+"="+results.KeyQuote(p.get(&cfg)))
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
	if err := yamldoc.One(data); err != nil {
		return nil, fmt.Errorf("sweep spec: %w", err)
	}
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
	base := experiments.DefaultConfig()
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
					c := experiments.DefaultConfig()
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
// shuffle: it checks the point without running it (RunConfig.Validate),
// then, for what only a run finds (an endpoint's own limits), runs the
// same design and endpoint settings on at most two nodes with one tuple
// per node (milliseconds). Sweeps call it on every distinct configuration
// before starting, so that a bad value fails the sweep at once rather than
// after hours.
func Validate(cfg experiments.RunConfig) error { return validateWith(cfg, experiments.Run) }

// validateWith is Validate with the probe run by run.
func validateWith(cfg experiments.RunConfig, run func(experiments.RunConfig) (*results.Record, error)) error {
	if cfg.Nodes < 1 {
		return fmt.Errorf("nodes %d: need at least 1", cfg.Nodes)
	}
	if !cfg.Workload.IsShuffle() {
		// A query or I-Store point: its workload is checked as data (a
		// probe would run the query itself).
		return cfg.Workload.Validate()
	}
	if err := cfg.Validate(); err != nil { // what can be checked without running
		return err
	}
	if cfg.Pattern != "" {
		if _, err := algos.NewGroups(cfg.Pattern, cfg.Nodes); err != nil {
			return err
		}
	}
	probe := cfg
	probe.Nodes = min(cfg.Nodes, 2)
	probe.BytesPerNode, probe.BytesPerPair = algos.TupleBytes, 0 // one tuple, not the per-pair input
	probe.CyclesPerTuple = 0
	probe.Payload = false
	if strings.HasPrefix(string(cfg.Pattern), string(algos.Multicast)+":") {
		// still multicast (some designs reject it), with K <= probe.Nodes
		probe.Pattern = algos.Pattern(fmt.Sprintf("%s:%d", algos.Multicast, probe.Nodes))
	}
	_, err := run(probe)
	return err
}

// validateKey identifies the configurations Validate treats alike.
func validateKey(c experiments.RunConfig) string {
	ctrl := -1
	if c.ControlSL != nil {
		ctrl = int(*c.ControlSL)
	}
	return fmt.Sprintf("%s|%s|%d|%d|%s|%s|%d|%d|%d|%d|%v|%v|%d|%d|%d|%d", c.Design, c.Notify, min(c.Nodes, 2), c.Threads, c.Pattern, c.Profile,
		c.MsgBytes, c.Buffers, c.CreditEvery, c.Timeout, c.UDRecovery, c.Adaptive, c.MaxBuffers, c.PinnedCapMiB, c.SL, ctrl)
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
				return fmt.Errorf("point %d (%s): %w", p.Index, p.Key, inParamWords(err))
			}
		}
		k := validateKey(p.Config)
		if seen[k] {
			continue
		}
		seen[k] = true
		if err := Validate(p.Config); err != nil {
			return fmt.Errorf("point %d (%s): %w", p.Index, p.Key, inParamWords(err))
		}
	}
	return nil
}

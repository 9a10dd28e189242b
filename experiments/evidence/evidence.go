// Package evidence compares the simulator with public hardware
// measurements. The measurements are the YAML files of this directory
// (README.md gives their schema, vocabulary and sources), embedded in the
// binary; Evaluate runs the model at each point it can reproduce and says
// why it cannot for the others. It sits beside experiments: it runs
// fabric/perftest on simulated clusters and never a shuffle.
package evidence

import (
	"bytes"
	"embed"
	"fmt"
	"math"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/perftest"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
	"github.com/rdmashuffle/rdmashuffle/internal/yamldoc"
)

//go:embed *.yaml
var files embed.FS

// Point is one public measurement (README.md, "Schema"). A Point is a
// value.
type Point struct {
	ID            string         `yaml:"id"`
	Metric        string         `yaml:"metric"`
	Verb          string         `yaml:"verb"`
	NIC           string         `yaml:"nic"`
	Link          string         `yaml:"link"`
	Profile       string         `yaml:"profile"`
	Setup         string         `yaml:"setup"`
	X             map[string]any `yaml:"x"`
	Y             float64        `yaml:"y"`
	Unit          string         `yaml:"unit"`
	Tolerance     float64        `yaml:"tolerance"`
	ReadOffFigure bool           `yaml:"read_off_figure"`
	Source        string         `yaml:"source"`
	URL           string         `yaml:"url"`
	Note          string         `yaml:"note"`
	FitFor        string         `yaml:"fit_for"` // the profile fields fitted to this point, if any (docs/model.md)
	// Finding is why the model misses this point, where that is known:
	// our words, naming the docs/model.md section that says more. A point
	// outside its tolerance without one is a miss nobody has explained.
	Finding string `yaml:"finding"`
	File    string `yaml:"-"` // the file it came from
}

// Load reads every embedded point, in file and then file order, and
// checks each (a unique id, a metric and verb, a positive value and
// tolerance), naming the file and id of a bad one.
func Load() ([]Point, error) {
	names, err := files.ReadDir(".")
	if err != nil {
		return nil, err
	}
	seen := map[string]string{}
	var out []Point
	for _, n := range names {
		data, err := files.ReadFile(n.Name())
		if err != nil {
			return nil, err
		}
		if err := yamldoc.One(data); err != nil {
			return nil, fmt.Errorf("evidence: %s: %w", n.Name(), err)
		}
		var pts []Point
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true) // a misspelt key would silently leave a field empty
		if err := dec.Decode(&pts); err != nil {
			return nil, fmt.Errorf("evidence: %s: %w", n.Name(), err)
		}
		for _, p := range pts {
			p.File = path.Base(n.Name())
			if err := p.check(); err != nil {
				return nil, err
			}
			if seen[p.ID] != "" {
				return nil, fmt.Errorf("evidence: %s: id %s is also in %s", p.File, p.ID, seen[p.ID])
			}
			seen[p.ID] = p.File
			out = append(out, p)
		}
	}
	return out, nil
}

// check refuses a point that lacks what the suite needs, or whose unit
// cannot be what its tool printed.
func (p Point) check() error {
	switch {
	case p.ID == "":
		return fmt.Errorf("evidence: %s: a point without an id", p.File)
	case p.Metric == "" || p.Verb == "":
		return fmt.Errorf("evidence: %s: %s has no metric or verb", p.File, p.ID)
	case !(p.Y > 0) || !(p.Tolerance > 0) || math.IsInf(p.Y, 0) || math.IsInf(p.Tolerance, 0):
		return fmt.Errorf("evidence: %s: %s needs a positive, finite value and tolerance (y %v, tolerance %v)", p.File, p.ID, p.Y, p.Tolerance)
	case p.Unit == "MB/s" && strings.Contains(p.Setup, "perftest"):
		return fmt.Errorf("evidence: %s: %s is a perftest bandwidth in unit MB/s: perftest's MB/sec counts 2^20 bytes, so write unit MiB/s (or Gb/s for its report in gigabits)", p.File, p.ID)
	}
	if d, set := p.X["doorbells"]; set && d != "shared" {
		return fmt.Errorf("evidence: %s: %s has x.doorbells %v: the one value is shared (libmlx5's default registers; without it every thread rings its own)", p.File, p.ID, d)
	}
	if m, set := p.X["mtu"]; set {
		if v, ok := m.(int); !ok || !slices.Contains(ibMTUs, v) {
			return fmt.Errorf("evidence: %s: %s has x.mtu %v: an InfiniBand path MTU is one of 256, 512, 1024, 2048, 4096 bytes", p.File, p.ID, m)
		}
	}
	if m := setupMTU.FindStringSubmatch(p.Setup); m != nil {
		if v, _ := strconv.Atoi(m[1]); slices.Contains(ibMTUs, v) && pathMTU(p) != v {
			return fmt.Errorf("evidence: %s: %s: its setup says MTU %d, so x needs mtu: %d (the model runs at the source's path MTU)", p.File, p.ID, v, v)
		}
	}
	return nil
}

// ibMTUs are InfiniBand's path MTUs, bytes.
var ibMTUs = []int{256, 512, 1024, 2048, 4096}

// setupMTU finds an MTU a point's setup states.
var setupMTU = regexp.MustCompile(`\bMTU (\d+)\b`)

// pathMTU is the path MTU a point's source ran with (x.mtu, perftest's -m),
// or 0 where the point keeps its profile's.
func pathMTU(p Point) int {
	m, _ := p.X["mtu"].(int)
	return m
}

// Result is the model's value at a point, or why there is none.
type Result struct {
	Point
	Modelled bool    // the model ran this point
	Model    float64 // in the point's unit
	Error    float64 // (model - measured) / measured
	Within   bool    // |Error| <= Tolerance
	How      string  // what the model ran, or why it did not
	// The queue-pair numberings Model is the median over (EvaluateOn;
	// 1 for one run) and the lowest and highest of their values.
	Numberings int
	Low, High  float64
}

// Evaluate runs the model at p when it can: perftest-style benchmarks of
// one verb between two simulated nodes of p's profile (message rate and
// bandwidth by size and queue pairs), and the baselines' designs under
// iperf-, osu_bw- and IMB PingPong-style traffic (stream.go), and set-up
// costs that are calls of the fabric contract, timed on one thread
// (setup.go). The rest (vendor ceilings, collectives, bidirectional MPI
// runs, connection-manager and whole verbs connections, many-machine
// sweeps) are reported with the reason.
func Evaluate(p Point) Result {
	return EvaluateOn(p, nil, Software{}, 1)
}

// Software replaces, for a run, the baselines' estimated software costs
// (algos.MPICosts, algos.IPoIBCosts: the MPI and IPoIB designs' cycles and
// thresholds); nil keeps the defaults. A fit (Fit) moves them. A Software
// is a value; what it points to is not changed.
type Software struct {
	MPI   *algos.MPICosts
	IPoIB *algos.IPoIBCosts
}

// EvaluateOn is Evaluate on prof (nil: p's own profile) with the software
// costs sw: a fit (Fit) runs p with the fields it moves. With numberings
// above 1 it runs p under that many queue-pair numberings (0 to
// numberings-1, sim.Config.QPNumbering), takes the median as the model's
// value and records the range: which queue pairs share a set of a NIC's
// context cache is chance on real hosts, and decides some points. prof is
// not changed.
func EvaluateOn(p Point, prof *sim.Profile, sw Software, numberings int) Result {
	r := Result{Point: p}
	run, how, why := benchmarkOf(p, sw)
	if why != "" {
		r.How = why
		return r
	}
	if prof == nil {
		loaded, err := sim.LoadProfile(p.Profile)
		if err != nil {
			r.How = err.Error()
			return r
		}
		prof = loaded
	}
	copied := *prof // a Profile is plain values: the copy is independent
	prof = &copied
	if d, _ := p.X["doorbells"].(string); d == "shared" {
		// The source's queue pairs rang libmlx5's default registers.
		prof.Host.SharedDoorbells = 1
		how += ", doorbell registers shared as libmlx5 allocates them by default"
	}
	if m := pathMTU(p); m != 0 && m != prof.Link.MTU {
		// The source's path MTU, as perftest's -m sets it: a message below
		// one MTU crosses every store-and-forward stage whole.
		prof.Link.MTU = m
		how += fmt.Sprintf(", MTU %d", m)
	}
	sc, on, err := networkOf(p, prof)
	if err != nil {
		r.How = how + ": " + err.Error()
		return r
	}
	how += on
	vs := make([]float64, max(numberings, 1))
	for k := range vs {
		sc.Seed, sc.Profile, sc.SizeOnly, sc.QPNumbering = 1, prof, true, uint64(k)
		c, err := sim.New(sc)
		if err != nil {
			r.How = err.Error()
			return r
		}
		vs[k], err = run(c)
		c.Close()
		if err != nil {
			r.How = how + ": " + err.Error()
			return r
		}
	}
	v := Median(vs) // sorts vs
	r.Numberings, r.Low, r.High = len(vs), vs[0], vs[len(vs)-1]
	if len(vs) > 1 {
		how += fmt.Sprintf("; median of %d queue-pair numberings (%.4g to %.4g)", len(vs), r.Low, r.High)
	}
	r.Modelled, r.Model, r.How = true, v, how
	r.Error = (v - p.Y) / p.Y
	r.Within = math.Abs(r.Error) <= p.Tolerance
	return r
}

// runner runs a point's benchmark on a two-node cluster and returns the
// value in the point's unit.
type runner func(c *sim.Cluster) (float64, error)

// benchmarkOf maps p to a benchmark, with a line saying what it runs, or
// says why p has none: the baseline designs for iperf and MPI
// point-to-point points (baselines.go), perftest for other two-node
// points, the two-node swarm (swarm.go) for rc-swarm points (x.threads and
// x.window).
func benchmarkOf(p Point, sw Software) (runner, string, string) {
	if p.Profile == "" {
		return nil, "", "no built-in profile of this NIC"
	}
	if p.Verb == "shift_bw" {
		run, how, why := shiftOf(p)
		if why != "" {
			return nil, "", why
		}
		return run, how + " on " + p.Profile, ""
	}
	if run, how, why, ok := setupOf(p); ok {
		if why != "" {
			return nil, "", why
		}
		return run, how + " on " + p.Profile, ""
	}
	bytes, ok := p.X["bytes"].(int)
	if !ok && p.Verb == "mpi_msgrate_mt" && p.X["bytes"] == nil {
		bytes, ok = 8, true // mt-p2p-msgrate's size, where a point does not state one
	}
	if !ok {
		return nil, "", "the message size is not stated as a number"
	}
	qps := 1
	if q, ok := p.X["qps"].(int); ok {
		qps = q
	}
	if run, how, why, ok := baselineOf(p, bytes, sw); ok {
		if why != "" {
			return nil, "", why
		}
		return run, how + " on " + p.Profile, ""
	}
	if p.Metric == "latency_us" {
		return latencyOf(p, bytes)
	}
	if !slices.Contains([]string{"Mops/s", "MB/s", "MiB/s", "GB/s"}, p.Unit) {
		return nil, "", fmt.Sprintf("%s in %q: only rates, bandwidths and one-way latencies are modelled", p.Metric, p.Unit)
	}
	if t, ok := p.X["threads"].(int); ok && (t > 1 || p.X["sync"] != nil) {
		return swarmOf(p, qps, bytes, t)
	}
	cfg := perftest.Config{Size: bytes, QPs: qps, Iters: iters(p)}
	return perftestRun(p, cfg, "bw", "", func(res *perftest.Result) float64 {
		switch p.Unit {
		case "Mops/s":
			return res.MsgRateMpps
		case "MB/s":
			return res.BWAvgGbps * 1e9 / 8 / 1e6
		case "MiB/s": // perftest's MB/sec
			return res.BWAvgGbps * 1e9 / 8 / (1 << 20)
		default: // GB/s
			return res.BWAvgGbps / 8
		}
	})
}

// perftestTest sets cfg's test to perftest's for p's verb and kind ("bw":
// send_bw, write_bw, read_bw; "lat": send_lat, write_lat, read_lat) and its
// transport (UD when p's setup says so), and returns the command line that
// runs it; or says why the model has no such test.
func perftestTest(p Point, cfg *perftest.Config, kind string) (how, why string) {
	switch {
	case p.Verb == "send", p.Verb == "write", p.Verb == "read":
		cfg.Test = p.Verb + "_" + kind
	default:
		return "", fmt.Sprintf("no model of %s measurements yet", p.Verb)
	}
	if p.Verb == "send" && strings.Contains(p.Setup, "UD") {
		cfg.Conn = fabric.UD
	}
	how = fmt.Sprintf("%s -s %d", cfg.Test, cfg.Size)
	if kind == "bw" {
		how += fmt.Sprintf(" -q %d", cfg.QPs)
	}
	how += fmt.Sprintf(" -n %d", cfg.Iters)
	if cfg.Conn == fabric.UD {
		how += " -c UD"
	}
	return how, ""
}

// iters is the number of messages a perftest point ran (x.iters,
// perftest's --iter), 1000 where the source does not say.
func iters(p Point) int {
	if n, ok := p.X["iters"].(int); ok && n > 0 {
		return n
	}
	return 1000
}

// latencyOf maps a perftest latency point (ib_send_lat, ib_write_lat: the
// median one-way latency, t_typical; ib_read_lat: the median round trip of
// one read) to the same test on the model.
func latencyOf(p Point, bytes int) (runner, string, string) {
	return perftestRun(p, perftest.Config{Size: bytes, Iters: iters(p)}, "lat", " (t_typical, through the model's switch)",
		func(res *perftest.Result) float64 { return res.TTypicalUS })
}

// perftestRun is the runner of cfg with perftest's test for p (see
// perftestTest), value read off its result, and its command line (with
// note) on p's profile.
func perftestRun(p Point, cfg perftest.Config, kind, note string, value func(*perftest.Result) float64) (runner, string, string) {
	how, why := perftestTest(p, &cfg, kind)
	if why != "" {
		return nil, "", why
	}
	run := func(c *sim.Cluster) (float64, error) {
		res, err := perftest.Run(c, cfg)
		if err != nil {
			return 0, err
		}
		return value(res), nil
	}
	return run, how + note + " on " + p.Profile, ""
}

// swarmOps is how many operations each swarm worker completes: enough for
// every queue pair to be used many times over.
func swarmOps(qps, threads int) int { return max(2000, 16*qps/threads) }

// swarmOf maps an rc-swarm point to the two-node swarm.
func swarmOf(p Point, qps, bytes, threads int) (runner, string, string) {
	window, ok := p.X["window"].(int)
	if !ok {
		return nil, "", "an rc-swarm point without x.window (operations in flight per thread)"
	}
	if p.Unit != "Mops/s" {
		return nil, "", fmt.Sprintf("unit %q: the swarm reports operation rates", p.Unit)
	}
	cfg := perftest.SwarmConfig{QPs: qps, Threads: threads, Window: window, Bytes: bytes, OpsPerThread: swarmOps(qps, threads)}
	sides := "both nodes issue and serve"
	if n, ok := p.X["issuers"].(int); ok && n == 1 {
		cfg.OneSided, sides = true, "node 0 issues, node 1 serves"
	}
	if d, ok := p.X["per_qp"].(int); ok && d > perftest.SwarmQPDepth {
		cfg.PerQP = d
		sides += fmt.Sprintf(", up to %d per queue pair", d)
	}
	if y, ok := p.X["sync"].(int); ok && y == 1 {
		cfg.Sync = true
		sides += fmt.Sprintf(", each thread posting %d one at a time and waiting for all", window)
	}
	if b, ok := p.X["burst"].(int); ok && b > 1 {
		round := b * max(qps/threads, 1)
		cfg.Burst, cfg.OpsPerThread = b, (cfg.OpsPerThread+round-1)/round*round
		sides += fmt.Sprintf(", %d per queue pair in turn (one signaled)", b)
	}
	switch p.Verb {
	case "read":
		cfg.Op = fabric.OpRead
	case "write":
		cfg.Op = fabric.OpWrite
	default:
		return nil, "", fmt.Sprintf("no swarm model of %s measurements", p.Verb)
	}
	how := fmt.Sprintf("two-node swarm: %s of %d bytes, %d QPs per NIC, %d threads x %d in flight, %s, on %s",
		p.Verb, bytes, qps, threads, window, sides, p.Profile)
	return func(c *sim.Cluster) (float64, error) { return perftest.RunSwarm(c, cfg) }, how, ""
}

// Summary counts a set of results: points, points the model ran, within
// tolerance, distinct sources, and the median absolute error of the ones
// it ran, over all of them and over the held-out ones (no fit_for);
// Unexplained lists the points outside their tolerance without a Finding.
type Summary struct {
	Points, Modelled, Within, Sources int
	Unexplained                       []string
	MedianAbsError                    float64
	HeldOut                           int     // modelled points not used to fit a parameter
	MedianAbsErrorHeldOut             float64 // the median over those
}

// Summarize counts rs.
func Summarize(rs []Result) Summary {
	var s Summary
	src := map[string]bool{}
	var errs, held []float64
	for _, r := range rs {
		s.Points++
		src[strings.SplitN(r.ID, "-", 2)[0]] = true
		if r.Modelled {
			s.Modelled++
			errs = append(errs, math.Abs(r.Error))
			if r.FitFor == "" {
				held = append(held, math.Abs(r.Error))
			}
			if r.Within {
				s.Within++
			} else if r.Finding == "" {
				s.Unexplained = append(s.Unexplained, r.ID)
			}
		}
	}
	s.Sources = len(src)
	s.MedianAbsError = Median(errs)
	s.HeldOut, s.MedianAbsErrorHeldOut = len(held), Median(held)
	return s
}

// Median returns the median of xs (sorted in place), 0 for none.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	m := xs[len(xs)/2]
	if len(xs)%2 == 0 {
		m = (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
	}
	return m
}

// Package tpchrun runs TPC-H queries (package tpch) on a simulated
// cluster: a query on its own (RunQuery) and a point whose workload is a
// query (RunPoint), as Liu19's figures 26 and 27 do. Its plans' exchanges
// run through the shuffle designs' endpoints with the SHUFFLE and RECEIVE
// operators (Exchanger), which I-Store's shuffle plan uses too.
package tpchrun

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rdmashuffle/rdmashuffle/experiments/catalogue"
	"github.com/rdmashuffle/rdmashuffle/experiments/engine"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/internal/setting"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/buildinfo"
	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
	"github.com/rdmashuffle/rdmashuffle/tpch"
)

// QueryConfig is one TPC-H query on a simulated cluster (docs/tpch.md).
type QueryConfig struct {
	Query   tpch.Query
	SF      float64 // scale factor of the whole database
	Design  string  // any design a shuffle runs but qperf, or catalogue.LocalData (Q4)
	Nodes   int
	Threads int // sending and as many receiving threads per node (default 2)
	Profile string
	Seed    uint64
	// QPNumbering is the simulator's queue-pair numbering (engine.Config's).
	QPNumbering uint64
	// Payload moves real bytes and computes the answer; otherwise the run
	// is size-only (timing only, no answer).
	Payload     bool
	MsgBytes    int // default as a shuffle's for the design
	Buffers     int // default 2
	CreditEvery int // default 2
	Timeout     fabric.Duration
	Software    results.SoftwareCosts // estimated software costs moved (zero: the defaults)
}

// StepStat is what one exchange of a plan moved.
type StepStat struct {
	Name    string `json:"name"`
	Pattern string `json:"pattern"`
	Tuples  uint64 `json:"tuples_received"` // over all nodes
	Bytes   int64  `json:"bytes"`           // tuple bytes received over all nodes
}

// QueryRecord is the record of one query run.
type QueryRecord struct {
	Experiment  string     `json:"experiment"` // "tpch"
	Query       string     `json:"query"`
	SF          float64    `json:"sf"`
	Design      string     `json:"design"`
	Plan        string     `json:"plan"` // "shuffle" or "local"
	Profile     string     `json:"profile"`
	Nodes       int        `json:"nodes"`
	Threads     int        `json:"threads"`
	Seed        uint64     `json:"seed"`
	QPNumbering uint64     `json:"qp_numbering,omitempty"` // QueryConfig.QPNumbering
	Mode        string     `json:"mode"`                   // "payload" or "size-only"
	ResponseS   float64    `json:"response_s"`
	SetupMS     float64    `json:"setup_ms"`
	Shuffled    int64      `json:"bytes_shuffled"` // tuple bytes received over all nodes and steps
	Steps       []StepStat `json:"steps,omitempty"`
	Integrity   string     `json:"integrity"`
	Answer      []string   `json:"answer,omitempty"` // payload mode
	SimEvents   uint64     `json:"sim_events"`
	WallS       float64    `json:"wall_s"`
	Version     string     `json:"version"` // the build that made it (buildinfo)
	Commit      string     `json:"commit"`
	GoVersion   string     `json:"go_version"`
	ProfileHash string     `json:"profile_hash"` // sim.Profile.Hash of the parameters that ran
	// VerbsCheck is "off" when the simulator's verbs-usage checker did
	// not run (engine.SimOptions.NoCheck), as in a run record.
	VerbsCheck string `json:"verbs_check,omitempty"`
	answer     *tpch.Answer
}

// Result returns the answer (nil in size-only mode).
func (r *QueryRecord) Result() *tpch.Answer { return r.answer }

// MaxSF is the largest scale factor a query takes: TPC-H's largest
// defined one (100,000; the specification's scale factors end there),
// far below where its row counts overflow.
const MaxSF = 100_000

// Normalize fills in c's defaults (threads, buffers, credit interval, the
// design's message size, the timeout; the design as the catalogue spells
// it) and checks it for nodes of cores cores.
func (c *QueryConfig) Normalize(cores int) error {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.Threads, 2)
	def(&c.Buffers, 2)
	def(&c.CreditEvery, 2)
	c.Design = catalogue.CanonicalDesign(c.Design)
	d := catalogue.DesignOf(c.Design)
	known := c.Design == catalogue.LocalData || d.Name != "" && catalogue.MovesTuples(d)
	if c.Design == catalogue.LocalData {
		d.MsgBytes = 64 << 10 // no endpoints: the RC designs' default, as before
	}
	def(&c.MsgBytes, d.MsgBytes)
	if c.Timeout == 0 {
		c.Timeout = algos.DefaultTimeout
	}
	switch {
	case !known:
		return setting.New("Design", fmt.Sprintf("%q", c.Design), "choose one of %s, or %s (Q4)", strings.Join(catalogue.DesignNames(catalogue.MovesTuples), ", "), catalogue.LocalData)
	case !(c.SF > 0):
		return setting.New("SF", c.SF, "must be above 0")
	case !(c.SF <= MaxSF):
		return setting.New("SF", c.SF, "above TPC-H's largest scale factor, %d (row counts would overflow)", MaxSF)
	case c.Nodes < 1:
		return setting.New("Nodes", c.Nodes, "need at least 1")
	case c.Threads < 1 || 2*c.Threads > cores:
		return engine.ThreadsRefused(c.Threads, cores)
	}
	return nil
}

// RunQuery runs one TPC-H query on a simulated cluster: every node
// generates its fragment, the plan's steps move tuples through the
// design's endpoints with the SHUFFLE and RECEIVE operators, and the
// answer (payload mode) is gathered. Endpoints are opened before the
// start (as in a shuffle): the response time is from the start to the answer.
func RunQuery(cfg QueryConfig) (*QueryRecord, error) { return RunQuerySim(cfg, engine.SimOptions{}) }

// RunQuerySim is RunQuery with the simulator's options (faults, fault
// plan, profile change, time limit, inspector, progress, the verbs-usage
// checker off, trace), as the Simulator backend runs a shuffle: a failed query's error
// leads with its first cause and names the faults injected, and the
// checker fails a query that committed a hazard or left objects open.
func RunQuerySim(cfg QueryConfig, opt engine.SimOptions) (*QueryRecord, error) {
	prof, err := sim.LoadProfile(cfg.Profile)
	if err != nil {
		return nil, err
	}
	if err := cfg.Normalize(prof.Host.Cores); err != nil {
		return nil, err
	}
	plan, err := tpch.NewPlan(cfg.Query, cfg.Nodes, cfg.Design == catalogue.LocalData)
	if err != nil {
		return nil, err
	}
	sc, err := engine.Simulator{Options: opt}.Cluster(cfg.Nodes, cfg.Seed, cfg.QPNumbering, cfg.Payload, prof)
	if err != nil {
		return nil, err
	}
	defer sc.Close()
	c := sc.Cluster
	q := newQueryRun(cfg, plan)
	t0 := time.Now()
	if err := c.Run(q.node); err != nil {
		return nil, sc.Failed(err, q.ended)
	}
	if err := sc.Check(); err != nil {
		return nil, err
	}
	rec := &QueryRecord{Experiment: "tpch", Query: string(cfg.Query), SF: cfg.SF, Design: cfg.Design, Plan: "shuffle", Profile: prof.Name,
		Nodes: cfg.Nodes, Threads: cfg.Threads, Seed: cfg.Seed, QPNumbering: cfg.QPNumbering, Mode: "size-only", SimEvents: c.Events(), WallS: time.Since(t0).Seconds()}
	b := buildinfo.Get()
	rec.Version, rec.Commit, rec.GoVersion = b.Version, b.Commit, b.Go
	rec.Profile, rec.ProfileHash = engine.ProfileLabel(prof), prof.Hash()
	if opt.NoCheck {
		rec.VerbsCheck = "off"
	}
	if err := q.fill(rec); err != nil {
		return nil, err
	}
	return rec, nil
}

// queryRun is one query's run: what every node's driver records.
type queryRun struct {
	cfg       QueryConfig
	plan      tpch.Plan
	sent, got [][][]algos.Tally // per step, sender (receiver), destination (source)
	corrupt   []int
	setup     []fabric.Duration
	resp      []fabric.Duration
	answers   []*tpch.Answer
	ended     []bool // per node: its driver returned (with or without an error)
}

func newQueryRun(cfg QueryConfig, plan tpch.Plan) *queryRun {
	n, ns := cfg.Nodes, len(plan.Steps)
	q := &queryRun{cfg: cfg, plan: plan, sent: make([][][]algos.Tally, ns), got: make([][][]algos.Tally, ns), corrupt: make([]int, n),
		setup: make([]fabric.Duration, n), resp: make([]fabric.Duration, n), answers: make([]*tpch.Answer, n), ended: make([]bool, n)}
	for x := range ns {
		q.sent[x], q.got[x] = make([][]algos.Tally, n), make([][]algos.Tally, n)
	}
	return q
}

// node is a node's driver: open every step's endpoints, meet the others,
// run the plan, close. On an error of its own it closes what it opened
// before it returns (a failed run leaves no objects behind on a node
// that can still act), as a shuffle's driver does.
func (q *queryRun) node(th fabric.Thread) error {
	err := q.drive(th)
	q.ended[th.Node().ID()] = true // not reached when the run's end stops the thread
	return err
}

func (q *queryRun) drive(th fabric.Thread) error {
	cfg := q.cfg
	me := th.Node().ID()
	begin := th.Now()
	ec := algos.Config{Nodes: cfg.Nodes, Threads: cfg.Threads, MsgBytes: cfg.MsgBytes, Buffers: cfg.Buffers, CreditEvery: cfg.CreditEvery, Timeout: cfg.Timeout}
	engine.ApplySoftware(cfg.Software, &ec)
	eps, err := OpenSteps(th, catalogue.DesignOf(cfg.Design), q.plan.Steps, ec)
	if err != nil {
		return ClosedAfter(th, eps, err)
	}
	q.setup[me] = th.Now().Sub(begin)
	if err := th.Node().OOB().Barrier("start"); err != nil {
		return ClosedAfter(th, eps, err)
	}
	start := th.Now()
	ex := NewExchanger(cfg, q.plan, eps, catalogue.DesignOf(cfg.Design).Shared, me, q.sent, q.got, q.corrupt)
	ans, err := q.plan.Run(th, tpch.Fragment{G: tpch.Gen{Seed: cfg.Seed, SF: cfg.SF}, Node: me, Nodes: cfg.Nodes}, ex)
	if err != nil {
		return ClosedAfter(th, eps, err)
	}
	q.resp[me] = th.Now().Sub(start)
	q.answers[me] = ans
	return CloseSteps(th, eps)
}

// fill completes rec with what the nodes recorded: the answer, the
// response and setup times, the steps and the integrity.
func (q *queryRun) fill(rec *QueryRecord) error {
	n := q.cfg.Nodes
	if q.plan.Local {
		rec.Plan = "local"
	}
	if q.cfg.Payload {
		rec.Mode = "payload"
		rec.answer = q.answers[0]
		if rec.answer != nil {
			rec.Answer = rec.answer.Lines()
		}
		for i := 1; i < n; i++ {
			if !q.answers[i].Equal(q.answers[0]) {
				return fmt.Errorf("node %d's answer differs from node 0's", i)
			}
		}
	}
	for i := range n {
		rec.ResponseS = max(rec.ResponseS, q.resp[i].Seconds())
		rec.SetupMS = max(rec.SetupMS, q.setup[i].Seconds()*1e3)
	}
	rec.Integrity = "ok"
	for x, st := range q.plan.Steps {
		s := StepStat{Name: st.Name, Pattern: string(st.Pattern)}
		for i := range n {
			for j := range n {
				s.Tuples += q.got[x][i][j].Tuples
			}
		}
		s.Bytes = int64(s.Tuples) * algos.TupleBytes
		rec.Shuffled += s.Bytes
		rec.Steps = append(rec.Steps, s)
		if v := engine.Integrity(q.sent[x], q.got[x], q.corrupt); v != "ok" {
			rec.Integrity = v
		}
	}
	return nil
}

// OpenSteps opens the endpoints of a plan's steps: per step, one shared
// endpoint or one per thread (base.Threads of them), endpoint k of step x
// with tag x*neps+k; base gives the sizes, and each step's pattern whether
// it broadcasts. On an error it returns, with it, the endpoints it had
// opened (the others nil), for ClosedAfter.
func OpenSteps(th fabric.Thread, design catalogue.Entry, plan []tpch.Step, base algos.Config) ([][]algos.Endpoint, error) {
	neps, shared, steps := base.Threads, design.Shared, len(plan)
	if shared {
		neps = 1
	}
	eps := make([][]algos.Endpoint, steps)
	for x := range steps {
		eps[x] = make([]algos.Endpoint, neps)
		for k := range neps {
			ec := base
			ec.Tag = x*neps + k
			ec.Broadcast = plan[x].Pattern == algos.Broadcast
			if !shared {
				ec.Threads = 0
			}
			ep, err := design.Open(th, ec)
			if err != nil {
				return eps, err
			}
			eps[x][k] = ep
		}
	}
	return eps, nil
}

// CloseSteps closes the endpoints OpenSteps opened (nil ones were not),
// every one of them also after one fails, and returns the first error.
func CloseSteps(th fabric.Thread, eps [][]algos.Endpoint) error {
	var first error
	for _, step := range eps {
		for _, ep := range step {
			if ep == nil {
				continue
			}
			if err := ep.Close(th); err != nil && first == nil {
				first = err
			}
		}
	}
	return first
}

// ClosedAfter closes what a node's driver opened after its own error err
// (an endpoint closes, and frees everything, however it fails) and
// returns err.
func ClosedAfter(th fabric.Thread, eps [][]algos.Endpoint, err error) error {
	CloseSteps(th, eps)
	return err
}

// NewExchanger is the exchanger of node me for a plan's steps over the
// endpoints eps (OpenSteps), recording into sent, got and corrupt (per
// step, node and peer).
func NewExchanger(cfg QueryConfig, plan tpch.Plan, eps [][]algos.Endpoint, shared bool, me int, sent, got [][][]algos.Tally, corrupt []int) *Exchanger {
	return &Exchanger{cfg: cfg, plan: plan, eps: eps, shared: shared, me: me, sent: sent, got: got, corrupt: corrupt}
}

// Exchanger runs a plan's steps on one node with the SHUFFLE and RECEIVE
// operators: Threads sending threads split the node's stream, Threads
// receiving threads take what arrives (the threads of a shuffle).
type Exchanger struct {
	cfg     QueryConfig
	plan    tpch.Plan
	eps     [][]algos.Endpoint
	shared  bool
	me      int
	sent    [][][]algos.Tally
	got     [][][]algos.Tally
	corrupt []int
}

// Compute spreads cycles over the node's Threads pipelines (the local
// plan's work runs on as many threads as a shuffle plan's pipelines).
func (e *Exchanger) Compute(th fabric.Thread, cycles int64) {
	th.Compute(cycles / int64(e.cfg.Threads))
}

// tupleSlice is a materialized stream as an algos.Source.
type tupleSlice []byte

func (s tupleSlice) FillVector(vec []byte, from int64) { copy(vec, s[from*algos.TupleBytes:]) }

// pipeline charges the cycles of the pipeline that produces a sending
// thread's tuples as SHUFFLE takes them, vector by vector (SHUFFLE charges
// its hashing once per vector with the vector's tuple count).
type pipeline struct {
	fabric.Thread
	perTuple float64
	owed     float64
}

func (p *pipeline) Charge(w fabric.Work, n int) {
	if w == fabric.WorkHashTuple && p.perTuple > 0 {
		p.owed += p.perTuple * float64(n)
		c := int64(p.owed)
		p.owed -= float64(c)
		p.Thread.Compute(c)
	}
	p.Thread.Charge(w, n)
}

func (e *Exchanger) Exchange(th fabric.Thread, x int, s tpch.Stream, recvCycles int64) ([]byte, uint64, error) {
	n, t := e.cfg.Nodes, e.cfg.Threads
	me := e.me
	groups, err := algos.NewGroups(e.plan.Steps[x].Pattern, n)
	if err != nil {
		return nil, 0, err
	}
	total := int64(len(s.Tuples) / algos.TupleBytes)
	e.sent[x][me] = make([]algos.Tally, n)
	e.got[x][me] = make([]algos.Tally, n)
	recv := make([][]byte, t)
	var count atomic.Uint64
	mu := th.Node().NewMutex()
	step := algos.Step{Name: e.plan.Steps[x].Name + "-", Threads: t, Shared: e.shared, Lock: mu}
	step.Send = func(st fabric.Thread, k int, last func() bool) error {
		ep := e.eps[x][min(k, len(e.eps[x])-1)]
		from, to := total*int64(k)/int64(t), total*int64(k+1)/int64(t)
		share := s.Cycles / int64(t)
		p := &pipeline{Thread: st}
		if s.Blocking || to == from {
			st.Compute(share)
		} else {
			p.perTuple = float64(share) / float64(to-from)
		}
		sent, err := algos.Shuffle(p, ep, algos.ShuffleInput{Src: tupleSlice(s.Tuples), From: from, To: to}, groups, last)
		if err != nil {
			return err
		}
		mu.Lock()
		for d := range sent {
			e.sent[x][me][d].Add(sent[d])
		}
		mu.Unlock()
		return nil
	}
	step.Receive = func(rt fabric.Thread, k int) error {
		ep := e.eps[x][min(k, len(e.eps[x])-1)]
		r, err := algos.ReceiveFunc(rt, ep, n, recvCycles, func(tuples []byte, c uint64) {
			recv[k] = append(recv[k], tuples...)
			count.Add(c)
		})
		if err != nil {
			return err
		}
		mu.Lock()
		for src := range r.From {
			e.got[x][me][src].Add(r.From[src])
		}
		e.corrupt[me] += r.Corrupt
		mu.Unlock()
		return nil
	}
	if err := step.Run(th); err != nil {
		return nil, 0, err
	}
	var all []byte
	for _, r := range recv {
		all = append(all, r...)
	}
	return all, count.Load(), nil
}

// Package istorerun runs I-Store-style remote reads (Salama17, package
// istore) on a simulated cluster: the streaming microbenchmarks and the
// star joins, against the shuffle plan of the same joins over any shuffle
// design (through the TPC-H exchanger of package tpchrun).
package istorerun

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rdmashuffle/rdmashuffle/experiments/catalogue"
	"github.com/rdmashuffle/rdmashuffle/experiments/engine"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/experiments/tpchrun"
	"github.com/rdmashuffle/rdmashuffle/internal/setting"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
	"github.com/rdmashuffle/rdmashuffle/istore"
	"github.com/rdmashuffle/rdmashuffle/tpch"
)

// I-Store's figures (experiments/figures/istore_figs.go) run points
// through the run layer (experiments.Exec), which reads what to run from
// the point's workload and hands it to RunPoint.

// The remote-read designs of a star-join point (any other design name is
// a shuffle design running the shuffle plan).
const (
	IStoreDesign        = "I-Store"         // remote reads, replicated dimension partitions relayed
	IStoreUnicastDesign = "I-Store/unicast" // remote reads, every compute server reads on its own
	// The microbenchmark's two ways of feeding several readers.
	IStoreReadDesign      = "I-Store/read"
	IStoreMulticastDesign = "I-Store/multicast"
)

// StarJoinConfig is one star join on a simulated cluster.
type StarJoinConfig struct {
	Tables  int     // 2, 3 or 4
	SF      float64 // scale factor of the whole database
	Design  string  // IStoreDesign, IStoreUnicastDesign or a shuffle design
	Nodes   int
	Threads int // shuffle plan: sending and as many receiving threads per node; remote reads: twice as many workers
	Depth   int // remote reads: outstanding reads per worker (default 8)
	Profile string
	Seed    uint64
	// QPNumbering is the simulator's queue-pair numbering (engine.Config's).
	QPNumbering uint64
	Payload     bool // move real bytes and check the answer against the single-node reference
	Timeout     fabric.Duration
}

// StarJoinResult is a star join's outcome.
type StarJoinResult struct {
	ResponseS, SetupS float64
	Answer            *istore.Answer // payload mode
	Integrity         string         // "ok": the answer is the reference's (payload), or every block and tuple arrived (size-only)
	QPsPerNode        int
	RegisteredPer     int64
	FactBytesPerNode  int64
	SimEvents         uint64
	Plan              string // "remote-read" or "shuffle"
}

var dbCache struct {
	sync.Mutex
	keys []string
	dbs  []*istore.DB
}

// ssbDB generates (or reuses) the database at sf and seed; the last two
// are kept, so that a figure's points share them.
func ssbDB(sf float64, seed uint64) (*istore.DB, error) {
	key := fmt.Sprint(sf, "/", seed)
	dbCache.Lock()
	defer dbCache.Unlock()
	if i := slices.Index(dbCache.keys, key); i >= 0 {
		return dbCache.dbs[i], nil
	}
	db, err := istore.Generate(sf, seed)
	if err != nil {
		return nil, err
	}
	dbCache.keys, dbCache.dbs = append(dbCache.keys, key), append(dbCache.dbs, db)
	if len(dbCache.keys) > 2 {
		dbCache.keys, dbCache.dbs = dbCache.keys[1:], dbCache.dbs[1:]
	}
	return db, nil
}

// RunStarJoin runs one star join: the remote-read plan (package istore) or
// the shuffle plan over a shuffle design.
func RunStarJoin(cfg StarJoinConfig) (*StarJoinResult, error) {
	return RunStarJoinSim(cfg, engine.SimOptions{})
}

// RunStarJoinSim is RunStarJoin with the simulator's options, as the
// Simulator backend runs a shuffle: a failed join's error leads with its
// first cause and names the faults injected.
func RunStarJoinSim(cfg StarJoinConfig, opt engine.SimOptions) (*StarJoinResult, error) {
	q, err := istore.ParseQuery(cfg.Tables)
	if err != nil {
		return nil, err
	}
	prof, err := sim.LoadProfile(cfg.Profile)
	if err != nil {
		return nil, err
	}
	if cfg.Threads == 0 {
		cfg.Threads = prof.Host.Cores / 4
	}
	if cfg.Threads < 1 || 2*cfg.Threads > prof.Host.Cores {
		return nil, setting.New("Threads", cfg.Threads, "each node runs that many sending and receiving threads (the remote-read plan twice as many workers) on its %d cores; use 1..%d", prof.Host.Cores, prof.Host.Cores/2)
	}
	if cfg.Nodes < 1 {
		return nil, fmt.Errorf("%d nodes: need at least 1", cfg.Nodes)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = algos.DefaultTimeout
	}
	remote := cfg.Design == IStoreDesign || cfg.Design == IStoreUnicastDesign
	if d := catalogue.DesignOf(cfg.Design); !remote && (d.Name == "" || !catalogue.MovesTuples(d)) {
		return nil, fmt.Errorf("design %q: choose %s or %s (remote reads) or a shuffle design: %s", cfg.Design, IStoreDesign, IStoreUnicastDesign,
			strings.Join(catalogue.DesignNames(catalogue.MovesTuples), ", "))
	}
	db, err := ssbDB(cfg.SF, cfg.Seed)
	if err != nil {
		return nil, err
	}
	sc, err := engine.Simulator{Options: opt}.Cluster(cfg.Nodes, cfg.Seed, cfg.QPNumbering, cfg.Payload, prof)
	if err != nil {
		return nil, err
	}
	defer sc.Close()
	c := sc.Cluster
	var res *StarJoinResult
	if remote {
		// The remote-read plan's driver (package istore) does not close
		// what it opened after an error: no node is checked for leaks.
		r, err := istore.Run(c, db, istore.Config{Query: q, Threads: 2 * cfg.Threads, Depth: cfg.Depth, Multicast: cfg.Design == IStoreDesign, Timeout: cfg.Timeout})
		if err != nil {
			return nil, sc.Failed(err, nil)
		}
		res = &StarJoinResult{Plan: "remote-read", ResponseS: r.ResponseS, SetupS: r.SetupS, Answer: r.Answer, Integrity: "ok",
			QPsPerNode: r.QPsPerNode, RegisteredPer: r.RegisteredPerNode}
	} else {
		ended := make([]bool, cfg.Nodes)
		if res, err = shuffleStarJoin(c, db, q, cfg, ended); err != nil {
			return nil, sc.Failed(err, ended)
		}
	}
	if err := sc.Check(); err != nil {
		return nil, err
	}
	if cfg.Payload && !res.Answer.Equal(db.Reference(q)) {
		res.Integrity = "wrong answer"
	}
	res.FactBytesPerNode = int64(len(db.Lines)) * istore.RowBytes / int64(cfg.Nodes)
	res.SimEvents = c.Events()
	return res, nil
}

// shuffleStarJoin runs q's shuffle plan: the endpoints of one exchange
// per join are opened before the start (as RunQuery does), and the plan
// runs through the TPC-H exchanger (SHUFFLE and RECEIVE operators).
func shuffleStarJoin(c *sim.Cluster, db *istore.DB, q istore.Query, cfg StarJoinConfig, ended []bool) (*StarJoinResult, error) {
	qc := tpchrun.QueryConfig{Design: cfg.Design, Nodes: cfg.Nodes, Threads: cfg.Threads, Profile: cfg.Profile, Seed: cfg.Seed, SF: cfg.SF, Timeout: cfg.Timeout}
	prof, _ := sim.LoadProfile(cfg.Profile)
	if err := qc.Normalize(prof.Host.Cores); err != nil {
		return nil, err
	}
	steps := istore.ShuffleSteps(q)
	plan := tpch.Plan{Nodes: cfg.Nodes, Steps: steps}
	n, t, ns := cfg.Nodes, qc.Threads, len(steps)
	shared := catalogue.DesignOf(cfg.Design).Shared
	sent, got := make([][][]algos.Tally, ns), make([][][]algos.Tally, ns)
	for x := range ns {
		sent[x], got[x] = make([][]algos.Tally, n), make([][]algos.Tally, n)
	}
	corrupt := make([]int, n)
	setup, resp := make([]fabric.Duration, n), make([]fabric.Duration, n)
	answers := make([]*istore.Answer, n)
	qps, reg := make([]int, n), make([]int64, n)
	drive := func(th fabric.Thread) error {
		me := th.Node().ID()
		begin := th.Now()
		eps, err := tpchrun.OpenSteps(th, catalogue.DesignOf(cfg.Design), steps,
			algos.Config{Nodes: n, Threads: t, MsgBytes: qc.MsgBytes, Buffers: qc.Buffers, CreditEvery: qc.CreditEvery, Timeout: qc.Timeout})
		if err != nil {
			return tpchrun.ClosedAfter(th, eps, err)
		}
		for _, step := range eps {
			for _, ep := range step {
				qps[me] += ep.Info().QPs
				reg[me] += ep.Info().RegisteredBytes
			}
		}
		setup[me] = th.Now().Sub(begin)
		if err := th.Node().OOB().Barrier("start"); err != nil {
			return tpchrun.ClosedAfter(th, eps, err)
		}
		start := th.Now()
		ex := tpchrun.NewExchanger(qc, plan, eps, shared, me, sent, got, corrupt)
		ans, err := istore.RunShufflePlan(th, db, q, n, ex)
		if err != nil {
			return tpchrun.ClosedAfter(th, eps, err)
		}
		resp[me] = th.Now().Sub(start)
		answers[me] = ans
		return tpchrun.CloseSteps(th, eps)
	}
	err := c.Run(func(th fabric.Thread) error {
		err := drive(th)
		ended[th.Node().ID()] = true // not reached when the run's end stops the thread
		return err
	})
	if err != nil {
		return nil, err
	}
	res := &StarJoinResult{Plan: "shuffle", Answer: answers[0], Integrity: "ok"}
	for i := range n {
		res.ResponseS = max(res.ResponseS, resp[i].Seconds())
		res.SetupS = max(res.SetupS, setup[i].Seconds())
		res.QPsPerNode = max(res.QPsPerNode, qps[i])
		res.RegisteredPer = max(res.RegisteredPer, reg[i])
		if cfg.Payload && !answers[i].Equal(answers[0]) {
			return nil, fmt.Errorf("node %d's answer differs from node 0's", i)
		}
	}
	for x := range ns {
		if v := engine.Integrity(sent[x], got[x], corrupt); v != "ok" {
			res.Integrity = v
		}
	}
	return res, nil
}

// Labels of I-Store points: "istore micro blocks=<n>" (the design is
// IStoreReadDesign or IStoreMulticastDesign, nodes = readers + 1, buffers
// = outstanding reads per thread) and "istore join tables=<2|3|4>
// sf=<scale factor>" (the design names the plan; threads as
// StarJoinConfig's).

// RunPoint runs a point whose workload is an I-Store experiment
// (a join with the simulator's options, RunStarJoinSim).
// Micro points: Buffers is the outstanding reads per thread, Threads the
// worker threads (streams) per reader, Nodes the readers + 1; the record's
// throughput is the mean reader's scanned bytes per second. Join points:
// the record's response time is the query's.

func RunPoint(cfg engine.Config, opt engine.SimOptions) (*results.Record, error) {
	if cfg.Workload.Kind == results.IStoreMicro && (opt.InjectsFaults() || opt.Trace != nil || opt.Inspect != nil || opt.TimeLimit != 0 || opt.NoCheck) {
		return nil, setting.New("Workload", cfg.Workload.Label(), "faults, traces, time limits, inspectors and turning the checker off are the shuffles' and queries'; the I-Store microbenchmark runs without them").Sentinel(engine.ErrUnsupported)
	}
	if !cfg.Network.IsSingle() {
		return nil, setting.New("Network", fmt.Sprintf("%q", cfg.Network.String()), "an I-Store point runs on the single switch: networks of switches are not wired into the I-Store runner").Sentinel(engine.ErrUnsupported)
	}
	w := cfg.Workload
	kind := map[results.WorkloadKind]string{results.IStoreMicro: "micro", results.IStoreJoin: "join"}[w.Kind]
	t0 := time.Now()
	rec := &results.Record{Experiment: "istore-" + kind, Label: engine.PointLabel(cfg), Backend: "sim", Design: cfg.Design, Nodes: cfg.Nodes, Threads: cfg.Threads,
		Buffers: cfg.Buffers, CreditEvery: cfg.CreditEvery, Seed: cfg.Seed, QPNumbering: cfg.QPNumbering, MsgBytes: istore.BlockBytes, Integrity: "ok"}
	engine.Stamp(rec, cfg)
	prof, err := sim.LoadProfile(cfg.Profile)
	if err != nil {
		return nil, err
	}
	rec.Profile, rec.ProfileHash = engine.ProfileLabel(prof), prof.Hash()
	if kind == "micro" {
		if cfg.Design != IStoreReadDesign && cfg.Design != IStoreMulticastDesign {
			return nil, fmt.Errorf("design %q: an I-Store microbenchmark runs %s or %s", cfg.Design, IStoreReadDesign, IStoreMulticastDesign)
		}
		c, err := sim.New(sim.Config{Nodes: cfg.Nodes, Profile: prof, Seed: cfg.Seed, QPNumbering: cfg.QPNumbering, SizeOnly: !cfg.Payload})
		if err != nil {
			return nil, err
		}
		defer c.Close()
		r, err := istore.RunMicro(c, istore.MicroConfig{Readers: cfg.Nodes - 1, Depth: cfg.Buffers, Threads: cfg.Threads, Blocks: w.Blocks,
			Multicast: cfg.Design == IStoreMulticastDesign, Seed: cfg.Seed, Timeout: cfg.Timeout})
		if err != nil {
			return nil, err
		}
		if err := c.CheckError(); err != nil {
			return nil, err
		}
		if !r.SumOK || r.MaxOutstanding > cfg.Buffers {
			rec.Integrity = "corrupt"
		}
		rec.ThroughputGiBs = r.Mean * istore.BlockBytes / (1 << 30)
		rec.ResponseS = float64(w.Blocks) / r.Mean
		rec.BytesPerNode = int64(w.Blocks) * istore.BlockBytes
		rec.QPsPerNode, rec.SetupMS, rec.SimEvents = r.QPsPerNode, r.SetupS*1e3, c.Events()
		rec.WallS = time.Since(t0).Seconds()
		return rec, nil
	}
	r, err := RunStarJoinSim(StarJoinConfig{Tables: w.Tables, SF: w.SF, Design: cfg.Design, Nodes: cfg.Nodes, Threads: cfg.Threads,
		Profile: cfg.Profile, Seed: cfg.Seed, QPNumbering: cfg.QPNumbering, Payload: cfg.Payload, Timeout: cfg.Timeout}, opt)
	if err != nil {
		return nil, err
	}
	rec.Pattern = r.Plan
	rec.ResponseS, rec.SetupMS, rec.Integrity = r.ResponseS, r.SetupS*1e3, r.Integrity
	rec.QPsPerNode, rec.RegisteredPer, rec.BytesPerNode, rec.SimEvents = r.QPsPerNode, r.RegisteredPer, r.FactBytesPerNode, r.SimEvents
	rec.ThroughputGiBs = float64(r.FactBytesPerNode) / r.ResponseS / (1 << 30)
	rec.WallS = time.Since(t0).Seconds()
	if opt.NoCheck {
		rec.VerbsCheck = "off"
	}
	return rec, nil
}

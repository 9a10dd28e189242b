package soak

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"

	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/faults"
	"github.com/rdmashuffle/rdmashuffle/tpch"
)

// Workload is a family of runs a soak puts under each seed's schedule.
type Workload string

// Workloads.
const (
	// ShuffleWorkload runs every design's synthetic shuffle (the UD
	// designs with and without recovery).
	ShuffleWorkload Workload = "shuffle"
	// QueryWorkload runs one TPC-H query per seed (Q3, Q4 or Q10) over a
	// design drawn from the soak's designs: its plan's several exchanges,
	// broadcasts among them, and its answer checked against the
	// single-node reference in payload mode.
	QueryWorkload Workload = "tpch"
	// StarJoinWorkload runs one I-Store star join per seed (2, 3 or 4
	// tables) over a design drawn from the soak's designs and I-Store's
	// remote-read plans.
	StarJoinWorkload Workload = "star-join"
)

// Workloads lists every workload, the default of a soak.
var Workloads = []Workload{ShuffleWorkload, QueryWorkload, StarJoinWorkload}

// Scale factors of the query and star-join workloads: a data phase of
// about the shuffle's 256 KiB per node, so that the drawn faults land in it.
const (
	QuerySF    = 0.05
	StarJoinSF = 0.01
)

// job is one query or star join of a seed.
type job struct {
	workload Workload
	design   string
	query    tpch.Query // QueryWorkload
	tables   int        // StarJoinWorkload
}

func (j job) detail() string {
	if j.workload == QueryWorkload {
		return string(j.query)
	}
	return fmt.Sprintf("%d tables", j.tables)
}

// draw picks seed's query or star join: its design from designs, its
// query or table count, from a stream of its own (the same for every
// soak of that seed and design list).
func draw(w Workload, seed uint64, designs []string) job {
	r := rand.New(rand.NewPCG(seed, 0x9e7a))
	j := job{workload: w, design: designs[r.IntN(len(designs))]}
	if w == QueryWorkload {
		j.query = tpch.Queries[r.IntN(len(tpch.Queries))]
	} else {
		j.tables = 2 + r.IntN(3)
	}
	return j
}

// run runs j on seed's data under opt and returns its integrity: "ok"
// only when every exchange delivered exactly and (payload mode) the
// answer equals the single-node reference.
func (j job) run(cfg *Config, seed uint64, opt experiments.SimOptions) (string, *phases, error) {
	if j.workload == QueryWorkload {
		qc := experiments.QueryConfig{Query: j.query, SF: QuerySF, Design: j.design, Nodes: cfg.Nodes, Threads: cfg.Threads,
			Profile: cfg.Profile, Seed: seed, Payload: cfg.Payload}
		rec, err := experiments.RunQuerySim(qc, opt)
		if err != nil {
			return "", nil, err
		}
		integrity := rec.Integrity
		if integrity == "ok" && cfg.Payload && !rec.Result().Equal(tpch.Reference(tpch.Gen{Seed: seed, SF: QuerySF}, j.query)) {
			integrity = "wrong answer"
		}
		return integrity, &phases{setupS: rec.SetupMS / 1e3, dataS: rec.ResponseS}, nil
	}
	sc := experiments.StarJoinConfig{Tables: j.tables, SF: StarJoinSF, Design: j.design, Nodes: cfg.Nodes, Threads: cfg.Threads,
		Profile: cfg.Profile, Seed: seed, Payload: cfg.Payload}
	res, err := experiments.RunStarJoinSim(sc, opt)
	if err != nil {
		return "", nil, err
	}
	return res.Integrity, &phases{setupS: res.SetupS, dataS: res.ResponseS}, nil
}

// phases is how long a fault-free run's set-up and data phase lasted.
type phases struct{ setupS, dataS float64 }

func (p phases) faults() faults.Phases {
	return faults.Phases{Setup: fabric.Duration(p.setupS * float64(fabric.Second)), Data: fabric.Duration(p.dataS * float64(fabric.Second))}
}

// workloadDesigns are the designs w draws from (or, shuffles, runs
// each of): the soak's designs that w can run (the I-Store plans only in
// star joins).
func workloadDesigns(w Workload, designs []string) []string {
	var out []string
	for _, d := range designs {
		if w == StarJoinWorkload || !isIStore(d) {
			out = append(out, d)
		}
	}
	return out
}

// runJobs runs seed's query and star join (the workloads cfg asks for)
// under the seed's schedule, each scaled to its own fault-free run (spans
// keeps them by job).
func (cfg *Config) runJobs(seed uint64, spans *jobSpans, out []Trial) ([]Trial, error) {
	for _, w := range []Workload{QueryWorkload, StarJoinWorkload} {
		designs := workloadDesigns(w, cfg.Designs)
		if !slices.Contains(cfg.Workloads, w) || len(designs) == 0 {
			continue
		}
		j := draw(w, seed, designs)
		span, err := spans.get(j, func() (faults.Phases, error) {
			_, p, err := j.run(cfg, cfg.FirstSeed, experiments.SimOptions{TimeLimit: cfg.SimLimit})
			if err != nil {
				return faults.Phases{}, fmt.Errorf("%s %s over %s without faults: %w", w, j.detail(), j.design, err)
			}
			return p.faults(), nil
		})
		if err != nil {
			return out, err
		}
		sched, names := cfg.schedule(seed, span)
		run := soakRun(Trial{Seed: seed, Design: j.design, Workload: w, Detail: j.detail()}, cfg.Nodes, sched, cfg.WallLimit,
			experiments.SimOptions{TimeLimit: cfg.SimLimit}, func(opt experiments.SimOptions) (string, error) {
				integrity, _, err := j.run(cfg, seed, opt)
				return integrity, err
			})
		run.Scenarios = names
		out = append(out, run)
	}
	return out, nil
}

// jobSpans keeps the fault-free spans of the jobs run so far, for seeds
// run at once.
type jobSpans struct {
	mu sync.Mutex
	m  map[job]faults.Phases
}

// get returns j's span, measuring it (once) with measure.
func (s *jobSpans) get(j job, measure func() (faults.Phases, error)) (faults.Phases, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if span, ok := s.m[j]; ok {
		return span, nil
	}
	span, err := measure()
	if err == nil {
		s.m[j] = span
	}
	return span, err
}

// isIStore reports whether d is one of I-Store's remote-read plans, which
// only star joins run.
func isIStore(d string) bool {
	return d == experiments.IStoreDesign || d == experiments.IStoreUnicastDesign
}

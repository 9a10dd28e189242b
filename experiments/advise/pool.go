package advise

import (
	"sync"
	"time"

	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// job is one simulated run the advice needs.
type job struct {
	cfg     experiments.RunConfig
	moved   *sim.Profile       // the profile with an estimate moved; nil: the configuration's own
	profile func(*sim.Profile) // a change of the loaded profile (tests); such a run is not stored
	// filled in by the run
	rec    *results.Record
	err    error
	usage  sim.Usage
	stats  sim.Stats
	reused bool // taken from the store

	key     string // its store key, once computed (keyDone)
	keyOK   bool
	keyDone bool
}

// storeKeyOnce is storeKey computed once per job (it loads and hashes the
// profile): the lookup and the save ask for it.
func (j *job) storeKeyOnce() (string, bool) {
	if !j.keyDone {
		j.key, j.keyOK = j.storeKey()
		j.keyDone = true
	}
	return j.key, j.keyOK
}

// Progress is what Advise reports as it goes: the phase ("screening",
// "growing", "band"), runs finished of the phase's total, and the wall
// time the phase has taken so far.
type Progress struct {
	Phase   string
	Done    int
	Total   int
	Elapsed time.Duration
}

// Options are how Advise runs its points.
type Options struct {
	// Run runs one simulated point (nil: experiments.RunSim). Advise
	// sets the options' Inspect, NoCheck and ProfileOverride.
	Run func(experiments.RunConfig, experiments.SimOptions) (*results.Record, error)
	// Workers is how many points run at once (0: 1). Each point is
	// deterministic, so the answer does not depend on it.
	Workers int
	// Progress, if set, is told after every finished run.
	Progress func(Progress)
	// Store, if set, is asked for every run before it is made, and keeps
	// every run that succeeded.
	Store Store
	// StoreErr, if set, is told when the store could not keep a run (the
	// advice goes on without it).
	StoreErr func(error)

	tally *tally // runs made and reused, counted for the answer (set by Advise)
}

// tally counts an advice's runs.
type tally struct {
	mu           sync.Mutex
	made, reused int
}

func (t *tally) add(reused bool) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if reused {
		t.reused++
	} else {
		t.made++
	}
}

// runAll runs jobs, Workers at a time, reporting progress under phase.
func (o Options) runAll(phase string, jobs []*job) {
	run := o.Run
	if run == nil {
		run = experiments.RunSim
	}
	start := time.Now()
	var mu sync.Mutex
	done := 0
	finished := func(j *job) {
		o.tally.add(j.reused)
		mu.Lock()
		done++
		if o.Progress != nil {
			o.Progress(Progress{Phase: phase, Done: done, Total: len(jobs), Elapsed: time.Since(start)})
		}
		mu.Unlock()
	}
	var todo []*job
	for _, j := range jobs {
		if j.load(o.Store) {
			finished(j)
			continue
		}
		todo = append(todo, j)
	}
	next := make(chan *job)
	var wg sync.WaitGroup
	for range max(o.Workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range next {
				override := j.profile
				if j.moved != nil {
					moved := j.moved
					override = func(p *sim.Profile) { *p = *moved }
				}
				opt := experiments.SimOptions{NoCheck: true, ProfileOverride: override, Inspect: func(c *sim.Cluster) {
					j.usage, j.stats = c.Usage(), c.Stats()
				}}
				j.rec, j.err = run(j.cfg, opt)
				if err := j.save(o.Store); err != nil && o.StoreErr != nil {
					o.StoreErr(err)
				}
				finished(j)
			}
		}()
	}
	for _, j := range todo {
		next <- j
	}
	close(next)
	wg.Wait()
}

// load takes j's run from s, if s has it.
func (j *job) load(s Store) bool {
	if s == nil {
		return false
	}
	key, ok := j.storeKeyOnce()
	if !ok {
		return false
	}
	v, ok := s.Load(key)
	if !ok {
		return false
	}
	j.rec, j.usage, j.stats, j.reused = v.Record, v.Usage, v.Stats, true
	return true
}

// save keeps j's run in s when it succeeded.
func (j *job) save(s Store) error {
	if s == nil || j.err != nil {
		return nil
	}
	key, ok := j.storeKeyOnce()
	if !ok {
		return nil
	}
	return s.Save(key, Stored{Record: j.rec, Usage: j.usage, Stats: j.stats})
}

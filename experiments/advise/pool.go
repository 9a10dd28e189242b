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
	profile func(*sim.Profile) // a change of the loaded profile (an estimate moved); nil: none
	// filled in by the run
	rec   *results.Record
	err   error
	usage sim.Usage
	stats sim.Stats
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
	next := make(chan *job)
	var wg sync.WaitGroup
	for range max(o.Workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range next {
				opt := experiments.SimOptions{NoCheck: true, ProfileOverride: j.profile, Inspect: func(c *sim.Cluster) {
					j.usage, j.stats = c.Usage(), c.Stats()
				}}
				j.rec, j.err = run(j.cfg, opt)
				mu.Lock()
				done++
				if o.Progress != nil {
					o.Progress(Progress{Phase: phase, Done: done, Total: len(jobs), Elapsed: time.Since(start)})
				}
				mu.Unlock()
			}
		}()
	}
	for _, j := range jobs {
		next <- j
	}
	close(next)
	wg.Wait()
}

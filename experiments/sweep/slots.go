package sweep

import (
	"context"

	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
)

// Slots limits how many points run at once across every sweep that shares
// it: explore reproduce runs all its figures' sweeps at the same time, and
// their points take turns at one set of slots, so that a sweep's last, long
// point does not leave the other cores idle until it ends (and a sweep of 8
// points can use more than 8 cores' worth of other sweeps' work). Which
// point runs when does not change any point's result. A nil *Slots limits
// nothing. Safe for concurrent use.
type Slots struct{ c chan struct{} }

// NewSlots makes n slots (at least 1).
func NewSlots(n int) *Slots { return &Slots{c: make(chan struct{}, max(n, 1))} }

// acquire waits for a free slot; false (and no slot) if ctx ends first.
func (s *Slots) acquire(ctx context.Context) bool {
	if s == nil {
		return true
	}
	select {
	case s.c <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (s *Slots) release() {
	if s != nil {
		<-s.c
	}
}

// Hold waits for a free slot and holds it for work that is not a point
// (explore reproduce's microbenchmarks), returning the function that gives
// it back; ok is false, and nothing is held, if ctx ends first. A nil
// *Slots holds nothing.
func (s *Slots) Hold(ctx context.Context) (release func(), ok bool) {
	if !s.acquire(ctx) {
		return func() {}, false
	}
	return s.release, true
}

// Gate wraps run so that each call holds a slot while it runs (for runs
// made outside RunSweep, such as a figure's steady-state check). A nil
// *Slots returns run itself.
func (s *Slots) Gate(run func(experiments.RunConfig) (*results.Record, error)) func(experiments.RunConfig) (*results.Record, error) {
	if s == nil {
		return run
	}
	return func(cfg experiments.RunConfig) (*results.Record, error) {
		s.acquire(context.Background())
		defer s.release()
		return run(cfg)
	}
}

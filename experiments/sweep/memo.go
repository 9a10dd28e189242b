package sweep

import (
	"encoding/json"
	"sync"

	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
)

// Memo runs each configuration once among the sweeps that share it (the
// figures of one explore reproduce, say, some of which run the same
// points): a point whose configuration equals one another sweep has run,
// or is running, in this process takes that run's record instead of
// running again. The simulator is deterministic, so the record is the one
// the point's own run would make; each sweep still writes it to its own
// output file under its own point and key. Only successful runs are
// shared: a point whose twin failed runs itself. The sweeps sharing a
// Memo must run their points with the same function (a Tagged view keeps
// the points of different functions apart). A nil *Memo shares nothing.
// Safe for concurrent use.
type Memo struct {
	tag  string
	core *memoCore
}

type memoCore struct {
	mu     sync.Mutex
	runs   map[string]*memoRun
	reused int
}

// memoRun is one configuration's run: done is closed when it ends, and
// rec is then its record (nil when it failed or did not run).
type memoRun struct {
	done chan struct{}
	rec  *results.Record
}

// NewMemo returns an empty Memo.
func NewMemo() *Memo { return &Memo{core: &memoCore{runs: map[string]*memoRun{}}} }

// Tagged returns a view of m whose points are told apart from those of
// every other tag (points run by another function: grown to steady state
// or not, say). A nil *Memo gives nil.
func (m *Memo) Tagged(tag string) *Memo {
	if m == nil {
		return nil
	}
	return &Memo{tag: m.tag + "/" + tag, core: m.core}
}

// Reused is the number of points that took another point's record.
func (m *Memo) Reused() int {
	if m == nil {
		return 0
	}
	m.core.mu.Lock()
	defer m.core.mu.Unlock()
	return m.core.reused
}

// memoKey is a configuration's identity: every field, as JSON (the
// configuration a record gives back, ConfigOf, is the same data).
func memoKey(tag string, cfg experiments.RunConfig) (string, bool) {
	b, err := json.Marshal(cfg)
	if err != nil {
		return "", false
	}
	return tag + "\x00" + string(b), true
}

// claim looks cfg up: a finished run's record (a copy), or, when none has
// finished, either a run to wait for (wait) or the caller's turn to run it
// (own, which the caller must finish).
func (m *Memo) claim(cfg experiments.RunConfig) (rec *results.Record, wait, own *memoRun) {
	if m == nil {
		return nil, nil, nil
	}
	key, ok := memoKey(m.tag, cfg)
	if !ok {
		return nil, nil, nil
	}
	m.core.mu.Lock()
	defer m.core.mu.Unlock()
	r, ok := m.core.runs[key]
	switch {
	case !ok:
		r = &memoRun{done: make(chan struct{})}
		m.core.runs[key] = r
		return nil, nil, r
	case isClosed(r.done) && r.rec != nil:
		m.core.reused++
		c := *r.rec
		return &c, nil, nil
	case isClosed(r.done): // it failed: run it again, and share this one
		r = &memoRun{done: make(chan struct{})}
		m.core.runs[key] = r
		return nil, nil, r
	}
	return nil, r, nil
}

// finish ends a run claimed with claim: rec is its record, nil when it
// failed or did not run.
func (r *memoRun) finish(rec *results.Record) {
	if r == nil {
		return
	}
	r.rec = rec
	close(r.done)
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// take returns the record of the configuration cfg if a run sharing m
// has made it, waiting for one running now; otherwise nil and the run the
// caller now owns (nil with a nil Memo), which it must finish.
func (m *Memo) take(cfg experiments.RunConfig) (*results.Record, *memoRun) {
	for {
		rec, wait, own := m.claim(cfg)
		if wait == nil {
			return rec, own
		}
		<-wait.done // then look again: its record, or the turn to run it
	}
}

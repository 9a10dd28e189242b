package algos

import (
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// progressThread is the part of an endpoint that moves data on a thread of
// its own (HyPer's multiplexer, the RDMA Write middleware's network
// thread): the lock the thread shares with the endpoint's callers, the
// signals between them, and how the thread ends. An endpoint embeds it and
// creates mu, work and exit in its setup; mu guards the whole endpoint,
// these fields included.
type progressThread struct {
	mu     fabric.Mutex
	work   fabric.Signal // callers to the thread: there is something to do
	exit   fabric.Signal // the thread to Close: it has exited
	stop   bool          // Close asked the thread to finish and exit
	exited bool
	err    error // why the thread failed, with its name

	name    string // "algos: HyPer multiplexer 3 on node 1", for the thread's errors
	stopped error  // what callers get once the thread has exited without an error
}

// label names the thread (design, thread, endpoint tag and node) for its
// errors.
func (p *progressThread) label(design, thread string, tag, node int) {
	p.name = fmt.Sprintf("algos: %s %s %d on node %d", design, thread, tag, node)
	p.stopped = fmt.Errorf("algos: %s endpoint %d on node %d: the %s has stopped", design, tag, node, thread)
}

// run is the thread's body: it holds mu while loop runs (loop releases it
// only to wait), then records loop's error, marks the thread exited, wakes
// the waiters on also and then on exit, and returns the error.
func (p *progressThread) run(th fabric.Thread, loop func(fabric.Thread) error, also ...fabric.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := loop(th); err != nil {
		p.err = fmt.Errorf("%s: %w", p.name, err)
	}
	p.exited = true
	for _, s := range also {
		s.Notify()
	}
	p.exit.Notify()
	return p.err
}

// failed is what a caller gets, under mu, once the thread has exited: its
// error, or an error saying it stopped; nil while it runs.
func (p *progressThread) failed() error {
	if p.err != nil {
		return p.err
	}
	if p.exited {
		return p.stopped
	}
	return nil
}

// idle releases mu while the thread waits for the deadline or for one of
// on, then takes it again.
func (p *progressThread) idle(th fabric.Thread, deadline fabric.Time, on []fabric.Waitable) {
	waitReleased(th, p.mu, deadline, on...)
}

// halt asks the thread to finish what it has and exit, waits until it has,
// and returns its error. The caller does not hold mu.
func (p *progressThread) halt(th fabric.Thread) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stop = true
	p.work.Notify()
	for !p.exited {
		waitReleased(th, p.mu, fabric.Forever, p.exit)
	}
	return p.err
}

// closeWith is the Close of an endpoint with a progress thread: it stops
// the thread, meets the other nodes at barrier, and frees what own holds
// whatever happened before (the thread has exited either way), returning
// the first error.
func (p *progressThread) closeWith(th fabric.Thread, node fabric.Node, barrier string, own *owned) error {
	err := p.halt(th)
	if err == nil {
		err = node.OOB().Barrier(barrier)
	}
	return freed(err, own.free())
}

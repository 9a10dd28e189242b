package algos

import (
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// countingMutex is a fabric.Mutex that counts misuse instead of failing.
type countingMutex struct {
	held   bool
	misuse int // Lock while held, Unlock while free
}

func (m *countingMutex) Lock() {
	if m.held {
		m.misuse++
	}
	m.held = true
}

func (m *countingMutex) Unlock() {
	if !m.held {
		m.misuse++
	}
	m.held = false
}

// unwindingThread is a thread whose Wait unwinds, as the simulator's
// threads do when it stops a run under them.
type unwindingThread struct{ fabric.Thread }

type unwound struct{}

func (unwindingThread) Now() fabric.Time                     { return 0 }
func (unwindingThread) Wait(fabric.Time, ...fabric.Waitable) { panic(unwound{}) }

// TestWaitUnwindKeepsLockPaired: a wait that unwinds instead of returning
// leaves the endpoint's lock held, so the caller's deferred unlock pairs
// with it. Before, the wait released the lock and the unwinding skipped
// taking it again: the deferred Unlock then released a free lock (in the
// simulator: "panic: sim: Unlock of an unlocked Mutex", which replaced
// the time limit that had stopped the run).
func TestWaitUnwindKeepsLockPaired(t *testing.T) {
	for _, tc := range []struct {
		name string
		wait func(th fabric.Thread, mu *countingMutex)
	}{
		{"endpointBase.waitFor", func(th fabric.Thread, mu *countingMutex) {
			e := &endpointBase{mu: mu}
			e.lock()
			defer e.unlock()
			_ = e.waitFor(th, fabric.Forever, fabric.Forever, waiting{format: "testing"})
		}},
		{"endpointBase.getData", func(th fabric.Thread, mu *countingMutex) {
			e := &endpointBase{mu: mu, n: 1, cfg: Config{Timeout: fabric.Second}}
			_, _ = e.getData(th, &receiving{progress: func(fabric.Thread) (int, error) { return 0, nil }})
		}},
		{"progressThread.idle", func(th fabric.Thread, mu *countingMutex) {
			p := &progressThread{mu: mu}
			p.mu.Lock()
			defer p.mu.Unlock()
			p.idle(th, fabric.Forever, nil)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu := &countingMutex{}
			func() {
				defer func() {
					if r := recover(); r != (unwound{}) {
						t.Fatalf("recovered %v, want the unwinding", r)
					}
				}()
				tc.wait(unwindingThread{}, mu)
			}()
			if mu.misuse != 0 || mu.held {
				t.Fatalf("lock misused %d times, held at the end: %v", mu.misuse, mu.held)
			}
		})
	}
}

package sim_test

import (
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// futexProfile is the default profile with wake-ups of exactly
// host.wakeup_ns, so that times can be computed.
func futexProfile() *sim.Profile {
	p := sim.DefaultProfile()
	p.Host.WakeupTailNS = 0
	return p
}

// lockStep is what one simulated thread does with a sleeping mutex: start
// after a delay, then hold the lock for each duration in turn, computing
// gap between holds.
type lockStep struct {
	start fabric.Duration
	holds []fabric.Duration
	gap   fabric.Duration
}

// runFutex runs the threads on one node with one sleeping mutex and
// returns, per thread, the times it acquired the lock, with the cluster's
// statistics.
func runFutex(t *testing.T, prof *sim.Profile, seed uint64, steps []lockStep) ([][]fabric.Time, sim.Stats) {
	t.Helper()
	c, err := sim.New(sim.Config{Nodes: 1, Seed: seed, Profile: prof})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got := make([][]fabric.Time, len(steps))
	err = c.Run(func(th fabric.Thread) error {
		mu := th.Node().NewSleepingMutex()
		done := th.Node().NewSignal()
		finished := 0
		for i, s := range steps {
			th.Spawn("locker", 2*i, func(w fabric.Thread) error {
				w.Busy(s.start)
				for k, h := range s.holds {
					if k > 0 {
						w.Busy(s.gap)
					}
					mu.Lock()
					got[i] = append(got[i], w.Now())
					w.Busy(h)
					mu.Unlock()
				}
				finished++
				done.Notify()
				return nil
			})
		}
		for finished < len(steps) {
			th.Wait(fabric.Forever, done)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got, c.Stats()
}

// TestSleepingMutex: a contended lock wakes its longest sleeper with a
// FUTEX_WAKE paid by the releaser, the sleeper runs host.wakeup_ns later,
// a running thread takes the lock ahead of a woken one (which sleeps
// again), and an Unlock after a contended acquisition makes the system
// call even when nobody sleeps.
func TestSleepingMutex(t *testing.T) {
	us := fabric.Microsecond
	h := futexProfile().Host
	lock := fabric.Duration(h.LockNS * 1000)
	wake := fabric.Duration(h.FutexWakeNS * 1000)
	up := fabric.Duration(h.WakeupNS * 1000)
	// at is when a Lock that took the lock at d returns: one atomic later.
	at := func(d fabric.Duration) fabric.Time { return fabric.Time(0).Add(d + lock) }
	tests := []struct {
		name                   string
		steps                  []lockStep
		want                   [][]fabric.Time
		wakes, empties, barged int64
	}{
		{
			name:  "uncontended",
			steps: []lockStep{{holds: []fabric.Duration{us, us}, gap: us}},
			// Each acquisition costs one atomic after it is taken; no
			// system call.
			want: [][]fabric.Time{{at(0), at(lock + 2*us)}},
		},
		{
			name:  "sleeper woken",
			steps: []lockStep{{holds: []fabric.Duration{us}}, {start: us / 10, holds: []fabric.Duration{0}}},
			// The holder releases at lock+1us; the sleeper runs up later
			// and takes the lock; its own Unlock finds nobody asleep.
			want:  [][]fabric.Time{{at(0)}, {at(lock + us + up)}},
			wakes: 1, empties: 1,
		},
		{
			name: "barging",
			// The holder releases at lock+1us, pays the wake, computes
			// 1us and takes the lock again before the sleeper wakes
			// (lock+1us+up); the sleeper sleeps again until the second
			// release.
			steps: []lockStep{{holds: []fabric.Duration{us, 5 * us}, gap: us}, {start: us / 10, holds: []fabric.Duration{0}}},
			want: [][]fabric.Time{
				{at(0), at(lock + us + wake + us)},
				{at(lock + us + wake + us + lock + 5*us + up)},
			},
			wakes: 2, empties: 1, barged: 1,
		},
		{
			name: "longest sleeper first",
			steps: []lockStep{
				{holds: []fabric.Duration{us}},
				{start: us / 10, holds: []fabric.Duration{0}},
				{start: us / 5, holds: []fabric.Duration{0}},
			},
			// The second sleeper is woken by the first one's Unlock.
			want: [][]fabric.Time{
				{at(0)},
				{at(lock + us + up)},
				{at(lock + us + up + lock + up)},
			},
			wakes: 2, empties: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, st := runFutex(t, futexProfile(), 1, tc.steps)
			for i := range tc.want {
				if len(got[i]) != len(tc.want[i]) {
					t.Fatalf("thread %d acquired at %v, want %v", i, got[i], tc.want[i])
				}
				for k := range tc.want[i] {
					if got[i][k] != tc.want[i][k] {
						t.Errorf("thread %d acquisition %d at %v, want %v", i, k, got[i][k], tc.want[i][k])
					}
				}
			}
			if st.FutexWakes != tc.wakes || st.FutexEmptyWakes != tc.empties || st.FutexRetries != tc.barged {
				t.Errorf("wakes %d, empty wakes %d, woken and barged %d; want %d, %d, %d",
					st.FutexWakes, st.FutexEmptyWakes, st.FutexRetries, tc.wakes, tc.empties, tc.barged)
			}
		})
	}
}

// TestSleepingMutexWakeupTail: with host.wakeup_tail_ns, wake-ups take at
// least host.wakeup_ns and vary, the same for the same seed.
func TestSleepingMutexWakeupTail(t *testing.T) {
	steps := []lockStep{{holds: make([]fabric.Duration, 20), gap: fabric.Microsecond}, {start: 1, holds: make([]fabric.Duration, 20), gap: fabric.Microsecond}}
	for i := range steps {
		for k := range steps[i].holds {
			steps[i].holds[k] = 2 * fabric.Microsecond
		}
	}
	prof := sim.DefaultProfile()
	a, _ := runFutex(t, prof, 3, steps)
	b, _ := runFutex(t, prof, 3, steps)
	c, _ := runFutex(t, prof, 4, steps)
	same, differ := true, false
	for i := range a {
		for k := range a[i] {
			same = same && a[i][k] == b[i][k]
			differ = differ || a[i][k] != c[i][k]
		}
	}
	if !same {
		t.Errorf("the same seed gave different acquisition times:\n%v\n%v", a, b)
	}
	if !differ {
		t.Errorf("seeds 3 and 4 gave the same acquisition times: the wake-up tail is not drawn")
	}
}

// TestSleepingMutexDeadlock: a thread asleep on a lock nobody releases is
// reported as waiting on a sleeping Mutex.
func TestSleepingMutexDeadlock(t *testing.T) {
	c := newCluster(t, sim.Config{Nodes: 1, Seed: 1})
	err := c.Run(func(th fabric.Thread) error {
		mu := th.Node().NewSleepingMutex()
		mu.Lock()
		mu.Lock()
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "sleeping Mutex") {
		t.Fatalf("got %v, want a deadlock naming the sleeping Mutex", err)
	}
}

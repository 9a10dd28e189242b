package algos_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

func TestStepRunsPairsAndOneLastSender(t *testing.T) {
	for _, tc := range []struct {
		threads int
		shared  bool
	}{{1, true}, {3, true}, {3, false}} {
		c, err := sim.New(sim.Config{Nodes: 1, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		lasts, sends, recvs := 0, 0, 0
		err = c.Run(func(th fabric.Thread) error {
			mu := th.Node().NewMutex()
			return algos.Step{Name: "x-", Threads: tc.threads, Shared: tc.shared, Lock: mu,
				Send: func(st fabric.Thread, k int, last func() bool) error {
					st.Compute(int64(1000 * (k + 1)))
					mu.Lock()
					defer mu.Unlock()
					sends++
					names = append(names, st.Name())
					if (last == nil) == tc.shared {
						return errors.New("last given to a per-thread endpoint, or missing for a shared one")
					}
					if last != nil {
						mu.Unlock()
						l := last()
						mu.Lock()
						if l {
							lasts++
						}
					}
					return nil
				},
				Receive: func(rt fabric.Thread, k int) error {
					mu.Lock()
					defer mu.Unlock()
					recvs++
					names = append(names, rt.Name())
					return nil
				}}.Run(th)
		})
		c.Close()
		if err != nil {
			t.Fatalf("%+v: %v", tc, err)
		}
		wantLasts := 0
		if tc.shared {
			wantLasts = 1
		}
		if sends != tc.threads || recvs != tc.threads || lasts != wantLasts {
			t.Errorf("%+v: %d sends, %d receives, %d last senders", tc, sends, recvs, lasts)
		}
		if !strings.Contains(strings.Join(names, " "), "x-shuffle0") || !strings.Contains(strings.Join(names, " "), "x-receive0") {
			t.Errorf("%+v: thread names %v", tc, names)
		}
	}
}

func TestSpawnJoin(t *testing.T) {
	c, err := sim.New(sim.Config{Nodes: 1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Every thread has returned when SpawnJoin does.
	returned := 0
	err = c.Run(func(th fabric.Thread) error {
		if err := algos.SpawnJoin(th, 4, func(i int) (string, int) { return "w", i % 2 }, func(t fabric.Thread, i int) error {
			t.Compute(int64(1000 * (4 - i)))
			returned++
			return nil
		}); err != nil {
			return err
		}
		if returned != 4 {
			return errors.New("SpawnJoin returned before its threads")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// A failing thread fails the run, with its own error.
	boom := errors.New("boom")
	err = c.Run(func(th fabric.Thread) error {
		return algos.SpawnJoin(th, 3, func(i int) (string, int) { return "w", i }, func(t fabric.Thread, i int) error {
			if i == 1 {
				t.Compute(100)
				return boom
			}
			t.Wait(fabric.Forever) // never returns on its own: the failure ends the run
			return nil
		})
	})
	if !errors.Is(err, boom) {
		t.Errorf("Run: %v; want the worker's failure", err)
	}
}

package algos_test

import (
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// TestMPINonblocking: the MPI baseline with non-blocking sends moves every
// tuple of a shuffle (eager and rendezvous sizes), refuses a window below
// one and the broadcast pattern, and a caller holding every send buffer
// gets an error, not a hang.
func TestMPINonblocking(t *testing.T) {
	for _, window := range []int{1, 4} {
		open := func(th fabric.Thread, c algos.Config) (algos.Endpoint, error) {
			return algos.OpenMPINonblocking(th, c, algos.DefaultMPICosts, window)
		}
		r := runDesign(t, open, algos.Config{Buffers: 2, CreditEvery: 1}, 0) // 4 KiB messages: eager
		if r.info.QPs == 0 {
			t.Errorf("window %d: no queue pairs counted", window)
		}
		runShuffle(t, 2, func(th fabric.Thread, c algos.Config) (algos.Endpoint, error) {
			c.MsgBytes = 64 << 10 // rendezvous
			return open(th, c)
		}, algos.Config{Buffers: 2, CreditEvery: 1}, 0)
	}
	prof, err := sim.LoadProfile("edr-cx4")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cfg    algos.Config
		window int
		want   string
	}{
		{algos.Config{Nodes: 2, MsgBytes: 4096, Buffers: 1, CreditEvery: 1}, 0, "window of at least 1"},
		{algos.Config{Nodes: 2, MsgBytes: 4096, Buffers: 1, CreditEvery: 1, Broadcast: true}, 4, "not with MPI_Ibcast"},
		{algos.Config{Nodes: 2, MsgBytes: 4096, Buffers: 1, CreditEvery: 1, Timeout: fabric.Millisecond}, 2, "held by the caller"},
	} {
		c, err := sim.New(sim.Config{Nodes: 2, Profile: prof, Seed: 1, SizeOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		err = c.Run(func(th fabric.Thread) error {
			ep, err := algos.OpenMPINonblocking(th, tc.cfg, algos.DefaultMPICosts, tc.window)
			if err != nil {
				return err
			}
			defer ep.Close(th)
			for i := 0; i < tc.window*2+1; i++ { // more than the pool: hold them all
				if _, err := ep.Acquire(th); err != nil {
					return err
				}
			}
			return nil
		})
		c.Close()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("window %d, %+v: error %v, want one containing %q", tc.window, tc.cfg, err, tc.want)
		}
	}
}

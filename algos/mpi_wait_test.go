package algos_test

import (
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// TestMPIWait: the MPI baseline moves every tuple whichever way its
// threads wait in the library (asleep until a completion, MPICH's yield
// after every empty poll, MVAPICH2's release and retake after six), eager
// and rendezvous; the waits that poll change the run; negative wait
// settings are refused with the costs named.
func TestMPIWait(t *testing.T) {
	traces := map[string]uint64{}
	for _, tc := range []struct {
		name string
		wait algos.MPIWait
	}{
		{"asleep", algos.MPIWait{}},
		{"mpich", algos.MPICHWait},
		{"mvapich2", algos.MVAPICH2Wait},
	} {
		costs := algos.DefaultMPICosts
		costs.Wait = tc.wait
		open := func(th fabric.Thread, c algos.Config) (algos.Endpoint, error) { return algos.OpenMPI(th, c, costs) }
		traces[tc.name] = runDesign(t, open, algos.Config{Buffers: 2, CreditEvery: 1, Threads: 1}, 0).trace
		runShuffle(t, 2, func(th fabric.Thread, c algos.Config) (algos.Endpoint, error) {
			c.MsgBytes = 64 << 10 // rendezvous
			return open(th, c)
		}, algos.Config{Buffers: 2, CreditEvery: 1, Threads: 1}, 0)
	}
	if traces["asleep"] == traces["mvapich2"] || traces["asleep"] == traces["mpich"] {
		t.Errorf("waits that poll left the trace of a wait that sleeps: %x", traces)
	}
	if algos.DefaultMPICosts.Wait != algos.MVAPICH2Wait {
		t.Errorf("the default MPI wait is %+v, want MVAPICH2's %+v (Liu19's library)", algos.DefaultMPICosts.Wait, algos.MVAPICH2Wait)
	}

	prof, err := sim.LoadProfile("edr-cx4")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []algos.MPIWait{{PollsBeforeYield: -1}, {PollsBeforeYield: 1, YieldCycles: -1}, {PollsBeforeYield: 1, SpinCycles: -5}} {
		c, err := sim.New(sim.Config{Nodes: 2, Profile: prof, Seed: 1, SizeOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		costs := algos.DefaultMPICosts
		costs.Wait = w
		err = c.Run(func(th fabric.Thread) error {
			ep, err := algos.OpenMPI(th, algos.Config{Nodes: 2, MsgBytes: 4096, Buffers: 1, CreditEvery: 1}, costs)
			if err == nil {
				ep.Close(th)
			}
			return err
		})
		c.Close()
		if err == nil || !strings.Contains(err.Error(), "must not be negative") {
			t.Errorf("wait %+v: error %v, want one saying costs must not be negative", w, err)
		}
	}
}

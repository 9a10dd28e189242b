package perftest_test

import (
	"math"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/host"
	"github.com/rdmashuffle/rdmashuffle/fabric/loopback"
	"github.com/rdmashuffle/rdmashuffle/fabric/perftest"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// allocFabric is a simulated fabric whose memory registrations first spend
// alloc of CPU time, as allocating and zeroing a region does on hardware
// before ibv_reg_mr; with timed its protection domains can time the
// registration alone (fabric.RegTimer), without they cannot.
type allocFabric struct {
	fabric.Fabric
	alloc fabric.Duration
	timed bool
}

func (f allocFabric) Run(main func(fabric.Thread) error) error {
	return f.Fabric.Run(func(th fabric.Thread) error { return main(allocThread{th, f}) })
}

type allocThread struct {
	fabric.Thread
	f allocFabric
}

func (t allocThread) Node() fabric.Node { return allocNode{t.Thread.Node(), t} }

type allocNode struct {
	fabric.Node
	th allocThread
}

func (n allocNode) Device() fabric.Device { return allocDevice{n.Node.Device(), n.th} }

type allocDevice struct {
	fabric.Device
	th allocThread
}

func (d allocDevice) AllocPD() (fabric.PD, error) {
	pd, err := d.Device.AllocPD()
	if err != nil {
		return nil, err
	}
	if d.th.f.timed {
		return timedPD{allocPD{pd, d.th}}, nil
	}
	return allocPD{pd, d.th}, nil
}

type allocPD struct {
	fabric.PD
	th allocThread
}

func (p allocPD) RegMR(length int, access fabric.Access) (fabric.MR, error) {
	p.th.Busy(p.th.f.alloc)
	return p.PD.RegMR(length, access)
}

type timedPD struct{ allocPD }

func (p timedPD) TimeRegMR(length int, access fabric.Access) (fabric.MR, fabric.Duration, error) {
	p.th.Busy(p.th.f.alloc)
	t0 := p.th.Now()
	m, err := p.PD.RegMR(length, access)
	return m, p.th.Now().Sub(t0), err
}

// TestRegMRTimesRegistrationAlone: reg_mr reports the registration's time
// without the allocation before it when the backend can time it alone,
// and says when it cannot (the time then includes the allocation).
func TestRegMRTimesRegistrationAlone(t *testing.T) {
	const alloc = 5 * fabric.Millisecond
	cfg := perftest.Config{Test: "reg_mr", Size: 16 << 20, Iters: 3}
	simulated := func(t *testing.T) fabric.Fabric {
		c, err := sim.New(sim.Config{Nodes: 2, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	reg := func(t *testing.T, f fabric.Fabric) *perftest.Result {
		t.Helper()
		defer f.Close()
		r, err := perftest.Run(f, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	alone := reg(t, simulated(t)).TTypicalUS // the simulator charges no allocation
	for _, tc := range []struct {
		name      string
		open      func(t *testing.T) fabric.Fabric
		want      float64 // us; 0: positive, not checked
		withAlloc bool
	}{
		{"simulator", simulated, alone, false},
		{"allocating, timed alone", func(t *testing.T) fabric.Fabric { return allocFabric{simulated(t), alloc, true} }, alone, false},
		{"allocating, not timed alone", func(t *testing.T) fabric.Fabric { return allocFabric{simulated(t), alloc, false} }, alone + alloc.Microseconds(), true},
		{"loopback", func(t *testing.T) fabric.Fabric {
			f, err := loopback.Open(host.Config{}, 2)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := reg(t, tc.open(t))
			if r.RegWithAlloc != tc.withAlloc {
				t.Errorf("RegWithAlloc %v, want %v", r.RegWithAlloc, tc.withAlloc)
			}
			switch {
			case tc.want == 0 && !(r.TTypicalUS > 0):
				t.Errorf("typical time %.3f us, want positive", r.TTypicalUS)
			case tc.want != 0 && math.Abs(r.TTypicalUS-tc.want) > 1e-6*tc.want:
				t.Errorf("typical time %.3f us, want %.3f (registration alone %.3f, allocation %.3f)", r.TTypicalUS, tc.want, alone, alloc.Microseconds())
			}
		})
	}
}

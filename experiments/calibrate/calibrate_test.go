package calibrate

import (
	"math"
	"slices"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// TestCalibrateRecoversAProfile calibrates, starting from the FDR profile,
// a "fabric" that is really the simulator running the EDR profile: the
// calibrated simulator must reproduce what it measured, and the fitted
// fields must move towards EDR's.
func TestCalibrateRecoversAProfile(t *testing.T) {
	target, err := sim.LoadProfile("edr-cx4")
	if err != nil {
		t.Fatal(err)
	}
	base, err := sim.LoadProfile("fdr-cx3")
	if err != nil {
		t.Fatal(err)
	}
	open := func(n int) (fabric.Fabric, error) {
		return sim.New(sim.Config{Nodes: n, Profile: target, Seed: 1, SizeOnly: true})
	}
	cal, err := Run(open, base, "measured")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range cal.Measurements {
		t.Logf("%-30s fabric %8.3f  base %8.3f  calibrated %8.3f %s", m.Name, m.Fabric, m.Base, m.Calibrated, m.Unit)
		if rel := math.Abs(m.Calibrated-m.Fabric) / m.Fabric; rel > 0.15 {
			t.Errorf("%s: calibrated simulator %.3f against the fabric's %.3f (%.0f%% off)", m.Name, m.Calibrated, m.Fabric, 100*rel)
		}
	}
	if cal.Profile.Name != "measured" || cal.Profile.NIC.QPCacheEntries <= base.NIC.QPCacheEntries {
		t.Errorf("the QP cache should grow from FDR's %d towards EDR's %d: %d", base.NIC.QPCacheEntries, target.NIC.QPCacheEntries, cal.Profile.NIC.QPCacheEntries)
	}
	if _, err := ProfileYAML(cal.Profile); err != nil {
		t.Fatal(err)
	}
}

// asIBV is a simulated cluster that says it is the libibverbs backend:
// its nodes, all in this process, then share one adapter
// (fabric.SharesAdapter), as those of ibv.OpenLocal do.
type asIBV struct{ fabric.Fabric }

func (asIBV) Backend() string { return "ibv" }

// untimed is a simulated cluster whose protection domains cannot time a
// registration alone (no fabric.RegTimer), as a backend might.
type untimed struct{ fabric.Fabric }

func (f untimed) Run(main func(fabric.Thread) error) error {
	return f.Fabric.Run(func(th fabric.Thread) error { return main(untimedThread{th}) })
}

type untimedThread struct{ fabric.Thread }

func (t untimedThread) Node() fabric.Node { return untimedNode{t.Thread.Node()} }

type untimedNode struct{ fabric.Node }

func (n untimedNode) Device() fabric.Device { return untimedDevice{n.Node.Device()} }

type untimedDevice struct{ fabric.Device }

func (d untimedDevice) AllocPD() (fabric.PD, error) {
	pd, err := d.Device.AllocPD()
	return struct{ fabric.PD }{pd}, err // only fabric.PD's methods
}

// TestCalibrateFitsOnlyWhatItMeasured: on a fabric whose two nodes share
// one adapter, calibration says so, keeps the link's rate from the base,
// fits latency against the base without the wire and counts the read
// knee for both ends' contexts; on a backend whose registration times
// include the allocation, it keeps the registration cost from the base.
func TestCalibrateFitsOnlyWhatItMeasured(t *testing.T) {
	target, err := sim.LoadProfile("edr-cx4")
	if err != nil {
		t.Fatal(err)
	}
	base, err := sim.LoadProfile("fdr-cx3")
	if err != nil {
		t.Fatal(err)
	}
	simulated := func(wrap func(fabric.Fabric) fabric.Fabric) FabricFactory {
		return func(n int) (fabric.Fabric, error) {
			c, err := sim.New(sim.Config{Nodes: n, Profile: target, Seed: 1, SizeOnly: true})
			if err != nil {
				return nil, err
			}
			return wrap(c), nil
		}
	}
	cals := map[string]*Calibration{}
	for _, tc := range []struct {
		name      string
		wrap      func(fabric.Fabric) fabric.Fabric
		loopback  bool
		notFitted []string // measurements that must keep the base's fields
	}{
		{"own adapters", func(f fabric.Fabric) fabric.Fabric { return f }, false, nil},
		{"one adapter", func(f fabric.Fabric) fabric.Fabric { return asIBV{f} }, true, []string{"send bandwidth, 64 KiB"}},
		{"registration with allocation", func(f fabric.Fabric) fabric.Fabric { return untimed{f} }, false, []string{"registration, 64 MiB"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cal, err := Run(simulated(tc.wrap), base, "measured")
			if err != nil {
				t.Fatal(err)
			}
			cals[tc.name] = cal
			if cal.Loopback != tc.loopback {
				t.Errorf("Loopback %v, want %v", cal.Loopback, tc.loopback)
			}
			for _, m := range cal.Measurements {
				if m.Loopback != tc.loopback {
					t.Errorf("%s: Loopback %v, want %v", m.Name, m.Loopback, tc.loopback)
				}
				if want := slices.Contains(tc.notFitted, m.Name); (m.NotFitted != "") != want {
					t.Errorf("%s: not fitted %q, want a reason: %v", m.Name, m.NotFitted, want)
				}
			}
			p := cal.Profile
			if keep := slices.Contains(tc.notFitted, "send bandwidth, 64 KiB"); keep != (p.Link.LaneGbaud == base.Link.LaneGbaud && p.PCIe.GBps == base.PCIe.GBps) {
				t.Errorf("link %.4g Gbaud, PCIe %.4g GB/s from the base's %.4g and %.4g: want kept %v", p.Link.LaneGbaud, p.PCIe.GBps, base.Link.LaneGbaud, base.PCIe.GBps, keep)
			}
			if slices.Contains(tc.notFitted, "registration, 64 MiB") && p.Setup.RegMRPerPageNS != base.Setup.RegMRPerPageNS {
				t.Errorf("registration %.4g ns per page, want the base's %.4g kept", p.Setup.RegMRPerPageNS, base.Setup.RegMRPerPageNS)
			}
		})
	}
	own, one := cals["own adapters"], cals["one adapter"]
	if own == nil || one == nil {
		return
	}
	// The same fabric seen as one adapter: the latency is compared with
	// a base without the wire, so the adapter's own latency comes out
	// longer; the knee counts both ends' contexts, so the cache doubles.
	if !(one.Profile.NIC.TxLatencyNS > own.Profile.NIC.TxLatencyNS) {
		t.Errorf("tx latency %.1f ns on one adapter, %.1f on own adapters: want longer (the wire is not in the loopback)", one.Profile.NIC.TxLatencyNS, own.Profile.NIC.TxLatencyNS)
	}
	if q1, q2 := one.Profile.NIC.QPCacheEntries, own.Profile.NIC.QPCacheEntries; q1 < 2*q2-1 || q1 > 2*q2+1 {
		t.Errorf("QP cache %d entries on one adapter, %d on own adapters: want twice", q1, q2)
	}
}

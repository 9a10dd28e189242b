package calibrate

import (
	"math"
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

package advise

import (
	"testing"

	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// TestBottleneckFollowsTheResource starves one resource at a time and
// checks that the diagnosis names it: the bottleneck is read from what
// the run kept busy, so making a resource scarce must make it the one.
func TestBottleneckFollowsTheResource(t *testing.T) {
	set := func(field string, v float64) func(*sim.Profile) {
		return func(p *sim.Profile) {
			q, err := p.WithField(field, v)
			if err != nil {
				t.Fatal(err)
			}
			*p = *q
		}
	}
	for _, tc := range []struct {
		name    string
		design  string
		threads int
		cycles  int64
		profile func(*sim.Profile)
		want    Resource
	}{
		{"slow link", "MEMQ/SR", 4, 0, set("link.lane_gbaud", 1), Link},
		{"slow PCIe", "MEMQ/SR", 4, 0, set("pcie.gbps", 0.5), PCIe},
		{"slow work requests", "MEMQ/SR", 4, 0, set("nic.wqe_ns", 100000), NICUnits},
		{"two contexts cached", "MEMQ/SR", 4, 0, func(p *sim.Profile) {
			set("nic.qp_cache_ways", 0)(p)
			set("nic.qp_cache_entries", 2)(p)
			set("nic.qp_cache_miss_ns", 20000)(p)
		}, ContextMisses},
		{"costly tuples", "MEMQ/SR", 2, 400, nil, CPU},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := experiments.DefaultConfig()
			cfg.Design, cfg.Nodes, cfg.Threads, cfg.BytesPerNode, cfg.CyclesPerTuple = tc.design, 4, tc.threads, 8<<20, tc.cycles
			j := &job{cfg: cfg, profile: tc.profile}
			Options{}.runAll("test", []*job{j})
			if j.err != nil {
				t.Fatal(j.err)
			}
			b := diagnose(measure(j.rec, j.usage, j.stats, 2*cfg.Threads*cfg.Nodes))
			if b.Resource != tc.want {
				t.Errorf("bottleneck %s (%s), want %s; usage %+v", b.Resource, b.Why, tc.want, b.Usage)
			}
		})
	}
}

package advise

import (
	"testing"

	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
	"github.com/rdmashuffle/rdmashuffle/faults"
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
	plan := func(yaml string) *sim.Plan {
		s, err := faults.Parse([]byte(yaml))
		if err != nil {
			t.Fatal(err)
		}
		p, err := s.Plan(4)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	// one buffer per thread and peer, credit returned for each, and an
	// input of bytes per node that reuses every buffer a few times
	oneBuffer := func(bytes int64) func(*experiments.RunConfig) {
		return func(c *experiments.RunConfig) { c.Buffers, c.CreditEvery, c.BytesPerNode = 1, 1, bytes }
	}
	for _, tc := range []struct {
		name    string
		design  string
		threads int
		cycles  int64
		profile func(*sim.Profile)
		config  func(*experiments.RunConfig) // a change of the run's buffers, input or messages; nil: none
		plan    *sim.Plan                    // a fault schedule; nil: none
		want    Resource
	}{
		{"slow link", "MEMQ/SR", 4, 0, set("link.lane_gbaud", 1), nil, nil, Link},
		{"slow PCIe", "MEMQ/SR", 4, 0, set("pcie.gbps", 0.5), nil, nil, PCIe},
		{"slow work requests", "MEMQ/SR", 4, 0, set("nic.wqe_ns", 100000), nil, nil, NICUnits},
		{"two contexts cached", "MEMQ/SR", 4, 0, func(p *sim.Profile) {
			set("nic.qp_cache_ways", 0)(p)
			set("nic.qp_cache_entries", 2)(p)
			set("nic.qp_cache_miss_ns", 20000)(p)
		}, nil, nil, ContextMisses},
		{"costly tuples", "MEMQ/SR", 2, 400, nil, nil, nil, CPU},
		// Eight threads per node share one endpoint, whose lock every
		// call takes: most of each thread's time is waiting for it.
		{"one shared endpoint", "SESQ/SR", 8, 0, nil, nil, nil, Locks},
		// A buffer per peer: each send waits a round trip for the
		// credit of the one before, and nothing is near saturated.
		{"one buffer, long cables", "MEMQ/SR", 2, 0, set("link.propagation_ns", 20000), oneBuffer(2 << 20), nil, FlowControl},
		// Node 0's receivers post nothing until 4 ms, well into the
		// shuffle (its setup ends near 2.1 ms): its peers' sends are
		// NAKed receive-not-ready and retried. Messages of 4 KiB keep
		// the retries within the link's capacity (at 64 KiB they fill
		// node 0's downlink, and the diagnosis is the link).
		{"receivers not posting", "MEMQ/SR", 2, 0, nil, func(c *experiments.RunConfig) { c.MsgBytes, c.BytesPerNode = 4096, 1<<20 },
			plan("slow_receiver:\n  - node: 0\n    from: 0ms\n    to: 4ms\n"), ReceiverReady},
		// A reader pulls each buffer and hands it back (FreeArr), a
		// round trip that uses no credit: with one buffer per peer and
		// long cables, senders and receivers mostly wait on it. (A tiny
		// input with buffers to spare is no latency case: senders that
		// never wait count as 100% busy over their short lives.)
		{"reads over long cables", "MEMQ/RD", 2, 0, set("link.propagation_ns", 20000), oneBuffer(2 << 20), nil, Latency},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := experiments.DefaultConfig()
			cfg.Design, cfg.Nodes, cfg.Threads, cfg.BytesPerNode, cfg.CyclesPerTuple = tc.design, 4, tc.threads, 8<<20, tc.cycles
			if tc.config != nil {
				tc.config(&cfg)
			}
			j := &job{cfg: cfg, profile: tc.profile}
			Options{Run: func(c experiments.RunConfig, o experiments.SimOptions) (*results.Record, error) {
				o.Plan = tc.plan
				return experiments.RunSim(c, o)
			}}.runAll("test", []*job{j})
			if j.err != nil {
				t.Fatal(j.err)
			}
			b := diagnose(measure(j.rec, j.usage, j.stats, 2*cfg.Threads*cfg.Nodes))
			t.Logf("%s: %s; usage %+v", b.Resource, b.Why, b.Usage)
			if b.Resource != tc.want {
				t.Errorf("bottleneck %s (%s), want %s; usage %+v", b.Resource, b.Why, tc.want, b.Usage)
			}
		})
	}
}

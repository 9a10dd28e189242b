package advise

import (
	"fmt"
	"sort"

	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// Resource is what can limit a shuffle.
type Resource string

const (
	Link          Resource = "link"           // a node's link (either direction) or a cable between switches
	NICUnits      Resource = "nic-units"      // the NIC's processing units, processing work requests
	ContextMisses Resource = "context-misses" // the units held waiting for queue-pair contexts fetched over PCIe
	PCIe          Resource = "pcie"           // payload DMA reads, or the receive pipeline writing to host memory
	CPU           Resource = "cpu"            // the sending or receiving threads, busy (not waiting)
	Locks         Resource = "locks"          // threads waiting for locks other threads hold: a shared endpoint's, the provider's queue-pair and completion-queue locks
	FlowControl   Resource = "flow-control"   // senders waiting for credit while nothing is saturated
	ReceiverReady Resource = "receiver-ready" // receive-not-ready NAKs: receivers did not post in time
	Latency       Resource = "latency"        // nothing saturated and nothing waited on: round trips and start-up
)

// Saturated is the utilisation from which a resource is taken to limit a
// run: the busiest resource at or above it is the bottleneck.
const Saturated = 0.8

// Usage is what a run kept busy, each as a fraction of its response time
// (the busiest node's), and the counters that say why nothing was.
type Usage struct {
	Link          float64 `json:"link"`            // the busiest link direction or inter-switch cable
	NICUnits      float64 `json:"nic_units"`       // the busiest processing unit, working or held by a fetch
	UnitsWaiting  float64 `json:"units_waiting"`   // that unit's held part alone
	PCIe          float64 `json:"pcie"`            // the busier of DMA reads and the receive pipeline (busiest node)
	CPU           float64 `json:"cpu"`             // the busier of sending and receiving threads, all nodes
	LockWait      float64 `json:"lock_wait"`       // threads' time waiting for locks other threads held (endpoint mutexes, provider locks), all threads
	ContextMisses float64 `json:"context_misses"`  // fraction of queue-pair context lookups that missed
	CreditStalls  int64   `json:"credit_stalls"`   // sends that waited for credit
	RNRNaks       int64   `json:"rnr_naks"`        // receive-not-ready NAKs
	Trunk         float64 `json:"trunk,omitempty"` // the busiest cable between switches (0 on a single switch)
}

// Bottleneck is what limited a design's run, and the figures behind it.
type Bottleneck struct {
	Resource Resource `json:"resource"`
	Why      string   `json:"why"`
	Usage    Usage    `json:"usage"`
}

// measure reads a run's usage from the cluster's busy times and counters
// and the record's thread idleness.
func measure(rec *results.Record, u sim.Usage, st sim.Stats, threads int) Usage {
	t := fabric.Duration(rec.ResponseS*1e12 + 0.5)
	if t <= 0 {
		return Usage{}
	}
	frac := func(d fabric.Duration) float64 { return float64(d) / float64(t) }
	var m Usage
	for _, n := range u.Nodes {
		m.Link = max(m.Link, frac(n.Uplink), frac(n.Downlink))
		for k := range n.Units {
			if v := frac(n.Units[k] + n.UnitsWait[k]); v > m.NICUnits {
				m.NICUnits, m.UnitsWaiting = v, frac(n.UnitsWait[k])
			}
		}
		m.PCIe = max(m.PCIe, frac(n.PCIeRead), frac(n.Rx))
	}
	m.Trunk = frac(u.Trunk)
	m.Link = max(m.Link, m.Trunk)
	m.CPU = max(1-rec.SenderIdle, 1-rec.ReceiverIdle)
	if threads > 0 {
		m.LockWait = float64(st.LockWait+st.MutexWait) / float64(t) / float64(threads)
	}
	m.ContextMisses = st.QPCacheMissRate()
	m.CreditStalls, m.RNRNaks = rec.CreditStalls, st.RNRNaks
	return m
}

// diagnose names the bottleneck of a run with usage m: the busiest
// resource at or above Saturated (the units' waiting for contexts, and
// the threads' waiting for locks, named as such when it is most of their
// time), or, when nothing is saturated,
// what the run waited on.
func diagnose(m Usage) Bottleneck {
	type level struct {
		r    Resource
		v    float64
		what string
	}
	levels := []level{
		{Link, m.Link, "busiest link %.0f%% busy"},
		{NICUnits, m.NICUnits, "NIC processing units %.0f%% occupied"},
		{PCIe, m.PCIe, "PCIe %.0f%% busy"},
		{CPU, m.CPU, "threads %.0f%% busy"},
	}
	sort.SliceStable(levels, func(i, j int) bool { return levels[i].v > levels[j].v })
	top := levels[0]
	b := Bottleneck{Usage: m}
	if top.v >= Saturated {
		b.Resource, b.Why = top.r, fmt.Sprintf(top.what, 100*top.v)
		if top.r == Link && m.Trunk > 0 && m.Trunk >= m.Link {
			b.Why = fmt.Sprintf("a cable between switches %.0f%% busy", 100*m.Trunk)
		}
		if top.r == CPU && m.LockWait > m.CPU/2 {
			// A thread waiting for a lock is busy to the meter (it is not
			// waiting for the network): most of that is lock waiting.
			b.Resource = Locks
			b.Why = fmt.Sprintf("threads %.0f%% busy, %.0f%% of their time waiting for locks other threads hold", 100*m.CPU, 100*m.LockWait)
		}
		if top.r == NICUnits && m.UnitsWaiting > m.NICUnits/2 {
			b.Resource = ContextMisses
			b.Why = fmt.Sprintf("%.0f%% of context lookups miss; NIC units %.0f%% occupied, %.0f%% of it waiting for fetches", 100*m.ContextMisses, 100*m.NICUnits, 100*m.UnitsWaiting/m.NICUnits)
		}
		return b
	}
	busiest := fmt.Sprintf("nothing saturated (busiest: "+top.what+")", 100*top.v)
	switch {
	case m.ContextMisses >= 0.5:
		// A receive-side miss holds the packet (and its credit) in the
		// NIC's buffer while the pipeline goes on: the misses slow the
		// senders through credit, with no unit saturated.
		b.Resource, b.Why = ContextMisses, fmt.Sprintf("%.0f%% of context lookups miss; %s", 100*m.ContextMisses, busiest)
	case m.RNRNaks > 0:
		b.Resource, b.Why = ReceiverReady, fmt.Sprintf("%d receive-not-ready NAKs; %s", m.RNRNaks, busiest)
	case m.CreditStalls > 0:
		b.Resource, b.Why = FlowControl, fmt.Sprintf("%d sends waited for credit; %s", m.CreditStalls, busiest)
	default:
		b.Resource, b.Why = Latency, busiest
	}
	return b
}

package algos_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/fabric"
)

type sendEvent struct {
	node, dest int
	phase      uint64
	at         fabric.Time
}

// shufflePeer runs one repartition shuffle through the endpoint open makes
// (one sending and one receiving thread per node) and checks the tallies.
func shufflePeer(t *testing.T, nodes int, open func(fabric.Thread, algos.Config) (algos.Endpoint, error)) {
	t.Helper()
	runShuffle(t, nodes, open, algos.Config{Buffers: 2, CreditEvery: 2, Threads: 1}, 0)
}

// TestHyPerPhasesAlternate watches every data message the scheduled
// multiplexer sends: in phase p node i sends only to (i + (p-1) mod (n-1)
// + 1) mod n, the nodes' targets in a phase are distinct (a permutation),
// and no message of phase p+1 leaves before every message of phase p.
func TestHyPerPhasesAlternate(t *testing.T) {
	const n = 4
	var evs []sendEvent
	obs := func(node int, phase uint64, dest int, at fabric.Time) {
		evs = append(evs, sendEvent{node, dest, phase, at})
	}
	shufflePeer(t, n, func(th fabric.Thread, c algos.Config) (algos.Endpoint, error) {
		return algos.OpenHyPer(th, c, algos.HyPerOptions{PhaseMessages: 2, Observe: obs})
	})
	if len(evs) < 3*n {
		t.Fatalf("only %d messages observed", len(evs))
	}
	type key struct {
		phase uint64
		node  int
	}
	targets := map[uint64]map[int]int{} // phase -> dest -> sender
	first, last := map[uint64]fabric.Time{}, map[uint64]fabric.Time{}
	perPhase := map[key]int{}
	for _, e := range evs {
		want := (e.node + int((e.phase-1)%(n-1)) + 1) % n
		if e.dest != want {
			t.Fatalf("node %d sent to %d in phase %d, want %d", e.node, e.dest, e.phase, want)
		}
		if targets[e.phase] == nil {
			targets[e.phase] = map[int]int{}
		}
		if s, ok := targets[e.phase][e.dest]; ok && s != e.node {
			t.Fatalf("phase %d: nodes %d and %d both send to %d", e.phase, s, e.node, e.dest)
		}
		targets[e.phase][e.dest] = e.node
		if f, ok := first[e.phase]; !ok || e.at < f {
			first[e.phase] = e.at
		}
		last[e.phase] = max(last[e.phase], e.at)
		if perPhase[key{e.phase, e.node}]++; perPhase[key{e.phase, e.node}] > 2 {
			t.Fatalf("node %d sent more than 2 messages in phase %d", e.node, e.phase)
		}
	}
	for p, f := range first {
		if l, ok := last[p-1]; ok && f < l {
			t.Fatalf("phase %d started at %v, before phase %d's last message at %v", p, f, p-1, l)
		}
	}
	if len(targets) < 2*(n-1) {
		t.Fatalf("only %d phases used", len(targets))
	}
}

// TestPeersUnscheduledAndMW: the unscheduled multiplexer and the RDMA
// Write middleware (with and without software-stack costs) deliver exactly
// what was sent.
func TestPeersUnscheduledAndMW(t *testing.T) {
	siw := algos.SoftIWARPCosts
	for name, open := range map[string]func(fabric.Thread, algos.Config) (algos.Endpoint, error){
		"unscheduled": func(th fabric.Thread, c algos.Config) (algos.Endpoint, error) {
			return algos.OpenHyPer(th, c, algos.HyPerOptions{Schedule: algos.ScheduleNone})
		},
		"mw": func(th fabric.Thread, c algos.Config) (algos.Endpoint, error) {
			return algos.OpenRDMAMW(th, c, algos.MWOptions{Threshold: 512, RecordBytes: 256})
		},
		"mw-siw": func(th fabric.Thread, c algos.Config) (algos.Endpoint, error) {
			return algos.OpenRDMAMW(th, c, algos.MWOptions{Threshold: 1024, NoticeBytes: 100, Stack: &siw})
		},
	} {
		t.Run(name, func(t *testing.T) { shufflePeer(t, 3, open) })
	}
}

// TestPeerOptionsRejected: bad knobs fail at open with ErrConfig and say
// which knob.
func TestPeerOptionsRejected(t *testing.T) {
	cfg := algos.Config{Nodes: 2, MsgBytes: 64 << 10, Buffers: 2, CreditEvery: 2}
	for _, tc := range []struct {
		open func() error
		want string
	}{
		{func() error { _, err := algos.OpenHyPer(nil, cfg, algos.HyPerOptions{Schedule: "zigzag"}); return err }, "schedule"},
		{func() error { _, err := algos.OpenHyPer(nil, cfg, algos.HyPerOptions{PhaseMessages: -1}); return err }, "messages per phase"},
		{func() error { _, err := algos.OpenHyPer(nil, cfg, algos.HyPerOptions{InFlight: -2}); return err }, "in flight"},
		{func() error {
			_, err := algos.OpenHyPer(nil, cfg, algos.HyPerOptions{TCP: &algos.IPoIBCosts{SegmentBytes: 0}})
			return err
		}, "segments"},
		{func() error { _, err := algos.OpenRDMAMW(nil, cfg, algos.MWOptions{Threshold: 40 << 10}); return err }, "write threshold"},
		{func() error { _, err := algos.OpenRDMAMW(nil, cfg, algos.MWOptions{Threshold: -1}); return err }, "write threshold"},
		{func() error { _, err := algos.OpenRDMAMW(nil, cfg, algos.MWOptions{NoticeBytes: 1 << 20}); return err }, "notice"},
		{func() error { _, err := algos.OpenRDMAMW(nil, cfg, algos.MWOptions{RecordBytes: 100}); return err }, "staging buffers"},
	} {
		err := tc.open()
		if !errors.Is(err, algos.ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want ErrConfig naming %q", err, tc.want)
		}
	}
}

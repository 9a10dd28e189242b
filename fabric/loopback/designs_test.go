package loopback_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/host"
	"github.com/rdmashuffle/rdmashuffle/fabric/loopback"
)

// TestDesigns runs every design that moves tuples (the eight designs, the
// IPoIB and MPI baselines, the peer designs) for every pattern on loopback
// nodes with real threads, moving real bytes, and checks the run's
// integrity: every tuple arrived once, with its content. Run it under
// go test -race (make test does, at GOMAXPROCS 2 and 4): the race detector
// then checks the designs' locking and the NIC's memory ordering.
func TestDesigns(t *testing.T) {
	pats := []algos.Pattern{algos.Repartition, algos.Broadcast, algos.Multicast + ":2"}
	for _, d := range experiments.Catalogue() {
		if !experiments.MovesTuples(d) {
			continue
		}
		for _, pat := range pats {
			if d.Check(algos.Options{Pattern: pat}) != nil {
				continue // the design does not take the pattern (the UD designs and multicast)
			}
			t.Run(strings.ReplaceAll(d.Name, "/", "-")+"/"+string(pat), func(t *testing.T) {
				shuffle(t, experiments.RunConfig{Design: d.Name, Pattern: pat})
			})
		}
	}
}

// TestDesignVariants: adaptive receive buffers and UD loss recovery, whose
// extra threads and bookkeeping the plain runs do not exercise.
func TestDesignVariants(t *testing.T) {
	for _, c := range []experiments.RunConfig{
		{Design: "MEMQ/SR", Adaptive: true, MaxBuffers: 8},
		{Design: "SEMQ/SR", Adaptive: true, MaxBuffers: 8},
		{Design: "MESQ/SR", UDRecovery: true},
		{Design: "SESQ/SR", UDRecovery: true},
	} {
		name := fmt.Sprintf("%s/adaptive=%v/udrecovery=%v", strings.ReplaceAll(c.Design, "/", "-"), c.Adaptive, c.UDRecovery)
		t.Run(name, func(t *testing.T) {
			c.Pattern = algos.Repartition
			shuffle(t, c)
		})
	}
}

// TestDCDesignsReconnect runs the DC designs on more nodes than an
// endpoint has DC initiators, so that initiators change target (and
// destinations wait for the initiator their earlier messages took)
// while real threads send, receive and release.
func TestDCDesignsReconnect(t *testing.T) {
	for _, c := range []experiments.RunConfig{
		{Design: algos.NameMEMQSRDC, Pattern: algos.Repartition},
		{Design: algos.NameMEMQSRDC, Pattern: algos.Multicast + ":2"},
		{Design: algos.NameMEMQWRDC, Pattern: algos.Repartition},
		{Design: algos.NameMEMQWRDC, Pattern: algos.Repartition, Notify: algos.NotifyQueue},
	} {
		t.Run(fmt.Sprintf("%s/%s/%s", strings.ReplaceAll(c.Design, "/", "-"), c.Pattern, c.Notify), func(t *testing.T) {
			shuffleOn(t, c, 6)
		})
	}
}

// shuffle runs cfg on three loopback nodes with two threads each and a
// small input, and checks the record.
func shuffle(t *testing.T, cfg experiments.RunConfig) {
	t.Helper()
	shuffleOn(t, cfg, 3)
}

// shuffleOn runs cfg on nodes loopback nodes, as shuffle does.
func shuffleOn(t *testing.T, cfg experiments.RunConfig, nodes int) {
	t.Helper()
	f, err := loopback.Open(host.Config{Seed: 3, TimeLimit: 2 * time.Minute}, nodes)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg.Nodes, cfg.Threads, cfg.Seed, cfg.Payload = nodes, 2, 3, true
	cfg.MsgBytes, cfg.BytesPerNode = 4096, 96<<10
	if cfg.Timeout == 0 {
		// Real threads under the race detector, at GOMAXPROCS 1 on a
		// loaded machine, can go seconds without progress that a design
		// needs from another node's threads (MPI's broadcast waits for
		// every destination to be in the library); a stall is still a
		// failure, after 20 s rather than 5.
		cfg.Timeout = 20 * fabric.Second
	}
	rec, err := experiments.RunOn(f, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Integrity != "ok" || rec.TuplesSent == 0 || rec.TuplesReceived == 0 || rec.Backend != "loopback" {
		t.Fatalf("integrity %q, %d tuples sent, %d received, backend %q", rec.Integrity, rec.TuplesSent, rec.TuplesReceived, rec.Backend)
	}
}

// TestMPIBroadcastRepeated: the MPI baseline's eager broadcast wrote a
// buffer's header again for every destination while the NIC was still
// sending the buffer to the first ones (a write to memory the NIC owns;
// harmless bytes on hardware, but outside the contract). Under -race the
// detector reported it in about half of the runs; eight runs make a
// regression all but certain to show.
func TestMPIBroadcastRepeated(t *testing.T) {
	for i := 0; i < 8; i++ {
		shuffle(t, experiments.RunConfig{Design: "MPI", Pattern: algos.Broadcast})
	}
}

// TestSharedAdaptiveRepeated: with adaptive buffers, a shared endpoint's
// PutData checked the buffer against the endpoint's buffer list before
// taking the endpoint's lock, while another thread's Acquire grew the list
// under it. Repeated because the detector sees it only when the two
// threads meet.
func TestSharedAdaptiveRepeated(t *testing.T) {
	for i := 0; i < 6; i++ {
		shuffle(t, experiments.RunConfig{Design: "SEMQ/SR", Pattern: algos.Repartition, Adaptive: true, MaxBuffers: 8})
	}
}

// TestDesignsAbortCleanly stops every design at several points of a run
// (the run's wall-clock time limit) on real threads. A stopped run must
// report the time limit, and its threads must unwind: a design that let
// its lock go around CPU work and took it back only on return left its
// caller's deferred unlock to free a free lock, which kills the process
// (HyPer-TCP and RDMA-MW/siw at GOMAXPROCS 1), and a lock held across
// CPU work without a deferred unlock stalls the threads still running.
func TestDesignsAbortCleanly(t *testing.T) {
	for _, d := range experiments.Catalogue() {
		if !experiments.MovesTuples(d) {
			continue
		}
		t.Run(strings.ReplaceAll(d.Name, "/", "-"), func(t *testing.T) {
			for _, limit := range []time.Duration{2 * time.Millisecond, 8 * time.Millisecond, 25 * time.Millisecond} {
				f, err := loopback.Open(host.Config{Seed: 3, TimeLimit: limit}, 3)
				if err != nil {
					t.Fatal(err)
				}
				cfg := experiments.RunConfig{Design: d.Name, Pattern: algos.Repartition, Nodes: 3, Threads: 2, Seed: 3,
					BytesPerNode: 4 << 20, Timeout: 5 * fabric.Second}
				_, err = experiments.RunOn(f, cfg)
				if err != nil && (!errors.Is(err, fabric.ErrTimeLimit) || strings.Contains(err.Error(), "did not return")) {
					t.Errorf("stopped after %v: %v", limit, err)
				}
				if err := f.Close(); err != nil {
					t.Errorf("Close after a run stopped after %v: %v", limit, err)
				}
			}
		})
	}
}

// TestMPIOneProcessor: the MPI baseline's progress engine waits by polling
// (holding its lock, letting it go only for a few cycles of Compute) and
// never calls Wait. At GOMAXPROCS 1 its threads kept the only processor
// until the runtime preempted them, every 10-20 ms, so the NICs and the
// other nodes' threads ran only in between; a rendezvous took seconds and
// most runs failed after 1 s with "no progress ... while receiving",
// while every other design passed in 40 ms. This is that run (explore run
// --backend loopback --design MPI --nodes 4 --threads 2 --bytes-per-node
// 524288 --payload) with its default watchdog, repeated.
func TestMPIOneProcessor(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for i := 0; i < 8; i++ {
		f, err := loopback.Open(host.Config{Seed: uint64(i), TimeLimit: 2 * time.Minute}, 4)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := experiments.RunOn(f, experiments.RunConfig{Design: "MPI", Pattern: algos.Repartition, Nodes: 4, Threads: 2,
			Seed: uint64(i) + 1, BytesPerNode: 512 << 10, Payload: true})
		if cerr := f.Close(); err == nil && cerr != nil {
			err = cerr
		}
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		if rec.Integrity != "ok" || rec.TuplesReceived == 0 {
			t.Fatalf("run %d: integrity %q, %d tuples received", i, rec.Integrity, rec.TuplesReceived)
		}
	}
}

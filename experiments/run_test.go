package experiments

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/internal/setting"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/host"
	"github.com/rdmashuffle/rdmashuffle/fabric/loopback"
	"github.com/rdmashuffle/rdmashuffle/fabric/netspec"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
	"github.com/rdmashuffle/rdmashuffle/tpch"
)

func TestRunIntegrity(t *testing.T) {
	for _, design := range DesignNames(OnSimulator) {
		for _, pat := range []algos.Pattern{algos.Repartition, algos.Broadcast, "multicast:3"} {
			if strings.Contains(design, "SQ/") && pat != algos.Repartition && pat != algos.Broadcast ||
				design == "qperf" && pat != algos.Repartition {
				continue // rejected: see TestRunBadInput
			}
			for _, seed := range []uint64{1, 2} {
				t.Run(fmt.Sprintf("%s/%s/seed=%d", design, pat, seed), func(t *testing.T) {
					rec, err := Run(RunConfig{Design: design, Nodes: 4, Threads: 2, Pattern: pat, Profile: "edr-cx4",
						MsgBytes: 4096, Buffers: 2, CreditEvery: 2, BytesPerNode: 256 << 10, Seed: seed, Payload: true})
					if err != nil {
						t.Fatal(err)
					}
					if rec.Integrity != "ok" || rec.TuplesSent == 0 && design != "qperf" || rec.TuplesReceived != rec.TuplesSent {
						t.Fatalf("integrity %s: sent %d received %d", rec.Integrity, rec.TuplesSent, rec.TuplesReceived)
					}
					t.Logf("%.2f GiB/s, setup %.2f ms, %d QPs, %d credit writes", rec.ThroughputGiBs, rec.SetupMS, rec.QPsPerNode, rec.CreditWrites)
				})
			}
		}
	}
}

// TestUDReorder: with reordering on every link, the UD designs still
// deliver exactly the sent multiset; end-of-stream messages overtaken by
// data are handled by counting.
func TestUDReorder(t *testing.T) {
	for _, design := range []string{"SESQ/SR", "MESQ/SR"} {
		for _, seed := range []uint64{1, 2, 3} {
			t.Run(fmt.Sprintf("%s/seed=%d", design, seed), func(t *testing.T) {
				rec, err := RunSim(RunConfig{Design: design, Nodes: 4, Threads: 2, Profile: "edr-cx4", Buffers: 4,
					BytesPerNode: 256 << 10, Seed: seed, Payload: true},
					SimOptions{Faults: sim.Faults{Reorder: 0.2, ReorderDelay: 3 * fabric.Microsecond}})
				if err != nil {
					t.Fatal(err)
				}
				if rec.Integrity != "ok" {
					t.Fatalf("integrity %s", rec.Integrity)
				}
			})
		}
	}
}

// TestUDLossEndsCleanly: a lost UD data message ends the shuffle with an
// error that says what is missing, within the timeout, never a hang or a
// silently wrong result.
func TestUDLossEndsCleanly(t *testing.T) {
	_, err := RunSim(RunConfig{Design: "MESQ/SR", Nodes: 4, Threads: 1, Profile: "edr-cx4", Buffers: 4,
		BytesPerNode: 256 << 10, Seed: 1, Timeout: fabric.Millisecond}, SimOptions{Faults: sim.Faults{Loss: 0.01}})
	if err == nil || !strings.Contains(err.Error(), "missing") && !strings.Contains(err.Error(), "no end of stream") {
		t.Fatalf("got %v, want an error naming missing messages", err)
	}
}

// refusal is how a test expects a configuration to be refused: naming a
// setting (a setting.Error), wrapping a sentinel, or, where the error has
// no type of its own, in words.
type refusal struct {
	setting string
	is      error
	words   string
}

// check reports what err lacks of the refusal r ("" when nothing).
func (r refusal) check(err error) string {
	switch {
	case err == nil:
		return "no error"
	case r.setting != "" && !refuses(err, r.setting):
		return "no setting.Error naming " + r.setting
	case r.is != nil && !errors.Is(err, r.is):
		return fmt.Sprintf("not %v", r.is)
	case r.words != "" && !strings.Contains(err.Error(), r.words):
		return fmt.Sprintf("no mention of %q", r.words)
	}
	return ""
}

func TestRunBadInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  RunConfig
		want refusal
	}{
		{"unknown design", RunConfig{Design: "XX/YY", Nodes: 2}, refusal{words: "unknown design"}},
		{"threads", RunConfig{Design: "MEMQ/SR", Nodes: 2, Threads: 100}, refusal{setting: "Threads"}},
		{"above the MTU", RunConfig{Design: "MESQ/SR", Nodes: 2, MsgBytes: 8192}, refusal{setting: "MsgBytes"}},
		{"unknown pattern", RunConfig{Design: "MEMQ/SR", Nodes: 2, Pattern: "sideways"}, refusal{is: algos.ErrConfig}},
		{"two transmission groups", RunConfig{Design: "MESQ/SR", Nodes: 4, Pattern: "multicast:2"}, refusal{setting: "Pattern"}},
		{"multicast beyond the nodes", RunConfig{Design: "MEMQ/SR", Nodes: 4, Pattern: "multicast:5"}, refusal{is: algos.ErrConfig}},
		{"qperf on one node", RunConfig{Design: "qperf", Nodes: 1}, refusal{setting: "Nodes"}},
		{"qperf broadcasting", RunConfig{Design: "qperf", Nodes: 4, Pattern: algos.Broadcast}, refusal{setting: "Pattern"}},
		{"credit beyond the buffers", RunConfig{Design: "MEMQ/SR", Nodes: 2, Buffers: 1, CreditEvery: 2}, refusal{is: algos.ErrConfig}},
		{"unknown profile", RunConfig{Design: "MEMQ/SR", Nodes: 2, Profile: "nope"}, refusal{words: "unknown profile"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.cfg.Profile == "" {
				tc.cfg.Profile = "edr-cx4"
			}
			_, err := Run(tc.cfg)
			if lack := tc.want.check(err); lack != "" {
				t.Fatalf("got %v: %s", err, lack)
			}
		})
	}
}

func TestWriteNotifyVariants(t *testing.T) {
	for _, design := range []string{"SEMQ/WR", "MEMQ/WR"} {
		for _, v := range []algos.Notify{algos.NotifyCQ, algos.NotifyBuffers, algos.NotifyQueue} {
			for _, pat := range []algos.Pattern{algos.Repartition, algos.Broadcast} {
				t.Run(fmt.Sprintf("%s/%s/%s", design, v, pat), func(t *testing.T) {
					rec, err := Run(RunConfig{Design: design, Notify: v, Nodes: 4, Threads: 2, Pattern: pat, Profile: "edr-cx4",
						MsgBytes: 4096, BytesPerNode: 256 << 10, Seed: 3, Payload: true})
					if err != nil {
						t.Fatal(err)
					}
					if rec.Integrity != "ok" || rec.TuplesReceived != rec.TuplesSent {
						t.Fatalf("integrity %s: sent %d received %d", rec.Integrity, rec.TuplesSent, rec.TuplesReceived)
					}
				})
			}
		}
	}
	if _, err := Run(RunConfig{Design: "MEMQ/WR", Notify: "smoke", Nodes: 2, Profile: "edr-cx4"}); !errors.Is(err, algos.ErrConfig) || !strings.Contains(err.Error(), "smoke") {
		t.Fatalf("unknown variant: %v", err)
	}
}

// TestBaselinesAtTheirMessageSizes runs IPoIB (128 KB) and MPI (64 KB, so
// the rendezvous path, with eager sends for the small final buffers) in
// payload mode with several receiving threads, and qperf, whose record
// counts messages rather than tuples.
func TestBaselinesAtTheirMessageSizes(t *testing.T) {
	for _, design := range []string{"IPoIB", "MPI"} {
		for _, pat := range []algos.Pattern{algos.Repartition, algos.Broadcast} {
			for _, seed := range []uint64{1, 2} {
				t.Run(fmt.Sprintf("%s/%s/seed=%d", design, pat, seed), func(t *testing.T) {
					// Seed 2: one buffer per destination and a slow receiving
					// fragment, so messages arrive before receives are posted
					// (MPI's unexpected queue).
					cfg := RunConfig{Design: design, Nodes: 4, Threads: 3, Pattern: pat, Profile: "fdr-cx3",
						BytesPerNode: 2 << 20, Seed: seed, Payload: true}
					if seed == 2 {
						cfg.Buffers, cfg.CreditEvery, cfg.CyclesPerTuple = 1, 1, 300
					}
					rec, err := Run(cfg)
					if err != nil {
						t.Fatal(err)
					}
					if rec.Integrity != "ok" || rec.TuplesSent == 0 || rec.QPsPerNode != 4 {
						t.Fatalf("integrity %s, %d tuples, %d QPs", rec.Integrity, rec.TuplesSent, rec.QPsPerNode)
					}
				})
			}
		}
	}
	rec, err := Run(RunConfig{Design: "qperf", Nodes: 4, Threads: 2, Profile: "edr-cx4", BytesPerNode: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Integrity != "ok" || rec.QPsPerNode != 6 || rec.ThroughputGiBs <= 0 || rec.MsgBytes != 64<<10 {
		t.Fatalf("qperf record: %+v", rec)
	}
}

// TestAdaptiveIntegrity: adaptive buffers on every design that supports
// them deliver exactly the sent multiset in payload mode, with a slow and
// a fast receiving fragment (so that lanes both grow and shrink), and the
// pool accounts for every registered byte (Run checks it at Close).
func TestAdaptiveIntegrity(t *testing.T) {
	for _, design := range []string{"SESQ/SR", "MESQ/SR", "SEMQ/SR", "MEMQ/SR", "SEMQ/WR", "MEMQ/WR", "SEMQ/RD", "MEMQ/RD"} {
		for _, pat := range []algos.Pattern{algos.Repartition, algos.Broadcast} {
			t.Run(fmt.Sprintf("%s/%s", design, pat), func(t *testing.T) {
				rec, err := Run(RunConfig{Design: design, Nodes: 3, Threads: 2, Pattern: pat, Profile: "edr-cx4", MsgBytes: 4096,
					Buffers: 2, CreditEvery: 1, BytesPerNode: 512 << 10, Seed: 3, Payload: true, Adaptive: true, MaxBuffers: 16,
					NodeCycles: []int64{0, 80, 10}})
				if err != nil {
					t.Fatal(err)
				}
				if rec.Integrity != "ok" || rec.TuplesSent == 0 {
					t.Fatalf("integrity %s, %d tuples", rec.Integrity, rec.TuplesSent)
				}
				if rec.PoolPeakBytes == 0 || rec.BuffersGrown+rec.BuffersRetired == 0 {
					t.Fatalf("the pool was not used or nothing adapted: %+v", rec)
				}
			})
		}
	}
	for _, tc := range []struct {
		cfg     RunConfig
		setting string
	}{
		{RunConfig{Design: "IPoIB", Nodes: 2, Adaptive: true}, "Adaptive"},
		{RunConfig{Design: "MPI", Nodes: 2, Adaptive: true}, "Adaptive"},
		{RunConfig{Design: "MESQ/SR", Nodes: 2, MaxBuffers: 4}, "MaxBuffers"},
		{RunConfig{Design: "MESQ/SR", Nodes: 2, Adaptive: true, Buffers: 8, MaxBuffers: 4}, "MaxBuffers"},
		{RunConfig{Design: "MESQ/SR", Nodes: 2, NodeCycles: []int64{-1}}, "NodeCycles"},
	} {
		tc.cfg.Profile = "edr-cx4"
		if _, err := Run(tc.cfg); !refuses(err, tc.setting) {
			t.Errorf("%+v: got %v, want it refused naming %s", tc.cfg, err, tc.setting)
		}
	}
}

// TestAdaptivePinnedCap: with a cap that the initial buffers just fill,
// growth stops at the cap and the run completes; a cap below the initial
// buffers fails setup with an error naming the cap.
func TestAdaptivePinnedCap(t *testing.T) {
	cfg := RunConfig{Design: "MEMQ/WR", Nodes: 4, Threads: 2, Profile: "edr-cx4", Buffers: 2, CreditEvery: 1,
		BytesPerNode: 4 << 20, Seed: 1, Adaptive: true, MaxBuffers: 64, PinnedCapMiB: 1, CyclesPerTuple: 30}
	rec, err := Run(cfg) // 2 endpoints x 4 destinations x 2 buffers x 64 KiB = the 1 MiB cap
	if err != nil {
		t.Fatal(err)
	}
	if rec.Integrity != "ok" || rec.PoolPeakBytes > 1<<20 || rec.PoolPeakBytes < 1<<20 {
		t.Fatalf("integrity %s, pool peak %d bytes with a 1 MiB cap", rec.Integrity, rec.PoolPeakBytes)
	}
	cfg.Buffers = 4
	if _, err := Run(cfg); err == nil || !strings.Contains(err.Error(), "pinned-memory cap") {
		t.Fatalf("initial buffers above the cap: %v", err)
	}
}

// TestRecordConfig: a record's Config runs the same shuffle again, with
// the same numbers.
func TestRecordConfig(t *testing.T) {
	for _, cfg := range []RunConfig{
		{Design: "MESQ/SR", Nodes: 3, Threads: 2, Profile: "fdr-cx3", Buffers: 3, CreditEvery: 1,
			BytesPerPair: 64 << 10, Seed: 7, Adaptive: true, MaxBuffers: 8, NodeCycles: []int64{5, 50}, Label: "x"},
		// The pinned-memory cap was not in the record: the rerun (the
		// steady-state check, say) ran without it.
		{Design: "MEMQ/WR", Nodes: 4, Threads: 2, Profile: "edr-cx4", Buffers: 2, CreditEvery: 1,
			BytesPerNode: 2 << 20, Seed: 1, Adaptive: true, MaxBuffers: 64, PinnedCapMiB: 1, CyclesPerTuple: 30},
		{Design: "MEMQ/SR", Nodes: 4, Threads: 4, Profile: "fdr-cx3", Buffers: 2, CreditEvery: 1,
			BytesPerNode: 1 << 20, Seed: 1, QPNumbering: 5},
	} {
		t.Run(cfg.Design, func(t *testing.T) {
			a, err := Run(cfg)
			if err == nil && a.QPNumbering != cfg.QPNumbering {
				t.Errorf("record's qp_numbering %d, ran %d", a.QPNumbering, cfg.QPNumbering)
			}
			if err != nil {
				t.Fatal(err)
			}
			b, err := Run(ConfigOf(a))
			if err != nil {
				t.Fatal(err)
			}
			a.WallS, b.WallS = 0, 0
			if fmt.Sprintf("%+v", *a) != fmt.Sprintf("%+v", *b) {
				t.Fatalf("rerun differs:\n%+v\n%+v", *a, *b)
			}
		})
	}
}

// TestUDRecovery: with loss recovery on, the UD designs deliver exactly
// the sent multiset under random loss (data and credit messages alike),
// duplication and reordering, in payload mode; without it the same loss
// ends the run with a clean error (TestUDLossEndsCleanly).
func TestUDRecovery(t *testing.T) {
	for _, design := range []string{"SESQ/SR", "MESQ/SR"} {
		for _, f := range []sim.Faults{
			{Loss: 0.001},
			{Loss: 0.01, Reorder: 0.05},
			{Loss: 0.02, Duplicate: 0.02, Reorder: 0.02},
		} {
			for _, pat := range []algos.Pattern{algos.Repartition, algos.Broadcast} {
				t.Run(fmt.Sprintf("%s/%s/loss=%v,dup=%v", design, pat, f.Loss, f.Duplicate), func(t *testing.T) {
					rec, err := RunSim(RunConfig{Design: design, Nodes: 4, Threads: 2, Pattern: pat, Profile: "edr-cx4", Buffers: 4,
						BytesPerNode: 1 << 20, Seed: 5, Payload: true, UDRecovery: true}, SimOptions{Faults: f})
					if err != nil {
						t.Fatal(err)
					}
					if rec.Integrity != "ok" || rec.TuplesSent == 0 {
						t.Fatalf("integrity %s, %d tuples", rec.Integrity, rec.TuplesSent)
					}
					if rec.Retransmits == 0 {
						t.Fatalf("no retransmission under %v loss: %+v", f.Loss, rec)
					}
					if f.Duplicate > 0 && rec.Duplicates == 0 {
						t.Fatal("no duplicate detected under duplication")
					}
				})
			}
		}
	}
	if _, err := Run(RunConfig{Design: "MEMQ/SR", Nodes: 2, Profile: "edr-cx4", UDRecovery: true}); !refuses(err, "UDRecovery") {
		t.Fatalf("--ud-recovery on RC: %v", err)
	}
}

// TestQperfTakesTheFaultPlan: a fault schedule applies to the qperf
// baseline as to every design (it was ignored, so qperf ran clean under
// any fault flag).
func TestQperfTakesTheFaultPlan(t *testing.T) {
	for _, tc := range []struct {
		name string
		rule sim.Rule
		fail bool // the run must fail (a crash) or complete with faults counted (RC recovers losses)
	}{
		{"loss", sim.Rule{Action: sim.Lose, Src: -1, Dst: -1, Rate: 0.01}, false},
		{"crash", sim.Rule{Action: sim.Crash, Node: 1, From: fabric.Time(20 * fabric.Microsecond)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := sim.NewPlan()
			plan.Rules = append(plan.Rules, tc.rule)
			var counts sim.FaultCounts
			rec, err := RunSim(RunConfig{Design: "qperf", Nodes: 2, Threads: 1, Profile: "edr-cx4", BytesPerNode: 1 << 20, Timeout: fabric.Millisecond},
				SimOptions{Plan: plan, TimeLimit: 50 * fabric.Millisecond, Inspect: func(c *sim.Cluster) { counts = c.FaultCounts() }})
			if tc.fail != (err != nil) {
				t.Fatalf("err %v, record %+v", err, rec)
			}
			if counts.Total() == 0 {
				t.Fatalf("no fault injected: %+v", counts)
			}
		})
	}
}

// TestRunConfigIsPortable: RunConfig holds no simulator type and no
// function, so that RunOn, which runs it on any fabric, cannot be handed
// something only the simulator can do (that is SimOptions, for RunSim).
func TestRunConfigIsPortable(t *testing.T) {
	simPath := reflect.TypeFor[sim.Faults]().PkgPath()
	ty := reflect.TypeFor[RunConfig]()
	for i := range ty.NumField() {
		f := ty.Field(i)
		ft := f.Type
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
			ft = ft.Elem()
		}
		if ft.PkgPath() == simPath || ft.Kind() == reflect.Func {
			t.Errorf("RunConfig.%s is a %s: a simulator option belongs in SimOptions", f.Name, f.Type)
		}
	}
}

// TestNoCheckSameResult: without the verbs-usage checker a run's simulated
// result is the same (the checker observes, it never changes what the
// model does), and the record says the checker was off.
func TestNoCheckSameResult(t *testing.T) {
	for _, design := range []string{"MESQ/SR", "SEMQ/WR", "MEMQ/RD", "MPI"} {
		cfg := DefaultConfig()
		cfg.Design, cfg.Nodes, cfg.BytesPerNode = design, 4, 1<<20
		on, err := RunSim(cfg, SimOptions{})
		if err != nil {
			t.Fatalf("%s: %v", design, err)
		}
		off, err := RunSim(cfg, SimOptions{NoCheck: true})
		if err != nil {
			t.Fatalf("%s --no-check: %v", design, err)
		}
		if on.VerbsCheck != "" || off.VerbsCheck != "off" {
			t.Errorf("%s: verbs_check %q with the checker, %q without", design, on.VerbsCheck, off.VerbsCheck)
		}
		off.VerbsCheck, on.WallS, off.WallS = "", 0, 0
		if !reflect.DeepEqual(on, off) {
			t.Errorf("%s: the checker changed the result:\n with    %+v\n without %+v", design, *on, *off)
		}
	}
}

// TestMPIBroadcastAlgorithms: the MPI baseline's MPI_Ibcast with each of
// the algorithms MPICH picks (binomial; scatter with recursive-doubling
// or ring allgather) moves every tuple intact, message sizes and node
// counts chosen to reach each one.
func TestMPIBroadcastAlgorithms(t *testing.T) {
	for _, tc := range []struct {
		nodes, msg int
		algo       string
	}{
		{3, 65536, "binomial (fewer than 8 processes)"},
		{8, 4096, "binomial (short messages)"},
		{8, 65536, "scatter, recursive-doubling allgather"},
		{9, 65536, "scatter, ring allgather (not a power of two)"},
		{8, 1 << 20, "scatter, ring allgather (long messages)"},
	} {
		t.Run(fmt.Sprintf("%d nodes, %d bytes", tc.nodes, tc.msg), func(t *testing.T) {
			rec, err := Run(RunConfig{Design: "MPI", Nodes: tc.nodes, Threads: 2, Pattern: algos.Broadcast, Profile: "edr-cx4",
				MsgBytes: tc.msg, Buffers: 2, BytesPerNode: 4 * int64(tc.msg), Seed: 3, Payload: true})
			if err != nil {
				t.Fatalf("%s: %v", tc.algo, err)
			}
			if rec.Integrity != "ok" || rec.TuplesSent == 0 || rec.TuplesReceived != rec.TuplesSent {
				t.Fatalf("%s: integrity %s: sent %d received %d", tc.algo, rec.Integrity, rec.TuplesSent, rec.TuplesReceived)
			}
		})
	}
}

// TestSoftwareCosts checks that a run's software costs reach the designs
// that charge them, show in the record, and do not stick to the design:
// the next run with the defaults gives the default result.
func TestSoftwareCosts(t *testing.T) {
	mpi, ipoib := algos.DefaultMPICosts, algos.DefaultIPoIBCosts
	mpi.CallCycles *= 8
	ipoib.TxSegmentCycles *= 8
	tests := []struct {
		design string
		sw     results.SoftwareCosts
	}{
		{"MPI", results.SoftwareCosts{MPI: &mpi}},
		{"IPoIB", results.SoftwareCosts{IPoIB: &ipoib}},
		{"HyPer-TCP", results.SoftwareCosts{IPoIB: &ipoib}},
		{"MEMQ/WR", results.SoftwareCosts{PollLineCycles: 30 * 50}},
	}
	for _, tt := range tests {
		t.Run(tt.design, func(t *testing.T) {
			cfg := RunConfig{Design: tt.design, Nodes: 4, Threads: 2, Profile: "edr-cx4", BytesPerNode: 4 << 20, Seed: 1}
			if tt.design == "MEMQ/WR" {
				cfg.Notify = algos.NotifyBuffers // scans n x k seals: the polled lines dominate
			}
			def, err := RunSim(cfg, SimOptions{})
			if err != nil {
				t.Fatal(err)
			}
			moved := cfg
			moved.Software = tt.sw
			rec, err := RunSim(moved, SimOptions{})
			if err != nil {
				t.Fatal(err)
			}
			again, err := RunSim(cfg, SimOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if def.Software != nil || rec.Software == nil {
				t.Errorf("records' software costs: default %v, moved %v", def.Software, rec.Software)
			}
			if rec.ThroughputGiBs >= def.ThroughputGiBs {
				t.Errorf("costlier software: %.3f GiB/s, default %.3f", rec.ThroughputGiBs, def.ThroughputGiBs)
			}
			if again.ThroughputGiBs != def.ThroughputGiBs || again.SimEvents != def.SimEvents {
				t.Errorf("the moved costs stuck: %.4f GiB/s and %d events after, %.4f and %d before", again.ThroughputGiBs, again.SimEvents, def.ThroughputGiBs, def.SimEvents)
			}
		})
	}
}

// TestQPNumberingRun: a run's queue-pair numbering reaches the simulated
// NICs (a design with many queue pairs on a ConnectX-3 profile misses in
// the context cache differently under another numbering), and a fabric
// that is not the simulator refuses one.
func TestQPNumberingRun(t *testing.T) {
	cfg := RunConfig{Design: "MEMQ/SR", Nodes: 8, Threads: 8, Profile: "fdr-cx3", Buffers: 2, CreditEvery: 1, BytesPerNode: 1 << 20, Seed: 1}
	miss := map[float64]bool{}
	for k := range uint64(3) {
		cfg.QPNumbering = k
		r, err := Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if r.QPNumbering != k || r.Integrity != "ok" {
			t.Errorf("numbering %d: record says %d, integrity %s", k, r.QPNumbering, r.Integrity)
		}
		miss[r.QPCacheMiss] = true
	}
	if len(miss) < 2 {
		t.Errorf("three numberings, one context-cache miss rate %v: the numbering does not reach the NICs", miss)
	}
	f, err := loopback.Open(host.Config{Seed: 1, TimeLimit: time.Minute}, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := RunOn(f, RunConfig{Design: "MESQ/SR", Nodes: 2, QPNumbering: 1}); !refuses(err, "QPNumbering") {
		t.Errorf("RunOn(loopback) with a numbering: %v, want a refusal naming it", err)
	}
	if _, err := RunOn(f, RunConfig{Design: "MESQ/SR", Nodes: 2, Doorbells: DoorbellsShared}); !refuses(err, "Doorbells") {
		t.Errorf("RunOn(loopback) with shared doorbells: %v, want a refusal naming them", err)
	}
}

// TestRecordSameRun: every kind of record (a shuffle with every option,
// the qperf ceiling, a TPC-H point, an I-Store point) says it was made by
// the configuration that made it, and names the field when asked about a
// configuration one field away.
func TestRecordSameRun(t *testing.T) {
	mpi := algos.DefaultMPICosts
	mpi.CallCycles *= 2
	tree, err := netspec.Parse("fat-tree radix=4 routing=minhop")
	if err != nil {
		t.Fatal(err)
	}
	full := goldenBase()
	full.Design, full.Payload, full.Timeout, full.BytesPerPair = "MESQ/SR", true, 300*fabric.Millisecond, 32<<10
	full.Adaptive, full.MaxBuffers, full.UDRecovery, full.NodeCycles = true, 8, true, []int64{3, 9}
	full.Software, full.QPNumbering, full.Network, full.Label = results.SoftwareCosts{MPI: &mpi, PollLineCycles: 9}, 3, tree, "x"
	ctrl := uint8(0)
	full.SL, full.ControlSL, full.Doorbells = 2, &ctrl, DoorbellsShared
	wr := goldenBase()
	wr.Design, wr.Notify = "MEMQ/WR", algos.NotifyBuffers
	ceiling := goldenBase()
	ceiling.Design, ceiling.Doorbells = "qperf", DoorbellsPerThread
	query := goldenBase()
	query.Design, query.BytesPerNode = "MESQ/SR", 0
	query.Workload = results.Workload{Kind: results.TPCH, Query: string(tpch.Q4), SFPerNode: 0.005}
	store := goldenBase()
	store.Design, store.Payload = IStoreDesign, true
	store.Workload = results.Workload{Kind: results.IStoreJoin, Tables: 2, SF: 0.02}
	for _, tc := range []struct {
		name string
		cfg  RunConfig
		run  func(RunConfig) (*results.Record, error)
	}{
		{"shuffle with every option", full, Run},
		{"MEMQ/WR notify=buffers", wr, Run},
		{"qperf", ceiling, Run},
		{"TPC-H", query, Run},
		{"I-Store", store, Run},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, err := tc.run(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := SameRun(rec, tc.cfg); err != nil {
				t.Fatalf("the record's own configuration: %v", err)
			}
			// Through JSON, and as a record written before per-node
			// finish times (they are results, not configuration).
			var back, old results.Record
			b, err := json.Marshal(rec)
			if err == nil {
				err = json.Unmarshal(b, &back)
			}
			if err != nil || !reflect.DeepEqual(&back, rec) {
				t.Fatalf("JSON round trip: %v\n%+v\n%+v", err, rec, &back)
			}
			old = back
			old.NodeFinishMS, old.FinishSkew, old.NodeLeaf, old.LeafFinishMS = nil, 0, nil, nil
			if err := SameRun(&old, tc.cfg); err != nil {
				t.Errorf("without finish times: %v", err)
			}
			if tc.name == "shuffle with every option" && (len(rec.NodeFinishMS) != rec.Nodes || rec.FinishSkew < 1 || len(rec.NodeLeaf) != rec.Nodes || len(rec.LeafFinishMS) < 1) {
				t.Errorf("a shuffle on a fat tree without its finish times: %v %v %v %v", rec.NodeFinishMS, rec.FinishSkew, rec.NodeLeaf, rec.LeafFinishMS)
			}
			other := tc.cfg
			other.Seed++
			var m *MismatchError
			if err := SameRun(rec, other); !errors.As(err, &m) || m.Field != "Seed" {
				t.Errorf("another seed: %v", err)
			}
			other = tc.cfg
			other.Payload = !other.Payload
			if err := SameRun(rec, other); !errors.As(err, &m) || m.Field != "Payload" {
				t.Errorf("payload changed: %v", err)
			}
		})
	}
}

// refuses says whether err refuses the setting name.
func refuses(err error, name string) bool {
	se, ok := setting.As(err)
	return ok && se.Setting == name
}

// TestExecEveryBackend: Exec runs a point on the simulator (with its
// options: a fault schedule reaches the run) and on a fabric opened
// elsewhere, from the same configuration; a workload the other backend
// cannot run is refused, not run as something else.
func TestExecEveryBackend(t *testing.T) {
	cfg := goldenBase()
	cfg.Design, cfg.Nodes, cfg.BytesPerNode = "MEMQ/SR", 2, 256<<10
	a, err := Exec(Simulator{}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	a.WallS, b.WallS = 0, 0
	if !reflect.DeepEqual(a, b) {
		t.Errorf("Exec(Simulator{}) and Run differ:\n%+v\n%+v", a, b)
	}
	var dups int64
	if _, err := Exec(Simulator{Options: SimOptions{Faults: sim.Faults{Duplicate: 0.2}, Inspect: func(c *sim.Cluster) { dups = c.Stats().PacketsDuplicated }}}, cfg); err != nil || dups == 0 {
		t.Errorf("the simulator's options did not reach the run: %v, %d duplicated", err, dups)
	}
	f, err := loopback.Open(host.Config{Seed: 1, TimeLimit: time.Minute}, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rec, err := Exec(On(f), cfg)
	if err != nil || rec.Integrity != "ok" || rec.Profile != "software" {
		t.Fatalf("on loopback: %+v, %v", rec, err)
	}
	q := cfg
	q.Workload = results.Workload{Kind: results.TPCH, Query: "Q4", SFPerNode: 0.001}
	if _, err := Exec(On(f), q); !errors.Is(err, ErrUnsupported) {
		t.Errorf("a TPC-H point on loopback: %v, want ErrUnsupported", err)
	}
	// The simulator given by pointer runs queries too, as by value.
	byValue, err := Exec(Simulator{}, q)
	if err != nil {
		t.Fatal(err)
	}
	byPointer, err := Exec(&Simulator{}, q)
	if err != nil {
		t.Fatalf("a TPC-H point on *Simulator: %v", err)
	}
	byValue.WallS, byPointer.WallS = 0, 0
	if !reflect.DeepEqual(byValue, byPointer) {
		t.Errorf("Exec(Simulator{}) and Exec(&Simulator{}) differ:\n%+v\n%+v", byValue, byPointer)
	}
}

// TestHugeInputsRefused: inputs whose size overflows, or whose work
// alone outlasts the simulated time limit, are refused naming the
// setting, instead of overflowing into a negative size or running "for
// free" (issue: --cycles-per-tuple 1e14 gave the throughput of 0 cycles).
func TestHugeInputsRefused(t *testing.T) {
	for _, tc := range []struct {
		name    string
		edit    func(*RunConfig)
		setting string
	}{
		{"cycles per tuple", func(c *RunConfig) { c.CyclesPerTuple = 100_000_000_000_000 }, "CyclesPerTuple"},
		{"node cycles", func(c *RunConfig) { c.NodeCycles = []int64{1, 100_000_000_000_000} }, "NodeCycles"},
		{"bytes per node", func(c *RunConfig) { c.BytesPerNode = math.MaxInt64 }, "BytesPerNode"},
		{"bytes per pair", func(c *RunConfig) { c.BytesPerPair = math.MaxInt64 }, "BytesPerPair"},
		{"pinned cap", func(c *RunConfig) { c.Adaptive, c.PinnedCapMiB = true, math.MaxInt64 }, "PinnedCapMiB"},
	} {
		cfg := goldenBase()
		cfg.Design = "MESQ/SR"
		tc.edit(&cfg)
		if _, err := Run(cfg); !refuses(err, tc.setting) {
			t.Errorf("%s: %v, want %s refused", tc.name, err, tc.setting)
		}
	}
	// At the edge: work that fits the limit runs.
	cfg := goldenBase()
	cfg.Design, cfg.BytesPerNode, cfg.CyclesPerTuple = "MESQ/SR", 64<<10, 1000
	if _, err := Run(cfg); err != nil {
		t.Errorf("a run well within the limit: %v", err)
	}
}

// TestValidateRunsNothing: Validate refuses what a run would, by setting,
// without running: threads beyond the cores (which a memory estimate
// would blame on the nodes), a broadcast on one node, a multicast to
// more nodes than there are, input that cannot finish.
func TestValidateRunsNothing(t *testing.T) {
	for _, tc := range []struct {
		edit    func(*RunConfig)
		setting string
	}{
		{func(c *RunConfig) { c.Threads = 1_000_000 }, "Threads"},
		{func(c *RunConfig) { c.Pattern, c.Nodes = algos.Broadcast, 1 }, "Nodes"},
		{func(c *RunConfig) { c.Pattern = "multicast:9" }, "Pattern"},
		{func(c *RunConfig) { c.BytesPerNode = 1 << 60 }, "BytesPerNode"},
		{func(c *RunConfig) { c.Workload = results.Workload{Kind: results.TPCH, Query: "Q9", SFPerNode: 1} }, "Workload"},
	} {
		cfg := goldenBase()
		tc.edit(&cfg)
		if err := cfg.Validate(); !refuses(err, tc.setting) {
			t.Errorf("%+v: %v, want %s refused", cfg, err, tc.setting)
		}
	}
	if err := goldenBase().Validate(); err != nil {
		t.Errorf("the golden base: %v", err)
	}
}

// TestServiceLevelsReachTheLanes: a run's service levels put its packets
// on the virtual lanes the network's SL-to-VL table gives them (OpenSM's
// default with quality of service on: SL i on VL i), the control
// messages of a design with queue pairs for them on their own level, and
// the data of every other design on the run's level.
func TestServiceLevelsReachTheLanes(t *testing.T) {
	tree, err := netspec.Parse("fat-tree radix=4 routing=ftree vls=4")
	if err != nil {
		t.Fatal(err)
	}
	lvl := func(v uint8) *uint8 { return &v }
	for _, tc := range []struct {
		design  string
		sl      uint8
		control *uint8
		lanes   []int // lanes that carry packets; the others carry none
	}{
		{"MESQ/SR", 0, nil, []int{0}},
		{"MESQ/SR", 2, nil, []int{2}},
		{"MESQ/SR", 0, lvl(1), []int{0, 1}},
		{"SESQ/SR", 3, lvl(1), []int{1, 3}},
		{"MESQ/SR", 1, lvl(1), []int{1}},
		{"MEMQ/SR", 2, nil, []int{2}},
		{"MEMQ/RD", 1, nil, []int{1}},
		{"MEMQ/SR+dc", 2, nil, []int{2}},
		{"MEMQ/WR+dc", 3, nil, []int{3}},
		{"MPI", 3, nil, []int{3}},
		{"HyPer", 1, lvl(1), []int{1}},
	} {
		name := fmt.Sprintf("%s sl=%d", tc.design, tc.sl)
		if tc.control != nil {
			name += fmt.Sprintf(" control=%d", *tc.control)
		}
		t.Run(name, func(t *testing.T) {
			cfg := goldenBase()
			cfg.Design, cfg.Nodes, cfg.Threads, cfg.BytesPerNode = tc.design, 8, 1, 512<<10
			cfg.Network, cfg.SL, cfg.ControlSL = tree, tc.sl, tc.control
			var st sim.Stats
			rec, err := RunSim(cfg, SimOptions{Inspect: func(c *sim.Cluster) { st = c.Stats() }})
			if err != nil {
				t.Fatal(err)
			}
			if rec.Integrity != "ok" {
				t.Fatalf("integrity %s", rec.Integrity)
			}
			for vl, n := range st.LanePackets {
				if want := slices.Contains(tc.lanes, vl); want != (n > 0) {
					t.Errorf("lane %d carried %d packets; want packets on lanes %v only", vl, n, tc.lanes)
				}
			}
		})
	}
}

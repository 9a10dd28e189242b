package figures

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/experiments/sweep"
)

// fakeBench is a microbenchmark whose judgement waits for gate and counts
// itself in ran.
func fakeBench(claim string, gate <-chan struct{}, ran *atomic.Int32) BenchJudge {
	return BenchJudge{ID: claim, Claims: []string{claim},
		judge: func(FigureOptions) []Verdict {
			<-gate
			ran.Add(1)
			return []Verdict{{Claim: claim, Verdict: Pass}}
		},
		run: func(bool) benchRun { return benchRun{} }}
}

// TestBenchesHoldSlotsBeforePoints: with slots, the microbenchmarks start
// at once, each holding a slot (a point finds none free until one ends),
// and their verdicts come back in their order whatever order they end in.
func TestBenchesHoldSlotsBeforePoints(t *testing.T) {
	gates := []chan struct{}{make(chan struct{}), make(chan struct{})}
	var ran atomic.Int32
	benches := []BenchJudge{fakeBench("C1", gates[0], &ran), fakeBench("C2", gates[1], &ran)}
	slots := sweep.NewSlots(2)
	wait := startBenches(context.Background(), benches, FigureOptions{}, slots)

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if release, ok := slots.Hold(ctx); ok {
		release()
		t.Fatal("a point found a slot free while both microbenchmarks held theirs")
	}
	close(gates[1]) // the second ends first
	release, ok := slots.Hold(context.Background())
	if !ok {
		t.Fatal("no slot after a microbenchmark ended")
	}
	release()
	close(gates[0])
	got := wait(false)
	if ran.Load() != 2 || len(got) != 2 || got[0][0].Claim != "C1" || got[1][0].Claim != "C2" {
		t.Fatalf("verdicts %+v after %d judgements, want C1's then C2's after 2", got, ran.Load())
	}
}

// TestBenchesWithoutSlotsRunAfter: with one job (nil slots) nothing runs
// until the figures are done and the verdicts are asked for, and nothing
// at all when the figures failed.
func TestBenchesWithoutSlotsRunAfter(t *testing.T) {
	gate := make(chan struct{})
	close(gate)
	var ran atomic.Int32
	bench := []BenchJudge{fakeBench("C1", gate, &ran)}
	wait := startBenches(context.Background(), bench, FigureOptions{}, nil)
	if ran.Load() != 0 {
		t.Fatal("a microbenchmark ran before the figures with one job")
	}
	if got := wait(false); ran.Load() != 1 || got[0][0].Claim != "C1" {
		t.Fatalf("verdicts %+v after %d judgements", got, ran.Load())
	}
	if startBenches(context.Background(), bench, FigureOptions{}, nil)(true); ran.Load() != 1 {
		t.Fatal("a microbenchmark ran after the figures had failed")
	}
}

// TestBenchesHoldMemory: a microbenchmark holds its estimate in the
// budget while it runs, so a run that needs the rest waits for it.
func TestBenchesHoldMemory(t *testing.T) {
	budget := experiments.NewMemoryBudget(100)
	free := budget.Hold(60)
	done := make(chan struct{})
	go func() {
		defer close(done)
		budget.Hold(50)()
	}()
	select {
	case <-done:
		t.Fatal("50 bytes were taken while 60 of 100 were held")
	case <-time.After(50 * time.Millisecond):
	}
	free()
	<-done
	var nilBudget *experiments.MemoryBudget
	nilBudget.Hold(1 << 40)() // holds nothing
}

// TestBenchMemoryEstimates: the microbenchmarks' estimates are those of
// their perftest runs, larger at the full scale for C31's bigger tree.
func TestBenchMemoryEstimates(t *testing.T) {
	for _, b := range BenchJudges {
		quick, full := b.memory(false), b.memory(true)
		if quick <= 0 || full < quick {
			t.Errorf("%s: estimates %d (quick), %d (full)", b.ID, quick, full)
		}
	}
}

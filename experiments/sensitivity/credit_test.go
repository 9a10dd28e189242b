package sensitivity

import (
	"errors"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/faults"
)

// TestCreditTimersMoveSQSR: the credit timers' changes reach what they
// name. Under 1% UD loss with recovery, where credit is repeated, moving
// either repeat timer moves MESQ/SR's 4-node run; the defaults in a change's
// SoftwareCosts are the run's own (a change at x1 moves nothing).
func TestCreditTimersMoveSQSR(t *testing.T) {
	plan, err := (&faults.Schedule{Loss: []faults.RateFault{{Selector: faults.Selector{Transport: "UD"}, Rate: 0.01}}}).Plan(4)
	if err != nil {
		t.Fatal(err)
	}
	run := func(c *Change) *results.Record {
		t.Helper()
		cfg := experiments.RunConfig{Design: algos.NameMESQSR, Nodes: 4, Threads: 2, Profile: "edr-cx4", BytesPerNode: 2 << 20, Seed: 1, UDRecovery: true}
		if c != nil {
			if cfg.Software, err = ApplySoftware(*c); err != nil {
				t.Fatal(err)
			}
		}
		rec, err := experiments.RunSim(cfg, experiments.SimOptions{Plan: plan})
		if err != nil || rec.Integrity != "ok" {
			t.Fatalf("%v: %v, integrity %s", c, err, rec.Integrity)
		}
		return rec
	}
	base := run(nil)
	if base.CreditRepeats == 0 {
		t.Fatal("no credit was repeated under loss: the test moves nothing")
	}
	same := run(&Change{"credit.repeat_quiet_ns", 1})
	if same.ResponseS != base.ResponseS || same.CreditRepeats != base.CreditRepeats {
		t.Errorf("x1 moved the run: %g s, %d repeats; default %g s, %d", same.ResponseS, same.CreditRepeats, base.ResponseS, base.CreditRepeats)
	}
	// At this size halving the scan spacing moves nothing: the
	// connections' own gaps, not the spacing, decide when repeats go.
	for _, c := range []Change{{"credit.repeat_quiet_ns", 0.5}, {"credit.repeat_quiet_ns", 2}, {"credit.repeat_scan_ns", 2}} {
		got := run(&c)
		if got.ResponseS == base.ResponseS && got.CreditRepeats == base.CreditRepeats {
			t.Errorf("%s moved nothing: %g s, %d repeats", c, got.ResponseS, got.CreditRepeats)
		}
	}
}

// TestCreditTimersApply: each credit change moves its own timer by its
// factor in whole nanoseconds and leaves the others; a timer that would
// not be positive is refused by the endpoint's configuration.
func TestCreditTimersApply(t *testing.T) {
	d := algos.DefaultCreditTimers
	for _, tc := range []struct {
		change Change
		want   algos.CreditTimers
	}{
		{Change{"credit.repeat_quiet_ns", 2}, algos.CreditTimers{RepeatQuiet: 2 * d.RepeatQuiet, RepeatScan: d.RepeatScan, OwedRetry: d.OwedRetry}},
		{Change{"credit.repeat_scan_ns", 0.5}, algos.CreditTimers{RepeatQuiet: d.RepeatQuiet, RepeatScan: d.RepeatScan / 2, OwedRetry: d.OwedRetry}},
		{Change{"credit.owed_retry_ns", 0.5}, algos.CreditTimers{RepeatQuiet: d.RepeatQuiet, RepeatScan: d.RepeatScan, OwedRetry: d.OwedRetry / 2}},
	} {
		s, err := ApplySoftware(tc.change)
		if err != nil || s.Credit == nil || *s.Credit != tc.want || s.MPI != nil || s.IPoIB != nil || s.PollLineCycles != 0 {
			t.Errorf("%s: %+v, %v; want credit %+v alone", tc.change, s, err, tc.want)
		}
	}
	if _, err := ApplySoftware(Change{"credit.nothing_ns", 2}); err == nil || !strings.Contains(err.Error(), "credit.owed_retry_ns") {
		t.Errorf("an unknown credit timer: %v; want an error naming the known ones", err)
	}
	cfg := experiments.RunConfig{Design: algos.NameMESQSR, Nodes: 2, Profile: "edr-cx4", BytesPerNode: 64 << 10, Seed: 1}
	cfg.Software.Credit = &algos.CreditTimers{RepeatQuiet: d.RepeatQuiet, RepeatScan: 0, OwedRetry: d.OwedRetry}
	if _, err := experiments.Run(cfg); !errors.Is(err, algos.ErrConfig) || !strings.Contains(err.Error(), "RepeatScan") {
		t.Errorf("a zero repeat scan: %v; want algos.ErrConfig naming RepeatScan", err)
	}
}

// TestCreditTimerDefaults pins SQ/SR's credit timers, which ModelID does
// not hash: the analysis's verdicts were judged under these values. A
// deliberate change of them changes what the model computes: append it to
// Mechanisms (so that ModelID moves), refresh the golden records, and
// change this test in the same commit.
func TestCreditTimerDefaults(t *testing.T) {
	want := algos.CreditTimers{RepeatQuiet: 50 * fabric.Microsecond, RepeatScan: 25 * fabric.Microsecond, OwedRetry: fabric.Microsecond}
	if algos.DefaultCreditTimers != want {
		t.Errorf("credit timers %+v, judged under %+v: list the change in Mechanisms", algos.DefaultCreditTimers, want)
	}
}

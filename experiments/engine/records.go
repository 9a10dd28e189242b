package engine

import (
	"fmt"
	"math"
	"reflect"
	"strings"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// ConfigOf returns the run configuration that produced r, for running it
// again: every field of Config that the record holds (a run's faults
// and simulator options are not in it: they are not part of the
// configuration). For a shuffle (Experiment "run") it gives back the
// configuration exactly, once normalized (SameRun); a TPC-H or I-Store
// record holds its point in Label.
func ConfigOf(r *results.Record) Config {
	c := DefaultConfig()
	c.Design, c.Notify, c.Nodes, c.Threads, c.Pattern = r.Design, algos.Notify(r.Notify), r.Nodes, r.Threads, algos.Pattern(r.Pattern)
	c.Profile, c.MsgBytes, c.Buffers, c.CreditEvery, c.Seed, c.QPNumbering = strings.TrimPrefix(r.Profile, "file:"), r.MsgBytes, r.Buffers, r.CreditEvery, r.Seed, r.QPNumbering
	c.Network, c.Doorbells = r.Network, Doorbells(r.Doorbells)
	c.BytesPerNode, c.BytesPerPair, c.CyclesPerTuple, c.NodeCycles = r.BytesPerNode, r.BytesPerPair, r.CyclesPerTuple, r.NodeCycles
	c.Adaptive, c.MaxBuffers, c.PinnedCapMiB, c.Label, c.UDRecovery = r.Adaptive, r.MaxBuffers, r.PinnedCapMiB, r.Label, r.UDRecovery
	c.Payload, c.SL, c.ControlSL = r.Payload, r.SL, r.ControlSL
	if w, err := results.WorkloadOf(r); err == nil && !w.IsShuffle() {
		c.Workload = w
		if r.Label == w.Label() {
			c.Label = "" // the workload's label, not the point's own
		}
	}
	if r.TimeoutS > 0 {
		c.Timeout = fabric.Duration(math.Round(r.TimeoutS * 1e12))
	}
	if r.Software != nil {
		c.Software = *r.Software
	}
	return c
}

// SameRun says whether record r was made by the configuration cfg: nil if
// so, otherwise an error naming the first field (of Config) that
// differs. Both sides are compared normalized (defaults filled in), every
// field of a shuffle's configuration; for TPC-H and I-Store records, whose
// point is in the label, the fields their records hold.
func SameRun(r *results.Record, cfg Config) error {
	want, got := cfg, ConfigOf(r)
	for _, c := range []*Config{&want, &got} {
		if c.Timeout == 0 {
			c.Timeout = algos.DefaultTimeout
		}
		if r.Experiment == "run" {
			// The checks normalize makes are not the question here;
			// only its defaults are.
			_ = c.normalize(math.MaxInt32)
		}
	}
	if r.Experiment != "run" {
		want.Pattern, want.MsgBytes, want.BytesPerNode, want.BytesPerPair = got.Pattern, got.MsgBytes, got.BytesPerNode, got.BytesPerPair
		want.Buffers, want.CreditEvery, want.Threads = got.Buffers, got.CreditEvery, got.Threads
	}
	wv, gv := reflect.ValueOf(want), reflect.ValueOf(got)
	for i := 0; i < wv.NumField(); i++ {
		if !reflect.DeepEqual(wv.Field(i).Interface(), gv.Field(i).Interface()) {
			return &MismatchError{Field: wv.Type().Field(i).Name, Want: wv.Field(i).Interface(), Got: gv.Field(i).Interface()}
		}
	}
	return nil
}

// MismatchError is SameRun's answer when a record was made by another
// configuration: Field (of Config) is Got in the record and Want in
// the configuration asked about.
type MismatchError struct {
	Field     string
	Want, Got any
}

func (e *MismatchError) Error() string {
	show := func(v any) string {
		if sc, ok := v.(results.SoftwareCosts); ok {
			if sc.IsZero() {
				return "the defaults"
			}
			return fmt.Sprintf("%+v", sc)
		}
		return fmt.Sprintf("%v", v)
	}
	return fmt.Sprintf("%s is %s in the record but %s in the configuration", e.Field, show(e.Got), show(e.Want))
}

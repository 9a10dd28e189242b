package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/faults"
)

// faultFlags registers the fault-schedule flags (--faults FILE,
// --fault-loss, --fault-drop, ... see docs/reliability.md) on cmd and
// returns the function that turns the schedule they describe into the
// simulator options of a run on nodes nodes (no options when no fault flag
// is given). To wire it into a command:
//
//	simOptions := faultFlags(cmd)         // after the command is built
//	opt, err := simOptions(cfg.Nodes)     // in RunE, before experiments.RunSim
//	if err != nil {
//		return err
//	}
func faultFlags(cmd *cobra.Command) func(nodes int) (experiments.SimOptions, error) {
	f := addFaultFlags(cmd.Flags())
	return func(nodes int) (experiments.SimOptions, error) {
		s, err := f.schedule()
		if err != nil || s == nil {
			return experiments.SimOptions{}, err
		}
		plan, err := s.Plan(nodes)
		if err != nil {
			return experiments.SimOptions{}, err
		}
		return experiments.SimOptions{Plan: plan, ProfileOverride: s.ProfileOverride()}, nil
	}
}

// faultFlagValues are the command-line form of a fault schedule
// (addFaultFlags); schedule merges them with the --faults file.
type faultFlagValues struct {
	File                                 string
	Loss, Corrupt, Duplicate, Reorder    float64
	Transport                            string
	Drops, LinkDown, SlowReceiver, Crash []string
	RCRetry                              string
	QPCacheEntries                       int
}

// addFaultFlags registers the fault flags on fs.
func addFaultFlags(fs *pflag.FlagSet) *faultFlagValues {
	f := &faultFlagValues{}
	fs.StringVar(&f.File, "faults", "", "fault schedule, a YAML file (docs/reliability.md)")
	fs.Float64Var(&f.Loss, "fault-loss", 0, "lose each packet with this probability")
	fs.Float64Var(&f.Corrupt, "fault-corrupt", 0, "corrupt each packet with this probability (the ICRC check drops it; counted apart)")
	fs.Float64Var(&f.Duplicate, "fault-duplicate", 0, "deliver each packet twice with this probability")
	fs.Float64Var(&f.Reorder, "fault-reorder", 0, "hold each packet back 2us with this probability (later ones overtake it)")
	fs.StringVar(&f.Transport, "fault-transport", "any", "the rate faults hit only this transport: any, UD, RC or UC")
	fs.StringArrayVar(&f.Drops, "fault-drop", nil, "lose chosen packets, e.g. src=2,dst=0,kind=eos or kind=credit,nth=3 or src=1,dst=0,packet=17 (repeatable)")
	fs.StringArrayVar(&f.LinkDown, "fault-link-down", nil, "take a node's link down, e.g. node=1,from=100us,to=300us (repeatable)")
	fs.StringArrayVar(&f.SlowReceiver, "fault-slow-receiver", nil, "a node's receivers post nothing in a window (RNR), e.g. node=1,from=0us,to=200us (repeatable)")
	fs.StringArrayVar(&f.Crash, "fault-crash", nil, "crash a node, e.g. node=2,at=500us (repeatable)")
	fs.StringVar(&f.RCRetry, "fault-rc-retry", "", "cap RC retries and set the ACK timeout code, e.g. retry_cnt=1,timeout=8")
	fs.IntVar(&f.QPCacheEntries, "fault-qp-cache", 0, "NIC context-cache entries (a small value thrashes it)")
	return f
}

// schedule builds the schedule the flags describe (nil when none).
func (f *faultFlagValues) schedule() (*faults.Schedule, error) {
	s := &faults.Schedule{}
	if f.File != "" {
		t, err := faults.Load(f.File)
		if err != nil {
			return nil, err
		}
		s = t
	}
	tr := ""
	if f.Transport != "any" {
		tr = f.Transport
	}
	if !slices.Contains(faults.Transports, f.Transport) {
		return nil, fmt.Errorf("--fault-transport %s: not one of %s", f.Transport, strings.Join(faults.Transports, ", "))
	}
	for _, r := range []struct {
		flag string
		rate float64
		list *[]faults.RateFault
	}{{"--fault-loss", f.Loss, &s.Loss}, {"--fault-corrupt", f.Corrupt, &s.Corrupt}, {"--fault-duplicate", f.Duplicate, &s.Duplicate}, {"--fault-reorder", f.Reorder, &s.Reorder}} {
		if r.rate == 0 {
			continue
		}
		if !(r.rate > 0 && r.rate <= 1) {
			return nil, fmt.Errorf("%s %v: not a probability in (0, 1]", r.flag, r.rate)
		}
		*r.list = append(*r.list, faults.RateFault{Selector: faults.Selector{Transport: tr}, Rate: r.rate})
	}
	for _, spec := range f.Drops {
		d, err := faults.ParseDrop(spec)
		if err != nil {
			return nil, fmt.Errorf("--fault-drop %q: %w", spec, err)
		}
		s.Drop = append(s.Drop, d)
	}
	for _, g := range []struct {
		flag  string
		specs []string
		list  *[]faults.Window
	}{{"--fault-link-down", f.LinkDown, &s.LinkDown}, {"--fault-slow-receiver", f.SlowReceiver, &s.SlowReceiver}} {
		for _, spec := range g.specs {
			w, err := faults.ParseWindow(spec)
			if err != nil {
				return nil, fmt.Errorf("%s %q: %w", g.flag, spec, err)
			}
			*g.list = append(*g.list, w)
		}
	}
	for _, spec := range f.Crash {
		c, err := faults.ParseCrash(spec)
		if err != nil {
			return nil, fmt.Errorf("--fault-crash %q: %w", spec, err)
		}
		s.Crash = append(s.Crash, c)
	}
	if f.RCRetry != "" {
		r, err := faults.ParseRCRetry(f.RCRetry)
		if err != nil {
			return nil, fmt.Errorf("--fault-rc-retry %q: %w", f.RCRetry, err)
		}
		s.RCRetry = &r
	}
	if f.QPCacheEntries < 0 {
		return nil, fmt.Errorf("--fault-qp-cache %d: must not be negative", f.QPCacheEntries)
	}
	if f.QPCacheEntries > 0 {
		s.QPCacheEntries = f.QPCacheEntries
	}
	if err := s.Validate(0); err != nil {
		return nil, err
	}
	if s.Empty() {
		return nil, nil
	}
	return s, nil
}

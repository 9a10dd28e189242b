package main

import (
	"github.com/spf13/cobra"

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
	f := faults.AddFlags(cmd.Flags())
	return func(nodes int) (experiments.SimOptions, error) {
		s, err := f.Schedule()
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

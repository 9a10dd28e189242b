package main

import (
	"github.com/spf13/cobra"

	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/faults"
)

// faultFlags registers the fault-schedule flags (--faults FILE,
// --fault-loss, --fault-drop, ... see docs/reliability.md) on cmd and
// returns the function that puts the schedule they describe into a run
// configuration (nothing when no fault flag is given). To wire it into a
// command:
//
//	applyFaults := faultFlags(cmd)              // after the command is built
//	if err := applyFaults(&cfg); err != nil {   // in RunE, before experiments.Run
//		return err
//	}
func faultFlags(cmd *cobra.Command) func(cfg *experiments.RunConfig) error {
	f := faults.AddFlags(cmd.Flags())
	return func(cfg *experiments.RunConfig) error {
		s, err := f.Schedule()
		if err != nil || s == nil {
			return err
		}
		if cfg.Plan, err = s.Plan(cfg.Nodes); err != nil {
			return err
		}
		cfg.ProfileOverride = s.ProfileOverride()
		return nil
	}
}

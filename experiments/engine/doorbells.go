package engine

import (
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
	"github.com/rdmashuffle/rdmashuffle/internal/setting"
)

// Doorbells is how a simulated host's queue pairs ring their send queues'
// doorbells (docs/model.md §1, "host CPU"; sim.HostProfile.SharedDoorbells).
type Doorbells string

const (
	// DoorbellsProfile keeps the profile's choice (host.shared_doorbells).
	DoorbellsProfile Doorbells = ""
	// DoorbellsShared shares registers as libmlx5 allocates them by
	// default: four queue pairs of a node ring registers of their own,
	// the others share eleven behind spinlocks (the kernel driver keeps one of the sixteen).
	DoorbellsShared Doorbells = "shared"
	// DoorbellsPerThread gives every thread a register of its own (a
	// thread domain per thread, or libmlx5's MLX5_TOTAL_UUARS and
	// MLX5_NUM_LOW_LAT_UUARS raised).
	DoorbellsPerThread Doorbells = "per-thread"
)

// DoorbellChoices are the values a run may name, the profile's first.
var DoorbellChoices = []Doorbells{DoorbellsProfile, DoorbellsShared, DoorbellsPerThread}

// Check refuses a value that is none of DoorbellChoices.
func (d Doorbells) Check() error {
	switch d {
	case DoorbellsProfile, DoorbellsShared, DoorbellsPerThread:
		return nil
	}
	return setting.New("Doorbells", string(d), "must be %q (shared registers, libmlx5's default) or %q (a register per thread); empty keeps the profile's choice", DoorbellsShared, DoorbellsPerThread)
}

// apply sets d's choice in prof (nothing for DoorbellsProfile).
func (d Doorbells) apply(prof *sim.Profile) {
	switch d {
	case DoorbellsShared:
		prof.Host.SharedDoorbells = 1
	case DoorbellsPerThread:
		prof.Host.SharedDoorbells = 0
	}
}

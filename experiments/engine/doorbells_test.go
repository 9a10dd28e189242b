package engine

import (
	"errors"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
	"github.com/rdmashuffle/rdmashuffle/internal/setting"
)

// TestDoorbells: the run option's values, what each sets in a profile,
// and the refusal of an unknown value.
func TestDoorbells(t *testing.T) {
	tests := []struct {
		d       Doorbells
		from    int // the profile's host.shared_doorbells before
		want    int
		wantErr bool
	}{
		{DoorbellsProfile, 0, 0, false},
		{DoorbellsProfile, 1, 1, false},
		{DoorbellsShared, 0, 1, false},
		{DoorbellsPerThread, 1, 0, false},
		{"private", 0, 0, true},
	}
	for _, tt := range tests {
		err := tt.d.Check()
		var se *setting.Error
		if (err != nil) != tt.wantErr || err != nil && !errors.As(err, &se) {
			t.Errorf("%q: Check %v, want an error: %v (a setting error)", tt.d, err, tt.wantErr)
		}
		if err != nil {
			continue
		}
		p := sim.DefaultProfile()
		p.Host.SharedDoorbells = tt.from
		tt.d.apply(p)
		if p.Host.SharedDoorbells != tt.want {
			t.Errorf("%q over %d: host.shared_doorbells %d, want %d", tt.d, tt.from, p.Host.SharedDoorbells, tt.want)
		}
	}
}

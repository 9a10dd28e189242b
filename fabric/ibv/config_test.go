package ibv

import (
	"errors"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

func TestPathRanges(t *testing.T) {
	for _, tc := range []struct {
		path Path
		bad  string // the field named in the error; "" for accepted
	}{
		{Path{}, ""},
		{Path{ServiceLevel: 15, TrafficClass: 26 << 2, HopLimit: 255, StaticRate: 7, PKeyIndex: 1}, ""},
		{Path{ServiceLevel: 16}, "ServiceLevel"},
		{Path{TrafficClass: 256}, "TrafficClass"},
		{Path{HopLimit: -1}, "HopLimit"},
		{Path{StaticRate: 33}, "StaticRate"},
		{Path{PKeyIndex: 1 << 16}, "PKeyIndex"},
	} {
		cfg, err := Config{Path: tc.path}.withDefaults()
		switch {
		case tc.bad == "" && err != nil:
			t.Errorf("%+v: %v", tc.path, err)
		case tc.bad != "" && (err == nil || !errors.Is(err, fabric.ErrInvalidArg) || !strings.Contains(err.Error(), "Path."+tc.bad)):
			t.Errorf("%+v: %v; want an invalid-argument error naming Path.%s", tc.path, err, tc.bad)
		}
		if err == nil && tc.path.HopLimit == 0 && cfg.Path.HopLimit != 64 {
			t.Errorf("%+v: hop limit %d by default, want 64", tc.path, cfg.Path.HopLimit)
		}
	}
}

// TestGIDChoice: the zero Config picks the port's GID (as the command
// line's default -1 does) instead of taking index 0, usually RoCE v1's
// link-local entry.
func TestGIDChoice(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want int
	}{{Config{}, -1}, {Config{GID: GIDAt(-1)}, -1}, {Config{GID: GIDAt(0)}, 0}, {Config{GID: GIDAt(3)}, 3}} {
		if got := tc.cfg.GID.Index(); got != tc.want {
			t.Errorf("%+v: GID index %d, want %d", tc.cfg.GID, got, tc.want)
		}
	}
}

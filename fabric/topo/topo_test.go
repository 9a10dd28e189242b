package topo

import (
	"errors"
	"slices"
	"testing"
)

func TestFatTreeShapes(t *testing.T) {
	for _, tc := range []struct {
		spec                     FatTreeSpec
		levels, switches, leaves int
	}{
		{FatTreeSpec{Hosts: 648, Radix: 36}, 2, 36 + 18, 36},
		{FatTreeSpec{Hosts: 64, Radix: 36}, 2, 4 + 18, 4},
		{FatTreeSpec{Hosts: 32, Radix: 8}, 2, 8 + 4, 8},
		{FatTreeSpec{Hosts: 1024, Radix: 36}, 3, 57 + 4*18 + 18*18, 57},        // 57 leaves in 4 pods
		{FatTreeSpec{Hosts: 128, Radix: 8}, 3, 32 + 8*4 + 4*4, 32},             // the full three-level tree of radix 8
		{FatTreeSpec{Hosts: 512, Radix: 36, Down: 24, Up: 12}, 2, 22 + 12, 22}, // 2:1
		{FatTreeSpec{Hosts: 100, Radix: 40, Levels: 3}, 3, 5 + 20 + 20*20, 5},
	} {
		tr, err := FatTree(tc.spec)
		if err != nil {
			t.Fatalf("%+v: %v", tc.spec, err)
		}
		if got := len(tr.Switches); got != tc.switches {
			t.Errorf("%s: %d switches, want %d", tr.Name, got, tc.switches)
		}
		if got := len(tr.Leaves()); got != tc.leaves {
			t.Errorf("%s: %d leaves, want %d", tr.Name, got, tc.leaves)
		}
		if len(tr.Hosts) != tc.spec.Hosts {
			t.Errorf("%s: %d hosts", tr.Name, len(tr.Hosts))
		}
		maxLevel := 0
		for _, s := range tr.Switches {
			maxLevel = max(maxLevel, s.Level)
		}
		if maxLevel+1 != tc.levels {
			t.Errorf("%s: %d levels, want %d", tr.Name, maxLevel+1, tc.levels)
		}
		// Every host is at most 2*(levels-1) switch hops from every other.
		d := tr.SwitchHops(0)
		if m := slices.Max(d); m > 2*(tc.levels-1) || slices.Min(d) < 0 {
			t.Errorf("%s: hop distances from host 0 span %d..%d", tr.Name, slices.Min(d), m)
		}
	}
}

func TestFatTreeRefusals(t *testing.T) {
	for _, tc := range []struct {
		spec FatTreeSpec
		want error
	}{
		{FatTreeSpec{Hosts: 649, Radix: 36, Levels: 2}, ErrTooLarge},
		{FatTreeSpec{Hosts: 11665, Radix: 36}, ErrTooLarge},
		{FatTreeSpec{Hosts: 10, Radix: 3}, ErrBadSpec},
		{FatTreeSpec{Hosts: 10, Radix: 300}, ErrBadSpec},
		{FatTreeSpec{Hosts: 0, Radix: 36}, ErrBadSpec},
		{FatTreeSpec{Hosts: 10, Radix: 36, Down: 30, Up: 10}, ErrBadSpec},
		{FatTreeSpec{Hosts: 10, Radix: 36, Down: 10, Up: 20, Levels: 3}, ErrBadSpec},
		{FatTreeSpec{Hosts: 10, Radix: 36, Levels: 4}, ErrBadSpec},
	} {
		if _, err := FatTree(tc.spec); !errors.Is(err, tc.want) {
			t.Errorf("%+v: %v, want %v", tc.spec, err, tc.want)
		}
	}
}

func TestOversubscribed(t *testing.T) {
	for _, tc := range []struct{ radix, ratio, down, up int }{
		{36, 1, 18, 18}, {36, 2, 24, 12}, {8, 2, 4, 2}, {40, 2, 26, 13}, {36, 3, 27, 9}, {40, 1, 20, 20}, {64, 3, 48, 16},
	} {
		if d, u := Oversubscribed(tc.radix, tc.ratio); d != tc.down || u != tc.up {
			t.Errorf("Oversubscribed(%d, %d) = %d, %d; want %d, %d", tc.radix, tc.ratio, d, u, tc.down, tc.up)
		}
	}
}

func TestPlacements(t *testing.T) {
	tr, err := FatTree(FatTreeSpec{Hosts: 32, Radix: 8})
	if err != nil {
		t.Fatal(err)
	}
	place := func(s string, ranks int) []int {
		t.Helper()
		p, err := ParsePlacement(s)
		if err != nil {
			t.Fatal(err)
		}
		h, err := p.Place(tr, ranks)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		return h
	}
	if got := place("contiguous", 5); !slices.Equal(got, []int{0, 1, 2, 3, 4}) {
		t.Errorf("contiguous: %v", got)
	}
	// Radix 8: 4 hosts per leaf, 8 leaves.
	if got := place("round-robin", 10); !slices.Equal(got, []int{0, 4, 8, 12, 16, 20, 24, 28, 1, 5}) {
		t.Errorf("round-robin: %v", got)
	}
	a, b := place("random:1", 16), place("random:1", 16)
	if !slices.Equal(a, b) || slices.Equal(a, place("random:2", 16)) {
		t.Errorf("random placement is not a function of its seed: %v %v", a, b)
	}
	if got := place("list:host-3,7,host-0", 3); !slices.Equal(got, []int{3, 7, 0}) {
		t.Errorf("list: %v", got)
	}
	for _, bad := range []string{"nowhere", "random:x", "list:", "contiguous:3"} {
		if _, err := ParsePlacement(bad); !errors.Is(err, ErrPlacement) {
			t.Errorf("%q: %v", bad, err)
		}
	}
	for _, tc := range []struct {
		s     string
		ranks int
	}{{"contiguous", 33}, {"list:host-1,host-1", 2}, {"list:host-99", 1}, {"list:a,b", 3}} {
		p, _ := ParsePlacement(tc.s)
		if _, err := p.Place(tr, tc.ranks); !errors.Is(err, ErrPlacement) {
			t.Errorf("%s on %d ranks: %v", tc.s, tc.ranks, err)
		}
	}
}

func TestValidateCatchesBadCabling(t *testing.T) {
	good := func() *Topology {
		tr, err := FatTree(FatTreeSpec{Hosts: 8, Radix: 4})
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	for _, tc := range []struct {
		name   string
		break_ func(*Topology)
		want   error
	}{
		{"one-sided cable", func(tr *Topology) { tr.Switches[0].Ports[2] = Peer{} }, ErrBadLink},
		{"host on a missing port", func(tr *Topology) { tr.Hosts[0].Port = 9 }, ErrBadLink},
		{"duplicate LID", func(tr *Topology) { tr.Hosts[1].LID = tr.Hosts[0].LID }, ErrDuplicateID},
		{"some LIDs missing", func(tr *Topology) { tr.Hosts[1].LID = 0 }, ErrBadSpec},
		{"no hosts", func(tr *Topology) { tr.Hosts = nil }, ErrNoHosts},
		{"disconnected", func(tr *Topology) {
			for i, pe := range tr.Switches[0].Ports {
				if pe.Kind == ToSwitch {
					tr.Switches[pe.Index].Ports[pe.Port-1] = Peer{}
					tr.Switches[0].Ports[i] = Peer{}
				}
			}
		}, ErrUnreachable},
	} {
		tr := good()
		tc.break_(tr)
		if err := tr.Validate(); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

// A generated fabric past MaxHosts is refused before anything is built.
func TestFatTreeHostsBounded(t *testing.T) {
	if _, err := FatTree(FatTreeSpec{Hosts: MaxHosts + 1, Radix: 255}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("%d hosts: %v", MaxHosts+1, err)
	}
}

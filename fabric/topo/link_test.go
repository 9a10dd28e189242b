package topo

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestParseLink(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Link
		gbps float64
	}{
		{"4xEDR", Link{4, EDR}, 100},
		{"2xHDR", Link{2, HDR}, 100},
		{"4xHDR", Link{4, HDR}, 200},
		{"1xSDR", Link{1, SDR}, 2},
		{"4xQDR", Link{4, QDR}, 32},
		{"4xFDR10", Link{4, FDR10}, 40},
		{"4xFDR", Link{4, FDR}, 4 * 14.0625 * 64 / 66},
		{"12xDDR", Link{12, DDR}, 48},
		{"8xNDR", Link{8, NDR}, 800},
		{"4xXDR", Link{4, XDR}, 800},
		{"4XEDR", Link{4, EDR}, 100},
	} {
		got, err := ParseLink(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseLink(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			continue
		}
		if want := strings.ToLower(tc.in[:strings.IndexAny(tc.in, "xX")+1]) + tc.in[strings.IndexAny(tc.in, "xX")+1:]; got.String() != want {
			t.Errorf("%q reads back as %q", tc.in, got.String())
		}
		if g := got.Gbps(); math.Abs(g-tc.gbps) > 1e-9*tc.gbps {
			t.Errorf("%s: %v Gb/s, want %v", tc.in, g, tc.gbps)
		}
	}
	for _, bad := range []string{"", "EDR", "4x", "x4EDR", "3xEDR", "4xedr", "4xGDR", "-4xEDR", "4x???", "256xEDR", "+4xEDR", "04xEDR", "0xEDR", " 4xEDR"} {
		if l, err := ParseLink(bad); !errors.Is(err, ErrLink) {
			t.Errorf("ParseLink(%q) = %v, %v; want ErrLink", bad, l, err)
		}
	}
	if (Link{}).String() != "" || !(Link{}).IsZero() || (Link{}).Gbps() != 0 {
		t.Error("the zero Link is not the unknown one")
	}
}

// Validate refuses a cable whose ends disagree on its speed, a speed on
// a port without a cable, and a width no port has.
func TestValidateLinks(t *testing.T) {
	base := func() *Topology {
		tp, err := FatTree(FatTreeSpec{Hosts: 8, Radix: 4, Levels: 2})
		if err != nil {
			t.Fatal(err)
		}
		return tp
	}
	find := func(tp *Topology, k PeerKind) (int, int) {
		for s := range tp.Switches {
			for i, pe := range tp.Switches[s].Ports {
				if pe.Kind == k {
					return s, i
				}
			}
		}
		t.Fatalf("no port of kind %d", k)
		return 0, 0
	}
	tp := base()
	s, i := find(tp, ToSwitch)
	tp.Switches[s].Ports[i].Link = Link{1, EDR}
	if err := tp.Validate(); !errors.Is(err, ErrBadLink) {
		t.Errorf("a cable at 1xEDR at one end only: %v", err)
	}
	pe := tp.Switches[s].Ports[i]
	tp.Switches[pe.Index].Ports[pe.Port-1].Link = Link{1, EDR}
	if err := tp.Validate(); err != nil {
		t.Errorf("a cable at 1xEDR at both ends: %v", err)
	}
	tp = base()
	s, i = find(tp, ToHost)
	tp.Switches[s].Ports[i].Link = Link{3, EDR}
	if err := tp.Validate(); !errors.Is(err, ErrLink) {
		t.Errorf("a host cable at width 3: %v", err)
	}
	tp, err := FatTree(FatTreeSpec{Hosts: 6, Radix: 4, Levels: 2}) // leaves with a free port
	if err != nil {
		t.Fatal(err)
	}
	for s := range tp.Switches {
		for i, pe := range tp.Switches[s].Ports {
			if pe.Kind == None {
				tp.Switches[s].Ports[i].Link = Link{4, EDR}
				if err := tp.Validate(); !errors.Is(err, ErrBadLink) {
					t.Errorf("a speed on an empty port: %v", err)
				}
				return
			}
		}
	}
	t.Fatal("no empty port in a partly populated tree")
}

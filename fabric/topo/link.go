package topo

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ValidWidth reports whether w lanes is an active link width (1x, 2x, 4x,
// 8x, 12x).
func ValidWidth(w int) bool { return w > 0 && w <= 255 && widths[uint8(w)] }

// Speed is the signalling generation a link runs at, as the subnet manager
// reports it (PortInfo LinkSpeedActive and LinkSpeedExtActive, printed by
// ibnetdiscover as SDR, DDR, ..., XDR). SpeedUnknown means not given.
type Speed uint8

// Link speeds, slowest first.
const (
	SpeedUnknown Speed = iota
	SDR
	DDR
	QDR
	FDR10
	FDR
	EDR
	HDR
	NDR
	XDR
)

// lane is one speed's signalling rate per lane and line code. The rates are
// the InfiniBand Architecture Specification's (vol. 2, physical layer), as
// docs/model.md ("Link speeds") lists them with their sources; the codes
// are named as the simulator's profiles name theirs (link.encoding).
type lane struct {
	name     string
	gbaud    float64
	encoding string
}

var lanes = [...]lane{
	SDR:   {"SDR", 2.5, "8b/10b"},
	DDR:   {"DDR", 5, "8b/10b"},
	QDR:   {"QDR", 10, "8b/10b"},
	FDR10: {"FDR10", 10.3125, "64b/66b"},
	FDR:   {"FDR", 14.0625, "64b/66b"},
	EDR:   {"EDR", 25.78125, "64b/66b"},
	HDR:   {"HDR", 53.125, "rs-fec"},
	NDR:   {"NDR", 106.25, "rs-fec"},
	XDR:   {"XDR", 212.5, "rs-fec"},
}

// String is the speed as ibnetdiscover prints it ("EDR").
func (s Speed) String() string {
	if s == SpeedUnknown || int(s) >= len(lanes) {
		return "?"
	}
	return lanes[s].name
}

// LaneGbaud is the speed's signalling rate per lane in Gbaud.
func (s Speed) LaneGbaud() float64 { return lanes[s].gbaud }

// Encoding is the speed's line code, named as a profile's link.encoding.
func (s Speed) Encoding() string { return lanes[s].encoding }

// Link is a cable's active width (lanes: 1, 2, 4, 8 or 12) and speed, as
// ibnetdiscover prints it at the end of a port line ("4xEDR"). The zero
// value means not given: the cable runs at the simulated profile's rate.
type Link struct {
	Width uint8
	Speed Speed
}

// widths are the active link widths of the specification (1x, 4x, 8x,
// 12x) and 2x (added with HDR, as HDR100's split ports use).
var widths = map[uint8]bool{1: true, 2: true, 4: true, 8: true, 12: true}

// IsZero reports whether l was not given.
func (l Link) IsZero() bool { return l == Link{} }

// String is the link as ibnetdiscover prints it ("4xEDR"); "" when not given.
func (l Link) String() string {
	if l.IsZero() {
		return ""
	}
	return fmt.Sprintf("%dx%s", l.Width, l.Speed)
}

// ErrLink reports a link width and speed that cannot be read.
var ErrLink = errors.New("topo: invalid link width and speed")

// ParseLink reads a width and speed such as "4xEDR", "2xHDR" or "1xSDR"
// (or "4XEDR": the X in either case).
func ParseLink(s string) (Link, error) {
	i := strings.IndexAny(s, "xX")
	if i < 0 {
		return Link{}, fmt.Errorf("%w: %q is not WIDTHxSPEED (such as 4xEDR or 2xHDR)", ErrLink, s)
	}
	w, sp := s[:i], s[i+1:]
	n, err := strconv.Atoi(w)
	if err != nil || strings.TrimLeft(w, "0123456789") != "" || w[0] == '0' || n > 255 || !widths[uint8(n)] {
		return Link{}, fmt.Errorf("%w: %q: the width is 1x, 2x, 4x, 8x or 12x", ErrLink, s)
	}
	for i := SDR; int(i) < len(lanes); i++ {
		if lanes[i].name == sp {
			return Link{Width: uint8(n), Speed: i}, nil
		}
	}
	return Link{}, fmt.Errorf("%w: %q: the speed is one of SDR, DDR, QDR, FDR10, FDR, EDR, HDR, NDR, XDR", ErrLink, s)
}

// Gbps is the link's data rate after line coding, in Gb/s (for people;
// the simulator computes its rates as its profiles do).
func (l Link) Gbps() float64 {
	if l.IsZero() {
		return 0
	}
	return float64(l.Width) * l.Speed.LaneGbaud() * codeRates[l.Speed.Encoding()]
}

// codeRates is the fraction of the signalling rate each line code leaves
// for data. "rs-fec" is HDR's chain (64b/66b, 256b/257b transcoding,
// RS(544,514) forward error correction): 53.125 Gb/s of signal per lane
// carry 50 Gb/s of data.
var codeRates = map[string]float64{"8b/10b": 0.8, "64b/66b": 64.0 / 66.0, "rs-fec": 50 / 53.125}

// CodeRate is the fraction of the signalling rate that the line code
// named enc ("8b/10b", "64b/66b", "rs-fec", as profiles name them) leaves
// for data; false for a code not known.
func CodeRate(enc string) (float64, bool) {
	r, ok := codeRates[enc]
	return r, ok
}

// linkName names a link for an error message: "not given" for the zero one.
func linkName(l Link) string {
	if l.IsZero() {
		return "no width and speed given"
	}
	return l.String()
}

// LinkOf is the width and speed of the cable at port (from 1) of switch s;
// zero when not given.
func (t *Topology) LinkOf(s, port int) Link { return t.Switches[s].Ports[port-1].Link }

// HostLink is the width and speed of host h's cable; zero when not given.
func (t *Topology) HostLink(h int) Link { return t.LinkOf(t.Hosts[h].Switch, t.Hosts[h].Port) }

// ErrNoSwitch reports a switch name that names no switch of a topology.
var ErrNoSwitch = errors.New("topo: no such switch")

// FindSwitch finds a switch by name, by GUID ("0x..." ) or by index ("#N").
func (t *Topology) FindSwitch(name string) (int, error) {
	if rest, ok := strings.CutPrefix(name, "#"); ok {
		i, err := strconv.Atoi(rest)
		if err != nil || i < 0 || i >= len(t.Switches) {
			return 0, fmt.Errorf("%w: switch %q: the fabric has switches #0..#%d", ErrNoSwitch, name, len(t.Switches)-1)
		}
		return i, nil
	}
	if strings.HasPrefix(name, "0x") {
		if g, err := strconv.ParseUint(name[2:], 16, 64); err == nil {
			for i := range t.Switches {
				if t.Switches[i].GUID == g && g != 0 {
					return i, nil
				}
			}
		}
	}
	found := -1
	for i := range t.Switches {
		if t.Switches[i].Name == name {
			if found >= 0 {
				return 0, fmt.Errorf("%w: two switches are named %q; name it by GUID (0x...) or index (#%d, #%d)", ErrNoSwitch, name, found, i)
			}
			found = i
		}
	}
	if found < 0 {
		return 0, fmt.Errorf("%w: no switch %q in the fabric (names such as %q, a GUID 0x..., or an index #N)", ErrNoSwitch, name, t.Switches[0].Name)
	}
	return found, nil
}

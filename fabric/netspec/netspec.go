// Package netspec describes a network in a few words (the topology, its
// routing, where the run's nodes sit) as data: a Spec, its text form
// ("fat-tree radix=8 routing=ftree") and its parsing. Package netbuild
// turns a Spec into the simulator's wiring.
package netspec

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/rdmashuffle/rdmashuffle/fabric/route"
	"github.com/rdmashuffle/rdmashuffle/fabric/topo"
)

// TopologyKind is what the cluster's switches form.
type TopologyKind uint8

// Topology kinds.
const (
	Single  TopologyKind = iota // one ideal crossbar with a port per node (the default)
	FatTree                     // a generated two- or three-level fat tree
	File                        // a fabric read from an ibnetdiscover or YAML file
)

// Spec describes a network. The zero value is the single ideal switch.
type Spec struct {
	Kind TopologyKind
	Path string // File: the ibnetdiscover or YAML file
	// FatTree: switch radix (0: the profile's generation, DefaultRadix),
	// levels (0: the fewest that fit), oversubscription ratio:1 at the
	// leaves (0 or 1: none), and hosts (0: as many as the run has nodes,
	// a partially populated tree otherwise).
	Radix, Levels, Oversub, Hosts int
	// Routing: an engine (MinHop is OpenSM's default) or tables read from
	// an LFT dump (LFTPath, which takes precedence).
	Engine  route.Engine
	LFTPath string
	// Adaptive routing (sim.Fabric.Adaptive, AdaptiveRC).
	Adaptive, AdaptiveRC bool
	Placement            topo.Placement
	// VLs is the data virtual lanes of every port (0 or 1: one;
	// sim.Fabric.VLs).
	VLs int
	// Cable widths and speeds (topo.Link): ProfileSpeeds runs every cable
	// at the profile's rate, whatever a fabric file says ("speeds=profile");
	// HostLink and SwitchLink, when given, set every host's cable and
	// every cable between switches ("host-link=2xHDR",
	// "switch-link=4xHDR"), after the file's.
	ProfileSpeeds        bool
	HostLink, SwitchLink topo.Link
	// Cables sets single cables' widths and speeds, after everything
	// else ("cable=leaf-0/19:1xEDR": a cable that trained at one lane).
	Cables []CableLink
}

// CableLink is one cable's width and speed: the cable at Port (from 1) of
// Switch (a name, a GUID 0x... or an index #N), to a host or a switch.
type CableLink struct {
	Switch string
	Port   int
	Link   topo.Link
}

// String is the cable as the network's text form writes it,
// "leaf-0/19:1xEDR".
func (c CableLink) String() string { return fmt.Sprintf("%s/%d:%s", c.Switch, c.Port, c.Link) }

// ParseCableLink reads "SWITCH/PORT:WIDTHxSPEED"; the switch's name may
// itself hold '/' and ':' (the last of each separates).
func ParseCableLink(v string) (CableLink, error) {
	bad := func(why string, args ...any) (CableLink, error) {
		return CableLink{}, fmt.Errorf("%w: cable %q: %s (give SWITCH/PORT:WIDTHxSPEED, such as leaf-0/19:1xEDR)", ErrSpec, v, fmt.Sprintf(why, args...))
	}
	at, l, ok := cutLast(v, ":")
	if !ok {
		return bad("no width and speed after a ':'")
	}
	sw, port, ok := cutLast(at, "/")
	if !ok || sw == "" {
		return bad("no switch and port before the ':'")
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 1 || p > 255 {
		return bad("%q is not a port number (1 to 255)", port)
	}
	link, err := topo.ParseLink(l)
	if err != nil {
		return bad("%v", err)
	}
	return CableLink{Switch: sw, Port: p, Link: link}, nil
}

func cutLast(s, sep string) (string, string, bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return "", "", false
	}
	return s[:i], s[i+len(sep):], true
}

// ErrSpec reports a network specification that cannot be built.
var ErrSpec = errors.New("netspec: invalid network")

// ParseTopology reads "single", "fat-tree" or "file:PATH" (a path ending
// in .txt, .yaml or .yml is taken as a file too).
func ParseTopology(s string) (TopologyKind, string, error) {
	switch {
	case s == "" || s == "single":
		return Single, "", nil
	case s == "fat-tree":
		return FatTree, "", nil
	case strings.HasPrefix(s, "file:"):
		return File, strings.TrimPrefix(s, "file:"), nil
	case strings.HasSuffix(s, ".txt") || strings.HasSuffix(s, ".yaml") || strings.HasSuffix(s, ".yml"):
		return File, s, nil
	}
	return 0, "", fmt.Errorf("%w: unknown topology %q (single, fat-tree, or file:PATH of ibnetdiscover output or YAML)", ErrSpec, s)
}

// IsSingle reports whether s is the default single switch.
func (s *Spec) IsSingle() bool { return s.Kind == Single }

// String describes the spec for records and headers; "" for the single
// switch, so that records of the default network are unchanged.
func (s *Spec) String() string {
	if s.IsSingle() {
		return ""
	}
	var b strings.Builder
	switch s.Kind {
	case FatTree:
		b.WriteString("fat-tree")
		if s.Levels > 0 {
			fmt.Fprintf(&b, " levels=%d", s.Levels)
		}
		if s.Radix > 0 {
			fmt.Fprintf(&b, " radix=%d", s.Radix)
		}
		if s.Oversub > 1 {
			fmt.Fprintf(&b, " oversub=%d:1", s.Oversub)
		}
		if s.Hosts > 0 {
			fmt.Fprintf(&b, " hosts=%d", s.Hosts)
		}
	case File:
		b.WriteString("file:" + quotePath(s.Path))
	}
	if s.LFTPath != "" {
		b.WriteString(" routing=lft:" + quotePath(s.LFTPath))
	} else {
		b.WriteString(" routing=" + s.Engine.String())
	}
	if s.Adaptive {
		b.WriteString(" adaptive")
		if s.AdaptiveRC {
			b.WriteString("+rc")
		}
	}
	b.WriteString(" placement=" + quotePath(s.Placement.String()))
	if s.VLs > 1 {
		fmt.Fprintf(&b, " vls=%d", s.VLs)
	}
	if s.ProfileSpeeds {
		b.WriteString(" speeds=profile")
	}
	if !s.HostLink.IsZero() {
		b.WriteString(" host-link=" + s.HostLink.String())
	}
	if !s.SwitchLink.IsZero() {
		b.WriteString(" switch-link=" + s.SwitchLink.String())
	}
	for _, c := range s.Cables {
		b.WriteString(" cable=" + quotePath(c.String()))
	}
	return b.String()
}

// Brief is String for people: a placement that lists more than
// briefHosts hosts shows its first three and its last, and how many
// (String, which records carry and Parse reads back, lists them all).
func (s *Spec) Brief() string {
	full := s.String()
	hosts := s.Placement.Hosts
	if s.Placement.Kind != topo.HostList || len(hosts) <= briefHosts {
		return full
	}
	long := " placement=" + quotePath(s.Placement.String())
	short := fmt.Sprintf(" placement=list:%s,...,%s (%d hosts)", strings.Join(hosts[:3], ","), hosts[len(hosts)-1], len(hosts))
	return strings.Replace(full, long, short, 1)
}

// briefHosts is the most hosts Brief lists in full.
const briefHosts = 6

// ParseOversub reads "1:1", "2:1", "3" and the like.
func ParseOversub(v string) (int, error) {
	num, den, has := strings.Cut(v, ":")
	r, err := strconv.Atoi(num)
	if err != nil || r < 1 || (has && den != "1") {
		return 0, fmt.Errorf("%w: oversubscription %q: give R:1 with a whole R of at least 1 (1:1, 2:1, 3:1)", ErrSpec, v)
	}
	return r, nil
}

// MarshalText writes String's form ("" for the single switch).
func (s Spec) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads String's form back (Parse).
func (s *Spec) UnmarshalText(b []byte) error {
	v, err := Parse(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// IsZero reports the single switch, so that records of the default
// network leave the field out (encoding/json's omitzero).
func (s Spec) IsZero() bool { return s.IsSingle() }

// Parse reads the form String writes: "" (the single switch), or
// "fat-tree [levels=L] [radix=R] [oversub=R:1] [hosts=H]" or
// "file:PATH" (a PATH with spaces quoted as in Go), then "routing=ENGINE"
// or "routing=lft:PATH", an optional "adaptive" or "adaptive+rc",
// "placement=P", and optionally "vls=N", "speeds=profile",
// "host-link=WxS", "switch-link=WxS" and any number of
// "cable=SWITCH/PORT:WxS".
func Parse(text string) (Spec, error) {
	var s Spec
	if strings.TrimSpace(text) == "" {
		return s, nil
	}
	words, err := splitWords(text)
	if err != nil {
		return s, err
	}
	if s.Kind, s.Path, err = ParseTopology(words[0]); err != nil {
		return s, err
	}
	if s.IsSingle() {
		return s, fmt.Errorf("%w: %q: the single switch is written as nothing", ErrSpec, text)
	}
	for _, w := range words[1:] {
		k, v, _ := strings.Cut(w, "=")
		num := func() (int, error) {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || s.Kind != FatTree {
				return 0, fmt.Errorf("%w: %q in %q: a fat tree's whole number", ErrSpec, w, text)
			}
			return n, nil
		}
		switch k {
		case "levels":
			s.Levels, err = num()
		case "radix":
			s.Radix, err = num()
		case "hosts":
			s.Hosts, err = num()
		case "oversub":
			s.Oversub, err = ParseOversub(v)
		case "routing":
			if strings.HasPrefix(v, "lft:") {
				s.LFTPath = v[4:]
			} else {
				s.Engine, err = route.ParseEngine(v)
			}
		case "adaptive":
			s.Adaptive = true
		case "adaptive+rc":
			s.Adaptive, s.AdaptiveRC = true, true
		case "placement":
			s.Placement, err = topo.ParsePlacement(v)
		case "vls":
			var n int
			n, err = strconv.Atoi(v)
			if err != nil || n < 1 || n > 15 {
				err = fmt.Errorf("%w: %q in %q: 1 to 15 data virtual lanes", ErrSpec, w, text)
			}
			s.VLs = n
		case "speeds":
			if v != "profile" && v != "file" {
				err = fmt.Errorf("%w: %q in %q: speeds=profile runs every cable at the profile's rate, speeds=file (the default) at the width and speed the fabric gives", ErrSpec, w, text)
			}
			s.ProfileSpeeds = v == "profile"
		case "cable":
			var c CableLink
			if c, err = ParseCableLink(v); err == nil {
				s.Cables = append(s.Cables, c)
			}
		case "host-link", "switch-link":
			var l topo.Link
			if l, err = topo.ParseLink(v); err != nil {
				err = fmt.Errorf("%w: %q in %q: %w", ErrSpec, w, text, err)
			} else if k == "host-link" {
				s.HostLink = l
			} else {
				s.SwitchLink = l
			}
		default:
			err = fmt.Errorf("%w: unknown word %q in %q", ErrSpec, w, text)
		}
		if err != nil {
			return s, err
		}
	}
	return s, nil
}

// splitWords splits at spaces, reading a word that starts with a quote
// (or "file:" then a quote) as a Go string.
func splitWords(text string) ([]string, error) {
	var out []string
	rest := strings.TrimSpace(text)
	for rest != "" {
		prefix := ""
		for _, p := range []string{"file:", "routing=lft:", "placement=", "cable="} {
			if strings.HasPrefix(rest, p+`"`) {
				prefix = p
			}
		}
		if prefix != "" {
			q, err := strconv.QuotedPrefix(rest[len(prefix):])
			if err != nil {
				return nil, fmt.Errorf("%w: unclosed quote in %q", ErrSpec, text)
			}
			u, _ := strconv.Unquote(q)
			out = append(out, prefix+u)
			rest = strings.TrimSpace(rest[len(prefix)+len(q):])
			continue
		}
		w, r, _ := strings.Cut(rest, " ")
		out = append(out, w)
		rest = strings.TrimSpace(r)
	}
	return out, nil
}

// quotePath quotes a path that would not survive splitWords.
func quotePath(p string) string {
	if strings.ContainsAny(p, " \t\"") || p == "" {
		return strconv.Quote(p)
	}
	return p
}

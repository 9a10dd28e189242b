package ibnet

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rdmashuffle/rdmashuffle/fabric/topo"
)

// yamlBuilder checks a decoded YAML fabric and builds its Topology.
type yamlBuilder struct {
	file  string
	f     *yamlFabric
	lines map[string][]int
	// used[s][p-1] is the line that cabled port p of switch s (0: free).
	used [][]int
}

func (b *yamlBuilder) line(list string, i int) int {
	if l := b.lines[list]; i < len(l) {
		return l[i]
	}
	return 0
}

func (b *yamlBuilder) build() (*topo.Topology, error) {
	t := &topo.Topology{}
	byName := make(map[string]int, len(b.f.Switches))
	lids := newLIDSet(b.file)
	for i, s := range b.f.Switches {
		n := b.line("switches", i)
		if s.Name == "" {
			return nil, lineErr(b.file, n, "%w: switch %d has no name", ErrSyntax, i+1)
		}
		if o, ok := byName[s.Name]; ok {
			return nil, lineErr(b.file, n, "%w: switch %q is listed again (first at line %d); switch names are unique", ErrDuplicate, s.Name, b.line("switches", o))
		}
		if s.Ports < 1 || s.Ports > 255 {
			return nil, lineErr(b.file, n, "%w: switch %q has ports: %d; give 1 to 255", topo.ErrBadSpec, s.Name, s.Ports)
		}
		if s.LID < 0 || s.LID > int(topo.MaxUnicastLID) {
			return nil, lineErr(b.file, n, "%w: switch %q has lid: %d; unicast LIDs are 1..%d (0 or none: assigned)", topo.ErrBadSpec, s.Name, s.LID, topo.MaxUnicastLID)
		}
		if s.Level != nil && (*s.Level < 0 || *s.Level > 255) {
			return nil, lineErr(b.file, n, "%w: switch %q has level: %d; give 0 (leaf) and up, or leave it out to infer it", topo.ErrBadSpec, s.Name, *s.Level)
		}
		if err := lids.add(s.LID, n, fmt.Sprintf("switch %q", s.Name)); err != nil {
			return nil, err
		}
		byName[s.Name] = i
		t.Switches = append(t.Switches, topo.Switch{Name: s.Name, GUID: s.GUID, LID: topo.LID(s.LID), Ports: make([]topo.Peer, s.Ports)})
		b.used = append(b.used, make([]int, s.Ports))
	}
	for i, h := range b.f.Hosts {
		n := b.line("hosts", i)
		if h.Name == "" {
			return nil, lineErr(b.file, n, "%w: host %d has no name", ErrSyntax, i+1)
		}
		if h.LID < 0 || h.LID > int(topo.MaxUnicastLID) {
			return nil, lineErr(b.file, n, "%w: host %q has lid: %d; unicast LIDs are 1..%d (0 or none: assigned)", topo.ErrBadSpec, h.Name, h.LID, topo.MaxUnicastLID)
		}
		s, ok := byName[h.Switch]
		if !ok {
			return nil, lineErr(b.file, n, "%w: host %q is cabled to switch %q, which switches: does not list", ErrUnknownDevice, h.Name, h.Switch)
		}
		if err := b.take(n, s, h.Port, fmt.Sprintf("host %q", h.Name)); err != nil {
			return nil, err
		}
		if err := lids.add(h.LID, n, fmt.Sprintf("host %q", h.Name)); err != nil {
			return nil, err
		}
		var hl topo.Link
		if h.Link != "" && !strings.Contains(h.Link, "?") { // ibnetdiscover's ??/??? : not given
			var err error
			if hl, err = topo.ParseLink(h.Link); err != nil {
				return nil, lineErr(b.file, n, "%w: host %q: link: %w", ErrSyntax, h.Name, err)
			}
		}
		t.Switches[s].Ports[h.Port-1] = topo.Peer{Kind: topo.ToHost, Index: len(t.Hosts), Link: hl}
		t.Hosts = append(t.Hosts, topo.Host{Name: h.Name, GUID: h.GUID, LID: topo.LID(h.LID), Switch: s, Port: h.Port})
	}
	for i, l := range b.f.Links {
		n := b.line("links", i)
		if len(l) != 2 && len(l) != 3 {
			return nil, lineErr(b.file, n, "%w: a link has two ends and may give its width and speed, [switch/port, switch/port] or [switch/port, switch/port, 4xEDR]; this one has %d entries", ErrSyntax, len(l))
		}
		var ll topo.Link
		if len(l) == 3 && strings.Contains(l[2], "?") {
			l = l[:2] // ibnetdiscover's ??/???: not given
		}
		if len(l) == 3 {
			var err error
			if ll, err = topo.ParseLink(l[2]); err != nil {
				return nil, lineErr(b.file, n, "%w: link [%s, %s]: %w", ErrSyntax, l[0], l[1], err)
			}
			l = l[:2]
		}
		var s [2]int
		var p [2]int
		for k, end := range l {
			at := strings.LastIndexByte(end, '/')
			if at < 0 {
				return nil, lineErr(b.file, n, "%w: link end %q is not switch/port", ErrSyntax, end)
			}
			v, err := strconv.Atoi(end[at+1:])
			if err != nil {
				return nil, lineErr(b.file, n, "%w: link end %q: %q is not a port number", ErrSyntax, end, end[at+1:])
			}
			sw, ok := byName[end[:at]]
			if !ok {
				return nil, lineErr(b.file, n, "%w: link end %q names switch %q, which switches: does not list", ErrUnknownDevice, end, end[:at])
			}
			s[k], p[k] = sw, v
		}
		if s[0] == s[1] {
			return nil, lineErr(b.file, n, "%w: link [%s, %s] joins a switch to itself", topo.ErrBadLink, l[0], l[1])
		}
		for k := range 2 {
			if err := b.take(n, s[k], p[k], fmt.Sprintf("link end %q", l[k])); err != nil {
				return nil, err
			}
		}
		t.Switches[s[0]].Ports[p[0]-1] = topo.Peer{Kind: topo.ToSwitch, Index: s[1], Port: p[1], Link: ll}
		t.Switches[s[1]].Ports[p[1]-1] = topo.Peer{Kind: topo.ToSwitch, Index: s[0], Port: p[0], Link: ll}
	}
	setLevels(t)
	for i, s := range b.f.Switches {
		if s.Level != nil {
			t.Switches[i].Level = *s.Level
		}
	}
	t.AssignLIDs()
	if err := t.Validate(); err != nil {
		return nil, &Error{File: b.file, Err: err}
	}
	return t, nil
}

// take marks port p of switch s as cabled by line n.
func (b *yamlBuilder) take(n, s, p int, what string) error {
	sw := &b.f.Switches[s]
	if p < 1 || p > sw.Ports {
		return lineErr(b.file, n, "%w: %s: port %d of switch %q, but the switch has %d ports (1..%d)", topo.ErrBadLink, what, p, sw.Name, sw.Ports, sw.Ports)
	}
	if o := b.used[s][p-1]; o != 0 {
		return lineErr(b.file, n, "%w: %s: port %d of switch %q is already cabled (line %d)", topo.ErrBadLink, what, p, sw.Name, o)
	}
	b.used[s][p-1] = n
	return nil
}

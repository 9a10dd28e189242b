package ibnet

import (
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric/topo"
)

// build checks the sections read against each other and makes the
// Topology.
func (p *ibParser) build() (*topo.Topology, error) {
	t := &topo.Topology{Name: p.file}
	swIndex := make(map[string]int, len(p.switches))
	for i, nd := range p.switches {
		swIndex[nd.key] = i
		t.Switches = append(t.Switches, topo.Switch{Name: nd.desc, GUID: nd.guid, LID: topo.LID(nd.lid), Level: -1, Ports: make([]topo.Peer, nd.nports)})
	}
	lids := newLIDSet(p.file)
	for _, nd := range p.switches {
		if err := lids.add(nd.lid, nd.line, nd.what()); err != nil {
			return nil, err
		}
	}
	// Every cable's far end exists, in file order, so that the first
	// error is the first bad line.
	for _, pt := range p.all {
		if err := p.far(pt.node, pt); err != nil {
			return nil, err
		}
	}
	// Hosts, from the adapters' sections, checked against the switches'.
	for _, nd := range p.cas {
		for _, pt := range nd.ports {
			peer, back, err := p.peer(nd, pt)
			if err != nil {
				return nil, err
			}
			if peer.kind != 'S' {
				return nil, p.errf(pt.line, "%w: port %d of %s is cabled to %s: adapters cabled back to back are not modelled (every host must reach a switch)", ErrUnsupported, pt.port, nd.what(), peer.what())
			}
			g := pt.guid
			if g != 0 && back.peerGUID != 0 && g != back.peerGUID {
				return nil, p.errf(pt.line, "%w: port %d of %s has port GUID %x here, but line %d (port %d of %s) says %x; the two ends of the cable disagree", topo.ErrBadLink, pt.port, nd.what(), g, back.line, back.port, peer.what(), back.peerGUID)
			}
			if g == 0 {
				g = back.peerGUID
			}
			name := nd.desc
			if len(nd.ports) > 1 {
				name = fmt.Sprintf("%s port %d", nd.desc, pt.port)
			}
			h := len(t.Hosts)
			if err := lids.add(pt.lid, pt.line, fmt.Sprintf("port %d of %s", pt.port, nd.what())); err != nil {
				return nil, err
			}
			s := swIndex[peer.key]
			t.Hosts = append(t.Hosts, topo.Host{Name: name, GUID: g, LID: topo.LID(pt.lid), Switch: s, Port: pt.peerPort})
			l, err := p.cableLink(nd, pt, peer, back)
			if err != nil {
				return nil, err
			}
			t.Switches[s].Ports[pt.peerPort-1] = topo.Peer{Kind: topo.ToHost, Index: h, Link: l}
		}
	}
	// Switch-to-switch cables; cables to adapters were checked above
	// from the adapter's side and are checked here from the switch's.
	for i, nd := range p.switches {
		for _, pt := range nd.ports {
			peer, back, err := p.peer(nd, pt)
			if err != nil {
				return nil, err
			}
			if peer.kind != 'S' {
				continue
			}
			l, err := p.cableLink(nd, pt, peer, back)
			if err != nil {
				return nil, err
			}
			if peer == nd {
				return nil, p.errf(pt.line, "%w: port %d of %s is cabled to its own port %d; a loopback cable carries no traffic between hosts, remove the line and its twin", topo.ErrBadLink, pt.port, nd.what(), pt.peerPort)
			}
			t.Switches[i].Ports[pt.port-1] = topo.Peer{Kind: topo.ToSwitch, Index: swIndex[peer.key], Port: pt.peerPort, Link: l}
		}
	}
	setLevels(t)
	if err := t.Validate(); err != nil {
		return nil, &Error{File: p.file, Err: err}
	}
	return t, nil
}

// cableLink is the width and speed of the cable whose ends are pt (port
// of nd) and back (of peer): the one either end gives, and an error when
// both give one and they differ.
func (p *ibParser) cableLink(nd *ibNode, pt *ibPort, peer *ibNode, back *ibPort) (topo.Link, error) {
	switch {
	case pt.link.IsZero():
		return back.link, nil
	case back.link.IsZero() || back.link == pt.link:
		return pt.link, nil
	}
	return topo.Link{}, p.errf(pt.line, "%w: port %d of %s runs at %s here, but line %d (port %d of %s) says %s; the two ends of an active link have one width and speed (rerun ibnetdiscover, or fix the file)", topo.ErrBadLink, pt.port, nd.what(), pt.link, back.line, back.port, peer.what(), back.link)
}

// far checks that the node at the other end of pt exists and has the
// port pt names.
func (p *ibParser) far(nd *ibNode, pt *ibPort) error {
	peer := p.nodes[pt.peerKey]
	if peer == nil {
		if pt.peerKind == 'R' {
			return p.errf(pt.line, "%w: port %d of %s is cabled to router %s: routers are not modelled; remove the line", ErrUnsupported, pt.port, nd.what(), pt.peerKey)
		}
		return p.errf(pt.line, "%w: port %d of %s is cabled to %s, which the file does not describe (no section for it); is the file complete?", ErrUnknownDevice, pt.port, nd.what(), pt.peerKey)
	}
	if pt.peerPort > peer.nports {
		return p.errf(pt.line, "%w: port %d of %s is cabled to port %d of %s, but that node has %d ports (line %d)", topo.ErrBadLink, pt.port, nd.what(), pt.peerPort, peer.what(), peer.nports, peer.line)
	}
	return nil
}

// peer finds the node at the other end of pt and that node's line for
// the same cable, checking that it points back.
func (p *ibParser) peer(nd *ibNode, pt *ibPort) (*ibNode, *ibPort, error) {
	if err := p.far(nd, pt); err != nil {
		return nil, nil, err
	}
	peer := p.nodes[pt.peerKey]
	back := peer.byPort[pt.peerPort]
	if back == nil {
		return nil, nil, p.errf(pt.line, "%w: port %d of %s is cabled to port %d of %s, but that node's section (line %d) does not list its port %d; the two ends of the cable disagree (rerun ibnetdiscover, or fix the file)", topo.ErrBadLink, pt.port, nd.what(), pt.peerPort, peer.what(), peer.line, pt.peerPort)
	}
	if back.peerKey != nd.key || back.peerPort != pt.port {
		return nil, nil, p.errf(pt.line, "%w: port %d of %s is cabled to port %d of %s, but line %d says that port is cabled to port %d of %s; the two ends of the cable disagree", topo.ErrBadLink, pt.port, nd.what(), pt.peerPort, peer.what(), back.line, back.peerPort, back.peerKey)
	}
	return peer, back, nil
}

// lidSet finds duplicate LIDs and names both lines.
type lidSet struct {
	file string
	seen map[int]lidUse
}

type lidUse struct {
	line int
	what string
}

func newLIDSet(file string) *lidSet { return &lidSet{file: file, seen: make(map[int]lidUse)} }

func (l *lidSet) add(lid, line int, what string) error {
	if lid == 0 {
		return nil
	}
	if old, ok := l.seen[lid]; ok {
		return lineErr(l.file, line, "%w: LID %d of %s is also the LID of %s (line %d); LIDs are unique in a subnet", topo.ErrDuplicateID, lid, what, old.what, old.line)
	}
	l.seen[lid] = lidUse{line, what}
	return nil
}

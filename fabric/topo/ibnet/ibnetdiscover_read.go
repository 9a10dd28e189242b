package ibnet

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/rdmashuffle/rdmashuffle/fabric/topo"
)

// ibNode is one Switch, Ca or Rt section of an ibnetdiscover file.
type ibNode struct {
	kind   byte // 'S' switch, 'H' channel adapter, 'R' router
	guid   uint64
	key    string // kind-guid, how port lines name the node
	nports int
	desc   string
	lid    int // a switch's port-0 LID
	line   int
	ports  []*ibPort // in file order
	byPort map[int]*ibPort
}

// ibPort is one port (connectivity) line of a section.
type ibPort struct {
	line     int
	node     *ibNode
	port     int
	guid     uint64 // the local port GUID (CA lines), 0 when not given
	peerKind byte
	peerKey  string
	peerPort int
	peerGUID uint64    // the peer's port GUID when the line gives it
	lid      int       // a CA port's own LID
	link     topo.Link // the cable's width and speed; zero when not given
}

func (n *ibNode) what() string {
	switch n.kind {
	case 'S':
		return fmt.Sprintf("switch %q (S-%016x)", n.desc, n.guid)
	case 'H':
		return fmt.Sprintf("adapter %q (H-%016x)", n.desc, n.guid)
	}
	return fmt.Sprintf("router %q (R-%016x)", n.desc, n.guid)
}

// ibParser holds the sections read so far.
type ibParser struct {
	file     string
	nodes    map[string]*ibNode
	switches []*ibNode
	cas      []*ibNode
	cur      *ibNode
	all      []*ibPort // every port line, in file order
}

// ReadIBNetDiscover reads the default text output of infiniband-diags'
// ibnetdiscover (also with -g grouping, -f full port information or a
// node name map applied). Each switch becomes a topo.Switch with as many
// ports as its Switch line gives and the LID of its port 0; each adapter
// port cabled to a switch becomes a topo.Host named by the adapter's node
// description (with " port N" appended when the adapter has more than one
// cabled port) and carrying that port's GUID and LID. Both ends of every
// cable must be listed and agree. Routers and adapters cabled back to back
// are refused (ErrUnsupported). Each cable's active width and speed ("4xEDR"
// at the end of its port lines) becomes its Peer's Link; both ends must
// agree.
// Switch levels are inferred: 0 for switches with hosts, then the number
// of switch hops to the nearest such switch. name becomes the Topology's
// Name and prefixes errors. The result has passed Validate.
func ReadIBNetDiscover(r io.Reader, name string) (*topo.Topology, error) {
	p := &ibParser{file: name, nodes: make(map[string]*ibNode)}
	if err := eachLine(r, name, p.line); err != nil {
		return nil, err
	}
	return p.build()
}

func (p *ibParser) errf(n int, format string, args ...any) error {
	return lineErr(p.file, n, format, args...)
}

// line reads one line.
func (p *ibParser) line(n int, raw string) error {
	s := strings.TrimSpace(raw)
	if s == "" || s[0] == '#' {
		return nil
	}
	if s[0] == '[' {
		return p.portLine(n, s)
	}
	word := s
	if i := strings.IndexAny(s, " \t"); i >= 0 {
		word = s[:i]
	}
	switch word {
	case "Switch", "Ca", "Rt":
		return p.nodeLine(n, word, s)
	case "Chassis", "Hostname:":
		return nil // ibnetdiscover -g: the chassis a group of nodes is in
	}
	if s == "Non-Chassis Nodes" {
		return nil
	}
	if i := strings.IndexByte(s, '='); i > 0 && isIdent(s[:i]) {
		// vendid=, devid=, sysimgguid=, switchguid=, caguid=, rtguid=:
		// the node's identifiers, repeated on its own line.
		return nil
	}
	return p.errf(n, "%w: %q is not a line of ibnetdiscover's topology output (expected a Switch, Ca or Rt line, a [port] line, name=value or a # comment); produce the file with plain `ibnetdiscover > fabric.txt` (not -l, -p, -H, -S or -R, which print lists)", ErrSyntax, clip(s))
}

func isIdent(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

// nodeLine reads `Switch 36 "S-..." # "desc" enhanced port 0 lid 3 lmc 0`
// or `Ca 2 "H-..." # "desc"` (or Rt).
func (p *ibParser) nodeLine(n int, word, s string) error {
	left, comment, hasComment := splitComment(s)
	f := strings.Fields(left)
	if len(f) >= 2 && f[1] == ":" {
		return p.errf(n, "%w: this is a line of `ibnetdiscover -l/-S/-H` (a list of nodes), which has no cabling; produce the file with plain `ibnetdiscover > fabric.txt`", ErrSyntax)
	}
	if len(f) != 3 {
		return p.errf(n, "%w: a %s line is `%s <ports> \"<type>-<node guid>\" # \"<description>\" ...`; this one has %d words before the '#'", ErrSyntax, word, word, len(f))
	}
	nports, err := strconv.Atoi(f[1])
	if err != nil || nports < 1 || nports > 255 {
		return p.errf(n, "%w: %q is not a port count (1 to 255)", ErrSyntax, f[1])
	}
	kind, guid, key, ok := parseNodeName(strings.Trim(f[2], `"`))
	if !ok || len(f[2]) < 2 || f[2][0] != '"' || f[2][len(f[2])-1] != '"' {
		return p.errf(n, "%w: %s is not a quoted node name such as \"S-0002c90200402c08\"", ErrSyntax, f[2])
	}
	if want := map[string]byte{"Switch": 'S', "Ca": 'H', "Rt": 'R'}[word]; kind != want {
		return p.errf(n, "%w: a %s line names node %s; a %s's name starts with %c-", ErrSyntax, word, f[2], word, want)
	}
	if !hasComment {
		return p.errf(n, "%w: the line stops before its '#' comment with the node description; the file looks truncated", ErrSyntax)
	}
	desc, rest, ok := quoted(comment)
	if !ok {
		return p.errf(n, "%w: the comment has no quoted node description (ibnetdiscover writes # \"<description>\"); the line looks truncated", ErrSyntax)
	}
	nd := &ibNode{kind: kind, guid: guid, key: key, nports: nports, desc: desc, line: n, byPort: make(map[int]*ibPort)}
	switch kind {
	case 'R':
		return p.errf(n, "%w: %s: routers are not modelled; remove its Rt section and the switch port lines cabled to it", ErrUnsupported, nd.what())
	case 'S':
		lid, ok := lidAfter(rest)
		if !ok {
			return p.errf(n, "%w: the Switch line has no `lid N` after the description (ibnetdiscover writes `enhanced port 0 lid 3 lmc 0`); the line looks truncated", ErrSyntax)
		}
		if lid > int(topo.MaxUnicastLID) {
			return p.errf(n, "%w: %s has LID %d, above the unicast range 1..%d", topo.ErrBadSpec, nd.what(), lid, topo.MaxUnicastLID)
		}
		nd.lid = lid
		p.switches = append(p.switches, nd)
	case 'H':
		p.cas = append(p.cas, nd)
	}
	if old, ok := p.nodes[key]; ok {
		return p.errf(n, "%w: %s is described again (first at line %d); each node has one section", ErrDuplicate, nd.what(), old.line)
	}
	p.nodes[key] = nd
	p.cur = nd
	return nil
}

// portLine reads a connectivity line of the current node:
//
//	[1]  "H-0002c903000a1b2c"[1](2c903000a1b2d)  # "node01 HCA-1" lid 5 4xFDR
//	[1](2c903000a1b2d)  "S-0002c90200402c08"[1]  # lid 5 lmc 0 "switch-a" lid 3 4xFDR
func (p *ibParser) portLine(n int, s string) error {
	nd := p.cur
	if nd == nil {
		return p.errf(n, "%w: a port line before any Switch or Ca line", ErrSyntax)
	}
	left, comment, hasComment := splitComment(s)
	c := &cursor{s: strings.TrimSpace(left)}
	bad := func(what string) error {
		return p.errf(n, "%w: cannot read %s in %q; a port line is `[port](port guid) \"<type>-<node guid>\"[peer port]  # ...`", ErrSyntax, what, clip(s))
	}
	port, ok := c.portNum()
	if !ok {
		return bad("the port number")
	}
	if !c.ext() {
		return bad("the external port number")
	}
	guid, ok := c.guid()
	if !ok {
		return bad("the port GUID")
	}
	c.spaces()
	peerKind, _, peerKey, ok := c.nodeName()
	if !ok {
		return bad("the peer node name")
	}
	peerPort, ok := c.portNum()
	if !ok {
		return bad("the peer port number")
	}
	if !c.ext() {
		return bad("the peer's external port number")
	}
	c.spaces()
	peerPortGUID, ok := c.guid()
	if !ok {
		return bad("the peer port GUID")
	}
	c.spaces()
	if !c.done() {
		return bad("the end of the line")
	}
	if !hasComment {
		return p.errf(n, "%w: the port line stops before its '#' comment; the file looks truncated", ErrSyntax)
	}
	pt := &ibPort{line: n, node: nd, port: port, guid: guid, peerKind: peerKind, peerKey: peerKey, peerPort: peerPort, peerGUID: peerPortGUID}
	if nd.kind == 'H' {
		f := strings.Fields(comment)
		if len(f) < 2 || f[0] != "lid" {
			return p.errf(n, "%w: an adapter's port line has `# lid N lmc M \"<peer description>\" ...` after the peer; this one lacks the port's LID (truncated?)", ErrSyntax)
		}
		lid, err := strconv.Atoi(f[1])
		if err != nil || lid < 0 || lid > 0xFFFF {
			return p.errf(n, "%w: %q is not a LID", ErrSyntax, f[1])
		}
		if lid > int(topo.MaxUnicastLID) {
			return p.errf(n, "%w: port %d of %s has LID %d, above the unicast range 1..%d", topo.ErrBadSpec, port, nd.what(), lid, topo.MaxUnicastLID)
		}
		pt.lid = lid
	}
	_, after, ok := quoted(comment)
	if !ok {
		return p.errf(n, "%w: the comment has no quoted peer description; the line looks truncated", ErrSyntax)
	}
	var err error
	if pt.link, err = linkAfter(after); err != nil {
		return p.errf(n, "%w: the link's width and speed after the peer's LID: %w", ErrSyntax, err)
	}
	if port < 1 || port > nd.nports {
		return p.errf(n, "%w: port %d of %s, but its %s line (line %d) gives it %d ports (numbered 1..%d); fix the port number or the port count", topo.ErrBadLink, port, nd.what(), map[byte]string{'S': "Switch", 'H': "Ca"}[nd.kind], nd.line, nd.nports, nd.nports)
	}
	if old, ok := nd.byPort[port]; ok {
		return p.errf(n, "%w: port %d of %s is listed again (first at line %d)", ErrDuplicate, port, nd.what(), old.line)
	}
	if peerPort < 1 {
		return p.errf(n, "%w: port %d of %s is cabled to port 0 of %s; port 0 is a switch's management port and takes no cable", topo.ErrBadLink, port, nd.what(), peerKey)
	}
	nd.byPort[port] = pt
	nd.ports = append(nd.ports, pt)
	p.all = append(p.all, pt)
	return nil
}

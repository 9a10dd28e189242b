package ibnet

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/rdmashuffle/rdmashuffle/fabric/topo"
)

// noPath is the port OpenSM's tables hold for a LID with no route.
const noPath = 255

// lftParser holds the state of ReadLFTs.
type lftParser struct {
	t        *topo.Topology
	file     string
	byGUID   map[uint64]int
	byLID    map[topo.LID]int
	hostLID  map[topo.LID]int
	out      [][]uint8
	header   []int // the line of each switch's first header, 0 if none
	cur      int   // switch of the block being read, -1 outside a unicast block
	entry    [][]int
	inMcast  bool
	curTitle string
}

// ReadLFTs reads the linear forwarding tables of t's switches from a dump
// in OpenSM's format (opensm-lfts.dump) or in ibroute's (the output of
// ibroute, dump_fts and dump_lfts.sh, several switches one after another).
// A block `Unicast lids [...] of switch Lid L guid 0xG (...):` is matched
// to t's switch of GUID G, or of LID L when the GUIDs are unknown (0);
// its `0xLID PORT ...` entries are mapped through t's host LIDs. Entries
// for switch LIDs and for LIDs no host has (LMC paths, routers) are
// ignored, as are multicast blocks. Every switch of t must have an entry
// for every host's LID, naming a cabled port; the tables must then pass
// t.CheckTables.
func ReadLFTs(r io.Reader, t *topo.Topology) (*topo.Tables, error) {
	p := &lftParser{
		t:       t,
		byGUID:  make(map[uint64]int),
		byLID:   make(map[topo.LID]int),
		hostLID: make(map[topo.LID]int, len(t.Hosts)),
		out:     make([][]uint8, len(t.Switches)),
		header:  make([]int, len(t.Switches)),
		entry:   make([][]int, len(t.Switches)),
		cur:     -1,
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	for h := range t.Hosts {
		if t.Hosts[h].LID == 0 {
			return nil, fmt.Errorf("%w: host %q has no LID, and forwarding tables are indexed by LID; give the fabric its LIDs (the subnet manager's)", ErrIncomplete, t.Hosts[h].Name)
		}
		p.hostLID[t.Hosts[h].LID] = h
	}
	for s := range t.Switches {
		sw := &t.Switches[s]
		if sw.GUID != 0 {
			p.byGUID[sw.GUID] = s
		}
		if sw.LID != 0 {
			p.byLID[sw.LID] = s
		}
		p.out[s] = make([]uint8, len(t.Hosts))
		p.entry[s] = make([]int, len(t.Hosts))
	}
	if err := eachLine(r, "", p.line); err != nil {
		return nil, err
	}
	if err := p.complete(); err != nil {
		return nil, err
	}
	tb := &topo.Tables{Out: p.out}
	if err := t.CheckTables(tb); err != nil {
		return nil, err
	}
	return tb, nil
}

func (p *lftParser) errf(n int, format string, args ...any) error {
	return lineErr(p.file, n, format, args...)
}

// line reads one line of the dump.
func (p *lftParser) line(n int, raw string) error {
	s := strings.TrimSpace(raw)
	switch {
	case s == "" || s[0] == '#' || strings.HasPrefix(s, "***"):
		return nil // comments; dump_lfts.sh's warning that dump_fts replaces it
	case strings.HasPrefix(s, "Unicast lids"):
		p.inMcast = false
		return p.headerLine(n, s)
	case strings.HasPrefix(s, "Multicast mlids"):
		p.inMcast, p.cur = true, -1
		return nil
	case p.inMcast:
		return nil
	case strings.HasPrefix(s, "0x"):
		return p.entryLine(n, s)
	case strings.HasSuffix(s, "lids dumped"):
		p.cur = -1 // "12 valid lids dumped" (ibroute), "12 lids dumped" (OpenSM)
		return nil
	case strings.HasPrefix(s, "Lid") && strings.Contains(s, "Out"),
		strings.HasPrefix(s, "Port") && strings.Contains(s, "Info"):
		return nil // ibroute's column titles
	}
	return p.errf(n, "%w: %q is not a line of a forwarding table dump (expected `Unicast lids [...] of switch ...:`, `0xLID PORT ...` or `N lids dumped`); use OpenSM's opensm-lfts.dump or the output of ibroute / dump_fts", ErrSyntax, clip(s))
}

// headerLine reads `Unicast lids [0x0-0x1d] of switch Lid 3 guid 0x0002c90200402c08 (desc):`.
func (p *lftParser) headerLine(n int, s string) error {
	rest, ok := strings.CutPrefix(s, "Unicast lids [")
	i := strings.Index(rest, "] of switch ")
	if !ok || i < 0 {
		return p.errf(n, "%w: a block header is `Unicast lids [first-last] of switch Lid L guid 0xG (description):`", ErrSyntax)
	}
	rest = rest[i+len("] of switch "):]
	var lid int
	if v, ok := strings.CutPrefix(rest, "Lid "); ok {
		f := strings.Fields(v)
		if len(f) == 0 {
			return p.errf(n, "%w: no number after `Lid`", ErrSyntax)
		}
		l, err := strconv.Atoi(f[0])
		if err != nil || l < 0 || l > 0xFFFF {
			return p.errf(n, "%w: %q is not a LID", ErrSyntax, f[0])
		}
		lid = l
	}
	j := strings.Index(rest, "guid 0x")
	if j < 0 {
		return p.errf(n, "%w: the block header has no `guid 0x...`; the line looks truncated", ErrSyntax)
	}
	gs := rest[j+len("guid 0x"):]
	k := strings.IndexAny(gs, " \t:(")
	if k < 0 {
		k = len(gs)
	}
	guid, ok := parseHex(gs[:k])
	if !ok {
		return p.errf(n, "%w: %q is not a switch GUID", ErrSyntax, gs[:k])
	}
	title := strings.TrimSpace(gs[k:])
	title = strings.TrimSuffix(title, ":")
	p.curTitle = fmt.Sprintf("switch guid %#016x lid %d %s", guid, lid, title)
	s2, ok := p.byGUID[guid]
	if !ok && lid != 0 {
		if s3, ok3 := p.byLID[topo.LID(lid)]; ok3 && (guid == 0 || p.t.Switches[s3].GUID == 0) {
			s2, ok = s3, true
		}
	}
	if !ok {
		return p.errf(n, "%w: the dump has a table for %s, which is not a switch of fabric %q (matched by GUID, or by LID where GUIDs are 0); dump the tables of the subnet the topology was discovered on", ErrUnknownDevice, p.curTitle, p.t.Name)
	}
	if p.header[s2] == 0 {
		p.header[s2] = n
	}
	p.cur = s2
	return nil
}

// entryLine reads `0x0005 001 : (Channel Adapter portguid 0x...: 'node01 HCA-1')`
// (ibroute) or `0x0005 001 # Channel Adapter portguid 0x...: 'node01 HCA-1'` (OpenSM).
func (p *lftParser) entryLine(n int, s string) error {
	if p.cur < 0 {
		return p.errf(n, "%w: an entry outside a `Unicast lids ... of switch ...:` block", ErrSyntax)
	}
	f := strings.Fields(s)
	if len(f) < 2 {
		return p.errf(n, "%w: an entry is `0xLID PORT ...`; this one has no port (truncated?)", ErrSyntax)
	}
	l, err := strconv.ParseUint(f[0][2:], 16, 16)
	if err != nil {
		return p.errf(n, "%w: %q is not a hexadecimal LID", ErrSyntax, f[0])
	}
	port, err := strconv.Atoi(f[1])
	if err != nil || port < 0 || port > 255 {
		return p.errf(n, "%w: %q is not a port number (0 to 255)", ErrSyntax, f[1])
	}
	lid := topo.LID(l)
	h, ok := p.hostLID[lid]
	if !ok {
		return nil // a switch's LID, an LMC path, a router, an unassigned LID
	}
	sw := &p.t.Switches[p.cur]
	host := &p.t.Hosts[h]
	switch {
	case port == noPath:
		return p.errf(n, "%w: switch %q has no route (port 255) to LID %d (host %q)", topo.ErrBadRoute, sw.Name, lid, host.Name)
	case port == 0 || port > len(sw.Ports):
		return p.errf(n, "%w: switch %q sends LID %d (host %q) to port %d, but its data ports are 1..%d", topo.ErrBadRoute, sw.Name, lid, host.Name, port, len(sw.Ports))
	case sw.Ports[port-1].Kind == topo.None:
		return p.errf(n, "%w: switch %q sends LID %d (host %q) to port %d, which is not cabled", topo.ErrBadRoute, sw.Name, lid, host.Name, port)
	}
	if old := p.entry[p.cur][h]; old != 0 && int(p.out[p.cur][h]) != port {
		return p.errf(n, "%w: switch %q has LID %d (host %q) at port %d here and at port %d on line %d", ErrDuplicate, sw.Name, lid, host.Name, port, p.out[p.cur][h], old)
	}
	p.out[p.cur][h] = uint8(port)
	p.entry[p.cur][h] = n
	return nil
}

// complete checks that every switch has an entry for every host.
func (p *lftParser) complete() error {
	for s := range p.t.Switches {
		sw := &p.t.Switches[s]
		if p.header[s] == 0 {
			return fmt.Errorf("%w: the dump has no table for switch %q (guid %#016x, lid %d); it must cover every switch of the fabric", ErrIncomplete, sw.Name, sw.GUID, sw.LID)
		}
		missing := 0
		first := -1
		for h := range p.t.Hosts {
			if p.entry[s][h] == 0 {
				if missing++; first < 0 {
					first = h
				}
			}
		}
		if missing > 0 {
			return lineErr(p.file, p.header[s], "%w: the table of switch %q has no entry for LID %d (host %q)%s; every switch needs a route to every host", ErrIncomplete, sw.Name, p.t.Hosts[first].LID, p.t.Hosts[first].Name, more(missing-1))
		}
	}
	return nil
}

func more(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" nor for %d other host LIDs", n)
}

package ibnet

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/rdmashuffle/rdmashuffle/fabric/topo"
)

// WriteIBNetDiscover writes t in ibnetdiscover's default output format,
// which ReadIBNetDiscover reads back to the same hosts, switches, cables,
// GUIDs and LIDs. Devices with GUID 0 get invented GUIDs, the same on
// every call. Consecutive hosts named "<desc> port N" (N distinct) are
// written as one adapter with ports N, as ReadIBNetDiscover names the
// ports of a multi-port adapter; every other host is a one-port adapter.
// Each cable's width and speed is written as its Link ("4xEDR"), or as
// ibnetdiscover writes one it cannot name ("?????") when the Link is not
// given; vendor and device IDs as 0.
func WriteIBNetDiscover(w io.Writer, t *topo.Topology) error {
	if err := t.Validate(); err != nil {
		return err
	}
	if err := checkNames(t); err != nil {
		return err
	}
	g, err := assignGUIDs(t)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "#\n# Topology file: %s\n# written by rdmashuffle (fabric/topo/ibnet) in ibnetdiscover's format\n#\n", oneLine(t.Name))
	for s := range t.Switches {
		sw := &t.Switches[s]
		fmt.Fprintf(bw, "\nvendid=0x0\ndevid=0x0\nswitchguid=0x%x(%x)\n", g.sw[s], g.sw[s])
		fmt.Fprintf(bw, "Switch\t%d \"S-%016x\"\t\t# \"%s\" enhanced port 0 lid %d lmc 0\n", len(sw.Ports), g.sw[s], sw.Name, sw.LID)
		for p, pe := range sw.Ports {
			switch pe.Kind {
			case topo.ToHost:
				ca := g.caOf[pe.Index]
				fmt.Fprintf(bw, "[%d]\t\"H-%016x\"[%d](%x) \t\t# \"%s\" lid %d %s\n", p+1, g.ca[ca].guid, g.port[pe.Index], g.host[pe.Index], g.ca[ca].desc, t.Hosts[pe.Index].LID, linkText(pe.Link))
			case topo.ToSwitch:
				fmt.Fprintf(bw, "[%d]\t\"S-%016x\"[%d]\t\t# \"%s\" lid %d %s\n", p+1, g.sw[pe.Index], pe.Port, t.Switches[pe.Index].Name, t.Switches[pe.Index].LID, linkText(pe.Link))
			}
		}
	}
	for _, ca := range g.ca {
		fmt.Fprintf(bw, "\nvendid=0x0\ndevid=0x0\ncaguid=0x%x\n", ca.guid)
		fmt.Fprintf(bw, "Ca\t%d \"H-%016x\"\t\t# \"%s\"\n", ca.nports, ca.guid, ca.desc)
		for _, h := range ca.hosts {
			host := &t.Hosts[h]
			sw := &t.Switches[host.Switch]
			fmt.Fprintf(bw, "[%d](%x) \t\"S-%016x\"[%d]\t\t# lid %d lmc 0 \"%s\" lid %d %s\n", g.port[h], g.host[h], g.sw[host.Switch], host.Port, host.LID, sw.Name, sw.LID, linkText(t.HostLink(h)))
		}
	}
	return bw.Flush()
}

// linkText is a cable's width and speed as ibnetdiscover prints them:
// "??" and "???" for ones it cannot name, here the ones not given.
func linkText(l topo.Link) string {
	if l.IsZero() {
		return "?????"
	}
	return l.String()
}

// oneLine makes s fit a comment line.
func oneLine(s string) string {
	return strings.NewReplacer("\n", " ", "\r", " ").Replace(s)
}

// checkNames refuses names the line format cannot hold.
func checkNames(t *topo.Topology) error {
	for i := range t.Switches {
		if strings.ContainsAny(t.Switches[i].Name, "\n\r") {
			return fmt.Errorf("%w: switch %d's name %q holds a line break, which ibnetdiscover's format cannot hold", ErrUnsupported, i, t.Switches[i].Name)
		}
	}
	for i := range t.Hosts {
		if strings.ContainsAny(t.Hosts[i].Name, "\n\r") {
			return fmt.Errorf("%w: host %d's name %q holds a line break, which ibnetdiscover's format cannot hold", ErrUnsupported, i, t.Hosts[i].Name)
		}
	}
	return nil
}

// writtenCA is one adapter as written: one host, or a run of hosts that
// are the ports of one adapter.
type writtenCA struct {
	desc   string
	guid   uint64
	nports int
	hosts  []int
}

// writtenGUIDs are the GUIDs and adapter ports a topology is written with.
type writtenGUIDs struct {
	sw   []uint64 // by switch
	host []uint64 // port GUID, by host
	port []int    // the host's port number on its adapter
	caOf []int    // the adapter of each host
	ca   []writtenCA
}

// inventedGUID is where invented GUIDs start: kind<<32 | index+1 is added.
const inventedGUID = 0x0200000000000000

// splitPortName splits "desc port N" into desc and N.
func splitPortName(name string) (string, int, bool) {
	i := strings.LastIndex(name, " port ")
	if i < 0 {
		return "", 0, false
	}
	v := name[i+len(" port "):]
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 255 || strconv.Itoa(n) != v {
		return "", 0, false
	}
	return name[:i], n, true
}

// assignGUIDs groups hosts into adapters and gives every device a GUID.
func assignGUIDs(t *topo.Topology) (*writtenGUIDs, error) {
	g := &writtenGUIDs{
		sw:   make([]uint64, len(t.Switches)),
		host: make([]uint64, len(t.Hosts)),
		port: make([]int, len(t.Hosts)),
		caOf: make([]int, len(t.Hosts)),
	}
	used := make(map[uint64]int)
	for s := range t.Switches {
		if v := t.Switches[s].GUID; v != 0 {
			if o, ok := used[v]; ok {
				return nil, fmt.Errorf("%w: switches %q and %q have the same GUID %#x", ErrDuplicate, t.Switches[o].Name, t.Switches[s].Name, v)
			}
			used[v] = s
			g.sw[s] = v
		}
	}
	invent := func(used map[uint64]int, kind, i int) uint64 {
		v := uint64(inventedGUID) | uint64(kind)<<32 | uint64(i+1)
		for _, ok := used[v]; ok; _, ok = used[v] {
			v++
		}
		used[v] = i
		return v
	}
	for s := range t.Switches {
		if g.sw[s] == 0 {
			g.sw[s] = invent(used, 1, s)
		}
	}
	for h := 0; h < len(t.Hosts); {
		ca := writtenCA{desc: t.Hosts[h].Name, nports: 1, hosts: []int{h}}
		if desc, n, ok := splitPortName(t.Hosts[h].Name); ok {
			seen := map[int]bool{n: true}
			j := h + 1
			for ; j < len(t.Hosts); j++ {
				d, m, ok := splitPortName(t.Hosts[j].Name)
				if !ok || d != desc || seen[m] {
					break
				}
				seen[m] = true
			}
			if j-h >= 2 {
				ca = writtenCA{desc: desc, hosts: nil}
				for k := h; k < j; k++ {
					_, m, _ := splitPortName(t.Hosts[k].Name)
					g.port[k] = m
					ca.nports = max(ca.nports, m)
					ca.hosts = append(ca.hosts, k)
				}
			}
		}
		if len(ca.hosts) == 1 {
			g.port[h] = 1
		}
		for _, k := range ca.hosts {
			g.caOf[k] = len(g.ca)
		}
		g.ca = append(g.ca, ca)
		h += len(ca.hosts)
	}
	// An adapter's node GUID is, by the usual convention, its first
	// port's GUID less that port's number; an adapter none of whose ports
	// has a GUID gets an invented node GUID N and port GUIDs N+port, so
	// that writing what was read back gives the same file.
	hostUsed := make(map[uint64]int)
	for h := range t.Hosts {
		if v := t.Hosts[h].GUID; v != 0 {
			hostUsed[v] = h
			g.host[h] = v
		}
	}
	caUsed := make(map[uint64]int)
	for i := range g.ca {
		ca := &g.ca[i]
		first := ca.hosts[0]
		known := false
		for _, h := range ca.hosts {
			known = known || g.host[h] != 0
		}
		if !known {
			v := uint64(inventedGUID) | 2<<32 | uint64(i+1)<<8
			for _, taken := caUsed[v]; taken; _, taken = caUsed[v] {
				v += 1 << 8
			}
			caUsed[v] = i
			ca.guid = v
			for _, h := range ca.hosts {
				g.host[h] = v + uint64(g.port[h])
			}
			continue
		}
		for _, h := range ca.hosts {
			if g.host[h] == 0 {
				g.host[h] = invent(hostUsed, 3, h)
			}
		}
		if v := g.host[first] - uint64(g.port[first]); g.host[first] > uint64(g.port[first]) {
			if _, taken := caUsed[v]; !taken {
				caUsed[v] = i
				ca.guid = v
				continue
			}
		}
		ca.guid = invent(caUsed, 4, i)
	}
	return g, nil
}

package ibnet

import (
	"bufio"
	"fmt"
	"io"
	"sort"

	"github.com/rdmashuffle/rdmashuffle/fabric/topo"
)

// WriteLFTs writes tb, the forwarding tables of t, in OpenSM's
// opensm-lfts.dump format, which ReadLFTs reads back to the same tables.
// Each switch's block lists its own LID (port 0) and every host's LID; the
// tables do not route to other switches' LIDs, so those are left out.
// Switches with GUID 0 are written with guid 0 and matched by LID when
// read back.
func WriteLFTs(w io.Writer, t *topo.Topology, tb *topo.Tables) error {
	if err := t.Validate(); err != nil {
		return err
	}
	if len(tb.Out) != len(t.Switches) {
		return fmt.Errorf("%w: tables for %d switches, fabric has %d", topo.ErrBadRoute, len(tb.Out), len(t.Switches))
	}
	type dest struct {
		lid  topo.LID
		host int // -1: the switch itself
	}
	var maxLID topo.LID
	hosts := make([]dest, 0, len(t.Hosts))
	for h := range t.Hosts {
		if t.Hosts[h].LID == 0 {
			return fmt.Errorf("%w: host %q has no LID, and forwarding tables are indexed by LID (call AssignLIDs)", ErrIncomplete, t.Hosts[h].Name)
		}
		hosts = append(hosts, dest{t.Hosts[h].LID, h})
		maxLID = max(maxLID, t.Hosts[h].LID)
	}
	for s := range t.Switches {
		maxLID = max(maxLID, t.Switches[s].LID)
		if len(tb.Out[s]) != len(t.Hosts) {
			return fmt.Errorf("%w: switch %q has %d entries, fabric has %d hosts", topo.ErrBadRoute, t.Switches[s].Name, len(tb.Out[s]), len(t.Hosts))
		}
	}
	sort.Slice(hosts, func(i, j int) bool { return hosts[i].lid < hosts[j].lid })
	bw := bufio.NewWriter(w)
	for s := range t.Switches {
		sw := &t.Switches[s]
		fmt.Fprintf(bw, "Unicast lids [0-%d] of switch Lid %d guid 0x%016x ('%s'):\n", maxLID, sw.LID, sw.GUID, oneLine(sw.Name))
		own := []dest{{sw.LID, -1}}
		if sw.LID == 0 {
			own = nil
		}
		i := 0
		for _, d := range hosts {
			for ; i < len(own) && own[i].lid < d.lid; i++ {
				fmt.Fprintf(bw, "0x%04x %03d # Switch portguid 0x%016x: '%s'\n", sw.LID, 0, sw.GUID, oneLine(sw.Name))
			}
			h := &t.Hosts[d.host]
			fmt.Fprintf(bw, "0x%04x %03d # Channel Adapter portguid 0x%016x: '%s'\n", d.lid, tb.Out[s][d.host], h.GUID, oneLine(h.Name))
		}
		for ; i < len(own); i++ {
			fmt.Fprintf(bw, "0x%04x %03d # Switch portguid 0x%016x: '%s'\n", sw.LID, 0, sw.GUID, oneLine(sw.Name))
		}
		fmt.Fprintf(bw, "%d lids dumped\n", maxLID)
	}
	return bw.Flush()
}

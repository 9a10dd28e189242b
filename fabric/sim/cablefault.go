package sim

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/route"
	"github.com/rdmashuffle/rdmashuffle/fabric/topo"
)

// DefaultReroute is how long after a cable between switches fails (or
// comes back) the subnet manager has programmed forwarding tables that
// account for it, when a plan does not say (Plan.Reroute): an estimate
// (docs/topology.md, "Cable failures and rerouting").
const DefaultReroute = fabric.Second

// ErrCable reports a cable fault the cluster cannot apply.
var ErrCable = errors.New("sim: invalid cable fault")

// cableFaults is what a plan's CableDown rules make of a network: each
// cable's down windows (on both of its switch outputs) and the forwarding
// tables the subnet manager installs at each reroute.
type cableFaults struct {
	epochs []epoch // in time order
	drops  int64   // packets sent to a cable that was down
	// kept says, for each change after which the subnet manager found no
	// tables and left the old ones, when and why (the fault summary).
	kept []keptTables
}

// keptTables is a change the subnet manager could not route around.
type keptTables struct {
	at  fabric.Time
	why string
}

// epoch is one set of forwarding tables, in force from at.
type epoch struct {
	at   fabric.Time
	lfts [][]uint8 // by switch, then node
	why  string    // for the fault summary
}

// resolveSwitch finds a switch by name, by GUID (0x...) or by index (#N).
func resolveSwitch(t *topo.Topology, name string) (int, error) {
	s, err := t.FindSwitch(name)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrCable, err)
	}
	return s, nil
}

// setCables applies the plan's CableDown and SwitchDown rules: it marks
// each cable's outputs down for the rule's window (every cable of a
// switch that is down, to switches and hosts alike) and computes the
// tables the subnet manager installs reroute after each change, with the
// engine the fabric was routed with (minhop for tables read from a dump,
// as OpenSM's default; ftree falls back to minhop on a tree with a cable
// or a switch missing, as OpenSM does).
func (c *Cluster) setCables(p *Plan) (*cableFaults, error) {
	var rules []int
	for i, r := range p.Rules {
		if r.Action == CableDown || r.Action == SwitchDown {
			rules = append(rules, i)
		}
	}
	for _, s := range c.net.sws {
		for o := range s.out {
			s.out[o].downs = nil
		}
	}
	if len(rules) == 0 {
		return nil, nil
	}
	f := c.cfg.Fabric
	if f == nil {
		return nil, fmt.Errorf("%w: cable and switch faults need a network of switches (a topology other than the single switch)", ErrCable)
	}
	t := f.Topology
	n := c.net
	var cables []cableDown
	var switches []switchDown
	for _, i := range rules {
		r := p.Rules[i]
		s, err := resolveSwitch(t, r.Switch)
		if err != nil {
			return nil, fmt.Errorf("fault rule %d: %w", i+1, err)
		}
		sw := &t.Switches[s]
		w := window{r.From, r.To}
		if r.Action == SwitchDown {
			switches = append(switches, switchDown{s, w})
			for port, pe := range sw.Ports {
				switch pe.Kind {
				case topo.ToSwitch:
					n.sws[pe.Index].out[pe.Port-1].downs = append(n.sws[pe.Index].out[pe.Port-1].downs, w)
					fallthrough
				case topo.ToHost:
					n.sws[s].out[port].downs = append(n.sws[s].out[port].downs, w)
				}
			}
			continue
		}
		if r.Port < 1 || r.Port > len(sw.Ports) || sw.Ports[r.Port-1].Kind != topo.ToSwitch {
			return nil, fmt.Errorf("fault rule %d: %w: port %d of switch %q is not cabled to another switch (a host's own link is link-down of its node; a whole switch is switch-down)", i+1, ErrCable, r.Port, sw.Name)
		}
		pe := sw.Ports[r.Port-1]
		cables = append(cables, cableDown{s, r.Port, w})
		n.sws[s].out[r.Port-1].downs = append(n.sws[s].out[r.Port-1].downs, w)
		n.sws[pe.Index].out[pe.Port-1].downs = append(n.sws[pe.Index].out[pe.Port-1].downs, w)
	}
	reroute := p.Reroute
	if reroute == 0 {
		reroute = DefaultReroute
	}
	cf := &cableFaults{}
	if reroute < 0 {
		return cf, nil // the subnet manager never reroutes
	}
	// The subnet manager learns of every change (a cable or a switch
	// going down or coming back) and has new tables in place reroute
	// later.
	var changes []fabric.Time
	note := func(w window) {
		changes = append(changes, w.from)
		if w.to > 0 {
			changes = append(changes, w.to)
		}
	}
	for _, cb := range cables {
		note(cb.w)
	}
	for _, sd := range switches {
		note(sd.w)
	}
	slices.Sort(changes)
	changes = slices.Compact(changes)
	prev := make([][]uint8, len(t.Switches)) // the tables in force before each change
	for s := range prev {
		prev[s] = n.sws[s].lft
	}
	for _, at := range changes {
		ep, err := c.rerouted(t, f, cables, switches, at, prev)
		if err != nil {
			// The hosts still up cannot all reach one another: the
			// subnet manager leaves the old tables.
			cf.kept = append(cf.kept, keptTables{at.Add(reroute), err.Error()})
			continue
		}
		ep.at = at.Add(reroute)
		cf.epochs = append(cf.epochs, ep)
		prev = ep.lfts
	}
	return cf, nil
}

// cableDown is a CableDown rule resolved: switch s's port (from 1) and
// its window; switchDown a SwitchDown rule.
type cableDown struct {
	s, port int
	w       window
}

type switchDown struct {
	s int
	w window
}

// rerouted is the tables the subnet manager computes at a change at, on
// the fabric without the cables and switches down then: the engine's
// tables for every host still reachable, and for the hosts cabled to a
// switch that is down (which no table reaches) the entries of prev, the
// tables in force before. Switches no host still up can reach (a switch
// that is down, say) are left out of the routing, as a sweep does not
// find them, and keep their entries. An error when the hosts still up
// cannot all reach one another: the subnet manager then leaves the old
// tables.
func (c *Cluster) rerouted(t *topo.Topology, f *Fabric, cables []cableDown, switches []switchDown, at fabric.Time, prev [][]uint8) (epoch, error) {
	cut := copyTopology(t)
	var names []string
	for _, cb := range cables {
		if cb.w.has(at) {
			cutCable(cut, cb.s, cb.port)
			names = append(names, fmt.Sprintf("%s/%d", t.Switches[cb.s].Name, cb.port))
		}
	}
	dead := make([]bool, len(t.Hosts)) // hosts cabled to a switch that is down
	for _, sd := range switches {
		if !sd.w.has(at) {
			continue
		}
		for port, pe := range cut.Switches[sd.s].Ports {
			switch pe.Kind {
			case topo.ToSwitch:
				cutCable(cut, sd.s, port+1)
			case topo.ToHost:
				dead[pe.Index] = true
			}
		}
		names = append(names, "switch "+t.Switches[sd.s].Name)
	}
	why := "all cables and switches up"
	if len(names) > 0 {
		why = "without " + strings.Join(names, ", ")
	}
	live, hostIdx := withoutHosts(cut, dead)
	if len(live.Hosts) < 2 {
		return epoch{}, fmt.Errorf("%s: fewer than two hosts left", why)
	}
	swept, swIdx := sweptSwitches(live)
	tb, err := route.Compute(swept, f.Engine, c.cfg.Seed)
	if errors.Is(err, route.ErrNotFatTree) {
		tb, err = route.Compute(swept, route.MinHop, c.cfg.Seed)
	}
	if err != nil {
		return epoch{}, fmt.Errorf("%s: %w", why, err)
	}
	ep := epoch{why: why}
	for s := range t.Switches {
		l := slices.Clone(prev[s])
		if k := swIdx[s]; k >= 0 {
			for r, h := range f.Hosts {
				if hk := hostIdx[h]; hk >= 0 {
					if port := tb.Port(k, hk); port > 0 {
						l[r] = uint8(port - 1)
					}
				}
			}
		}
		ep.lfts = append(ep.lfts, l)
	}
	return ep, nil
}

// sweptSwitches is t without the switches no host can reach (their
// cables all down), as the subnet manager's sweep finds the subnet, and
// each switch's index in it (-1: left out). t itself when every switch
// is reached.
func sweptSwitches(t *topo.Topology) (*topo.Topology, []int) {
	reached := make([]bool, len(t.Switches))
	var stack []int
	for _, h := range t.Hosts {
		if !reached[h.Switch] {
			reached[h.Switch] = true
			stack = append(stack, h.Switch)
		}
	}
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, pe := range t.Switches[s].Ports {
			if pe.Kind == topo.ToSwitch && !reached[pe.Index] {
				reached[pe.Index] = true
				stack = append(stack, pe.Index)
			}
		}
	}
	idx := make([]int, len(t.Switches))
	if !slices.Contains(reached, false) {
		for s := range idx {
			idx[s] = s
		}
		return t, idx
	}
	u := *t
	u.Switches = nil
	for s := range t.Switches {
		idx[s] = -1
		if reached[s] {
			idx[s] = len(u.Switches)
			u.Switches = append(u.Switches, t.Switches[s])
		}
	}
	for i := range u.Switches {
		ports := slices.Clone(u.Switches[i].Ports)
		for p, pe := range ports {
			if pe.Kind == topo.ToSwitch {
				ports[p].Index = idx[pe.Index]
			}
		}
		u.Switches[i].Ports = ports
	}
	u.Hosts = slices.Clone(t.Hosts)
	for h := range u.Hosts {
		u.Hosts[h].Switch = idx[u.Hosts[h].Switch]
	}
	return &u, idx
}

// cutCable removes the cable at port (from 1) of switch s from t, at both
// of its ends.
func cutCable(t *topo.Topology, s, port int) {
	pe := t.Switches[s].Ports[port-1]
	if pe.Kind == topo.ToSwitch {
		t.Switches[pe.Index].Ports[pe.Port-1] = topo.Peer{}
		t.Switches[s].Ports[port-1] = topo.Peer{}
	}
}

// withoutHosts is t without the hosts marked dead (their switch ports left
// empty), and each host's index in it (-1: removed). t itself when none
// is.
func withoutHosts(t *topo.Topology, dead []bool) (*topo.Topology, []int) {
	idx := make([]int, len(t.Hosts))
	u := t
	if slices.Contains(dead, true) {
		c := *t
		c.Hosts = nil
		u = &c
	}
	for h := range t.Hosts {
		if dead[h] {
			idx[h] = -1
			u.Switches[t.Hosts[h].Switch].Ports[t.Hosts[h].Port-1] = topo.Peer{}
			continue
		}
		idx[h] = h
		if u != t {
			idx[h] = len(u.Hosts)
			u.Hosts = append(u.Hosts, t.Hosts[h])
			pe := &u.Switches[t.Hosts[h].Switch].Ports[t.Hosts[h].Port-1]
			pe.Index = idx[h]
		}
	}
	return u, idx
}

// copyTopology copies t deeply enough to cut cables in the copy.
func copyTopology(t *topo.Topology) *topo.Topology {
	u := *t
	u.Switches = slices.Clone(t.Switches)
	for i := range u.Switches {
		u.Switches[i].Ports = slices.Clone(t.Switches[i].Ports)
	}
	return &u
}

// lftAt is switch s's forwarding table at now: the last reroute's, or the
// table the fabric was built with.
func (n *network) lftAt(s *swtch) []uint8 {
	cf := n.cables
	if cf == nil || len(cf.epochs) == 0 || n.c.now < cf.epochs[0].at {
		return s.lft
	}
	k := len(cf.epochs) - 1
	for k > 0 && cf.epochs[k].at > n.c.now {
		k--
	}
	return cf.epochs[k].lfts[s.id]
}

// isDown reports whether output out's cable is down at t.
func (out *swOut) isDown(t fabric.Time) bool {
	for _, w := range out.downs {
		if w.has(t) {
			return true
		}
	}
	return false
}

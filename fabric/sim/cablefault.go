package sim

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
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
}

// epoch is one set of forwarding tables, in force from at.
type epoch struct {
	at   fabric.Time
	lfts [][]uint8 // by switch, then node
	why  string    // for the fault summary
}

// resolveSwitch finds a switch by name, by GUID (0x...) or by index (#N).
func resolveSwitch(t *topo.Topology, name string) (int, error) {
	if rest, ok := strings.CutPrefix(name, "#"); ok {
		i, err := strconv.Atoi(rest)
		if err != nil || i < 0 || i >= len(t.Switches) {
			return 0, fmt.Errorf("%w: switch %q: the fabric has switches #0..#%d", ErrCable, name, len(t.Switches)-1)
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
				return 0, fmt.Errorf("%w: two switches are named %q; name it by GUID (0x...) or index (#%d, #%d)", ErrCable, name, found, i)
			}
			found = i
		}
	}
	if found < 0 {
		return 0, fmt.Errorf("%w: no switch %q in the fabric (names such as %q, a GUID 0x..., or an index #N)", ErrCable, name, t.Switches[0].Name)
	}
	return found, nil
}

// setCables applies the plan's CableDown rules: it marks each cable's
// outputs down for the rule's window and computes the tables the subnet
// manager installs reroute after each change, with the engine the fabric
// was routed with (minhop for tables read from a dump, as OpenSM's
// default; ftree falls back to minhop on a tree with a cable missing, as
// OpenSM does).
func (c *Cluster) setCables(p *Plan) (*cableFaults, error) {
	var rules []int
	for i, r := range p.Rules {
		if r.Action == CableDown {
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
		return nil, fmt.Errorf("%w: cable faults need a network of switches (a topology other than the single switch)", ErrCable)
	}
	t := f.Topology
	type cable struct {
		s, port int
		w       window
	}
	var cables []cable
	for _, i := range rules {
		r := p.Rules[i]
		s, err := resolveSwitch(t, r.Switch)
		if err != nil {
			return nil, fmt.Errorf("fault rule %d: %w", i+1, err)
		}
		sw := &t.Switches[s]
		if r.Port < 1 || r.Port > len(sw.Ports) || sw.Ports[r.Port-1].Kind != topo.ToSwitch {
			return nil, fmt.Errorf("fault rule %d: %w: port %d of switch %q is not cabled to another switch (a host's own link is link-down of its node)", i+1, ErrCable, r.Port, sw.Name)
		}
		pe := sw.Ports[r.Port-1]
		w := window{r.From, r.To}
		cables = append(cables, cable{s, r.Port, w})
		n := c.net
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
	// The subnet manager learns of every change (a cable going down or
	// coming back) and has new tables in place reroute later.
	var changes []fabric.Time
	for _, cb := range cables {
		changes = append(changes, cb.w.from)
		if cb.w.to > 0 {
			changes = append(changes, cb.w.to)
		}
	}
	slices.Sort(changes)
	changes = slices.Compact(changes)
	engine := f.Engine
	for _, at := range changes {
		cut := copyTopology(t)
		var names []string
		for _, cb := range cables {
			if cb.w.has(at) {
				pe := cut.Switches[cb.s].Ports[cb.port-1]
				if pe.Kind == topo.ToSwitch {
					cut.Switches[pe.Index].Ports[pe.Port-1] = topo.Peer{}
					cut.Switches[cb.s].Ports[cb.port-1] = topo.Peer{}
				}
				names = append(names, fmt.Sprintf("%s/%d", t.Switches[cb.s].Name, cb.port))
			}
		}
		tb, err := route.Compute(cut, engine, c.cfg.Seed)
		if errors.Is(err, route.ErrNotFatTree) {
			tb, err = route.Compute(cut, route.MinHop, c.cfg.Seed)
		}
		why := "all cables up"
		if len(names) > 0 {
			why = "without " + strings.Join(names, ", ")
		}
		if err != nil {
			// The fabric is cut in two: no tables reach every host, and
			// the subnet manager leaves the old ones in place.
			continue
		}
		ep := epoch{at: at.Add(reroute), why: why}
		for s := range t.Switches {
			l := make([]uint8, len(f.Hosts))
			for r, h := range f.Hosts {
				l[r] = uint8(tb.Port(s, h) - 1)
			}
			ep.lfts = append(ep.lfts, l)
		}
		cf.epochs = append(cf.epochs, ep)
	}
	return cf, nil
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

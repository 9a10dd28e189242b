// Package netbuild turns a network specification (netspec.Spec) into the
// simulator's wiring (sim.Fabric): a generated fat tree or a fabric file,
// forwarding tables computed by a routing engine or read from the subnet
// manager's dump, and a placement of ranks onto hosts.
package netbuild

import (
	"errors"
	"fmt"
	"math"

	"github.com/rdmashuffle/rdmashuffle/fabric/netspec"
	"github.com/rdmashuffle/rdmashuffle/fabric/route"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
	"github.com/rdmashuffle/rdmashuffle/fabric/topo"
	"github.com/rdmashuffle/rdmashuffle/fabric/topo/ibnet"
)

// DefaultRadix is the port count of the switch of the profile's
// generation, told by its lane rate (docs/model.md, source [F1]):
// QDR, FDR and EDR switch ASICs have 36 ports, HDR (Quantum) 40, NDR
// (Quantum-2) 64. A profile of another lane rate has no default.
func DefaultRadix(p *sim.Profile) (int, error) {
	g := p.Link.LaneGbaud
	near := func(v float64) bool { return math.Abs(g-v) < 0.01*v }
	switch {
	case near(10), near(14.0625), near(25.78125):
		return 36, nil
	case near(53.125):
		return 40, nil
	case near(106.25):
		return 64, nil
	}
	return 0, fmt.Errorf("%w: profile %s (%v Gbaud lanes) is of no InfiniBand generation with a known switch radix: give the radix", netspec.ErrSpec, p.Name, g)
}

// Built is a network ready for a run: the simulator's wiring (nil for the
// single switch) and the topology's description.
type Built struct {
	Fabric *sim.Fabric
	Name   string // the topology's name
	// FellBack is set when ftree routing was asked for on a fabric that
	// is not a fat tree and minhop computed the tables, as OpenSM does.
	FellBack string
}

// Build makes the wiring for nodes nodes on profile p. Random placement
// without a seed of its own takes seed.
func Build(s netspec.Spec, nodes int, p *sim.Profile, seed uint64) (*Built, error) {
	if s.IsSingle() {
		return &Built{}, nil
	}
	var t *topo.Topology
	switch s.Kind {
	case netspec.FatTree:
		radix := s.Radix
		if radix == 0 {
			r, err := DefaultRadix(p)
			if err != nil {
				return nil, err
			}
			radix = r
		}
		ft := topo.FatTreeSpec{Hosts: max(s.Hosts, nodes), Radix: radix, Levels: s.Levels}
		if s.Oversub > 1 {
			ft.Down, ft.Up = topo.Oversubscribed(radix, s.Oversub)
		}
		if s.Hosts > 0 && s.Hosts < nodes {
			return nil, fmt.Errorf("%w: a fat tree of %d hosts cannot hold %d nodes", netspec.ErrSpec, s.Hosts, nodes)
		}
		var err error
		if t, err = topo.FatTree(ft); err != nil {
			return nil, err
		}
	case netspec.File:
		var err error
		if t, err = ibnet.Load(s.Path); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("%w: topology kind %d", netspec.ErrSpec, s.Kind)
	}
	if err := setLinks(t, s); err != nil {
		return nil, err
	}
	b := &Built{Name: t.Name}
	var tb *topo.Tables
	var err error
	switch {
	case s.LFTPath != "":
		tb, err = ibnet.LoadLFTs(s.LFTPath, t)
	default:
		tb, err = route.Compute(t, s.Engine, seed)
		if errors.Is(err, route.ErrNotFatTree) {
			b.FellBack = err.Error()
			tb, err = route.Compute(t, route.MinHop, seed)
		}
	}
	if err != nil {
		return nil, err
	}
	pl := s.Placement
	if pl.Kind == topo.Random && pl.Seed == 0 {
		pl.Seed = seed
	}
	hosts, err := pl.Place(t, nodes)
	if err != nil {
		return nil, err
	}
	engine := s.Engine
	if s.LFTPath != "" || b.FellBack != "" {
		engine = route.MinHop
	}
	b.Fabric = &sim.Fabric{Topology: t, Tables: tb, Hosts: hosts, Adaptive: s.Adaptive, AdaptiveRC: s.AdaptiveRC, Engine: engine, VLs: s.VLs}
	return b, nil
}

// setLinks applies the spec's cable widths and speeds to t: none with
// speeds=profile, then every host's cable and every cable between
// switches the spec sets, then its single cables (both ends of a cable
// between switches).
func setLinks(t *topo.Topology, s netspec.Spec) error {
	at := make([]int, len(s.Cables)) // each single cable's switch
	for i, c := range s.Cables {
		sw, err := t.FindSwitch(c.Switch)
		if err != nil {
			return fmt.Errorf("%w: cable=%s: %w", netspec.ErrSpec, c, err)
		}
		if ports := len(t.Switches[sw].Ports); c.Port > ports || t.Switches[sw].Ports[c.Port-1].Kind == topo.None {
			return fmt.Errorf("%w: cable=%s: port %d of switch %q has no cable (it has ports 1..%d)", netspec.ErrSpec, c, c.Port, t.Switches[sw].Name, ports)
		}
		at[i] = sw
	}
	if s.ProfileSpeeds || !s.HostLink.IsZero() || !s.SwitchLink.IsZero() {
		for i := range t.Switches {
			for p := range t.Switches[i].Ports {
				pe := &t.Switches[i].Ports[p]
				if s.ProfileSpeeds {
					pe.Link = topo.Link{}
				}
				switch {
				case pe.Kind == topo.ToHost && !s.HostLink.IsZero():
					pe.Link = s.HostLink
				case pe.Kind == topo.ToSwitch && !s.SwitchLink.IsZero():
					pe.Link = s.SwitchLink
				}
			}
		}
	}
	for i, c := range s.Cables {
		pe := &t.Switches[at[i]].Ports[c.Port-1]
		pe.Link = c.Link
		if pe.Kind == topo.ToSwitch {
			t.Switches[pe.Index].Ports[pe.Port-1].Link = c.Link
		}
	}
	return nil
}

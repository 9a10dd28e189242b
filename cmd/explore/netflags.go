package main

import (
	"fmt"
	"strings"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/netbuild"

	"github.com/spf13/pflag"

	"github.com/rdmashuffle/rdmashuffle/fabric/netspec"
	"github.com/rdmashuffle/rdmashuffle/fabric/route"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
	"github.com/rdmashuffle/rdmashuffle/fabric/topo"
	"github.com/rdmashuffle/rdmashuffle/fabric/topo/ibnet"
)

// netFlags are the simulator's network flags: topology, routing,
// placement.
type netFlags struct {
	topology, routing, placement, oversub string
	radix, levels, hosts, vls             int
	speeds, hostLink, switchLink          string
	cables                                []string
}

// netFlagNames are the network flags; the sweep parameter network (and
// run's --network) says what they say in one string.
var netFlagNames = []string{"topology", "routing", "placement", "radix", "levels", "oversubscription", "hosts", "vls", "speeds", "host-link", "switch-link", "cable"}

func (f *netFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&f.topology, "topology", "single", "simulator: the switches: single (one ideal crossbar, the default), fat-tree (two or three levels of the profile's switch), or file:PATH (ibnetdiscover output or YAML; docs/fabric-files.md)")
	fl.StringVar(&f.routing, "routing", "minhop", "simulator, multi-switch: minhop (OpenSM's default), updn, ftree, random, adaptive (per-packet among shortest paths, UD traffic; adaptive-rc lets RC adapt too), or lft:PATH (OpenSM's LFT dump); docs/routing.md")
	fl.StringVar(&f.placement, "placement", "contiguous", "simulator, multi-switch: where the nodes run: contiguous, round-robin (over the leaves), random[:SEED] (default seed: --seed), list:HOST,HOST,...")
	fl.IntVar(&f.radix, "radix", 0, "fat-tree: ports per switch (default: the profile's switch generation, docs/model.md)")
	fl.IntVar(&f.levels, "levels", 0, "fat-tree: 2 or 3 levels (default: the fewest that hold the hosts)")
	fl.StringVar(&f.oversub, "oversubscription", "1:1", "fat-tree: hosts to uplinks at each leaf, R:1")
	fl.IntVar(&f.hosts, "hosts", 0, "fat-tree: hosts cabled (default: --nodes; more leaves hosts without a node)")
	fl.StringVar(&f.speeds, "speeds", "file", "multi-switch: file (each cable at the width and speed a fabric file gives it, 4xEDR, 2xHDR; the profile's rate where none is given) or profile (every cable at the profile's rate, but for those --host-link, --switch-link and --cable set)")
	fl.StringVar(&f.hostLink, "host-link", "", "multi-switch: every host's cable at this width and speed, such as 2xHDR (HDR100) or 1xEDR (a cable that trained at one lane); no faster than the profile's port")
	fl.StringVar(&f.switchLink, "switch-link", "", "multi-switch: every cable between switches at this width and speed, such as 4xHDR")
	fl.StringArrayVar(&f.cables, "cable", nil, "multi-switch: one cable at a width and speed of its own, SWITCH/PORT:WIDTHxSPEED (leaf-0/19:1xEDR: the cable at port 19 of leaf-0 trained at one lane); repeat for more")
	fl.IntVar(&f.vls, "vls", 1, "multi-switch: data virtual lanes per port, each with its share of every buffer and its credits, service levels mapped and lanes arbitrated as OpenSM does with quality of service on (1: one lane, OpenSM's default)")
}

// spec reads the flags into a network specification; set tells which
// flags the user gave, so that a multi-switch flag on the single switch
// is refused instead of ignored.
func (f *netFlags) spec(set func(string) bool) (netspec.Spec, error) {
	var s netspec.Spec
	var err error
	if s.Kind, s.Path, err = netspec.ParseTopology(f.topology); err != nil {
		return s, fmt.Errorf("--topology: %w", err)
	}
	if s.IsSingle() {
		for _, name := range netFlagNames[1:] {
			if set(name) {
				return s, fmt.Errorf("--%s applies to a multi-switch network: give --topology fat-tree or --topology file:PATH, or drop it", name)
			}
		}
		return s, nil
	}
	if s.Kind != netspec.FatTree {
		for _, name := range []string{"radix", "levels", "oversubscription", "hosts"} {
			if set(name) {
				return s, fmt.Errorf("--%s shapes a generated fat tree; a fabric file has its own: drop it", name)
			}
		}
	}
	switch r := f.routing; {
	case r == "adaptive" || r == "adaptive-rc":
		s.Engine, s.Adaptive, s.AdaptiveRC = route.MinHop, true, r == "adaptive-rc"
	case len(r) > 4 && r[:4] == "lft:":
		s.LFTPath = r[4:]
	default:
		if s.Engine, err = route.ParseEngine(r); err != nil {
			return s, fmt.Errorf("--routing: %w (or adaptive, adaptive-rc, lft:PATH)", err)
		}
	}
	if s.Placement, err = topo.ParsePlacement(f.placement); err != nil {
		return s, fmt.Errorf("--placement: %w", err)
	}
	if s.Oversub, err = netspec.ParseOversub(f.oversub); err != nil {
		return s, fmt.Errorf("--oversubscription: %w", err)
	}
	if f.radix < 0 || f.levels < 0 || f.hosts < 0 {
		return s, fmt.Errorf("--radix, --levels and --hosts must not be negative")
	}
	if f.vls < 1 || f.vls > 15 {
		return s, fmt.Errorf("--vls %d: a port has 1 to 15 data virtual lanes", f.vls)
	}
	s.Radix, s.Levels, s.Hosts, s.VLs = f.radix, f.levels, f.hosts, f.vls
	switch f.speeds {
	case "file":
	case "profile":
		s.ProfileSpeeds = true
	default:
		return s, fmt.Errorf("--speeds %q: file (the widths and speeds a fabric file gives) or profile (every cable at the profile's rate)", f.speeds)
	}
	for _, l := range []struct {
		name, v string
		to      *topo.Link
	}{{"host-link", f.hostLink, &s.HostLink}, {"switch-link", f.switchLink, &s.SwitchLink}} {
		if l.v == "" {
			continue
		}
		if *l.to, err = topo.ParseLink(l.v); err != nil {
			return s, fmt.Errorf("--%s: %w", l.name, err)
		}
	}
	for _, v := range f.cables {
		c, err := netspec.ParseCableLink(v)
		if err != nil {
			return s, fmt.Errorf("--cable: %w", err)
		}
		s.Cables = append(s.Cables, c)
	}
	return s, nil
}

// build wires the network for a run of nodes nodes.
func (f *netFlags) build(s netspec.Spec, nodes int, prof *sim.Profile, seed uint64) (*netbuild.Built, error) {
	b, err := netbuild.Build(s, nodes, prof, seed)
	if err != nil {
		return nil, fmt.Errorf("--topology %s: %w", f.topology, err)
	}
	return b, nil
}

// inOrderNote says, for RC under adaptive routing on a NIC without
// out-of-order placement (nic.ooo_window 0), that a packet overtaking
// another is a sequence error and go-back-N; "" otherwise.
func inOrderNote(s netspec.Spec, p *sim.Profile, conn fabric.QPType) string {
	if !s.AdaptiveRC || p.NIC.OOOWindow > 0 || conn != fabric.RC {
		return ""
	}
	return fmt.Sprintf("note: RC packets adapt, but %s's NIC has no out-of-order placement (nic.ooo_window 0): a packet that overtakes another is a sequence error, answered by go-back-N (docs/topology.md)\n", p.Name)
}

// speedNote says when host cables of t run slower than the profile's
// port: a fabric file of another generation than the profile, or a cable
// that trained at fewer lanes. Those cables are simulated at their own
// rate; the note says so and how to choose otherwise.
func speedNote(t *topo.Topology, prof *sim.Profile) string {
	port := prof.DataRateBps()
	var kinds []topo.Link
	count := map[topo.Link]int{}
	slow := 0
	for h := range t.Hosts {
		l := t.HostLink(h)
		if sim.LinkRateBps(l, prof) >= port*(1-1e-9) {
			continue
		}
		if count[l] == 0 {
			kinds = append(kinds, l)
		}
		count[l]++
		slow++
	}
	if slow == 0 {
		return ""
	}
	var parts []string
	for _, l := range kinds {
		parts = append(parts, fmt.Sprintf("%d at %s (%.1f Gb/s)", count[l], l, sim.LinkRateBps(l, prof)/1e9))
	}
	return wrapText(fmt.Sprintf("note: %d of %d host cables run slower than profile %s's port (%.1f Gb/s): %s. They are simulated at their own rate; --speeds profile runs every cable at the profile's, and a profile of the fabric's generation (--profile) may be what was meant", slow, len(t.Hosts), prof.Name, port/1e9, strings.Join(parts, ", ")), tableWidth(), "  ") + "\n"
}

// fileSpeedNote is speedNote for a network read from a file whose host
// cables' speeds the user did not set: a file of another generation than
// the profile is said before the run. "" otherwise, and when the file or
// the profile cannot be read (the run says why).
func fileSpeedNote(n netspec.Spec, profile string) string {
	if n.Kind != netspec.File || n.ProfileSpeeds || !n.HostLink.IsZero() {
		return ""
	}
	tp, err := ibnet.Load(n.Path)
	if err != nil {
		return ""
	}
	prof, err := sim.LoadProfile(profile)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(speedNote(tp, prof), "\n")
}

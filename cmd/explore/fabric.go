package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"github.com/rdmashuffle/rdmashuffle/fabric/netbuild"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rdmashuffle/rdmashuffle/fabric/netspec"
	"github.com/rdmashuffle/rdmashuffle/fabric/route"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
	"github.com/rdmashuffle/rdmashuffle/fabric/topo"
	"github.com/rdmashuffle/rdmashuffle/fabric/topo/ibnet"
)

// fabricReport is what explore fabric says of a network (--json).
type fabricReport struct {
	Name       string  `json:"name"`
	Network    string  `json:"network"`
	brief      string  // Network for people (netspec.Spec.Brief)
	Hosts      int     `json:"hosts"`
	Switches   int     `json:"switches"`
	ByLevel    []int   `json:"switches_by_level"` // switches per level, leaves first
	Radix      []int   `json:"radix"`             // the smallest and largest switch
	Cables     int     `json:"switch_cables"`     // cables between switches
	Leaves     int     `json:"leaves"`
	HostsPer   []int   `json:"hosts_per_leaf"`   // smallest, largest
	UplinksPer []int   `json:"uplinks_per_leaf"` // smallest, largest
	Oversub    float64 `json:"worst_oversubscription"`
	Routing    string  `json:"routing"`
	// EBBEstimate is route.EstimateEBB over 20 random bisections.
	EBBEstimate float64 `json:"ebb_estimate"`
	FellBack    string  `json:"fell_back,omitempty"`
	// Speeds counts the cables by width and speed, hosts' and switches'
	// apart, those without one as the profile's ("profile edr-cx4").
	HostSpeeds   []speedCount `json:"host_cable_speeds"`
	SwitchSpeeds []speedCount `json:"switch_cable_speeds"`
	// SlowCables names every cable slower than most cables of its kind
	// (hosts' or between switches): in a real fabric, a cable that trained
	// at fewer lanes or a lower speed than the rest.
	SlowCables []string `json:"slow_cables,omitempty"`
	route.Analysis
}

// withProfileSpeeds is t with every cable that has no width and speed
// given the profile's (a copy; t itself when the profile's lanes run at
// no InfiniBand speed), so that a written fabric reads as one of the
// profile's generation.
func withProfileSpeeds(t *topo.Topology, prof *sim.Profile) *topo.Topology {
	l, ok := sim.ProfileLink(prof)
	if !ok {
		return t
	}
	u := *t
	u.Switches = slices.Clone(t.Switches)
	for i := range u.Switches {
		u.Switches[i].Ports = slices.Clone(t.Switches[i].Ports)
		for p := range u.Switches[i].Ports {
			if pe := &u.Switches[i].Ports[p]; pe.Kind != topo.None && pe.Link.IsZero() {
				pe.Link = l
			}
		}
	}
	return &u
}

// speedCount is how many cables run at one width and speed.
type speedCount struct {
	Speed  string  `json:"speed"`
	Gbps   float64 `json:"gbps"`
	Cables int     `json:"cables"`
}

// countSpeeds counts t's host cables and cables between switches by width
// and speed, fastest first; a cable without one runs at the profile's
// port rate and is named so.
func countSpeeds(t *topo.Topology, prof *sim.Profile) (hosts, switches []speedCount) {
	count := func(list []speedCount, l topo.Link, n int) []speedCount {
		name := l.String()
		if l.IsZero() {
			name = "profile " + prof.Name
		}
		for i := range list {
			if list[i].Speed == name {
				list[i].Cables += n
				return list
			}
		}
		return append(list, speedCount{Speed: name, Gbps: sim.LinkRateBps(l, prof) / 1e9, Cables: n})
	}
	for s := range t.Switches {
		for i, pe := range t.Switches[s].Ports {
			switch {
			case pe.Kind == topo.ToHost:
				hosts = count(hosts, pe.Link, 1)
			case pe.Kind == topo.ToSwitch && (pe.Index > s || pe.Index == s && pe.Port > i+1):
				switches = count(switches, pe.Link, 1)
			}
		}
	}
	for _, l := range [][]speedCount{hosts, switches} {
		slices.SortStableFunc(l, func(a, b speedCount) int { return cmp.Compare(b.Gbps, a.Gbps) })
	}
	return hosts, switches
}

// slowCables names the cables of t slower than the most common rate of
// their kind (hosts' cables, cables between switches), in switch and
// port order.
func slowCables(t *topo.Topology, prof *sim.Profile) []string {
	common := func(kind topo.PeerKind) float64 {
		n := map[float64]int{}
		best, rate := 0, 0.0
		for s := range t.Switches {
			for _, pe := range t.Switches[s].Ports {
				if pe.Kind == kind {
					r := sim.LinkRateBps(pe.Link, prof)
					n[r]++
					if n[r] > best || n[r] == best && r > rate {
						best, rate = n[r], r
					}
				}
			}
		}
		return rate
	}
	hostRate, switchRate := common(topo.ToHost), common(topo.ToSwitch)
	var out []string
	for s := range t.Switches {
		sw := &t.Switches[s]
		for i, pe := range sw.Ports {
			r := sim.LinkRateBps(pe.Link, prof)
			switch {
			case pe.Kind == topo.ToHost && r < hostRate:
				out = append(out, fmt.Sprintf("host %q on %s/%d at %s (%.1f of %.1f Gb/s)", t.Hosts[pe.Index].Name, sw.Name, i+1, pe.Link, r/1e9, hostRate/1e9))
			case pe.Kind == topo.ToSwitch && (pe.Index > s || pe.Index == s && pe.Port > i+1) && r < switchRate:
				out = append(out, fmt.Sprintf("%s/%d to %s/%d at %s (%.1f of %.1f Gb/s)", sw.Name, i+1, t.Switches[pe.Index].Name, pe.Port, pe.Link, r/1e9, switchRate/1e9))
			}
		}
	}
	return out
}

func fabricCmd() *cobra.Command {
	var nf netFlags
	var nodes int
	var profile, writeTopo, writeLFTs string
	var jsonOut bool
	cmd := &cobra.Command{
		Use:   "fabric",
		Short: "Describe a network of switches and what its routing does to shuffle traffic",
		Long: `fabric loads or generates a network (--topology fat-tree or file:PATH, as explore run
takes it), routes it (--routing), places the nodes (--placement) and reports its shape
(switches per level, radix, hosts and uplinks per leaf, oversubscription) and what the
forwarding tables do to the stages of an ordered all-to-all: the shift permutations
(stage k: node i sends to node i+k), the most flows any switch-to-switch cable carries in
one stage (1: every stage free of conflicts), and the switches on a path. It can write the
network as ibnetdiscover output and its tables as OpenSM's forwarding-table dump. It runs
no simulation: see explore bench ebb for measured bisection bandwidth (docs/topology.md).`,
		Example: `  explore fabric --topology fat-tree --nodes 648
  explore fabric --topology fat-tree --nodes 1024 --routing minhop
  explore fabric --topology file:fabric.txt --routing lft:opensm-lfts.dump
  explore fabric --topology fat-tree --nodes 64 --radix 8 --write-ibnetdiscover tree.txt --write-lfts tree.lfts`,
		Args: flagsOnly,
		RunE: func(cmd *cobra.Command, _ []string) error {
			spec, err := nf.spec(cmd.Flags().Changed)
			if err != nil {
				return err
			}
			if spec.IsSingle() {
				return fmt.Errorf("--topology: give fat-tree or file:PATH; the single switch has no cables between switches to describe")
			}
			if spec.Adaptive {
				return fmt.Errorf("--routing %s: adaptive routing chooses per packet; fabric describes static tables (its static ones are minhop's: use --routing minhop)", nf.routing)
			}
			prof, err := sim.LoadProfile(profile)
			if err != nil {
				return err
			}
			if nodes == 0 {
				if spec.Kind == netspec.FatTree && spec.Hosts == 0 {
					return fmt.Errorf("--nodes: give the nodes (a fat tree is generated for them; --hosts for more hosts than nodes)")
				}
				if spec.Kind == netspec.FatTree {
					nodes = spec.Hosts
				} else {
					t, err := ibnet.Load(spec.Path)
					if err != nil {
						return err
					}
					nodes = len(t.Hosts)
				}
			}
			if nodes < 2 {
				return fmt.Errorf("--nodes %d: at least 2", nodes)
			}
			t := newTask(cmd.ErrOrStderr(), "fabric", "", 0)
			defer t.finish()
			t.setDetail(fmt.Sprintf("building and routing %d nodes", nodes))
			b, err := nf.build(spec, nodes, prof, 1)
			if err != nil {
				return err
			}
			t.setDetail(fmt.Sprintf("following %d shift stages and 20 bisections", nodes-1))
			rep, err := describeFabric(spec, b, prof)
			if err != nil {
				return err
			}
			t.finish()
			for _, w := range []struct {
				path  string
				write func(io.Writer) error
			}{
				{writeTopo, func(w io.Writer) error {
					return ibnet.WriteIBNetDiscover(w, withProfileSpeeds(b.Fabric.Topology, prof))
				}},
				{writeLFTs, func(w io.Writer) error { return ibnet.WriteLFTs(w, b.Fabric.Topology, b.Fabric.Tables) }},
			} {
				if w.path == "" {
					continue
				}
				f, err := os.Create(w.path)
				if err != nil {
					return err
				}
				if err := w.write(f); err != nil {
					f.Close()
					return fmt.Errorf("%s: %w", w.path, err)
				}
				if err := f.Close(); err != nil {
					return err
				}
			}
			if jsonOut {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(rep)
			}
			printFabric(cmd.OutOrStdout(), rep)
			return nil
		},
	}
	fl := cmd.Flags()
	nf.register(fl)
	fl.IntVar(&nodes, "nodes", 0, "nodes placed on the fabric (default: every host of a file; a fat tree is generated for them)")
	fl.StringVar(&profile, "profile", sim.DefaultProfileName, "hardware profile: its link generation gives a fat tree's default radix")
	fl.StringVar(&writeTopo, "write-ibnetdiscover", "", "write the network as ibnetdiscover output to this file")
	fl.StringVar(&writeLFTs, "write-lfts", "", "write the forwarding tables as OpenSM's LFT dump to this file")
	fl.BoolVar(&jsonOut, "json", false, "print the description as one JSON object")
	return cmd
}

// describeFabric measures a built network.
func describeFabric(spec netspec.Spec, b *netbuild.Built, prof *sim.Profile) (*fabricReport, error) {
	t, tb := b.Fabric.Topology, b.Fabric.Tables
	rep := &fabricReport{Name: t.Name, Network: spec.String(), brief: spec.Brief(), Hosts: len(t.Hosts), Switches: len(t.Switches), FellBack: b.FellBack}
	rep.Routing = spec.Engine.String()
	if spec.LFTPath != "" {
		rep.Routing = "lft:" + spec.LFTPath
	}
	levels, _ := t.LeafHops()
	hostsOn := make([]int, len(t.Switches))
	for _, h := range t.Hosts {
		hostsOn[h.Switch]++
	}
	var radix, hostsPer, upPer []int
	for s := range t.Switches {
		if l := levels[s]; l >= 0 {
			for len(rep.ByLevel) <= l {
				rep.ByLevel = append(rep.ByLevel, 0)
			}
			rep.ByLevel[l]++
		}
		radix = append(radix, t.Switches[s].Radix())
		up := 0
		for _, pe := range t.Switches[s].Ports {
			if pe.Kind == topo.ToSwitch {
				up++
				rep.Cables++
			}
		}
		if hostsOn[s] > 0 {
			rep.Leaves++
			hostsPer = append(hostsPer, hostsOn[s])
			upPer = append(upPer, up)
			if up > 0 {
				rep.Oversub = max(rep.Oversub, float64(hostsOn[s])/float64(up))
			}
		}
	}
	rep.Cables /= 2
	rep.HostSpeeds, rep.SwitchSpeeds = countSpeeds(t, prof)
	rep.SlowCables = slowCables(t, prof)
	minmax := func(v []int) []int { return []int{slices.Min(v), slices.Max(v)} }
	rep.Radix, rep.HostsPer, rep.UplinksPer = minmax(radix), minmax(hostsPer), minmax(upPer)
	stages := 0 // every stage: n^2 paths, a fraction of a second up to 4096 nodes
	if len(b.Fabric.Hosts) > 4096 {
		stages = 1024
	}
	a, err := route.Analyze(t, tb, b.Fabric.Hosts, stages)
	if err != nil {
		return nil, err
	}
	rep.Analysis = a
	if rep.EBBEstimate, err = route.EstimateEBB(t, tb, b.Fabric.Hosts, 20, 1, sim.LinkRateBps(topo.Link{}, prof)/1e9); err != nil {
		return nil, err
	}
	return rep, nil
}

func printFabric(w io.Writer, r *fabricReport) {
	span := func(v []int) string {
		if v[0] == v[1] {
			return fmt.Sprint(v[0])
		}
		return fmt.Sprintf("%d to %d", v[0], v[1])
	}
	fmt.Fprintf(w, "%s\n", r.Name)
	fmt.Fprintf(w, "  %d hosts, %d switches (by level from the leaves: %v), radix %s, %d cables between switches\n",
		r.Hosts, r.Switches, r.ByLevel, span(r.Radix), r.Cables)
	fmt.Fprintf(w, "  %d leaves: %s hosts and %s uplinks each; worst oversubscription %.2f:1\n",
		r.Leaves, span(r.HostsPer), span(r.UplinksPer), r.Oversub)
	speeds := func(l []speedCount) string {
		var parts []string
		for _, c := range l {
			parts = append(parts, fmt.Sprintf("%d at %s (%.1f Gb/s)", c.Cables, c.Speed, c.Gbps))
		}
		if len(parts) == 0 {
			return "none"
		}
		return strings.Join(parts, ", ")
	}
	fmt.Fprintln(w, "  "+wrapText(fmt.Sprintf("host cables: %s; cables between switches: %s", speeds(r.HostSpeeds), speeds(r.SwitchSpeeds)), tableWidth()-2, "    "))
	if n := len(r.SlowCables); n > 0 {
		shown := r.SlowCables[:min(n, 10)]
		more := ""
		if n > len(shown) {
			more = fmt.Sprintf("; and %d more (--json lists them all)", n-len(shown))
		}
		what := fmt.Sprintf("%d cables slower than most of their kind", n)
		if n == 1 {
			what = "1 cable slower than most of its kind"
		}
		fmt.Fprintln(w, "  "+wrapText(fmt.Sprintf("%s: %s%s", what, strings.Join(shown, "; "), more), tableWidth()-2, "    "))
	}
	fmt.Fprintf(w, "  routing %s", r.Routing)
	if r.FellBack != "" {
		fmt.Fprintf(w, " (fell back to minhop: %s)", r.FellBack)
	}
	fmt.Fprintf(w, "\n%d nodes (%s):\n", r.Ranks, cmp.Or(r.brief, r.Network))
	what := "every stage is free of conflicts"
	if r.ShiftWorst > 1 {
		what = fmt.Sprintf("first at stage %d; the mean stage's busiest cable carries %.2f flows", r.ShiftWorstStage, r.ShiftMeanWorst)
	}
	looked := "all"
	if r.Stages < r.Ranks-1 {
		looked = fmt.Sprintf("%d evenly spaced", r.Stages)
	}
	flows := "flows"
	if r.ShiftWorst == 1 {
		flows = "flow"
	}
	fmt.Fprintln(w, "  "+wrapText(fmt.Sprintf("shift permutations (%s of %d stages): at most %d %s on one cable (%s)", looked, r.Ranks-1, r.ShiftWorst, flows, what), tableWidth()-2, "    "))
	fmt.Fprintf(w, "  switches on a path: %.2f on average, at most %d\n", r.MeanSwitches, r.MaxSwitches)
	fmt.Fprintln(w, "  "+wrapText(fmt.Sprintf("effective bisection bandwidth, estimated from cable sharing over 20 random bisections: %.3f (explore bench ebb measures it)", r.EBBEstimate), tableWidth()-2, "    "))
}

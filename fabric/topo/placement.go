package topo

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// PlacementKind says how a run's nodes (ranks) are put on a fabric's hosts.
type PlacementKind uint8

// Placements.
const (
	Contiguous PlacementKind = iota // rank i on host i: a job given consecutive hosts
	RoundRobin                      // rank i on leaf i mod L: spread over the leaves
	Random                          // a seeded random choice of hosts
	HostList                        // the hosts named, in order
)

var placementNames = [...]string{"contiguous", "round-robin", "random", "list"}

func (k PlacementKind) String() string {
	if int(k) < len(placementNames) {
		return placementNames[k]
	}
	return "placement(" + strconv.Itoa(int(k)) + ")"
}

// Placement says where each rank of a run lives.
type Placement struct {
	Kind  PlacementKind
	Seed  uint64   // Random
	Hosts []string // HostList: host names or indices, one per rank
}

// ErrPlacement is returned when ranks cannot be placed.
var ErrPlacement = fmt.Errorf("topo: cannot place the ranks")

// ParsePlacement reads "contiguous", "round-robin", "random", "random:SEED"
// or "list:h1,h2,...".
func ParsePlacement(s string) (Placement, error) {
	name, arg, hasArg := strings.Cut(s, ":")
	switch name {
	case "contiguous", "round-robin":
		if hasArg {
			return Placement{}, fmt.Errorf("%w: %q takes no argument", ErrPlacement, name)
		}
		if name == "contiguous" {
			return Placement{Kind: Contiguous}, nil
		}
		return Placement{Kind: RoundRobin}, nil
	case "random":
		p := Placement{Kind: Random}
		if hasArg {
			v, err := strconv.ParseUint(arg, 10, 64)
			if err != nil {
				return Placement{}, fmt.Errorf("%w: random:%s: the seed must be an unsigned integer", ErrPlacement, arg)
			}
			p.Seed = v
		}
		return p, nil
	case "list":
		if !hasArg || arg == "" {
			return Placement{}, fmt.Errorf("%w: list needs host names or indices: list:h1,h2,...", ErrPlacement)
		}
		return Placement{Kind: HostList, Hosts: strings.Split(arg, ",")}, nil
	}
	return Placement{}, fmt.Errorf("%w: unknown placement %q (contiguous, round-robin, random[:seed], list:h1,h2,...)", ErrPlacement, s)
}

func (p Placement) String() string {
	switch p.Kind {
	case Random:
		return "random:" + strconv.FormatUint(p.Seed, 10)
	case HostList:
		return "list:" + strings.Join(p.Hosts, ",")
	}
	return p.Kind.String()
}

// Place returns the host of each of ranks ranks on t.
func (p Placement) Place(t *Topology, ranks int) ([]int, error) {
	if ranks < 1 {
		return nil, fmt.Errorf("%w: %d ranks", ErrPlacement, ranks)
	}
	if ranks > len(t.Hosts) {
		return nil, fmt.Errorf("%w: %d ranks on a fabric of %d hosts", ErrPlacement, ranks, len(t.Hosts))
	}
	out := make([]int, ranks)
	switch p.Kind {
	case Contiguous:
		for i := range out {
			out[i] = i
		}
	case RoundRobin:
		byLeaf := make(map[int][]int)
		leaves := t.Leaves()
		for h, host := range t.Hosts {
			byLeaf[host.Switch] = append(byLeaf[host.Switch], h)
		}
		next := make([]int, len(leaves))
		for i, l := 0, 0; i < ranks; l = (l + 1) % len(leaves) {
			if s := leaves[l]; next[l] < len(byLeaf[s]) {
				out[i] = byLeaf[s][next[l]]
				next[l]++
				i++
			}
		}
	case Random:
		perm := rand.New(rand.NewPCG(p.Seed, 0x706c616365)).Perm(len(t.Hosts))
		copy(out, perm[:ranks])
	case HostList:
		if len(p.Hosts) != ranks {
			return nil, fmt.Errorf("%w: the list names %d hosts for %d ranks", ErrPlacement, len(p.Hosts), ranks)
		}
		byName := make(map[string]int, len(t.Hosts))
		for i, h := range t.Hosts {
			byName[h.Name] = i
		}
		used := make(map[int]bool, ranks)
		for i, name := range p.Hosts {
			h, ok := byName[name]
			if !ok {
				v, err := strconv.Atoi(name)
				if err != nil || v < 0 || v >= len(t.Hosts) {
					return nil, fmt.Errorf("%w: no host %q (names or indices 0..%d)", ErrPlacement, name, len(t.Hosts)-1)
				}
				h = v
			}
			if used[h] {
				return nil, fmt.Errorf("%w: host %q is listed twice", ErrPlacement, name)
			}
			used[h] = true
			out[i] = h
		}
	default:
		return nil, fmt.Errorf("%w: placement kind %d", ErrPlacement, p.Kind)
	}
	return out, nil
}

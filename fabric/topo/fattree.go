package topo

import "fmt"

// FatTreeSpec describes a two- or three-level fat tree (a folded Clos
// network) built from switches of one radix, as InfiniBand clusters past
// one switch are built.
//
// Two levels: each leaf cables Down ports to hosts and one port to each of
// Up spines; a spine has one port per leaf, so at most Radix leaves and
// Radix x Down hosts (648 with 36-port switches at 1:1).
//
// Three levels: leaves as above; a pod is up to Radix/2 leaves and Up
// aggregation switches, each leaf cabled once to each aggregation switch
// of its pod; aggregation switch j of every pod cables its Radix/2 upper
// ports to the Radix/2 core switches of core group j, one each, so a core
// switch has one port per pod and there are at most Radix pods
// (Radix x Radix/2 x Down hosts: 11,664 with 36 ports at 1:1).
//
// A partially populated tree (fewer hosts than the full one) has only the
// leaves, pods and switches its hosts need, cabled as in the full tree;
// unused ports stay empty. Oversubscription is Down:Up at the leaves;
// the levels above are never oversubscribed.
type FatTreeSpec struct {
	Hosts  int // hosts to cable, at least 1
	Radix  int // ports per switch, 4..255
	Levels int // 2 or 3; 0 picks the fewest that hold Hosts
	Down   int // leaf ports to hosts; 0 with Up 0 means Radix/2 (1:1)
	Up     int // leaf ports to the level above
}

// MaxHosts is the most hosts a generated fat tree has: four times the
// simulator's nodes, and tables of at most a few hundred MB.
const MaxHosts = 1 << 17

// Oversubscribed returns the leaf's down and up ports of a radix-port
// switch at exactly ratio:1 oversubscription (1 for none): as many up
// ports as the ratio allows and ratio times as many down; a radix the
// ratio does not divide leaves ports unused (radix 8 at 2:1: 4 down, 2 up).
func Oversubscribed(radix, ratio int) (down, up int) {
	if ratio < 1 {
		return 0, 0
	}
	up = radix / (ratio + 1)
	return ratio * up, up
}

func (s *FatTreeSpec) normalize() error {
	if s.Radix < 4 || s.Radix > 255 {
		return fmt.Errorf("%w: radix %d: a fat tree needs switches of 4 to 255 ports", ErrBadSpec, s.Radix)
	}
	if s.Down == 0 && s.Up == 0 {
		s.Down, s.Up = s.Radix-s.Radix/2, s.Radix/2
	}
	if s.Down < 1 || s.Up < 1 || s.Down+s.Up > s.Radix {
		return fmt.Errorf("%w: a leaf with %d ports down and %d up: both must be at least 1 and together at most the radix %d", ErrBadSpec, s.Down, s.Up, s.Radix)
	}
	if s.Hosts < 1 {
		return fmt.Errorf("%w: %d hosts: at least 1", ErrBadSpec, s.Hosts)
	}
	if s.Hosts > MaxHosts {
		return fmt.Errorf("%w: %d hosts: a generated fabric has at most %d (the simulator runs at most 32,768 nodes)", ErrTooLarge, s.Hosts, MaxHosts)
	}
	max2, max3 := s.Radix*s.Down, s.Radix*(s.Radix/2)*s.Down
	if s.Up > s.Radix/2 && s.Levels != 2 {
		// An aggregation switch has Radix/2 ports down, so a three-level
		// pod cannot give a leaf more than Radix/2 uplinks.
		max3 = 0
	}
	switch s.Levels {
	case 0:
		switch {
		case s.Hosts <= max2:
			s.Levels = 2
		case s.Hosts <= max3:
			s.Levels = 3
		default:
			return fmt.Errorf("%w: %d hosts do not fit a three-level fat tree of radix %d with %d hosts per leaf (at most %d)", ErrTooLarge, s.Hosts, s.Radix, s.Down, max3)
		}
	case 2:
		if s.Hosts > max2 {
			return fmt.Errorf("%w: %d hosts do not fit a two-level fat tree of radix %d with %d hosts per leaf (at most %d); use three levels", ErrTooLarge, s.Hosts, s.Radix, s.Down, max2)
		}
	case 3:
		if s.Up > s.Radix/2 {
			return fmt.Errorf("%w: a three-level tree's leaves have at most radix/2 = %d uplinks, not %d", ErrBadSpec, s.Radix/2, s.Up)
		}
		if s.Hosts > max3 {
			return fmt.Errorf("%w: %d hosts do not fit a three-level fat tree of radix %d with %d hosts per leaf (at most %d)", ErrTooLarge, s.Hosts, s.Radix, s.Down, max3)
		}
	default:
		return fmt.Errorf("%w: %d levels: 2 or 3 (or 0 for the fewest that fit)", ErrBadSpec, s.Levels)
	}
	return nil
}

// FatTree builds the fat tree s describes, with LIDs assigned (switches
// first). Hosts are cabled to leaves in order: host i to leaf i/Down.
func FatTree(s FatTreeSpec) (*Topology, error) {
	if err := s.normalize(); err != nil {
		return nil, err
	}
	b := builder{t: &Topology{Name: s.String()}}
	leaves := (s.Hosts + s.Down - 1) / s.Down
	leaf := make([]int, leaves)
	for i := range leaf {
		leaf[i] = b.addSwitch(fmt.Sprintf("leaf-%d", i), s.Radix, 0)
	}
	for h := 0; h < s.Hosts; h++ {
		b.addHost(fmt.Sprintf("host-%d", h), leaf[h/s.Down], h%s.Down+1)
	}
	if s.Levels == 2 {
		for j := 0; j < s.Up; j++ {
			sp := b.addSwitch(fmt.Sprintf("spine-%d", j), s.Radix, 1)
			for i, l := range leaf {
				b.cable(l, s.Down+j+1, sp, i+1)
			}
		}
	} else {
		half := s.Radix / 2
		pods := (leaves + half - 1) / half
		cores := make([][]int, s.Up) // by group
		for g := range cores {
			for k := 0; k < half; k++ {
				cores[g] = append(cores[g], -1)
			}
		}
		for p := 0; p < pods; p++ {
			for j := 0; j < s.Up; j++ {
				ag := b.addSwitch(fmt.Sprintf("agg-%d-%d", p, j), s.Radix, 1)
				for k := 0; k < half && p*half+k < leaves; k++ {
					b.cable(leaf[p*half+k], s.Down+j+1, ag, k+1)
				}
				for k := 0; k < half; k++ {
					if cores[j][k] < 0 {
						cores[j][k] = b.addSwitch(fmt.Sprintf("core-%d-%d", j, k), s.Radix, 2)
					}
					b.cable(ag, half+k+1, cores[j][k], p+1)
				}
			}
		}
	}
	b.t.AssignLIDs()
	return b.t, b.t.Validate()
}

// String names the tree for records: "fat-tree 2-level radix 36 18:18 (1:1), 648 hosts".
func (s FatTreeSpec) String() string {
	return fmt.Sprintf("fat-tree %d-level radix %d %d:%d, %d hosts", s.Levels, s.Radix, s.Down, s.Up, s.Hosts)
}

// builder adds devices and cables to a Topology.
type builder struct{ t *Topology }

func (b *builder) addSwitch(name string, radix, level int) int {
	b.t.Switches = append(b.t.Switches, Switch{Name: name, Level: level, Ports: make([]Peer, radix)})
	return len(b.t.Switches) - 1
}

func (b *builder) addHost(name string, sw, port int) int {
	h := len(b.t.Hosts)
	b.t.Hosts = append(b.t.Hosts, Host{Name: name, Switch: sw, Port: port})
	b.t.Switches[sw].Ports[port-1] = Peer{Kind: ToHost, Index: h}
	return h
}

func (b *builder) cable(s1, p1, s2, p2 int) {
	b.t.Switches[s1].Ports[p1-1] = Peer{Kind: ToSwitch, Index: s2, Port: p2}
	b.t.Switches[s2].Ports[p2-1] = Peer{Kind: ToSwitch, Index: s1, Port: p1}
}

// Leaves lists the switches hosts are cabled to, in order of their first host.
func (t *Topology) Leaves() []int {
	var out []int
	seen := make(map[int]bool)
	for _, h := range t.Hosts {
		if !seen[h.Switch] {
			seen[h.Switch] = true
			out = append(out, h.Switch)
		}
	}
	return out
}

// Package route computes the forwarding tables a subnet manager would
// program into a fabric's switches: the unicast routing engines of
// OpenSM (linux-rdma/opensm) that matter for a cluster's shuffle
// traffic, rewritten for a topo.Topology.
//
// Each engine fills a topo.Tables: for every switch and every destination
// host, the one output port packets for that host leave by. The engines
// differ in how they choose among the ports that lead toward a host:
//
//   - MinHop, OpenSM's default: shortest paths only; each switch gives a
//     destination the least-hop port that carries the fewest routes so far.
//   - UpDn: up/down routing: switches ranked by distance from root
//     switches, routes never turn up after going down (no credit loops),
//     shortest among those legal paths, balanced as MinHop.
//   - FTree: OpenSM's fat-tree routing: on a fat tree, routes to the hosts
//     of a leaf spread deterministically over the leaf's uplinks so that a
//     shift permutation of contiguously placed ranks is congestion-free.
//     It refuses a fabric that is not a fat tree (ErrNotFatTree), as OpenSM
//     then falls back to MinHop.
//   - Random: a seeded random static choice among the shortest-path ports.
//
// Minimal gives, for adaptive routing, every shortest-path port of every
// switch toward every host. docs/routing.md describes each engine and
// says where it differs from OpenSM.
//
// Everything here is deterministic: same topology, engine and seed, same
// tables. Nothing starts a goroutine or touches global randomness.
package route

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/rdmashuffle/rdmashuffle/fabric/topo"
)

// Engine is a routing engine.
type Engine uint8

// The engines, named as OpenSM's -R option names them.
const (
	MinHop Engine = iota // "minhop": OpenSM's default
	UpDn                 // "updn": up/down routing
	FTree                // "ftree": fat-tree routing
	Random               // "random": a seeded random choice among shortest-path ports (no OpenSM counterpart)
)

var engineNames = [...]string{"minhop", "updn", "ftree", "random"}

// Errors of this package. Errors of topo.Topology.Validate are returned
// wrapped as they are (errors.Is finds topo's sentinels).
var (
	// ErrUnknownEngine is returned by ParseEngine and Compute for an
	// engine they do not know.
	ErrUnknownEngine = errors.New("route: unknown routing engine")
	// ErrNotFatTree is returned by Compute with FTree for a fabric that is
	// not a fat tree; the message says why. OpenSM then routes with MinHop:
	// a caller that wants its behaviour computes MinHop tables instead.
	ErrNotFatTree = errors.New("route: not a fat tree")
	// ErrUnroutable is returned when an engine's rules leave some switch
	// without a route to some host. UpDn falls back to a single root
	// before giving up, so on a valid (connected) fabric it does not
	// happen; it guards the invariant.
	ErrUnroutable = errors.New("route: no legal route")
)

// Engines lists every engine, in the order of their constants.
func Engines() []Engine { return []Engine{MinHop, UpDn, FTree, Random} }

// String is the engine's name: "minhop", "updn", "ftree" or "random".
func (e Engine) String() string {
	if int(e) < len(engineNames) {
		return engineNames[e]
	}
	return "engine(" + strconv.Itoa(int(e)) + ")"
}

// ParseEngine reads an engine's name ("minhop", "updn", "ftree",
// "random"; case and surrounding blanks are ignored).
func ParseEngine(s string) (Engine, error) {
	name := strings.ToLower(strings.TrimSpace(s))
	for i, n := range engineNames {
		if n == name {
			return Engine(i), nil
		}
	}
	return 0, fmt.Errorf("%w: %q (engines: %s)", ErrUnknownEngine, s, strings.Join(engineNames[:], ", "))
}

// maxTableEntries bounds a fabric's forwarding tables (one byte per switch
// and host): the largest three-level tree of 36-port switches has 18.9 M,
// of 64-port ones 267 M; beyond 1 G they would not fit this machine.
const maxTableEntries = 1 << 30

// Compute validates t and computes its forwarding tables with engine e.
// The seed is used by Random only. The same inputs always give the same
// tables.
//
// With FTree, a fabric that is not a fat tree gives an error wrapping
// ErrNotFatTree: fall back to MinHop as OpenSM does,
//
//	tb, err := route.Compute(t, route.FTree, 0)
//	if errors.Is(err, route.ErrNotFatTree) {
//		tb, err = route.Compute(t, route.MinHop, 0)
//	}
func Compute(t *topo.Topology, e Engine, seed uint64) (*topo.Tables, error) {
	if int(e) >= len(engineNames) {
		return nil, fmt.Errorf("%w: engine %d", ErrUnknownEngine, e)
	}
	if err := t.Validate(); err != nil {
		return nil, fmt.Errorf("route: %s: %w", e, err)
	}
	if n := int64(len(t.Hosts)) * int64(len(t.Switches)); n > maxTableEntries {
		return nil, fmt.Errorf("route: %w: %d hosts and %d switches make %d forwarding-table entries, more than the %d this tool holds in memory", topo.ErrTooLarge, len(t.Hosts), len(t.Switches), n, int64(maxTableEntries))
	}
	switch e {
	case MinHop:
		return balance(t, Minimal(t).sets, opensmOrder(t)), nil
	case UpDn:
		sets, _, err := updnPlan(t)
		if err != nil {
			return nil, err
		}
		return balance(t, sets, opensmOrder(t)), nil
	case FTree:
		return fatTree(t)
	default:
		return randomTables(t, Minimal(t).sets, seed), nil
	}
}

// newTables allocates tables for t's switches and hosts, every entry 0
// (no route), in one backing array.
func newTables(t *topo.Topology) *topo.Tables {
	ns, nh := len(t.Switches), len(t.Hosts)
	backing := make([]uint8, ns*nh)
	tb := &topo.Tables{Out: make([][]uint8, ns)}
	for s := range tb.Out {
		tb.Out[s] = backing[s*nh : (s+1)*nh : (s+1)*nh]
	}
	return tb
}

package route

import (
	"fmt"
	"math/rand/v2"

	"github.com/rdmashuffle/rdmashuffle/fabric/topo"
)

// Analysis is what forwarding tables do to the traffic of a set of ranks
// (hosts, in rank order), computed on the tables alone.
type Analysis struct {
	Ranks int
	// The shift permutations (stage k: rank i sends to rank i+k mod n),
	// the stages of an ordered all-to-all: the most flows one directed
	// switch-to-switch cable carries in any stage (1 means every stage
	// is free of conflicts), the first stage where that happens, the mean
	// over stages of each stage's most loaded cable, and how many stages
	// were looked at (all, or Stride-spaced ones on large fabrics).
	ShiftWorst      int
	ShiftWorstStage int
	ShiftMeanWorst  float64
	Stages          int
	// PerStage is every stage looked at: its distance and the most flows
	// one cable carries in it.
	PerStage []StageLoad
	// Switches on a path between two ranks: the mean and the most.
	MeanSwitches float64
	MaxSwitches  int
}

// StageLoad is one shift stage (rank i sends to rank i+Distance) and the
// most flows one directed switch-to-switch cable carries in it.
type StageLoad struct{ Distance, Worst int }

// Analyze follows tb from every rank to every rank of the shift
// permutations over hosts (the host of each rank): every stage, or with
// maxStages > 0 at most that many evenly spaced ones (a large fabric's
// n-1 stages of n flows each take long). Loops or uncabled entries are
// errors (CheckTables finds them first).
func Analyze(t *topo.Topology, tb *topo.Tables, hosts []int, maxStages int) (Analysis, error) {
	n := len(hosts)
	a := Analysis{Ranks: n}
	if n < 2 {
		return a, nil
	}
	if err := t.CheckTables(tb); err != nil {
		return a, err
	}
	base := make([]int, len(t.Switches)+1)
	for s := range t.Switches {
		base[s+1] = base[s] + len(t.Switches[s].Ports)
	}
	load := make([]int32, base[len(t.Switches)]+1)
	var used []int
	stride := 1
	if maxStages > 0 {
		stride = max(1, (n-1+maxStages-1)/maxStages)
	}
	var sumWorst, pairs, sumHops int
	for k := 1; k < n; k += stride {
		for _, i := range used {
			load[i] = 0
		}
		used = used[:0]
		worst := 0
		for src := 0; src < n; src++ {
			dst := hosts[(src+k)%n]
			cur, hops := t.Hosts[hosts[src]].Switch, 1
			for {
				p := int(tb.Out[cur][dst])
				pe := t.Switches[cur].Ports[p-1]
				if pe.Kind != topo.ToSwitch {
					break
				}
				i := base[cur] + p - 1
				if load[i] == 0 {
					used = append(used, i)
				}
				load[i]++
				worst = max(worst, int(load[i]))
				cur = pe.Index
				if hops++; hops > len(t.Switches)+1 {
					return a, fmt.Errorf("%w: packets from host %d to host %d loop", topo.ErrBadRoute, hosts[src], dst)
				}
			}
			sumHops += hops
			pairs++
			a.MaxSwitches = max(a.MaxSwitches, hops)
		}
		if worst > a.ShiftWorst {
			a.ShiftWorst, a.ShiftWorstStage = worst, k
		}
		sumWorst += worst
		a.Stages++
		a.PerStage = append(a.PerStage, StageLoad{Distance: k, Worst: worst})
	}
	a.ShiftMeanWorst = float64(sumWorst) / float64(a.Stages)
	a.MeanSwitches = float64(sumHops) / float64(pairs)
	return a, nil
}

// EstimateEBB estimates the effective bisection bandwidth of the tables
// for the ranks on hosts the way a flow-level simulation of static
// routing does (Hoefler et al.'s ORCS, the metric of explore bench ebb):
// for each of patterns random bisections (a perfect matching of the ranks,
// both directions of every pair sending at once, drawn from seed), every
// flow gets 1/c of a link, c being the most flows sharing a cable on its
// path; the estimate is the mean over flows and patterns. It ignores
// everything but cable sharing (no dynamics, no back-pressure, no
// leftover capacity of a faster flow passed to a slower one), so it is a
// lower bound of what max-min fair sharing would give. When the topology
// gives cables widths and speeds (topo.Peer.Link), a flow gets the least
// of its cables' rates over their flows, as a fraction of what its two
// hosts' cables would carry alone (the slower of the two), as explore
// bench ebb divides by what a pair gets alone; portGbps is the rate of a
// cable with none given (the profile's port).
func EstimateEBB(t *topo.Topology, tb *topo.Tables, hosts []int, patterns int, seed uint64, portGbps float64) (float64, error) {
	n := len(hosts)
	if n < 2 || patterns < 1 {
		return 0, fmt.Errorf("%w: an estimate needs two ranks and a pattern (got %d and %d)", ErrUnroutable, n, patterns)
	}
	if err := t.CheckTables(tb); err != nil {
		return 0, err
	}
	base := make([]int, len(t.Switches)+1)
	for s := range t.Switches {
		base[s+1] = base[s] + len(t.Switches[s].Ports)
	}
	load := make([]int32, base[len(t.Switches)]+1)
	var rate []float64 // each cable's, when any is given
	for s := range t.Switches {
		for i, pe := range t.Switches[s].Ports {
			if pe.Link.IsZero() {
				continue
			}
			if rate == nil {
				if !(portGbps > 0) {
					return 0, fmt.Errorf("%w: the fabric gives cable speeds, and the port rate they are a fraction of is %v", ErrUnroutable, portGbps)
				}
				rate = make([]float64, len(load))
				for k := range rate {
					rate[k] = portGbps
				}
			}
			rate[base[s]+i] = pe.Link.Gbps()
		}
	}
	hostRate := func(h int) float64 { return rate[base[t.Hosts[h].Switch]+t.Hosts[h].Port-1] }
	rng := rand.New(rand.NewPCG(seed, 0x656262)) // "ebb"
	perm := make([]int, n)
	var paths [][]int
	var ends [][2]int // each path's source and destination host
	var sum float64
	flows := 0
	for p := 0; p < patterns; p++ {
		for i := range perm {
			perm[i] = i
		}
		rng.Shuffle(n, func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		clear(load)
		paths, ends = paths[:0], ends[:0]
		for i := 0; i+1 < n; i += 2 {
			for _, d := range [2][2]int{{perm[i], perm[i+1]}, {perm[i+1], perm[i]}} {
				var path []int
				cur, dst := t.Hosts[hosts[d[0]]].Switch, hosts[d[1]]
				for {
					port := int(tb.Out[cur][dst])
					pe := t.Switches[cur].Ports[port-1]
					if pe.Kind != topo.ToSwitch {
						break
					}
					path = append(path, base[cur]+port-1)
					cur = pe.Index
				}
				for _, c := range path {
					load[c]++
				}
				paths = append(paths, path)
				ends = append(ends, [2]int{hosts[d[0]], dst})
			}
		}
		for k, path := range paths {
			if rate != nil {
				alone := min(hostRate(ends[k][0]), hostRate(ends[k][1]))
				share := alone
				for _, c := range path {
					share = min(share, rate[c]/float64(load[c]))
				}
				sum += share / alone
				flows++
				continue
			}
			worst := int32(1)
			for _, c := range path {
				worst = max(worst, load[c])
			}
			sum += 1 / float64(worst)
			flows++
		}
	}
	return sum / float64(flows), nil
}

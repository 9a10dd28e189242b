package route

import (
	"fmt"

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
	// Switches on a path between two ranks: the mean and the most.
	MeanSwitches float64
	MaxSwitches  int
}

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
	}
	a.ShiftMeanWorst = float64(sumWorst) / float64(a.Stages)
	a.MeanSwitches = float64(sumHops) / float64(pairs)
	return a, nil
}

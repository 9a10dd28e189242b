package perftest

import (
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// ShiftStage is one stage of shift_bw: every node sent to the node
// Distance after it, and received from the one Distance before it; the
// mean and the lowest bandwidth into a node, Gb/s.
type ShiftStage struct {
	Distance int     `json:"distance"`
	MeanGbps float64 `json:"mean_gbps"`
	MinGbps  float64 `json:"min_gbps"`
}

// shiftDistance is the distance of stage j of k spread over the n-1
// distances of n nodes: 1, then evenly up to n-1 (every distance when k
// is n-1).
func shiftDistance(j, k, n int) int { return 1 + j*(n-1)/k }

// shift measures the shift permutations one stage at a time, the
// pattern of an ordered all-to-all (stage d: node i sends to node i+d mod
// n) and of Kerbyson et al.'s shift benchmark ("Comparing the
// performance of Blue Gene/Q with leading Cray XE6 and InfiniBand
// systems", ICPADS 2012, §IV.E): at each stage every node sends Size
// bytes to its target while receiving as many from its source, after a
// barrier, and the bandwidth into every node is recorded. On a crossbar
// every stage gets what one pair gets alone; on a statically routed tree
// a stage whose flows share a cable gets less, and which stages do
// depends on the routing and the placement (docs/routing.md). Like ebb it
// runs over one UD queue pair per node in datagrams of the MTU (so that
// adaptive routing may spread every packet) and starts with the
// reference: node 0 and node 1 exchange Size bytes alone. Iters stages
// are run, their distances spread over 1..n-1 (shiftDistance).
func shift(th fabric.Thread, nodes int, cfg *Config) (*nodeResult, error) {
	n := th.Node()
	me := n.ID()
	chunk := min(cfg.Size, n.Device().Attr().MTU)
	if chunk < 1 {
		return nil, fmt.Errorf("%w: shift_bw: the port's MTU is %d", ErrConfig, n.Device().Attr().MTU)
	}
	msgs := (cfg.Size + chunk - 1) / chunk
	e, err := newEBBNode(th, cfg, chunk)
	if err != nil {
		return nil, err
	}
	r := &nodeResult{ok: true, start: th.Now()}
	if r.ebbRef, err = e.reference(th, "shift-ref", msgs); err != nil {
		return nil, err
	}
	for j := 0; j < cfg.Iters; j++ {
		d := shiftDistance(j, cfg.Iters, nodes)
		took, err := e.exchange(th, fmt.Sprintf("shift-%d", d), (me+d)%nodes, (me-d+nodes)%nodes, msgs)
		if err != nil {
			return nil, err
		}
		r.shiftRates = append(r.shiftRates, float64(cfg.Size)*8/took.Seconds()/1e9)
	}
	r.end = th.Now()
	r.bytes = int64(cfg.Iters) * int64(cfg.Size)
	r.msgs = int64(cfg.Iters * msgs)
	return r, n.OOB().Barrier("shift-done")
}

// summarizeShift fills the shift_bw fields: per stage the mean and lowest
// bandwidth into a node, the lowest and highest stage mean, the mean over
// everything, and the reference pair's bandwidth.
func summarizeShift(out *Result, cfg *Config, res []nodeResult) {
	var sum float64
	k := 0
	for _, r := range res {
		out.PairGbps = max(out.PairGbps, r.ebbRef)
	}
	for j := 0; j < cfg.Iters; j++ {
		st := ShiftStage{Distance: shiftDistance(j, cfg.Iters, out.Nodes)}
		m := 0
		for _, r := range res {
			if j >= len(r.shiftRates) {
				continue
			}
			v := r.shiftRates[j]
			if m == 0 || v < st.MinGbps {
				st.MinGbps = v
			}
			st.MeanGbps += v
			m++
		}
		if m == 0 {
			continue
		}
		sum += st.MeanGbps
		k += m
		st.MeanGbps /= float64(m)
		if len(out.ShiftStages) == 0 || st.MeanGbps < out.ShiftLowGbps {
			out.ShiftLowGbps = st.MeanGbps
		}
		out.ShiftHighGbps = max(out.ShiftHighGbps, st.MeanGbps)
		out.ShiftStages = append(out.ShiftStages, st)
	}
	if k > 0 {
		out.BWAvgGbps = sum / float64(k)
		out.BWPeakGbps = out.BWAvgGbps
	}
}

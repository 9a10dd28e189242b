package evidence

import (
	"fmt"
	"math"

	"github.com/rdmashuffle/rdmashuffle/fabric/netbuild"
	"github.com/rdmashuffle/rdmashuffle/fabric/netspec"
	"github.com/rdmashuffle/rdmashuffle/fabric/perftest"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// Points measured on a network of switches (x.network, a network as
// explore run's --network gives it, and x.nodes) run on that network
// instead of two nodes on one switch. The one kind of such point so far
// is the shift all-to-all stage by stage (verb shift_bw, explore bench
// shift_bw), whose measurements give the slowest stage as a fraction of
// what one pair gets alone (metric shift_slowest_frac, unit "of one
// pair"): the model's figure is the slowest node of any stage over the
// reference pair, the stage's bandwidth when the stage's time is set by
// its slowest flow.

// unitOfPair is the unit of a fraction of one pair's bandwidth.
const unitOfPair = "of one pair"

// networkOf is the cluster configuration of a point: its x.nodes nodes on
// the network x.network names, built for prof, with a line saying which;
// two nodes on one switch for a point without x.network.
func networkOf(p Point, prof *sim.Profile) (sim.Config, string, error) {
	text, set := p.X["network"].(string)
	if !set {
		return sim.Config{Nodes: 2}, "", nil
	}
	nodes, _ := p.X["nodes"].(int)
	if nodes < 2 {
		return sim.Config{}, "", fmt.Errorf("x.network needs x.nodes, at least 2 (got %v)", p.X["nodes"])
	}
	spec, err := netspec.Parse(text)
	if err != nil {
		return sim.Config{}, "", err
	}
	b, err := netbuild.Build(spec, nodes, prof, 1)
	if err != nil {
		return sim.Config{}, "", err
	}
	return sim.Config{Nodes: nodes, Fabric: b.Fabric}, fmt.Sprintf(", %d nodes on %s", nodes, b.Name), nil
}

// shiftOf runs a shift_bw point: every stage, x.bytes per flow.
func shiftOf(p Point) (runner, string, string) {
	bytes, ok := p.X["bytes"].(int)
	nodes, _ := p.X["nodes"].(int)
	switch {
	case !ok || bytes < 1:
		return nil, "", "the message size is not stated as a number"
	case p.X["network"] == nil || nodes < 2:
		return nil, "", "a shift point needs its network (x.network) and nodes (x.nodes)"
	case p.Metric != "shift_slowest_frac" || p.Unit != unitOfPair:
		return nil, "", fmt.Sprintf("%s in %q: a shift point gives its slowest stage as shift_slowest_frac, %q", p.Metric, p.Unit, unitOfPair)
	}
	cfg := perftest.Config{Test: "shift_bw", Size: bytes}
	if err := cfg.Normalize(nodes); err != nil {
		return nil, "", err.Error()
	}
	how := fmt.Sprintf("shift_bw -s %d over all %d stages, the slowest node of any stage over one pair alone", bytes, cfg.Iters)
	return func(c *sim.Cluster) (float64, error) {
		res, err := perftest.Run(c, cfg)
		if err != nil {
			return 0, err
		}
		low := math.Inf(1)
		for _, st := range res.ShiftStages {
			low = min(low, st.MinGbps)
		}
		if res.PairGbps <= 0 || math.IsInf(low, 1) {
			return 0, fmt.Errorf("shift_bw measured no stage")
		}
		return low / res.PairGbps, nil
	}, how, ""
}

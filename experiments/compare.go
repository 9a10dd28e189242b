package experiments

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/internal/setting"
)

// Comparison is one metric of the same shuffle on a fabric and on the
// model (the simulator with a profile).
type Comparison struct {
	Metric string  `json:"metric"`
	Fabric float64 `json:"fabric"`
	Model  float64 `json:"model"`
	// RelErr is (model - fabric) / fabric; 0 when both are 0, +Inf when
	// only the fabric's is 0 (JSON: null, as JSON has no infinity).
	RelErr float64 `json:"rel_err"`
	// Loopback: the fabric's nodes were contexts of one adapter in one
	// process (fabric.SharesAdapter), so the fabric's value is of that
	// adapter's loopback, against a model of machines each with its own
	// adapter and link.
	Loopback bool `json:"loopback,omitempty"`
}

// MarshalJSON writes a relative error that is not finite as null:
// encoding/json refuses infinities, which failed every comparison with a
// metric that is 0 on the fabric only (credit stalls, say).
func (c Comparison) MarshalJSON() ([]byte, error) {
	type plain Comparison
	if !math.IsInf(c.RelErr, 0) && !math.IsNaN(c.RelErr) {
		return json.Marshal(plain(c))
	}
	return json.Marshal(struct {
		Metric   string   `json:"metric"`
		Fabric   float64  `json:"fabric"`
		Model    float64  `json:"model"`
		RelErr   *float64 `json:"rel_err"`
		Loopback bool     `json:"loopback,omitempty"`
	}{c.Metric, c.Fabric, c.Model, nil, c.Loopback})
}

// CompareWithModel runs cfg on f (real hardware, typically) and on the
// simulator with cfg.Profile, and reports each metric side by side: the
// simulator-versus-hardware validation of the model. f may be one node of
// a distributed job (every process gets the whole comparison) or run its
// nodes in this process. Nodes that share one adapter (fabric.SharesAdapter)
// are compared as such, labelled Loopback, and at most two: with more,
// the one adapter would carry every node's traffic, and the comparison
// would measure it, not a cluster.
func CompareWithModel(f fabric.Fabric, cfg RunConfig) ([]Comparison, *results.Record, *results.Record, error) {
	if n := len(f.Local()); fabric.SharesAdapter(f) && n > 2 {
		return nil, nil, nil, setting.New("Nodes", n, "the %s fabric runs these %d nodes in this process as contexts of one adapter, which loops their traffic back and does the work of all of them: "+
			"compared with a model of %d machines, each with its own adapter and link, it would measure that adapter; run one node per machine, or at most 2 on one adapter (a loopback comparison)", f.Backend(), n, n).Sentinel(ErrUnsupported)
	}
	hw, err := RunOn(f, cfg)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("on the %s fabric: %w", f.Backend(), err)
	}
	model, err := Run(cfg)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("on the model: %w", err)
	}
	if hw.Integrity != "ok" || model.Integrity != "ok" {
		return nil, hw, model, fmt.Errorf("integrity: %s on the fabric, %s on the model", hw.Integrity, model.Integrity)
	}
	var out []Comparison
	add := func(name string, a, b float64) {
		c := Comparison{Metric: name, Fabric: a, Model: b, Loopback: hw.Loopback}
		if a != 0 {
			c.RelErr = (b - a) / math.Abs(a)
		} else if b != 0 {
			c.RelErr = math.Inf(1)
		}
		out = append(out, c)
	}
	add("throughput per node [GiB/s]", hw.ThroughputGiBs, model.ThroughputGiBs)
	add("response [ms]", hw.ResponseS*1e3, model.ResponseS*1e3)
	add("setup [ms]", hw.SetupMS, model.SetupMS)
	add("sender idle [fraction]", hw.SenderIdle, model.SenderIdle)
	add("receiver idle [fraction]", hw.ReceiverIdle, model.ReceiverIdle)
	add("credit stalls", float64(hw.CreditStalls), float64(model.CreditStalls))
	add("QPs per node", float64(hw.QPsPerNode), float64(model.QPsPerNode))
	add("registered per node [MiB]", float64(hw.RegisteredPer)/(1<<20), float64(model.RegisteredPer)/(1<<20))
	return out, hw, model, nil
}

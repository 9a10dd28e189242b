package engine

import (
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/experiments/catalogue"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/internal/setting"
)

// onFabric is a fabric built elsewhere as a backend.
type onFabric struct{ f fabric.Fabric }

// On is the fabric f as a backend (real hardware, the loopback verbs
// provider, TCP): every node of a run in this process, or one node per
// process, in which case every process runs its node and gets the whole
// record (the nodes' results travel over the out-of-band channel).
// cfg.Profile does not apply, and fault injection is the simulator's. The
// record's profile says what ran instead of a model: "hardware" on RDMA
// hardware (ibv), "software" on the loopback verbs provider and on hosts
// without a device, whose timing models nothing.
func On(f fabric.Fabric) Backend { return onFabric{f} }

// Name is the fabric's backend.
func (o onFabric) Name() string { return o.f.Backend() }

// open refuses what only the simulator chooses (a network, queue-pair
// numbers, qperf's ceiling), takes the node count from the fabric and
// sizes a UD design's messages from the port.
func (o onFabric) open(cfg *Config) (Opened, error) {
	f := o.f
	if !cfg.Network.IsSingle() {
		return nil, setting.New("Network", fmt.Sprintf("%q", cfg.Network.String()), "chooses the simulator's switches and routing; the %s backend runs on the network it has: leave it empty", f.Backend()).Sentinel(ErrUnsupported)
	}
	if cfg.Doorbells != DoorbellsProfile {
		return nil, setting.New("Doorbells", string(cfg.Doorbells), "chooses the simulated hosts' doorbell registers; on the %s backend the provider allocates them (with libmlx5, per thread through MLX5_TOTAL_UUARS and MLX5_NUM_LOW_LAT_UUARS in the environment): leave it empty", f.Backend()).Sentinel(ErrUnsupported)
	}
	if cfg.QPNumbering != 0 {
		return nil, setting.New("QPNumbering", cfg.QPNumbering, "chooses the simulator's queue-pair numbers; the %s backend has none to choose: leave it 0", f.Backend()).Sentinel(ErrUnsupported)
	}
	if cfg.Doorbells != DoorbellsProfile {
		return nil, setting.New("Doorbells", string(cfg.Doorbells), "chooses the simulated hosts' doorbell registers; on the %s backend the provider allocates them (with libmlx5, per thread through MLX5_TOTAL_UUARS and MLX5_NUM_LOW_LAT_UUARS in the environment): leave it empty", f.Backend()).Sentinel(ErrUnsupported)
	}
	if len(f.Local()) == 0 {
		return nil, fmt.Errorf("the fabric hosts no node in this process")
	}
	if cfg.Nodes == 0 {
		cfg.Nodes = f.Size()
	}
	if cfg.Nodes != f.Size() {
		return nil, setting.New("Nodes", cfg.Nodes, "the %s fabric has %d nodes", f.Backend(), f.Size())
	}
	if err := fitPort(cfg, f.Local()[0].Device().Attr()); err != nil {
		return nil, err
	}
	if err := cfg.normalize(f.Local()[0].Cores()); err != nil {
		return nil, err
	}
	if catalogue.DesignOf(cfg.Design).Ceiling {
		return nil, setting.New("Design", cfg.Design, "the network's ceiling is measured, not run as a shuffle, on the %s backend: run qperf itself, or the alltoall_bw benchmark", f.Backend()).Sentinel(ErrUnsupported)
	}
	return o, nil
}

func (o onFabric) Fabric() fabric.Fabric                { return o.f }
func (o onFabric) Failed(err error, ended []bool) error { return err }
func (o onFabric) Close()                               {}

// Finish says what ran instead of a model, and whether the nodes shared
// one adapter.
func (o onFabric) Finish(rec *results.Record) error {
	switch o.f.Backend() {
	case "sim":
	case "ibv":
		rec.Profile = "hardware"
	default:
		rec.Profile = "software"
	}
	rec.Loopback = fabric.SharesAdapter(o.f)
	return nil
}

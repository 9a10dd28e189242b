package host

import (
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// noDevice is the Device of a host without RDMA: every verb fails with
// fabric.ErrNoDevice. Software transports ignore it.
type noDevice struct{}

func (noDevice) Attr() fabric.DeviceAttr { return fabric.DeviceAttr{} }
func (noDevice) AllocPD() (fabric.PD, error) {
	return nil, fmt.Errorf("%w: this host fabric has no RDMA device (a software transport runs on it)", fabric.ErrNoDevice)
}
func (noDevice) CreateCQ(int) (fabric.CQ, error) {
	return nil, fmt.Errorf("%w: this host fabric has no RDMA device (a software transport runs on it)", fabric.ErrNoDevice)
}

// Open is this process's node of a distributed job without an RDMA device:
// the execution environment and the out-of-band channel, with a Device
// whose every call fails with fabric.ErrNoDevice. Software transports, such
// as the TCP endpoint of package tcpshuffle, run on it, in any build and on
// any machine. Its Backend is "host". The caller closes it.
func Open(cfg Config) (fabric.Fabric, error) {
	return Join("host", cfg, func(int) (fabric.Device, func() error, error) { return noDevice{}, nil, nil })
}

// OpenLocal is Open for nodes nodes in this process, with the out-of-band
// channel in memory.
func OpenLocal(cfg Config, nodes int) (fabric.Fabric, error) {
	if nodes < 1 {
		return nil, fmt.Errorf("%w: host: OpenLocal of %d nodes", fabric.ErrInvalidArg, nodes)
	}
	devs := make([]fabric.Device, nodes)
	for i := range devs {
		devs[i] = noDevice{}
	}
	return NewLocal("host", cfg, devs, nil), nil
}

// NewLocal assembles a fabric of len(devs) nodes in this process, node i
// on devs[i], with the out-of-band channel in memory. backend is what the
// fabric's Backend reports; release, if not nil, frees the devices when the
// fabric closes. Backends with devices (package ibv) build on it.
func NewLocal(backend string, cfg Config, devs []fabric.Device, release func() error) fabric.Fabric {
	cfg = cfg.WithDefaults()
	if release == nil {
		release = func() error { return nil }
	}
	hub := newLocalHub(len(devs), cfg.OOBTimeout)
	ids := make([]int, len(devs))
	oobs := make([]oobChannel, len(devs))
	for i := range ids {
		ids[i], oobs[i] = i, hub.view(i)
	}
	return newCluster(backend, cfg, len(devs), ids, devs, oobs, release)
}

// Join places this process in a distributed job (cfg.Bootstrap, or the
// layout from the environment): it connects the out-of-band channel first
// (node 0 waits up to cfg.ConnectTimeout for every node and checks that
// they run the same cfg.Signature; it refuses processes of another job,
// telling cfg.Log, without failing its own), then opens this node's device with
// open(rank). A node whose device does not open tells the others, which
// fail with its error. The fabric has the job's size and one local node,
// whose id is the rank; release (from open, may be nil) frees the device
// when it closes. backend is what the fabric's Backend reports.
func Join(backend string, cfg Config, open func(rank int) (dev fabric.Device, release func() error, err error)) (fabric.Fabric, error) {
	cfg = cfg.WithDefaults()
	b, err := cfg.layout()
	if err != nil {
		return nil, err
	}
	o, err := dialOOBLog(b, cfg.Signature, cfg.ConnectTimeout, cfg.OOBTimeout, nil, cfg.Log)
	if err != nil {
		return nil, err
	}
	d, release, err := open(b.Rank)
	if err != nil {
		o.abort(fmt.Errorf("cannot open its RDMA device: %w", err))
		o.close()
		return nil, err
	}
	if release == nil {
		release = func() error { return nil }
	}
	return newCluster(backend, cfg, b.Size, []int{b.Rank}, []fabric.Device{d}, []oobChannel{o}, release), nil
}

// layout is cfg.Bootstrap, or the job layout from the environment.
func (c Config) layout() (Bootstrap, error) {
	if c.Bootstrap != nil {
		return *c.Bootstrap, nil
	}
	return BootstrapFromEnv()
}

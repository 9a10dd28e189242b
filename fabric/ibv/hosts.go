package ibv

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

// OpenHosts is OpenConfig without an RDMA device: this process's node of a
// distributed job, with the execution environment and the out-of-band
// channel but a Device whose every call fails with fabric.ErrNoDevice.
// Software transports, such as the TCP endpoint of package tcpshuffle, run
// on it, in any build and on any machine. The caller closes it.
func OpenHosts(cfg Config) (fabric.Fabric, error) {
	cfg = cfg.withDefaults()
	b, err := cfg.bootstrap()
	if err != nil {
		return nil, err
	}
	o, err := dialOOB(b, cfg.Signature, cfg.ConnectTimeout, cfg.OOBTimeout, nil)
	if err != nil {
		return nil, err
	}
	return newCluster(cfg, b.Size, []int{b.Rank}, []fabric.Device{noDevice{}}, []oobChannel{o}, func() error { return nil }), nil
}

// bootstrap is cfg.Bootstrap, or the job layout from the environment.
func (c Config) bootstrap() (Bootstrap, error) {
	if c.Bootstrap != nil {
		return *c.Bootstrap, nil
	}
	return BootstrapFromEnv()
}

// OpenLocalHosts is OpenHosts for nodes nodes in this process, with the
// out-of-band channel in memory.
func OpenLocalHosts(cfg Config, nodes int) (fabric.Fabric, error) {
	cfg = cfg.withDefaults()
	if nodes < 1 {
		return nil, fmt.Errorf("%w: ibv: OpenLocalHosts of %d nodes", fabric.ErrInvalidArg, nodes)
	}
	hub := newLocalHub(nodes, cfg.OOBTimeout)
	ids := make([]int, nodes)
	devs := make([]fabric.Device, nodes)
	oobs := make([]oobChannel, nodes)
	for i := range ids {
		ids[i], devs[i], oobs[i] = i, noDevice{}, hub.view(i)
	}
	return newCluster(cfg, nodes, ids, devs, oobs, func() error { return nil }), nil
}

package ibv

import (
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/host"
)

// Config selects the RDMA device and, through the embedded host.Config,
// tunes the execution environment and places the process in a job. The
// zero value is usable: the first device, port 1, a GID picked for the port,
// every CPU, no pinning, no time limit. A Config is a value and holds no
// resources.
type Config struct {
	// Device is the device name as ibv_devices(1) prints it ("mlx5_0");
	// empty selects the first device.
	Device string
	// Port is the 1-based port number; 0 means 1.
	Port int
	// GID is the entry of the port's GID table used for global routing
	// (RoCE, or Address.UseGID): GIDAt(i) for index i. The zero value
	// picks one: on Ethernet the first RoCE v2 GID holding an IPv4-mapped
	// address, else index 0 (index 0 on RoCE is usually the link-local
	// RoCE v1 entry, which routed RoCE v2 cannot use).
	GID GIDChoice
	// Path marks and routes the job's packets (quality of service, RoCE
	// DSCP, partitions); the zero value is the fabric's defaults.
	Path Path
	host.Config
}

// GIDChoice is the GID table entry a Config uses; the zero value picks one.
type GIDChoice struct {
	index int
	set   bool
}

// GIDAt chooses GID table index i; a negative i picks one (as the zero
// GIDChoice does).
func GIDAt(i int) GIDChoice {
	if i < 0 {
		return GIDChoice{}
	}
	return GIDChoice{index: i, set: true}
}

// Index is the chosen index, or -1 when the port's GID is picked.
func (g GIDChoice) Index() int {
	if !g.set {
		return -1
	}
	return g.index
}

// Path is how the job's packets are marked and routed, for fabrics with
// quality of service, partitions or routed RoCE. Zero values keep the
// defaults: service level 0, traffic class 0, hop limit 64, the port's
// full rate, P_Key index 0. A Path is a value.
type Path struct {
	// ServiceLevel is the InfiniBand service level (0..15), which the
	// subnet manager maps to a virtual lane; on RoCE the NIC maps it to a
	// priority (PCP) when the traffic class does not set the DSCP.
	ServiceLevel int
	// TrafficClass is the GRH traffic class (0..255); on RoCE v2 its top
	// six bits are the IP DSCP and the low two the ECN bits.
	TrafficClass int
	// HopLimit is the GRH hop limit (1..255; 0 means 64): routed RoCE v2
	// and InfiniBand routers decrement it.
	HopLimit int
	// StaticRate caps the injection rate per destination, as enum
	// ibv_rate (0: the port's full rate; see ibv_rate_to_mult(3)).
	StaticRate int
	// PKeyIndex is the index of the partition key in the port's P_Key
	// table that the job's queue pairs use (0: the default partition).
	PKeyIndex int
}

// check reports a value outside its field's range, naming the field and
// the range.
func (p Path) check() error {
	for _, f := range []struct {
		name   string
		v, max int
	}{{"ServiceLevel", p.ServiceLevel, 15}, {"TrafficClass", p.TrafficClass, 255}, {"HopLimit", p.HopLimit, 255},
		{"StaticRate", p.StaticRate, 32}, {"PKeyIndex", p.PKeyIndex, 65535}} {
		if f.v < 0 || f.v > f.max {
			return fmt.Errorf("%w: ibv: Path.%s %d outside 0..%d", fabric.ErrInvalidArg, f.name, f.v, f.max)
		}
	}
	return nil
}

func (c Config) withDefaults() (Config, error) {
	if c.Port == 0 {
		c.Port = 1
	}
	if c.Path.HopLimit == 0 {
		c.Path.HopLimit = 64
	}
	c.Config = c.Config.WithDefaults()
	return c, c.Path.check()
}

// DeviceInfo describes an RDMA device found by Devices.
type DeviceInfo struct {
	Name     string // as ibv_devices(1) prints it
	NodeGUID uint64 // host byte order
	Ports    []PortInfo
}

// PortInfo describes one port of a device.
type PortInfo struct {
	Port      int    // 1-based
	Active    bool   // state IBV_PORT_ACTIVE
	LinkLayer string // "InfiniBand" or "Ethernet"
	LID       uint16
	MTU       int     // active MTU in bytes
	RateGbps  float64 // data rate after encoding, 10^9 bit/s (0 if unknown)
	GIDs      int     // GID table length
}

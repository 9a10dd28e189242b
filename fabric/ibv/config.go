package ibv

import "github.com/rdmashuffle/rdmashuffle/fabric/host"

// Config selects the RDMA device and, through the embedded host.Config,
// tunes the execution environment and places the process in a job. The
// zero value is usable: the first device, port 1, GID index 0, every CPU,
// no pinning, no time limit. A Config is a value and holds no resources.
type Config struct {
	// Device is the device name as ibv_devices(1) prints it ("mlx5_0");
	// empty selects the first device.
	Device string
	// Port is the 1-based port number; 0 means 1.
	Port int
	// GIDIndex is the index in the port's GID table used for global
	// routing (RoCE, or Address.UseGID). -1 picks one: on Ethernet the
	// first RoCE v2 GID holding an IPv4-mapped address, else index 0.
	GIDIndex int
	host.Config
}

func (c Config) withDefaults() Config {
	if c.Port == 0 {
		c.Port = 1
	}
	c.Config = c.Config.WithDefaults()
	return c
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

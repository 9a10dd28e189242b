package ibv

import (
	"time"
)

// Config selects the RDMA device and tunes the execution environment of the
// hardware backend. The zero value is usable: the first device, port 1, GID
// index 0, every CPU, no pinning, no time limit.
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
	// Cores is the number of cores of each node (Node.Cores). 0 means the
	// CPUs this process may run on, divided among the nodes of OpenLocal.
	Cores int
	// Pin binds each thread to its core's CPU with sched_setaffinity
	// (Linux). Node i's core k is the (i*Cores+k)-th allowed CPU, modulo
	// their number.
	Pin bool
	// GHz is the CPU clock that Thread.Compute converts cycles with; 0
	// reads /proc/cpuinfo (2.5 when it cannot be read).
	GHz float64
	// Seed seeds the threads' random sources (each thread's stream is
	// derived from Seed and its name).
	Seed uint64
	// TimeLimit fails a Run with ErrTimeLimit after this much wall-clock
	// time; 0 means none.
	TimeLimit time.Duration
	// Signature is this job's identity (design, thread count, release...):
	// every process of a distributed job must pass the same one, and a
	// process with another is reported by name at startup.
	Signature string
	// Bootstrap places the process in a distributed job; nil reads the
	// environment (BootstrapFromEnv). Ignored by OpenLocal.
	Bootstrap *Bootstrap
	// ConnectTimeout bounds the start of a distributed job: connecting to
	// node 0 and waiting for every node to connect (default 30s).
	ConnectTimeout time.Duration
	// OOBTimeout bounds each out-of-band call (AllGather, Barrier): the
	// time the slowest node may take to reach it (default 10 minutes).
	OOBTimeout time.Duration
}

func (c Config) withDefaults() Config {
	if c.Port == 0 {
		c.Port = 1
	}
	if c.ConnectTimeout <= 0 {
		c.ConnectTimeout = 30 * time.Second
	}
	if c.OOBTimeout <= 0 {
		c.OOBTimeout = 10 * time.Minute
	}
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

//go:build ibverbs

package ibv

/*
#include "shim.h"
*/
import "C"

import (
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/host"
)

// Available reports whether this binary was built with the libibverbs
// backend (build tag ibverbs). It says nothing about devices: see Devices.
func Available() bool { return true }

// Devices lists the RDMA devices of this machine and their ports. The
// error wraps fabric.ErrNoDevice when there is none (or the kernel has no
// RDMA support). Safe for concurrent use.
func Devices() ([]DeviceInfo, error) {
	devs, names, free, err := deviceList()
	if err != nil {
		return nil, err
	}
	defer free()
	var out []DeviceInfo
	for i, dev := range devs {
		info := DeviceInfo{Name: names[i], NodeGUID: ntoh64(uint64(C.ibv_get_device_guid(dev)))}
		ctx, err := C.ibv_open_device(dev)
		if ctx == nil {
			return out, errnoErr("ibv_open_device("+names[i]+")", err, "check permissions on /dev/infiniband")
		}
		var da C.struct_ibv_device_attr
		if rc := C.ibv_query_device(ctx, &da); rc == 0 {
			for p := 1; p <= int(da.phys_port_cnt); p++ {
				var pa C.struct_ibv_port_attr
				if C.rs_query_port(ctx, C.uint8_t(p), &pa) != 0 {
					continue
				}
				info.Ports = append(info.Ports, PortInfo{Port: p, Active: pa.state == C.IBV_PORT_ACTIVE,
					LinkLayer: linkLayerName(uint8(pa.link_layer)), LID: uint16(pa.lid), MTU: mtuBytes(int32(pa.active_mtu)),
					RateGbps: portRateGbps(uint8(pa.active_width), uint8(pa.active_speed)), GIDs: int(pa.gid_tbl_len)})
			}
		} else {
			C.ibv_close_device(ctx)
			return out, errnoErr("ibv_query_device("+names[i]+")", syscall.Errno(rc), "")
		}
		C.ibv_close_device(ctx)
		out = append(out, info)
	}
	return out, nil
}

// ntoh64 converts the big-endian node GUID to a host value.
func ntoh64(v uint64) uint64 {
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], v)
	return binary.BigEndian.Uint64(b[:])
}

// OpenLocal opens a cluster of nodes nodes in this process, all on one RDMA
// device (each node opens its own device context; their queue pairs reach
// each other through the adapter's loopback) with an in-memory out-of-band
// channel. This is what the conformance suite uses on a machine with one
// device. gidIndex -1 picks a GID automatically (see Config.GID).
// The caller closes the returned Fabric.
func OpenLocal(device string, port, gidIndex, nodes int) (fabric.Fabric, error) {
	return OpenLocalConfig(Config{Device: device, Port: port, GID: GIDAt(gidIndex)}, nodes)
}

// OpenLocalConfig is OpenLocal with every Config setting (Bootstrap and
// Signature are ignored).
func OpenLocalConfig(cfg Config, nodes int) (fabric.Fabric, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if nodes < 1 {
		return nil, fmt.Errorf("%w: ibv: OpenLocal of %d nodes", fabric.ErrInvalidArg, nodes)
	}
	var devs []*device
	closeAll := func() error {
		var errs []error
		for _, d := range devs {
			errs = append(errs, d.close())
		}
		return errors.Join(errs...)
	}
	fdevs := make([]fabric.Device, nodes)
	for i := 0; i < nodes; i++ {
		d, err := openDevice(cfg.Device, cfg.Port, cfg.GID.Index(), i, cfg.Path)
		if err != nil {
			closeAll()
			return nil, err
		}
		devs = append(devs, d)
		fdevs[i] = d
	}
	return host.NewLocal("ibv", cfg.Config, fdevs, closeAll), nil
}

// Open opens this process's node of a distributed job on the named device
// ("" for the first), taking the job layout from the environment
// (host.BootstrapFromEnv) and picking the GID automatically. See OpenConfig.
func Open(device string) (fabric.Fabric, error) {
	return OpenConfig(Config{Device: device})
}

// OpenConfig opens this process's node of a distributed job: it connects
// the out-of-band channel first (node 0 waits up to cfg.ConnectTimeout for
// every node and checks that they run the same cfg.Signature), then opens
// the device. A node that cannot open its device tells the others, which
// fail with its error. The returned Fabric has Size nodes and one Local
// node, whose id is the rank; the caller closes it.
func OpenConfig(cfg Config) (fabric.Fabric, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return host.Join("ibv", cfg.Config, func(rank int) (fabric.Device, func() error, error) {
		d, err := openDevice(cfg.Device, cfg.Port, cfg.GID.Index(), rank, cfg.Path)
		if err != nil {
			return nil, nil, err
		}
		return d, d.close, nil
	})
}

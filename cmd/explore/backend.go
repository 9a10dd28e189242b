package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/host"
	"github.com/rdmashuffle/rdmashuffle/fabric/ibv"
	"github.com/rdmashuffle/rdmashuffle/fabric/loopback"
)

// hwFlags select the backend of a command: the simulator (default), real
// RDMA hardware through libibverbs (a build with -tags ibverbs; see
// docs/hardware.md), or the in-process software NIC (loopback). With the hardware backend, --local runs every node in
// this process over one device (the HCA loops the traffic back); without
// it, this process is one node of a job whose layout comes from Slurm, an
// MPI launcher or RDMASHUFFLE_PEERS/RDMASHUFFLE_RANK.
type hwFlags struct {
	backend   string
	device    string
	port, gid int
	local     bool
	cores     int
	timeLimit time.Duration
	path      ibv.Path // service level, traffic class, hop limit, static rate, P_Key index
	// levelsElsewhere: the command sets service levels itself, on every
	// backend (explore run's --service-level is the run's), so these
	// flags leave --service-level out.
	levelsElsewhere bool
}

func (h *hwFlags) register(fl *pflag.FlagSet) { h.registerShort(fl, false) }

// registerShort registers the flags, with perftest's names for the
// device, port, GID index and service level when perftest is set: -d (and
// --ib-dev), -i and --ib-port (the device port: perftest's --port is the
// TCP port of its out-of-band connection, which bench registers itself),
// -x, -S (and --sl).
func (h *hwFlags) registerShort(fl *pflag.FlagSet, perftest bool) {
	short := func(s string) string {
		if perftest {
			return s
		}
		return ""
	}
	fl.StringVar(&h.backend, "backend", "sim", "sim (the simulator), ibv (real RDMA hardware: a build with -tags ibverbs, docs/hardware.md), loopback (every node in this process on a software NIC with real threads, no RDMA needed) or tcp (real hosts without RDMA, for --design TCP)")
	fl.StringVarP(&h.device, "device", short("d"), "", "ibv: the RDMA device (as ibv_devices prints it, e.g. mlx5_0); empty: the first")
	if perftest {
		fl.IntVarP(&h.port, "ib-port", "i", 1, "ibv: the device port (perftest's -i; --port is the out-of-band TCP port, as in perftest)")
		fl.StringVar(&h.device, "ib-dev", "", "perftest's name for --device")
		fl.MarkHidden("ib-dev")
	} else {
		fl.IntVar(&h.port, "port", 1, "ibv: the device port")
	}
	fl.IntVarP(&h.gid, "gid-index", short("x"), -1, "ibv: the GID index for RoCE or global routing; -1 picks one")
	fl.BoolVar(&h.local, "local", false, "ibv, tcp: run every node in this process (ibv: over one device) instead of one node per process")
	fl.IntVar(&h.cores, "cores", 0, "ibv, loopback, tcp: cores of each node for its threads (a sending and a receiving thread each); more than the machine has share its CPUs. 0: ibv divides this process's CPUs among the --local nodes, loopback and tcp give every node enough for any thread count")
	fl.DurationVar(&h.timeLimit, "time-limit", 10*time.Minute, "ibv, loopback: fail a run that takes longer than this (wall clock)")
	if !h.levelsElsewhere {
		fl.IntVarP(&h.path.ServiceLevel, "service-level", short("S"), 0, "InfiniBand service level of every queue pair and address handle (0..15); on the simulator's bench it picks the virtual lane (--vls, docs/topology.md)")
	}
	if perftest {
		fl.IntVar(&h.path.ServiceLevel, "sl", 0, "perftest's name for --service-level")
		fl.MarkHidden("sl")
	}
	fl.IntVar(&h.path.TrafficClass, "traffic-class", 0, "ibv: GRH traffic class (0..255); on RoCE v2 its top six bits are the DSCP")
	fl.IntVar(&h.path.HopLimit, "hop-limit", 0, "ibv: GRH hop limit for routed RoCE or InfiniBand (1..255; 0: 64)")
	fl.IntVar(&h.path.StaticRate, "static-rate", 0, "ibv: injection rate cap per destination as enum ibv_rate (0: the port's full rate)")
	fl.IntVar(&h.path.PKeyIndex, "pkey-index", 0, "ibv: index of the partition key in the port's P_Key table")
}

// open returns the hardware fabric, or nil for the simulator. signature
// identifies the job, so that a process started with other settings is
// reported by name.
func (h *hwFlags) open(nodes int, signature string) (fabric.Fabric, error) {
	if h.path != (ibv.Path{}) && h.backend != "ibv" {
		return nil, fmt.Errorf("--service-level, --traffic-class, --hop-limit, --static-rate and --pkey-index mark the packets of real RDMA hardware: they apply with --backend ibv, not %s", h.backend)
	}
	if h.cores < 0 || (h.cores > 0 && h.backend == "sim") {
		return nil, fmt.Errorf("--cores %d: give the cores of each node of a real backend (ibv, loopback, tcp), or 0 for the default; the simulator's cores come from --profile", h.cores)
	}
	switch h.backend {
	case "sim":
		return nil, nil
	case "tcp": // real hosts, no RDMA: for the TCP design
		// Threads are goroutines the operating system schedules (not
		// pinned): the nodes get nominal cores enough for any thread count.
		cfg := host.Config{TimeLimit: h.timeLimit, Signature: signature, Cores: 256, Log: logStderr}
		if h.cores > 0 {
			cfg.Cores = h.cores
		}
		if h.local {
			return host.OpenLocal(cfg, nodes)
		}
		if err := checkJobSize(nodes); err != nil {
			return nil, err
		}
		return host.Open(cfg)
	case "loopback": // every node in this process, the NIC a goroutine
		return loopback.Open(host.Config{TimeLimit: h.timeLimit, Signature: signature, Cores: h.cores}, nodes)
	case "ibv":
	default:
		return nil, fmt.Errorf("--backend %q: choose sim, ibv, loopback or tcp", h.backend)
	}
	if !ibv.Available() {
		return nil, fmt.Errorf("--backend ibv: this explore was built without the libibverbs backend; rebuild with go build -tags ibverbs ./cmd/explore (needs libibverbs-dev; docs/hardware.md): %w", fabric.ErrNoDevice)
	}
	cfg := ibv.Config{Device: h.device, Port: h.port, GID: ibv.GIDAt(h.gid), Path: h.path, Config: host.Config{TimeLimit: h.timeLimit, Signature: signature, Log: logStderr, Cores: h.cores}}
	if h.local {
		return ibv.OpenLocalConfig(cfg, nodes)
	}
	if err := checkJobSize(nodes); err != nil {
		return nil, err
	}
	return ibv.OpenConfig(cfg)
}

// logStderr prints what a distributed job goes on despite (node 0 refusing
// a process of another job) on standard error.
func logStderr(msg string) { fmt.Fprintln(os.Stderr, msg) }

// checkJobSize reads the job's layout from the environment before any
// connection is made, so that a bad size, or one that disagrees with
// --nodes, is refused at once rather than after waiting for peers.
func checkJobSize(nodes int) error {
	b, err := host.BootstrapFromEnv()
	if err != nil {
		return err
	}
	if nodes != b.Size {
		return fmt.Errorf("--nodes %d but the job has %d nodes (its launcher's environment): give --nodes %d", nodes, b.Size, b.Size)
	}
	return nil
}

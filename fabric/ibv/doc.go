// Package ibv is the real-hardware backend of the fabric contract: verbs
// over libibverbs through cgo, compiled with the build tag ibverbs (and
// libibverbs-dev installed). Without the tag (the default build, which needs
// no RDMA library) the same entry points exist and report
// fabric.ErrNoDevice with how to get a build that has the backend.
//
// Entry points: Available, Devices, OpenLocal (every node of a job in this
// process on one device, queue pairs connected through the adapter's
// loopback, an in-memory out-of-band channel: what the conformance suite
// uses) and Open/OpenConfig (one process per node; rank, size and node 0's
// address from Slurm, MPI launchers, RDMASHUFFLE_* variables or a peers
// file, see host.BootstrapFromEnv; the out-of-band channel is TCP through node
// 0). docs/hardware.md says how to build and run, and what was verified.
//
// Structure. The execution environment, the out-of-band channels and the
// job bootstrap are package host's (pure Go, no cgo); this package adds
// the devices. Without the tag only stub.go and config.go (the types its
// entry points take) are built. With the tag:
//
//   - mapping.go: the verbs enum values used, and the translations between
//     them and the contract (statuses, opcodes, attribute masks per queue
//     pair transition, MTU, port rate, errno to contract errors; its tests
//     check each value against the header);
//   - queue.go: the slot accounting that enforces the requested work queue
//     depths (a slot is free once its completion has been polled) and the
//     staging ring that gives a completion queue its exact depth and
//     detects overruns;
//   - shim.h: C helpers (one cgo call per batch of work requests or
//     completions, request chains in reused C memory);
//   - verbs_ibv.go: devices, protection domains, memory regions,
//     completion queues and address handles; qp_ibv.go: queue pairs;
//     srq_ibv.go and xrc_ibv.go: shared receive queues and XRC;
//   - dc_ibv.go and shim_dc.h: Dynamically Connected queue pairs (DCI,
//     DCT) through mlx5dv (mlx5dv_create_qp(3), the extended post
//     interface of ibv_wr_post(3), mlx5dv_wr_set_dc_addr(3)); the package
//     links libmlx5 for them;
//   - open_ibv.go: the entry points, on host.NewLocal and host.Join.
//
// DC exists only on a device the mlx5 provider drives (ConnectX-4 and
// later: mlx5dv_is_supported(3), asked when the device is opened). On any
// other device (the software RDMA device of softrdma, rxe, siw, mlx4)
// CreateQP of a DCI or DCT fails with an error wrapping
// errors.ErrUnsupported that names the device, and the conformance
// suite's DC cases skip. The DC code has been compiled and linked against
// rdma-core's libmlx5, its C glue checked against a fake post interface
// and its transition masks against the kernel mlx5 driver's tables as
// read; it has never executed against an mlx5 device, which this project
// has not had. docs/hardware.md says what to run on one.
//
// Asynchronous events: a goroutine per device reads them (waiting on the
// event descriptor 100 ms at a time, so that closing the device stops it)
// and gives each to what it fails, as ErrAsyncEvent: a queue pair's error
// (access or request violation, fatal, path migration) to that queue pair
// alone, whose error completions then make Poll return it; a completion
// queue's overrun to that queue; a port going down to the device when it is
// the port in use (until the port comes back); a fatal device error to every
// completion queue of the device. Informational events (a port coming up, a
// connection established, a changed LID) are acknowledged and otherwise
// ignored.
//
// Memory regions live outside the Go heap (posix_memalign), so the NIC may
// access them while the garbage collector runs; MR.Bytes is a slice over
// that memory and must not be used after Dereg. Immediate data is a host
// value in the contract and big-endian on the wire; the shim converts.
package ibv

// Package host is the execution environment of real machines behind the
// fabric contract, in pure Go: threads are goroutines locked to OS threads
// (optionally pinned to CPUs), the clock is the monotonic wall clock, Wait
// yields and returns so that callers busy-poll as RDMA code does, and the
// out-of-band channel is in memory (every node in one process) or TCP
// through node 0 (one process per node). It also places a process in a
// job: rank, size and node 0's address from Slurm, MPI launchers,
// RDMASHUFFLE_* variables or a peers file (BootstrapFromEnv).
//
// It has no cgo and no RDMA: a node's fabric.Device comes from the caller.
// Package ibv builds its hardware fabric on NewLocal and Join with
// libibverbs devices; Open and OpenLocal give hosts without a device, on
// which software transports (package tcpshuffle) run.
//
// A software NIC (package loopback) gives its devices a Gate (gate.go):
// threads hold it while they run and let go of it at their synchronizing
// points, which orders the NIC's RDMA Writes with the threads' reads.
//
// Files: env.go and cpu*.go (threads, clock, CPU work, locks and signals,
// aborts and the time limit), oob.go and oob_tcp.go (the out-of-band
// channels), wire.go (their frames), gate.go (the software NIC's memory gate), peers.go (the job bootstrap),
// hosts.go (the entry points).
package host

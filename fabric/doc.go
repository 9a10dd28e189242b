// Package fabric is the contract every other package of rdmashuffle is written
// against. It has two halves:
//
//   - The verbs contract: devices, protection domains, memory regions,
//     completion queues, queue pairs (RC, UC, UD), address handles, work
//     requests and work completions. It is deliberately close to libibverbs so
//     that the real backend (fabric/ibv) is a thin mapping, and small and
//     batch-shaped so that the simulated backend (fabric/sim) is fast.
//   - The execution contract: threads bound to cores, the clock, CPU work,
//     waiting, locks, out-of-band exchange and seeded randomness. Algorithm
//     packages (algos, flowctl, adaptive) take all of these from a Thread and
//     never from the Go runtime, which is what makes a simulated run
//     deterministic and lets the same code run on hardware.
//
// Ownership rule for every call in this package: a buffer named by a posted
// work request (its SGE) belongs to the NIC from the moment PostSend or
// PostRecv returns until the completion for that request has been polled
// (for an unsignaled send: until a later signaled send on the same queue pair
// has completed). Inline sends are the exception: their bytes are copied
// during PostSend and the buffer may be reused as soon as the call returns.
// Slices passed to PostSend, PostRecv and Poll belong to the caller; no
// backend retains them after the call.
//
// Thread-safety: verbs objects may be used by any thread of the node that
// created them, but the contract does not serialize concurrent calls on one
// queue pair or completion queue; sharing one among threads requires a Mutex
// from the node, exactly as the papers' shared-endpoint designs do.
//
// Backends: fabric/sim (discrete-event model, default), fabric/ibv
// (libibverbs through cgo, build tag ibverbs) and fabric/loopback (a
// software NIC on goroutines, for running with parallel threads and the
// race detector). The package fabric/fabrictest
// holds the conformance suite that every backend must pass.
package fabric

// Package loopback is a verbs provider in pure Go: every node of a cluster
// lives in this process, and each node's NIC is a goroutine that executes
// its send queues, copying bytes between the regions' Go slices. It runs on
// the execution environment of real hosts (package host): threads are
// goroutines the runtime runs in parallel, the clock is the monotonic wall
// clock, Wait returns at once and callers busy-poll. It is functional, not
// a performance model: it exists so that the designs' locking and their
// use of the verbs run with truly parallel threads, under Go's race
// detector, on machines without an RDMA device. The NICs share the
// processors with the threads, so a completion queue polled in vain again
// and again yields the processor (as Wait does): a thread that waits by
// polling alone must not keep the NICs, or the other nodes' threads, from
// running when there are fewer processors than goroutines (GOMAXPROCS 1, a
// loaded machine).
//
// It implements the whole contract the conformance suite checks: protection
// domains, regions with keys and bounds, completion queues with depth and
// overrun, RC, UC and UD queue pairs with the state machine, Send, Write
// and Write with immediate, Read, RNR retries (rnr_retry 7: forever), UD
// datagrams dropped when no receive is posted, flushes on error, and slots
// freed by polling. Where the contract is silent it copies the simulator:
// the same status codes for bad keys and bounds, the same device limits.
// There is no loss, no PSN on the wire and no timing; an RC request to a
// queue pair that does not accept it (not yet in RTR) is tried again until
// the ACK timeout has run out retry_cnt+1 times.
//
// # Memory ordering
//
// On hardware the NIC writes host memory outside the Go memory model; here
// it is a goroutine, and every byte it places must be ordered with the
// CPU's accesses by a happens-before edge the race detector can see. Two
// rules do it:
//
//   - Memory the contract gives to the NIC (a posted receive buffer, the
//     destination of an RDMA Read, the source of a send or write) is
//     touched by the NIC without further ceremony: the completion is the
//     edge. The NIC pushes the completion under the node's lock after its
//     copy; Poll takes that lock before the CPU reads. A design that reads
//     a receive buffer before its completion, or rewrites a send buffer
//     before the send completed, is reported by the detector: that is a
//     real bug on hardware too.
//   - One-sided RDMA Writes land in memory the CPU may be reading at that
//     moment (credit words, notices, rings the designs poll). Each node has
//     a gate (host.Gate, a sync.RWMutex): its threads hold it shared while
//     they run and let go of it at their synchronizing points (Sync, Wait,
//     Busy, Compute, waiting for a Mutex, out-of-band calls, a Poll that
//     finds nothing, returning); the NIC places a write under the gate held
//     exclusively. A write therefore lands between two synchronizing points
//     of every thread of the target node, and a thread sees it after its
//     next one: exactly the visibility rule of fabric.Thread.Sync, which
//     the simulator also follows. The NIC reads remote memory (RDMA Read
//     responses) and the sources of its sends under the gate shared.
//
// Limits of this choice: a write lands whole, never torn or out of order
// within a region, which hardware does not promise (designs must not rely
// on it, and the simulator's checker is where such reliance is found); a
// thread that spins on memory without a synchronizing call never sees the
// write (as in the simulator; on hardware it would); the per-node verbs
// lock orders threads that call verbs on one node with each other, so the
// detector misses an unlocked sharing between two threads only when both
// call verbs of that node in between. Readers of the gate are not ordered
// with each other, so two threads of a node that share memory without a
// Mutex are still reported.
//
// Files: loopback.go (Open, the network, the gate), verbs.go (device,
// PD, MR, CQ, AH), qp.go (queue pairs, posting, the state machine), nic.go
// (the NIC goroutine: executing requests, delivery, completions).
package loopback

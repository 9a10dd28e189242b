// Package sim is the simulated backend of the fabric contract: a
// deterministic discrete-event model of an InfiniBand cluster (hosts with
// cores, one NIC per host, links, one switch) that runs the algorithm
// packages unchanged.
//
// Structure:
//
//   - events.go: the event queue, integer picosecond time, (time, sequence)
//     order with FIFO tie-break, value-typed entries and no allocation per
//     event.
//   - engine.go, thread.go: simulated threads in process style. Each thread
//     is a coroutine (iter.Pull): the engine resumes exactly one at a time,
//     and a resumed thread runs until it yields back, so a switch costs a
//     coroutine switch, not a trip through the Go scheduler. A thread runs
//     ahead on its own clock while it only computes and yields only when it
//     must observe the cluster (a verb, Wait, a lock, OOB), so switches are
//     rare.
//   - node.go: nodes, their cores and the out-of-band channel.
//   - profile.go: hardware profiles loaded from YAML; bound.go the
//     goodput bound a profile allows.
//   - network.go, switch.go, packet.go: links, the switch and its credit
//     flow control (credits.go), packets and their header sizes; fault
//     injection on links and manual delivery.
//   - faultplan.go: fault schedules (rules on chosen packets, crashes,
//     link-down windows, slow receivers).
//   - nic.go, qp.go, verbs.go, transport.go, responder.go, timers.go: the
//     NIC, queue pairs and the verbs objects, the RC, UC and UD transports
//     (the sending side and the receiving side) and their retransmission
//     timers; qpcache.go and tpt.go the NIC's queue-pair
//     context cache and its translation and protection caches.
//   - checker.go: the verbs-usage checker (hazards, objects left open);
//     checker_buffers.go its checks of who owns a posted buffer.
//
// A Cluster is confined to the goroutine that calls Run and the threads Run
// starts; it is not safe for use by other goroutines.
package sim

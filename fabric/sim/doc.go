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
//     is a goroutine, but exactly one goroutine runs at a time: the one
//     holding the baton. A thread runs ahead on its own clock while it only
//     computes and hands the baton on only when it must observe the cluster
//     (a verb, Wait, a lock, OOB), so hand-offs are rare.
//   - profile.go: hardware profiles loaded from YAML.
//   - network.go: links, the switch, fault injection and manual delivery.
//   - nic.go, verbs.go, transport.go: the NIC, verbs objects and the RC, UC
//     and UD transports.
//
// A Cluster is confined to the goroutine that calls Run and the threads Run
// starts; it is not safe for use by other goroutines.
package sim

package figures

// Claim is a published observation the simulator is checked against, in
// our words, with its source section, cited by the keys of docs/papers.md
// (Liu19 is the journal version of the RDMA shuffle paper; Salama17,
// MW-DQE and Roediger15 are the peer designs' papers; Hoefler08 and
// Geoffray08 measured multistage networks, the fat trees a cluster past
// one switch is built of).
type Claim struct {
	ID        string
	Source    string
	Statement string
	// Missing names what is not built yet when no experiment evaluates
	// the claim (it is then reported as not-run, never dropped).
	Missing string
}

// Claims lists every claim, in order.
var Claims = []Claim{
	{"C1", "Liu19 §7.1.1", "Writing credit back every 1 to 16 receives changes MQ/SR and SQ/SR throughput by only a few percent, all close to the qperf-like peak.", ""},
	{"C2", "Liu19 §7.1.1", "Receivers spend significant time per GB on credit only for MESQ/SR at write-back frequency 1.", ""},
	{"C3", "Liu19 §7.1.1", "The minimum registered memory grows with the credit frequency (each thread needs at least f buffers per destination); at f = 16 it approaches 1 GB over an 8-node, 14-thread cluster.", ""},
	{"C4", "Liu19 §7.1.2", "The three RDMA Write notification variants tie when network-bound; polling the CQ is up to 1.5x faster when compute-bound and overlaps fully from about 3.5 us of processing per 32 KiB batch.", ""},
	{"C5", "Liu19 §7.1.2", "Poll-buffers returns a free buffer to the sender about 0.5 ms later than the other two variants in a network-bound run.", ""},
	{"C6", "Liu19 §7.1.2", "RDMA Writes per transfer: 3 for poll-message-queue, 2 + 1/b (2.5 with b = 2) for poll-CQ.", ""},
	{"C7", "Liu19 §7.1.3", "Single-endpoint RC designs underuse the network with messages up to 16 KiB (one endpoint's message-rate limit); multi-endpoint designs stay near peak from 4 KiB to 1 MiB.", ""},
	{"C8", "Liu19 §7.1.3", "With 1 MiB messages an RC shuffle pins more than 100 MiB; the UD designs need under 1 MiB at peak throughput.", ""},
	{"C9", "Liu19 §7.1.4", "Repartition on 16 EDR nodes: MESQ/SR is about 2x MPI.", ""},
	{"C10", "Liu19 §7.1.4", "Repartition on 8 FDR nodes: MESQ/SR is about 3x IPoIB.", ""},
	{"C11", "Liu19 §7.1.4", "On FDR the MQ designs degrade as the cluster grows to 16 nodes (QP context cache); MESQ/SR does not, and beats the RC qperf baseline at 16 nodes.", ""},
	{"C12", "Liu19 §7.1.4", "On EDR, MQ/SR and MQ/WR do not degrade up to 16 nodes.", ""},
	{"C13", "Liu19 §7.1.4", "Broadcast on 16 EDR nodes: SEMQ/SR is up to 4x MPI; the RDMA Read designs degrade markedly under broadcast (a buffer is reusable only after every reader).", ""},
	{"C14", "Liu19 §7.1.4", "SESQ/SR is limited by thread contention on its single shared queue pair.", ""},
	{"C15", "Liu19 §7.1.4", "The best designs leave senders idle about 30% of the time and receivers up to 90%.", ""},
	{"C16", "Liu19 §7.1.5", "At 16 nodes MESQ/SR reaches higher throughput with fewer QPs than the MQ designs.", ""},
	{"C17", "Liu19 §7.1.6", "MESQ/SR sets up in about 40 ms whatever the cluster size; MQ setup grows linearly with nodes; connecting per query beats pre-connected MPI or IPoIB above about 250 MB shuffled.", ""},
	{"C18", "Liu19 §7.1.7", "Network-bound shuffling reaches about 11 GiB/s on EDR (local processing about 50 GiB/s); with compute-intensive receivers every design but SESQ/SR overlaps communication and computation; MPI and IPoIB never fully do.", ""},
	{"C19", "Liu19 §7.1.8", "The bandwidth-delay product suggests 44 buffers on EDR and underperforms; adaptive buffering matches or beats the best fixed depth at 21 to 95 cycles per tuple, with fewer buffers as the per-tuple cost rises.", "the adaptive buffer controller"},
	{"C20", "Liu19 §7.1.8", "With one node at 21 and one at 95 cycles per tuple, adaptive buffering picks a different depth per node and beats every single fixed depth.", "the adaptive buffer controller"},
	{"C21", "Liu19 §7.2.1", "TPC-H Q4 (SF 400, 8 nodes): MESQ/SR comes close to the no-shuffle local-data time; FDR to EDR gains about 50% with MESQ/SR and about 30% with MPI.", "the TPC-H queries"},
	{"C22", "Liu19 §7.2.2", "TPC-H from 2 to 16 nodes at 100 GiB per node: alike at 2 nodes; at 16 nodes MESQ/SR is about 1.7x MPI on Q4, 1.55x on Q3 and 2x on Q10.", "the TPC-H queries"},
	{"C23", "Roediger15 §3.2.3", "Round-robin network scheduling raises an 8-node QDR all-to-all of 512 KB messages by up to 40% over unscheduled sending.", ""},
	{"C24", "Roediger15 §3.2", "A per-server multiplexer needs n(n-1) connections (30 for 6 servers) where a classic exchange operator needs tens of thousands.", "the HyPer-style multiplexer"},
	{"C25", "Roediger15 §5", "Over TCP on InfiniBand the CPU is the bottleneck and network scheduling gains nothing.", "the HyPer-style multiplexer"},
	{"C26", "MW-DQE §4", "An RDMA Write middleware with batched notifications cuts communication time by about 75% against sockets; the batching threshold changes run time by more than 25% (16 KB best).", "the RDMA Write shuffle middleware"},
	{"C27", "Salama17 §4", "Remote-read execution: 10 outstanding reads are about 3x faster than 1, and 5 are already near the maximum.", "I-Store-style remote reads"},
	{"C28", "Salama17 §4", "One memory server feeding 1 to 8 readers: per-reader read throughput falls sharply while multicast stays flat.", "I-Store-style remote reads"},
	{"C29", "Salama17 §4", "For 3- and 4-table joins the remote-read design beats an RDMA-optimized shuffle plan, by up to 3x.", "I-Store-style remote reads"},
	{"C30", "Hoefler08 (abstract)", "Fat trees with full bisection bandwidth, statically routed, deliver an effective bisection bandwidth of about 55-60% (random bisections, simulated on production clusters' routing tables).", ""},
	{"C31", "Geoffray08 (abstract)", "On a non-blocking 512-node Clos network static routing leaves an effective bisection bandwidth as low as 38%; adaptive routing raises it to 77%.", ""},
}

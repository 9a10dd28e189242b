// Package istore is an I-Store-style engine (Salama17): distributed
// pipelined star joins over remote memory read with one-sided RDMA Reads,
// written against the fabric contract only (no wall clock, no goroutines,
// no global randomness: clocks, CPU work, waiting and threads come from
// fabric.Thread), so it runs on the simulator and, unchanged, on hardware.
//
// Roles. A cluster of n nodes holds memory servers (Config.Memory) and
// compute servers (Config.Compute), given as node ids; a node may be both
// (the paper's deployment, and our default: every node is a memory and a
// compute server). Memory servers register one region holding their
// blocks and do no work per request; compute servers run the query with
// Config.Threads worker threads each. A compute server reads blocks of its
// own node through its NIC (loopback), as separate processes would.
//
// Storage. Every table is partitioned once per join key it holds, with one
// hash function per key into Config.Parts parts (a dimension into Parts
// partitions on its primary key; lineorder into Parts^3 cells on custkey,
// partkey and suppkey), and every partition is cut into 2 KB blocks
// (BlockBytes: a 16-byte header and 127 rows of 16 bytes) spread
// round-robin over the memory servers. The block directory (memory server,
// offset) is computed by every node from the layout and the regions'
// addresses and rkeys are exchanged over the out-of-band channel; the
// paper's linked lists with pointer groups are not modelled (Layout).
//
// Streams. A compute server pulls blocks with at most Depth outstanding
// RDMA Reads per worker thread into a ring of Depth 2 KB slots; a slot is
// read again only after its block was processed (the paper's prefetching,
// §4.2). Blocks that several compute servers need (a dimension partition
// replicated to several tiles) can be "multicast": the fabric has no
// switch replication, so a multicast here is a relay chain: the first
// member reads each block from the memory server and RDMA-Writes it (with
// immediate) into the next member's ring, which forwards it in turn, with
// per-slot credit written back by an inline RDMA Write. Each link then
// carries each block once, as with InfiniBand multicast, but at one hop of
// latency per member and with the forwarding posts on the compute
// servers' CPUs rather than on the memory server's.
//
// Joins. Queries are star joins of the SSB-like schema of Generate
// (ssb.go). Work is assigned by tiling the grid of the joined keys'
// partitions over the compute servers (Tiling): each server builds local
// arrays of the dimension partitions of its tile, then probes its fact
// cells and aggregates; partial aggregates are gathered at the end. There
// is no shuffle. ShufflePlan runs the same joins the classical way, with a
// repartition of the fact stream per join over any shuffle design (package
// experiments supplies the exchanger).
package istore

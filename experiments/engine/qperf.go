package engine

import (
	"fmt"
	"time"

	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/fabric/perftest"
)

// runQperf runs the qperf baseline: every node streams RC sends of
// MsgBytes from one registered buffer to every other node over Threads
// queue pairs per peer (qperf is one process per stream, so a node runs
// Threads streams to each peer, n x t connections as MEMQ), the receivers
// repost every receive at once and never touch the data. It moves no
// tuples, so its integrity check is at the message level: every receiver
// must count exactly the messages sent to it over RC, or the run fails.
// The record's BytesPerNode is the input asked for; the bytes moved are
// that rounded down to whole messages per stream (at least one).
// It measures the network's ceiling for the shuffle's traffic, as the
// dashed qperf line of Liu19's figure 19.
func runQperf(cfg Config, sc *SimCluster) (*results.Record, error) {
	c, prof := sc.Cluster, sc.prof
	n, t := cfg.Nodes, cfg.Threads
	iters := max(1, int(cfg.BytesPerNode/int64(cfg.MsgBytes)/int64(n-1)/int64(t)))
	pc := perftest.Config{Test: "alltoall_bw", Size: cfg.MsgBytes, Iters: iters, QPs: t, Interleave: true,
		TxDepth: max(cfg.Buffers, 16), RxDepth: max(cfg.Buffers, 16)}
	if err := pc.Normalize(n); err != nil {
		return nil, err
	}
	// The faults and fault schedule apply as to any design: the cluster
	// was built with them.
	t0 := time.Now()
	res, err := perftest.Run(c, pc)
	if err != nil {
		if s := c.FaultSummary(); s != "" {
			err = fmt.Errorf("%w [faults injected: %s]", err, s)
		}
		return nil, err
	}
	rec := &results.Record{Experiment: "run", Label: cfg.Label, Backend: "sim", Profile: prof.Name, Design: cfg.Design, Pattern: string(cfg.Pattern),
		Nodes: n, Threads: t, MsgBytes: cfg.MsgBytes, Buffers: cfg.Buffers, CreditEvery: cfg.CreditEvery, Seed: cfg.Seed, QPNumbering: cfg.QPNumbering,
		BytesPerNode: cfg.BytesPerNode, BytesPerPair: cfg.BytesPerPair, CyclesPerTuple: cfg.CyclesPerTuple,
		ThroughputGiBs: res.BWAvgGbps * 1e9 / 8 / (1 << 30), ResponseS: res.DurationUS / 1e6,
		QPsPerNode: (n - 1) * t, Integrity: "ok", WallS: time.Since(t0).Seconds(), SimEvents: c.Events(),
		QPCacheMiss: c.Stats().QPCacheMissRate(), ProfileHash: prof.Hash()}
	rec.Profile, rec.Doorbells = ProfileLabel(prof), string(cfg.Doorbells)
	Stamp(rec, cfg)
	return rec, nil
}

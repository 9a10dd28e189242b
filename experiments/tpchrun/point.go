package tpchrun

import (
	"fmt"
	"strings"

	"github.com/rdmashuffle/rdmashuffle/experiments/catalogue"
	"github.com/rdmashuffle/rdmashuffle/experiments/engine"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/internal/setting"

	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
	"github.com/rdmashuffle/rdmashuffle/tpch"
)

// Figures 26 and 27 of Liu19 run TPC-H queries (RunQuery), not a
// synthetic shuffle. Their points say so in their workload (a
// results.TPCH workload: the query, local-data plan or not, the scale
// factor per node), and the run layer (experiments.Exec) runs them through RunPoint.

// RunPoint runs a point whose workload is a TPC-H query with the
// simulator's options (RunQuerySim): scale
// factor = the workload's per node x nodes, size-only unless the point
// asks for payload, threads (when 0) half the profile's cores. The record
// has Experiment "tpch", the workload (and its label), design and pattern,
// the response time, the bytes shuffled per node as BytesPerNode and the
// integrity.
func RunPoint(cfg engine.Config, opt engine.SimOptions) (*results.Record, error) {
	if !cfg.Network.IsSingle() {
		return nil, setting.New("Network", fmt.Sprintf("%q", cfg.Network.String()), "a TPC-H point runs on the single switch: networks of switches are not wired into the query runner").Sentinel(engine.ErrUnsupported)
	}
	w := cfg.Workload
	q, local, sfpn := tpch.Query(w.Query), w.Local, w.SFPerNode
	prof, err := sim.LoadProfile(cfg.Profile)
	if err != nil {
		return nil, err
	}
	threads := cfg.Threads
	if threads == 0 {
		threads = prof.Host.Cores / 2
	}
	qc := QueryConfig{Query: q, SF: sfpn * float64(cfg.Nodes), Design: cfg.Design, Nodes: cfg.Nodes, Threads: threads, Profile: cfg.Profile,
		Seed: cfg.Seed, QPNumbering: cfg.QPNumbering, Payload: cfg.Payload, Buffers: cfg.Buffers, CreditEvery: cfg.CreditEvery, MsgBytes: cfg.MsgBytes, Timeout: cfg.Timeout,
		Software: cfg.Software}
	if local {
		qc.Design = catalogue.LocalData
	}
	qr, err := RunQuerySim(qc, opt)
	if err != nil {
		return nil, err
	}
	msg := qc.MsgBytes
	if msg == 0 {
		n := qc
		_ = n.Normalize(prof.Host.Cores)
		msg = n.MsgBytes
	}
	var pats []string
	for _, st := range qr.Steps {
		pats = append(pats, st.Pattern)
	}
	pattern := strings.Join(pats, "+")
	if local {
		pattern = "local"
	}
	rec := &results.Record{Experiment: "tpch", Label: engine.PointLabel(cfg), Backend: "sim", Profile: qr.Profile, Design: cfg.Design, Pattern: pattern,
		Nodes: qr.Nodes, Threads: qr.Threads, MsgBytes: msg, Buffers: max(cfg.Buffers, 2), CreditEvery: max(cfg.CreditEvery, 2), Seed: qr.Seed, QPNumbering: qr.QPNumbering,
		BytesPerNode: qr.Shuffled / int64(qr.Nodes), ResponseS: qr.ResponseS, SetupMS: qr.SetupMS, Integrity: qr.Integrity,
		TuplesSent: uint64(qr.Shuffled / 16), TuplesReceived: uint64(qr.Shuffled / 16), SimEvents: qr.SimEvents, WallS: qr.WallS, ProfileHash: qr.ProfileHash,
		VerbsCheck: qr.VerbsCheck}
	engine.Stamp(rec, cfg)
	return rec, nil
}

package experiments

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/internal/setting"

	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
	"github.com/rdmashuffle/rdmashuffle/tpch"
)

// Figures 26 and 27 of Liu19 run TPC-H queries (RunQuery), not a
// synthetic shuffle. Their sweep points carry the query in the run label,
// "tpch <query> [local] sfpn=<scale factor per node>", and are run by
// RunQueryPoint, which the figures use as their Run for every point. Run
// alone would run each point as a one-tuple shuffle, which the judges
// reject.

// TPCHLabel names a query point: query q, on local data (Q4's plan
// without a shuffle) or not, at sfpn scale factor per node.
func TPCHLabel(q tpch.Query, local bool, sfpn float64) string {
	l := "tpch " + string(q)
	if local {
		l += " local"
	}
	return l + " sfpn=" + strconv.FormatFloat(sfpn, 'g', -1, 64)
}

// ParseTPCHLabel inverts TPCHLabel.
func ParseTPCHLabel(label string) (q tpch.Query, local bool, sfpn float64, err error) {
	f := strings.Fields(label)
	if len(f) < 3 || f[0] != "tpch" {
		return "", false, 0, fmt.Errorf("label %q: not a TPC-H point (want \"tpch Q4 [local] sfpn=0.1\")", label)
	}
	if q, err = tpch.ParseQuery(f[1]); err != nil {
		return "", false, 0, err
	}
	rest := f[2:]
	if rest[0] == "local" {
		local, rest = true, rest[1:]
	}
	if len(rest) != 1 || !strings.HasPrefix(rest[0], "sfpn=") {
		return "", false, 0, fmt.Errorf("label %q: want sfpn=<scale factor per node> last", label)
	}
	sfpn, err = strconv.ParseFloat(strings.TrimPrefix(rest[0], "sfpn="), 64)
	if err != nil || !(sfpn > 0) {
		return "", false, 0, fmt.Errorf("label %q: bad sfpn", label)
	}
	return q, local, sfpn, nil
}

// RunQueryPoint runs a figure point that names a query in its label:
// scale factor = sfpn x nodes, size-only unless the point asks for
// payload, threads (when 0) half the profile's cores. The record has
// Experiment "tpch", the point's label, design and pattern, the response
// time, the bytes shuffled per node as BytesPerNode and the integrity.
func RunQueryPoint(cfg RunConfig) (*results.Record, error) { return stamped(runQueryPoint(cfg)) }

func runQueryPoint(cfg RunConfig) (*results.Record, error) {
	if !cfg.Network.IsSingle() {
		return nil, setting.New("Network", fmt.Sprintf("%q", cfg.Network.String()), "a TPC-H point runs on the single switch: networks of switches are not wired into the query runner").Sentinel(ErrUnsupported)
	}
	q, local, sfpn, err := ParseTPCHLabel(cfg.Label)
	if err != nil {
		return nil, err
	}
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
		qc.Design = LocalData
	}
	qr, err := RunQuery(qc)
	if err != nil {
		return nil, err
	}
	msg := qc.MsgBytes
	if msg == 0 {
		n := qc
		_ = n.normalize(prof.Host.Cores)
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
	rec := &results.Record{Experiment: "tpch", Label: cfg.Label, Backend: "sim", Profile: qr.Profile, Design: cfg.Design, Pattern: pattern,
		Nodes: qr.Nodes, Threads: qr.Threads, MsgBytes: msg, Buffers: max(cfg.Buffers, 2), CreditEvery: max(cfg.CreditEvery, 2), Seed: qr.Seed, QPNumbering: qr.QPNumbering,
		BytesPerNode: qr.Shuffled / int64(qr.Nodes), ResponseS: qr.ResponseS, SetupMS: qr.SetupMS, Integrity: qr.Integrity,
		TuplesSent: uint64(qr.Shuffled / 16), TuplesReceived: uint64(qr.Shuffled / 16), SimEvents: qr.SimEvents, WallS: qr.WallS, ProfileHash: qr.ProfileHash}
	stampRun(rec, cfg)
	return rec, nil
}

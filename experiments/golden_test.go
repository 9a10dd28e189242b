package experiments

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/internal/setting"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/netspec"
	"github.com/rdmashuffle/rdmashuffle/fabric/perftest"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
	"github.com/rdmashuffle/rdmashuffle/tpch"
)

// The golden records: a small run of every design and pattern, every
// perftest test, a TPC-H query per plan and the I-Store experiments, each
// with its simulated record (and, where the cluster is at hand, the trace
// hash: a digest of every event in order). A change that should leave
// results identical (a refactoring, a speed-up) must pass unchanged; a
// change that alters results on purpose refreshes them in the same commit
// with
//
//	go test ./experiments/ -run Golden -update
//
// and says why. The wall time of each record is zeroed; everything else is
// compared as JSON text, so floating-point results must agree to the last
// bit (the same architecture and Go version give that; the records were
// made on amd64).
var updateGolden = flag.Bool("update", false, "rewrite the golden records in testdata/golden/ instead of checking them")

// When a run case's trace hash changes, the test shows where the run
// parts from the one the golden record was made from, if a trace of that
// run was saved (-save-traces, on the commit before the change): the
// first divergent event with its context (explore trace diff does the
// same for any two traces).
var (
	saveTraces = flag.Bool("save-traces", false, "save every run case's event trace (named by its trace hash) in -trace-dir, for diffs when a hash changes later")
	traceDir   = flag.String("trace-dir", defaultTraceDir(), "where -save-traces keeps run cases' traces, and where a changed hash looks for the trace of the golden run")
)

func defaultTraceDir() string {
	d, err := os.UserCacheDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "rdmashuffle-golden-traces")
	}
	return filepath.Join(d, "rdmashuffle", "golden-traces")
}

// goldenCase is one line of a golden file: a case name and what the case
// produced.
type goldenCase struct {
	Case     string          `json:"case"`
	Trace    string          `json:"trace,omitempty"`
	Rejected string          `json:"rejected,omitempty"`
	Record   json.RawMessage `json:"record,omitempty"`
}

// goldenPatterns are the communication patterns every design is run with.
var goldenPatterns = []algos.Pattern{algos.Repartition, algos.Broadcast, algos.Multicast + ":2"}

// goldenBase is the small run every run case starts from: 4 EDR nodes, 2
// threads, 2 MiB per node: 256 KiB per thread and destination, so that
// even the 64 KiB messages of the RC designs outrun their two buffers and
// the credit protocol takes part.
func goldenBase() RunConfig {
	c := DefaultConfig()
	c.Nodes, c.Threads, c.BytesPerNode, c.Seed, c.Profile = 4, 2, 2<<20, 7, "edr-cx4"
	return c
}

// goldenRunCases lists the run cases: every simulated design with every
// pattern, then one case per feature that changes the path a run takes
// (payload mode, the notification variants, adaptive buffers, UD loss
// recovery, receiver work, other profiles, faults: link faults are the
// simulator's, in faults).
func goldenRunCases() (names []string, cfgs []RunConfig, faults []sim.Faults) {
	addFaults := func(name string, c RunConfig, f sim.Faults) {
		names, cfgs, faults = append(names, name), append(cfgs, c), append(faults, f)
	}
	add := func(name string, c RunConfig) { addFaults(name, c, sim.Faults{}) }
	for _, d := range DesignNames(OnSimulator) {
		for _, p := range goldenPatterns {
			c := goldenBase()
			c.Design, c.Pattern = d, p
			add(fmt.Sprintf("%s %s", d, p), c)
		}
	}
	for _, d := range append(PaperDesigns(), "IPoIB", "MPI", "HyPer", "RDMA-MW") {
		c := goldenBase()
		c.Design, c.Payload = d, true
		add(d+" payload", c)
	}
	for _, d := range []string{"SEMQ/WR", "MEMQ/WR", "SEMQ/WR+cw", "MEMQ/WR+cw"} {
		for _, n := range []algos.Notify{"buffers", "queue"} {
			c := goldenBase()
			c.Design, c.Notify = d, n
			add(fmt.Sprintf("%s notify=%s", d, n), c)
		}
	}
	for _, d := range []string{"MESQ/SR", "SEMQ/SR", "MEMQ/RD", "MEMQ/WR"} {
		c := goldenBase()
		c.Design, c.Adaptive, c.CyclesPerTuple = d, true, 40
		add(d+" adaptive cycles=40", c)
	}
	for _, d := range []string{"SESQ/SR", "MESQ/SR"} {
		c := goldenBase()
		c.Design, c.UDRecovery, c.Payload = d, true, true
		add(d+" ud-recovery payload", c)
		addFaults(d+" ud-recovery payload loss=0.05", c, sim.Faults{Loss: 0.05})
	}
	{
		c := goldenBase()
		c.Design, c.NodeCycles = "MEMQ/SR", []int64{21, 95}
		add("MEMQ/SR node-cycles=21,95", c)
		c = goldenBase()
		c.Design, c.Profile, c.Nodes, c.Threads = "MESQ/SR", "fdr-cx3", 8, 4
		add("MESQ/SR fdr-cx3 8 nodes 4 threads", c)
		c = goldenBase()
		c.Design, c.Profile = "HyPer", "qdr-cx3"
		add("HyPer qdr-cx3", c)
		c = goldenBase()
		c.Design = "MEMQ/SR"
		addFaults("MEMQ/SR RC loss, duplication and reordering", c, sim.Faults{Loss: 0.01, Duplicate: 0.01, Reorder: 0.02})
		c = goldenBase()
		c.Design, c.BytesPerNode, c.BytesPerPair = "MEMQ/WR", 0, 64<<10
		add("MEMQ/WR bytes-per-pair=64KiB", c)
	}
	// Multi-switch networks: a two-level tree of 4-port switches (two
	// leaves of two hosts, two spines), statically routed and adaptive.
	for _, net := range []string{"fat-tree radix=4 routing=minhop placement=round-robin", "fat-tree radix=4 routing=ftree adaptive+rc placement=contiguous"} {
		for _, d := range []string{"MEMQ/SR", "MESQ/SR"} {
			c := goldenBase()
			spec, err := netspec.Parse(net)
			if err != nil {
				panic(err)
			}
			c.Design, c.Network = d, spec
			add(d+" "+net, c)
		}
	}
	return names, cfgs, faults
}

// TestGoldenRuns checks the run cases against testdata/golden/runs.jsonl.
func TestGoldenRuns(t *testing.T) {
	names, cfgs, faults := goldenRunCases()
	var got []goldenCase
	index := map[string]int{}
	for i, cfg := range cfgs {
		index[names[i]] = i
		var trace uint64
		opt := SimOptions{Faults: faults[i], Inspect: func(c *sim.Cluster) { trace = c.TraceHash() }}
		var saved *savedTrace
		if *saveTraces {
			saved = newSavedTrace(t)
			opt.Trace = saved.w
		}
		rec, err := RunSim(cfg, opt)
		if saved != nil {
			saved.keep(t, trace, err == nil)
		}
		gc := goldenCase{Case: names[i]}
		switch {
		case err != nil && isConfigRejection(err):
			gc.Rejected = "configuration"
		case err != nil:
			t.Errorf("%s: %v", names[i], err)
			continue
		default:
			if rec.Integrity != "ok" {
				t.Errorf("%s: integrity %s", names[i], rec.Integrity)
			}
			rec.WallS, rec.Version, rec.Commit, rec.GoVersion = 0, "", "", ""
			gc.Trace, gc.Record = fmt.Sprintf("%016x", trace), mustJSON(t, rec)
		}
		got = append(got, gc)
	}
	checkGolden(t, "runs.jsonl", got, func(g, want goldenCase) string {
		i := index[g.Case]
		return explainTrace(t, cfgs[i], faults[i], want.Trace)
	})
}

// isConfigRejection tells a run that normalize refused (a design that does
// not take the pattern) from one that failed while running.
func isConfigRejection(err error) bool {
	_, refused := setting.As(err)
	return refused
}

// TestGoldenPerftest checks every perftest test (and the transports and
// schedules that take another path) against testdata/golden/perftest.jsonl.
func TestGoldenPerftest(t *testing.T) {
	type pcase struct {
		nodes int
		cfg   perftest.Config
	}
	var cases []pcase
	for _, test := range perftest.Tests {
		cfg := perftest.Config{Test: test, Iters: 200}
		nodes := 2
		switch test {
		case "alltoall_bw", "incast_bw":
			nodes, cfg.Size = 4, 4096
		case "reg_mr":
			cfg.Iters = 2
		case "shift_bw":
			nodes, cfg.Size, cfg.Iters = 4, 65536, 3
		}
		cases = append(cases, pcase{nodes, cfg})
	}
	cases = append(cases,
		pcase{2, perftest.Config{Test: "send_bw", Conn: fabric.UD, Size: 4096, Iters: 200}},
		pcase{2, perftest.Config{Test: "write_bw", Conn: fabric.UC, Size: 8192, Iters: 200, QPs: 4}},
		pcase{2, perftest.Config{Test: "read_bw", Size: 32, Iters: 50, QPs: 64, Interleave: true}},
		pcase{2, perftest.Config{Test: "read_bw", Size: 64, Iters: 100, Spread: 1 << 20}},
		pcase{4, perftest.Config{Test: "alltoall_bw", Size: 65536, Iters: 20, Schedule: perftest.ScheduleRR}},
		pcase{4, perftest.Config{Test: "alltoall_bw", Size: 4096, Iters: 50, Conn: fabric.UD}},
	)
	prof, err := sim.LoadProfile("edr-cx4")
	if err != nil {
		t.Fatal(err)
	}
	var got []goldenCase
	for _, pc := range cases {
		k := pc.cfg
		if err := k.Normalize(pc.nodes); err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("%s nodes=%d s=%d n=%d q=%d c=%v interleave=%v spread=%d schedule=%s", k.Test, pc.nodes, k.Size, k.Iters, k.QPs, k.Conn, k.Interleave, k.Spread, k.Schedule)
		c, err := sim.New(sim.Config{Nodes: pc.nodes, Profile: prof, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		res, err := perftest.Run(c, pc.cfg)
		c.Close()
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		got = append(got, goldenCase{Case: name, Trace: fmt.Sprintf("%016x", c.TraceHash()), Record: mustJSON(t, res)})
	}
	checkGolden(t, "perftest.jsonl", got, nil)
}

// TestGoldenQueries checks TPC-H queries (the shuffle plans with several
// designs, Q4's local plan) and the I-Store experiments against
// testdata/golden/queries.jsonl.
func TestGoldenQueries(t *testing.T) {
	var got []goldenCase
	add := func(name string, rec any, err error) {
		if err != nil {
			t.Errorf("%s: %v", name, err)
			return
		}
		got = append(got, goldenCase{Case: name, Record: mustJSON(t, rec)})
	}
	for _, q := range tpch.Queries {
		for _, d := range []string{"MESQ/SR", "MEMQ/WR", "MPI"} {
			rec, err := RunQuery(QueryConfig{Query: q, SF: 0.02, Design: d, Nodes: 4, Profile: "edr-cx4", Seed: 5, Payload: true})
			if rec != nil {
				rec.WallS, rec.Version, rec.Commit, rec.GoVersion = 0, "", "", ""
			}
			add(fmt.Sprintf("%s %s payload", q, d), rec, err)
		}
	}
	rec, err := RunQuery(QueryConfig{Query: tpch.Q4, SF: 0.02, Design: LocalData, Nodes: 4, Profile: "edr-cx4", Seed: 5, Payload: true})
	if rec != nil {
		rec.WallS, rec.Version, rec.Commit, rec.GoVersion = 0, "", "", ""
	}
	add("Q4 local payload", rec, err)
	rec, err = RunQuery(QueryConfig{Query: tpch.Q3, SF: 0.05, Design: "SEMQ/RD", Nodes: 4, Profile: "fdr-cx3", Seed: 5})
	if rec != nil {
		rec.WallS, rec.Version, rec.Commit, rec.GoVersion = 0, "", "", ""
	}
	add("Q3 SEMQ/RD size-only fdr-cx3", rec, err)
	micro, join := results.Workload{Kind: results.IStoreMicro, Blocks: 64}, func(tables int) results.Workload {
		return results.Workload{Kind: results.IStoreJoin, Tables: tables, SF: 0.02}
	}
	for _, pt := range []struct {
		design string
		w      results.Workload
	}{
		{IStoreReadDesign, micro},
		{IStoreMulticastDesign, micro},
		{IStoreDesign, join(3)},
		{IStoreUnicastDesign, join(2)},
		{"MESQ/SR", join(3)},
	} {
		cfg := goldenBase()
		cfg.Design, cfg.Workload, cfg.Payload = pt.design, pt.w, true
		r, err := Run(cfg)
		if r != nil {
			r.WallS, r.Version, r.Commit, r.GoVersion = 0, "", "", ""
		}
		add(pt.design+" "+pt.w.Label(), r, err)
	}
	checkGolden(t, "queries.jsonl", got, nil)
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkGolden compares got with the golden file case by case (or rewrites
// the file with -update), naming every case that differs, is new or is
// gone; explain, if set, adds to the report of a case whose trace hash
// changed.
func checkGolden(t *testing.T, file string, got []goldenCase, explain func(got, want goldenCase) string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", file)
	if *updateGolden {
		var buf bytes.Buffer
		for _, g := range got {
			buf.Write(mustJSON(t, g))
			buf.WriteByte('\n')
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %d golden records to %s", len(got), path)
		return
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("%v: make the golden records with go test ./experiments/ -run Golden -update", err)
	}
	defer f.Close()
	want := map[string]goldenCase{}
	var order []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var g goldenCase
		if err := json.Unmarshal(sc.Bytes(), &g); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		want[g.Case], order = g, append(order, g.Case)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	differ := 0
	for _, g := range got {
		seen[g.Case] = true
		w, ok := want[g.Case]
		switch {
		case !ok:
			t.Errorf("%s: new case, not in %s (refresh with -update if intended)", g.Case, path)
		case w.Trace != g.Trace || w.Rejected != g.Rejected || !bytes.Equal(w.Record, g.Record):
			differ++
			var why string
			if explain != nil && w.Trace != g.Trace && w.Trace != "" && g.Trace != "" {
				why = "\n" + explain(g, w)
			}
			t.Errorf("%s: differs from %s\n  want trace %s %s%s\n  got  trace %s %s%s%s", g.Case, path, w.Trace, w.Rejected, w.Record, g.Trace, g.Rejected, g.Record, why)
		}
	}
	for _, c := range order {
		if !seen[c] {
			t.Errorf("%s: in %s but no longer run", c, path)
		}
	}
	if differ > 0 {
		t.Logf("%d of %d cases differ: if the change is meant to alter results, refresh with go test ./experiments/ -run Golden -update and say why in the commit", differ, len(got))
	}
}

package istore

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os/exec"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

func cluster(t *testing.T, nodes int, payload bool) *sim.Cluster {
	t.Helper()
	p, err := sim.LoadProfile("fdr-cx3")
	if err != nil {
		t.Fatal(err)
	}
	c, err := sim.New(sim.Config{Nodes: nodes, Profile: p, Seed: 7, SizeOnly: !payload})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func clean(t *testing.T, c *sim.Cluster) {
	t.Helper()
	if open := c.OpenObjects(); len(open) > 0 {
		t.Errorf("%d objects left open: %v", len(open), open[:min(3, len(open))])
	}
	if err := c.CheckError(); err != nil {
		t.Error(err)
	}
}

// TestGenerate: cardinalities and SSB's key rules.
func TestGenerate(t *testing.T) {
	db, err := Generate(0.01, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(db.Customers) != 300 || len(db.Suppliers) != 20 || len(db.Parts) != 2000 {
		t.Fatalf("cardinalities %d %d %d", len(db.Customers), len(db.Parts), len(db.Suppliers))
	}
	if n := len(db.Lines); n < 15000*3 || n > 15000*5 {
		t.Fatalf("%d lines for 15,000 orders", n)
	}
	for _, l := range db.Lines {
		if l.Cust%3 == 0 || l.Cust < 1 || int(l.Cust) > len(db.Customers) || l.Revenue <= 0 || l.Revenue >= 1<<24 {
			t.Fatalf("bad line %+v", l)
		}
	}
	again, _ := Generate(0.01, 1)
	if again.Reference(4).Rows()[0] != db.Reference(4).Rows()[0] {
		t.Fatal("not deterministic")
	}
	if _, p, _, _ := Cardinalities(2); p != 400000 {
		t.Fatalf("part at SF 2: %d, want 200,000 x floor(1 + log2 2)", p)
	}
}

// TestJoinsPayload: every query, remote reads (relayed and not) and a
// layout with separate memory and compute servers, against the
// single-node reference; blocks arrive whole (checked by their checksums).
func TestJoinsPayload(t *testing.T) {
	db, err := Generate(0.004, 3)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		nodes int
		cfg   Config
	}{
		{4, Config{Threads: 2, Depth: 3}},
		{4, Config{Threads: 3, Depth: 1, Multicast: true}},
		{6, Config{Memory: []int{0, 1}, Compute: []int{2, 3, 4, 5}, Threads: 2, Depth: 4, Multicast: true}},
		{5, Config{Memory: []int{0, 1, 2, 3, 4}, Compute: []int{1, 2, 3, 4}, Parts: 8, Threads: 1, Depth: 2, Multicast: true}},
	} {
		for q := Query(2); q <= 4; q++ {
			t.Run(fmt.Sprintf("n=%d/%+v/%s", tc.nodes, tc.cfg, q), func(t *testing.T) {
				c := cluster(t, tc.nodes, true)
				cfg := tc.cfg
				cfg.Query = q
				res, err := Run(c, db, cfg)
				if err != nil {
					t.Fatal(err)
				}
				if want := db.Reference(q); !res.Answer.Equal(want) {
					t.Fatalf("answer differs from the reference:\n%v\nwant\n%v", res.Answer.Rows(), want.Rows())
				}
				if res.MaxOutstanding > cfg.Depth || res.MaxOutstanding < 1 {
					t.Errorf("%d reads in flight with depth %d", res.MaxOutstanding, cfg.Depth)
				}
				if cfg.Multicast && q > 2 && res.Forwards == 0 {
					t.Errorf("replicated partitions but no relay writes (tiles %v)", res.Tiles)
				}
				clean(t, c)
			})
		}
	}
}

// TestSizeOnlyJoin: in size-only mode (no payload moves) the compute
// servers still probe every fact block once and the answer is right (rows
// come from the database as the blocks hold them).
func TestSizeOnlyJoin(t *testing.T) {
	db, _ := Generate(0.02, 1)
	c := cluster(t, 8, false)
	res, err := Run(c, db, Config{Query: 4, Threads: 4, Multicast: true})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Answer.Equal(db.Reference(4)) {
		t.Fatal("wrong answer in size-only mode")
	}
	if res.Tiles[0]*res.Tiles[1]*res.Tiles[2] != 8 {
		t.Fatalf("tiles %v", res.Tiles)
	}
	clean(t, c)
}

// TestOutstandingLimit is white-box: the read pipeline never has more
// than Depth reads in flight per worker, reaches Depth on a long stream,
// and a deeper pipeline is faster until the link saturates.
func TestOutstandingLimit(t *testing.T) {
	var prev float64
	for _, d := range []int{1, 2, 4, 16} {
		c := cluster(t, 2, true)
		r, err := RunMicro(c, MicroConfig{Readers: 1, Depth: d, Threads: 1, Blocks: 600, Seed: 2})
		if err != nil {
			t.Fatal(err)
		}
		if r.MaxOutstanding != d {
			t.Errorf("depth %d: at most %d reads in flight", d, r.MaxOutstanding)
		}
		if !r.SumOK || r.Reads != 600 {
			t.Errorf("depth %d: sum ok %v, %d reads", d, r.SumOK, r.Reads)
		}
		if d <= 4 && r.Mean <= prev*1.5 {
			t.Errorf("depth %d: %.2f M blocks/s, not much above %.2f", d, r.Mean/1e6, prev/1e6)
		}
		prev = r.Mean
		clean(t, c)
	}
}

// TestRelayMulticast: a relay chain delivers every block to every reader
// (sums checked), reads each block once, and keeps per-reader throughput
// where reads from one memory server split it.
func TestRelayMulticast(t *testing.T) {
	run := func(mc bool) *MicroResult {
		c := cluster(t, 5, true)
		r, err := RunMicro(c, MicroConfig{Readers: 4, Depth: 6, Threads: 2, Blocks: 900, Multicast: mc, Seed: 5})
		if err != nil {
			t.Fatal(err)
		}
		if !r.SumOK {
			t.Fatalf("multicast=%v: a reader's sum is wrong", mc)
		}
		clean(t, c)
		return r
	}
	rd, mc := run(false), run(true)
	if rd.Reads != 4*900 || mc.Reads != 900 || mc.Forwards != 3*900 {
		t.Fatalf("reads %d/%d, forwards %d", rd.Reads, mc.Reads, mc.Forwards)
	}
	// Four readers split one server's reads; the relay chain pays a
	// payload fetch per hop (1.56 vs 0.80 M blocks/s per reader at seed 5).
	if mc.Mean < 1.5*rd.Mean {
		t.Fatalf("multicast %.2f M blocks/s per reader, reads %.2f", mc.Mean/1e6, rd.Mean/1e6)
	}
}

// TestBadKnobs: configurations that cannot run fail with errors that say
// why.
func TestBadKnobs(t *testing.T) {
	db, _ := Generate(0.004, 1)
	for _, tc := range []struct {
		nodes int
		cfg   Config
		want  string
	}{
		{4, Config{Query: 5}, "5-table join"},
		{4, Config{Query: 3, Depth: 65}, "outstanding reads"},
		{4, Config{Query: 3, Threads: 99}, "worker threads"},
		{4, Config{Query: 3, Parts: 65}, "partitions per join key"},
		{4, Config{Query: 3, Compute: []int{0, 7}}, "not a distinct node"},
		{4, Config{Query: 3, Memory: []int{1, 1}}, "not a distinct node"},
		{4, Config{Query: 2, Parts: 3}, "cannot tile"},
	} {
		c := cluster(t, tc.nodes, false)
		_, err := Run(c, db, tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want an error containing %q", tc.cfg, err, tc.want)
		}
	}
	c := cluster(t, 3, false)
	for _, mc := range []MicroConfig{{Readers: 1, Depth: 1, Threads: 1, Blocks: 1}, {Readers: 2, Depth: 0, Threads: 1, Blocks: 10}, {Readers: 2, Depth: 1, Threads: 1}} {
		if _, err := RunMicro(c, mc); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: %v, want ErrConfig", mc, err)
		}
	}
	for _, sf := range []float64{0, -1, 65, 0.00001} {
		if _, err := Generate(sf, 1); err == nil || !strings.Contains(err.Error(), "scale factor") {
			t.Errorf("SF %v: %v", sf, err)
		}
	}
}

// TestEngineContract: the package stays on the fabric contract (no
// backend, wall clock, global randomness or go statements), as the
// algorithm packages do.
func TestEngineContract(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{join .Deps " "}} {{join .Imports " "}}`, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.Contains(dep, "fabric/sim") || strings.Contains(dep, "fabric/ibv") {
			t.Errorf("istore depends on backend %s", dep)
		}
	}
	out, err = exec.Command("go", "list", "-f", `{{join .Imports " "}}`, ".").CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range strings.Fields(string(out)) {
		if imp == "time" || strings.HasPrefix(imp, "math/rand") {
			t.Errorf("istore imports %s: take time and randomness from fabric.Thread", imp)
		}
	}
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pkgs {
		for _, f := range p.Files {
			ast.Inspect(f, func(n ast.Node) bool {
				if g, ok := n.(*ast.GoStmt); ok {
					t.Errorf("%s: go statement; use fabric.Thread.Spawn", fset.Position(g.Pos()))
				}
				return true
			})
		}
	}
}

package experiments

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric/netspec"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim/trace"
)

// traceRun runs cfg with a trace written to memory and returns the trace
// file and the cluster's trace hash.
func traceRun(t *testing.T, cfg RunConfig, faults sim.Faults) ([]byte, uint64, uint64) {
	t.Helper()
	var buf bytes.Buffer
	w, err := trace.NewWriter(&buf, trace.Header{Run: map[string]any{"design": cfg.Design, "seed": cfg.Seed}})
	if err != nil {
		t.Fatal(err)
	}
	var hash uint64
	if _, err := RunSim(cfg, SimOptions{Faults: faults, Trace: w, Inspect: func(c *sim.Cluster) { hash = c.TraceHash() }}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), hash, w.Hash()
}

// TestTraceHashesAsTheSimulator: a trace holds exactly what the trace
// hash is made of, so hashing the events written, and the events read
// back, gives the cluster's hash: on runs that take every kind of event
// (deadlines and retransmission under loss, switch hops, RC and UD).
func TestTraceHashesAsTheSimulator(t *testing.T) {
	tree, err := netspec.Parse("fat-tree radix=4 routing=minhop")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		edit   func(*RunConfig)
		faults sim.Faults
	}{
		{"MEMQ/SR", func(c *RunConfig) { c.Design = "MEMQ/SR" }, sim.Faults{}},
		{"MESQ/SR ud-recovery loss", func(c *RunConfig) { c.Design, c.UDRecovery = "MESQ/SR", true }, sim.Faults{Loss: 0.05}},
		{"MEMQ/WR fat tree", func(c *RunConfig) { c.Design, c.Network = "MEMQ/WR", tree }, sim.Faults{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := goldenBase()
			cfg.BytesPerNode = 256 << 10
			tc.edit(&cfg)
			file, hash, written := traceRun(t, cfg, tc.faults)
			if written != hash {
				t.Fatalf("trace writer's hash %016x, cluster's %016x", written, hash)
			}
			r, err := trace.NewReader(bytes.NewReader(file))
			if err != nil {
				t.Fatal(err)
			}
			h, n, kinds := trace.NewHasher(), 0, map[trace.Source]int{}
			for {
				e, err := r.Read()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				h.Add(&e)
				n++
				kinds[e.Source]++
			}
			if h.Sum() != hash {
				t.Errorf("hash of the %d events read back %016x, cluster's %016x", n, h.Sum(), hash)
			}
			for _, s := range []trace.Source{trace.Thread, trace.Network, trace.NIC, trace.QP, trace.Delivery} {
				if kinds[s] == 0 {
					t.Errorf("no %s events in %d", s, n)
				}
			}
			if tc.faults.Loss > 0 && kinds[trace.Deadline] == 0 {
				t.Errorf("no deadline events under loss with recovery")
			}
		})
	}
}

// TestTraceDiff: two traces of one configuration are identical; a trace
// of the same run with another seed parts from it at the first event the
// seed moves, which Diff names with context, and Format prints.
func TestTraceDiff(t *testing.T) {
	cfg := goldenBase()
	cfg.Design, cfg.BytesPerNode, cfg.UDRecovery = "MESQ/SR", 256<<10, true
	a, _, _ := traceRun(t, cfg, sim.Faults{Loss: 0.02})
	b, _, _ := traceRun(t, cfg, sim.Faults{Loss: 0.02})
	cfg.Seed++
	c, _, _ := traceRun(t, cfg, sim.Faults{Loss: 0.02})
	diff := func(x, y []byte) *trace.Divergence {
		rx, err := trace.NewReader(bytes.NewReader(x))
		if err != nil {
			t.Fatal(err)
		}
		ry, err := trace.NewReader(bytes.NewReader(y))
		if err != nil {
			t.Fatal(err)
		}
		d, err := trace.Diff(rx, ry, 3)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := diff(a, b); !d.Identical() || d.Events == 0 || len(d.Header) != 0 {
		t.Fatalf("same run: %+v", d)
	}
	d := diff(a, c)
	if d.Identical() {
		t.Fatal("runs with different seeds have identical traces")
	}
	if len(d.Before) != 3 || len(d.A) == 0 || len(d.B) == 0 || d.A[0] == d.B[0] || d.Index != d.Events+1 {
		t.Fatalf("divergence: index %d, %d before, %d and %d after", d.Index, len(d.Before), len(d.A), len(d.B))
	}
	var out strings.Builder
	d.Format(&out, "a", "b")
	for _, want := range []string{"seed: 7 | 8", "part at event", "> #"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("diff output lacks %q:\n%s", want, out.String())
		}
	}
	// A trace that is a prefix of another: the shorter one ends.
	short := truncateTrace(t, a, int(d.Events/2))
	if d := diff(short, a); d.Identical() || len(d.A) != 0 || len(d.B) == 0 {
		t.Fatalf("prefix: %+v", d)
	}
}

// truncateTrace rewrites a trace keeping its first n events.
func truncateTrace(t *testing.T, file []byte, n int) []byte {
	t.Helper()
	r, err := trace.NewReader(bytes.NewReader(file))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := trace.NewWriter(&buf, r.Header)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		e, err := r.Read()
		if err != nil {
			t.Fatal(err)
		}
		w.Event(e)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/buildinfo"
	"github.com/rdmashuffle/rdmashuffle/experiments/advise"
)

// TestAdviseJSONAndText asks a two-design question of a small cluster:
// the JSON answer names a winner that ranks first with a bottleneck, and
// the text and brief forms say which design to use.
func TestAdviseJSONAndText(t *testing.T) {
	args := []string{"advise", "--nodes", "2", "--threads", "1", "--bytes-per-node", "4MiB", "--screen-bytes", "1MiB", "--designs", "MESQ/SR,SEMQ/SR", "--band", "controls", "--no-reuse", "--save", ""}
	out, err := run(t, append(args, "--json")...)
	if err != nil {
		t.Fatal(err, out)
	}
	var a advise.Answer
	if err := json.Unmarshal([]byte(out), &a); err != nil {
		t.Fatal(err, out)
	}
	if a.Winner == "" || a.Designs[0].Name != a.Winner || a.Designs[0].Bottleneck == nil || len(a.Designs) != 2 {
		t.Fatalf("answer %+v", a)
	}
	text, err := run(t, args...)
	if err != nil || !strings.Contains(text, "Use "+a.Winner+":") || !strings.Contains(text, "Why (") {
		t.Errorf("text answer (%v):\n%s", err, text)
	}
	brief, err := run(t, append(args, "--brief")...)
	brief = strings.Join(strings.Fields(brief), " ")
	if err != nil || !strings.HasPrefix(brief, "For this cluster") || !strings.Contains(brief, "use "+a.Winner) {
		t.Errorf("brief answer (%v):\n%s", err, brief)
	}
}

// TestAdviseRefusals: bad questions are refused naming the flag.
func TestAdviseRefusals(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--connect", "sometimes"}, "--connect sometimes"},
		{[]string{"--band", "wide"}, "--band wide"},
		{[]string{"--max-growth", "0"}, "--max-growth 0"},
		{[]string{"--threads", "100"}, "--threads 100"},
		{[]string{"--designs", "qperf"}, "moves no tuples"},
		{[]string{"--designs", "NOPE"}, "NOPE"},
		{[]string{"--workers", "0"}, "--workers 0"},
		{[]string{"--vls", "2"}, "--vls applies to a multi-switch network"},
	} {
		out, err := run(t, append([]string{"advise", "--nodes", "2", "--bytes-per-node", "1MiB", "--no-reuse", "--save", ""}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("advise %v: error %v, want %q\n%s", tc.args, err, tc.want, out)
		}
	}
}

// TestAdviseSweep maps a small plane: the table, the crossovers and the
// files (figure and JSON) are written, and the JSON reads back as a map
// of a cell per point; bad sweeps are refused naming the flag.
func TestAdviseSweep(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "map")
	args := []string{"advise", "--threads", "1", "--designs", "MESQ/SR,SEMQ/SR", "--band", "controls", "--no-reuse", "--save", "",
		"--sweep", "nodes=2,3", "--sweep", "bytes-per-node=1MiB,2MiB", "--map-out", base}
	out, err := run(t, args...)
	if err != nil || !strings.Contains(out, "Crossovers:") || !strings.Contains(out, "bytes-per-node \\ nodes") {
		t.Fatalf("advise --sweep (%v):\n%s", err, out)
	}
	for _, ext := range []string{".png", ".svg"} {
		if st, err := os.Stat(base + ext); err != nil || st.Size() == 0 {
			t.Errorf("map figure %s: %v", ext, err)
		}
	}
	m, err := advise.ReadMap(base + ".json")
	if err != nil || len(m.Cells) != 4 || m.Cell(1, 1).Values[0] != 3 || m.Cell(1, 1).Values[1] != 2<<20 {
		t.Fatalf("map JSON: %v %+v", err, m)
	}
	for _, c := range m.Cells {
		if c.Winner == "" || (c.Winner != "MESQ/SR" && c.Winner != "SEMQ/SR") {
			t.Errorf("cell %v: winner %q (%s)", c.Values, c.Winner, c.Error)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--sweep", "colour=1,2"}, "want PARAM=V1,V2"},
		{[]string{"--sweep", "nodes=2,x"}, `value "x"`},
		{[]string{"--sweep", "bytes-per-node=1MiB,1MiB"}, "given twice"},
		{[]string{"--nodes", "4", "--sweep", "nodes=2,4"}, "--nodes and --sweep nodes=2,4"},
		{[]string{"--sweep", "nodes=2", "--sweep", "threads=1", "--sweep", "cycles-per-tuple=5"}, "a map has one or two"},
		{[]string{"--sweep", "nodes=2", "--sweep", "nodes=3"}, "swept twice"},
	} {
		out, err := run(t, append([]string{"advise", "--bytes-per-node", "1MiB", "--no-reuse", "--save", "", "--map-out", base}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("advise %v: error %v, want %q\n%s", tc.args, err, tc.want, out)
		}
	}
}

// TestAdvisePointsPerBuild: finished runs are kept per build, under a
// directory named by the commit, so that other code never answers for
// them; a build that names no commit, or one with uncommitted changes,
// neither takes nor keeps any, and says so.
func TestAdvisePointsPerBuild(t *testing.T) {
	defer func(b func() buildinfo.Info) { cacheBuild = b }(cacheBuild)
	for _, tc := range []struct {
		name, commit string
		kept         bool
	}{
		{"committed", "c0ffee", true},
		{"uncommitted changes", "c0ffee+dirty", false},
		{"no commit", "unknown", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cacheBuild = func() buildinfo.Info { return buildinfo.Info{Commit: tc.commit, Go: "go1.26"} }
			dir := t.TempDir()
			out, err := run(t, "advise", "--nodes", "2", "--threads", "1", "--bytes-per-node", "4MiB", "--screen-bytes", "1MiB",
				"--designs", "MESQ/SR,SEMQ/SR", "--band", "controls", "--save", "", "--brief", "--points", dir)
			if err != nil {
				t.Fatal(err, out)
			}
			files, _ := filepath.Glob(filepath.Join(dir, "*", "*.json"))
			top, _ := os.ReadDir(dir)
			if tc.kept {
				if len(files) == 0 || len(top) != 1 || !strings.HasPrefix(top[0].Name(), "c0ffee-") {
					t.Errorf("kept %d runs in %v, want them under one c0ffee- directory", len(files), top)
				}
				return
			}
			if len(top) != 0 || !strings.Contains(out, "finished runs neither taken from nor kept") {
				t.Errorf("kept %v; output:\n%s", top, out)
			}
		})
	}
}

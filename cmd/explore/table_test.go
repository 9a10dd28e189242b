package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rdmashuffle/rdmashuffle/experiments/advise"
	"github.com/rdmashuffle/rdmashuffle/experiments/evidence"
	"github.com/rdmashuffle/rdmashuffle/experiments/figures"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
)

// TestTablesFitTheTerminal: a claims table with long measurements and
// reasons fits 100 columns (wrapping its cells), and keeps every word.
func TestTablesFitTheTerminal(t *testing.T) {
	t.Setenv("COLUMNS", "")
	long := strings.Repeat("MESQ/SR reaches 2.49x MPI's throughput at 16 nodes while MEMQ/SR stays at 1.12x; ", 4)
	var out bytes.Buffer
	printVerdicts(&out, []figures.Verdict{{Claim: "C9", Verdict: "pass", Measured: long, Reason: long}}, nil)
	for _, line := range strings.Split(strings.TrimRight(out.String(), "\n"), "\n") {
		if n := utf8.RuneCountInString(line); n > 100 {
			t.Errorf("a line of %d columns:\n%s", n, line)
		}
	}
	if got := strings.Count(out.String(), "stays"); got != 8 {
		t.Errorf("the wrapped table lost words: %d of 8 'stays'\n%s", got, out.String())
	}
}

// TestAdviceTableFits: the ranked designs of an answer, too wide for 100
// columns on one line each (long names, bands and bottlenecks), print in
// their narrow form within 100 columns, with every value; at 140 columns
// the one-line form prints.
func TestAdviceTableFits(t *testing.T) {
	a := &advise.Answer{Question: "q", Winner: "HyPer-TCP/unsched"}
	for i, name := range []string{"HyPer-TCP/unsched", "SEMQ/WR+cw", "MEMQ/SR+srq"} {
		a.Designs = append(a.Designs, advise.Design{Name: name, Status: advise.Ranked, Contender: true, Steady: i != 1, Tied: i == 1,
			TimeS: 0.3567, SetupS: 0.0094, BandLowS: 0.3412, BandHighS: 0.3868, RateGiBs: 11.53, RegisteredBytes: 56 << 20, QPs: 16384,
			SenderIdle: 0.17, ReceiverIdle: 0.6, Bottleneck: &advise.Bottleneck{Resource: advise.ContextMisses}})
	}
	for _, cols := range []string{"", "140"} {
		t.Setenv("COLUMNS", cols)
		var out bytes.Buffer
		renderOrNarrow(&out, rankedTable(a, false), rankedTable(a, true))
		text := out.String()
		widest := 0
		for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
			widest = max(widest, utf8.RuneCountInString(line))
		}
		for _, v := range []string{"HyPer-TCP/unsched", "356.7", "341.2-386.8", "tied", "9.4", "11.53*", "56 MiB", "16384", "17/60%", "context-misses"} {
			if !strings.Contains(text, v) {
				t.Errorf("COLUMNS=%q: %q missing:\n%s", cols, v, text)
			}
		}
		if want := tableWidth(); widest > want {
			t.Errorf("COLUMNS=%q: %d columns, want at most %d:\n%s", cols, widest, want, text)
		}
		if narrow := strings.Contains(text, "idle s/r"); narrow != (cols == "") {
			t.Errorf("COLUMNS=%q: narrow form %v:\n%s", cols, narrow, text)
		}
	}
}

// TestEvidenceTableFits: the evidence table with the longest point names
// and units fits 100 columns, with and without the numberings' range.
func TestEvidenceTableFits(t *testing.T) {
	t.Setenv("COLUMNS", "")
	r := evidence.Result{Modelled: true, Model: 1.2345e6, Error: -4.72, Low: 1.1e6, High: 1.3e6}
	r.ID, r.Profile, r.Y, r.Unit, r.Tolerance = "smart-cx6-read-rate-768-outstanding-x", "edr-cx4-tpt", 1234.5, "M ops/s", 0.2
	for _, numberings := range []int{1, 3} {
		var out bytes.Buffer
		renderOrNarrow(&out, evidenceTable([]evidence.Result{r}, numberings, false), evidenceTable([]evidence.Result{r}, numberings, true))
		for _, line := range strings.Split(strings.TrimRight(out.String(), "\n"), "\n") {
			if n := utf8.RuneCountInString(line); n > 100 {
				t.Errorf("numberings %d: a line of %d columns:\n%s", numberings, n, out.String())
				break
			}
		}
		for _, v := range []string{r.ID, r.Profile, "1234 M ops/s", "-472% (20%)"} {
			if !strings.Contains(out.String(), v) {
				t.Errorf("numberings %d: %q missing:\n%s", numberings, v, out.String())
			}
		}
	}
}

// TestRunSkewLine: a run's table shows its finish-time skew in a line of
// its own, wrapped within 100 columns however many leaves it lists, and
// says nothing of skew for a record without per-node finish times.
func TestRunSkewLine(t *testing.T) {
	t.Setenv("COLUMNS", "")
	rec := &results.Record{Design: "MEMQ/RD", Pattern: "repartition", Nodes: 32, Threads: 2, Integrity: "ok", ResponseS: 0.0123, Profile: "edr-cx4"}
	for i := range 32 {
		rec.NodeFinishMS = append(rec.NodeFinishMS, 10+float64(i)/16)
		rec.NodeLeaf = append(rec.NodeLeaf, i/4)
	}
	rec.NodeFinishMS[7] = 12.3
	rec.FinishSkew = results.FinishSkew(rec.NodeFinishMS)
	rec.LeafFinishMS = results.LeafMeans(rec.NodeFinishMS, rec.NodeLeaf)
	var out bytes.Buffer
	printRun(&out, rec)
	for _, line := range strings.Split(strings.TrimRight(out.String(), "\n"), "\n") {
		if n := utf8.RuneCountInString(line); n > 100 {
			t.Errorf("a line of %d columns:\n%s", n, line)
		}
	}
	if !strings.Contains(out.String(), "skew: slowest node 7 at 12.3 ms, 1.115x the median; mean by leaf") {
		t.Errorf("no skew line:\n%s", out.String())
	}
	rec.NodeFinishMS, rec.FinishSkew, rec.NodeLeaf, rec.LeafFinishMS = nil, 0, nil, nil
	out.Reset()
	printRun(&out, rec)
	if strings.Contains(out.String(), "skew") {
		t.Errorf("a record without finish times shows skew:\n%s", out.String())
	}
	if strings.Contains(out.String(), "repeats") || strings.Contains(out.String(), "owed") {
		t.Errorf("a record without repeated or owed credit names them:\n%s", out.String())
	}
	rec.CreditWrites, rec.CreditRepeats, rec.CreditOwed = 900, 120, 3
	out.Reset()
	printRun(&out, rec)
	if !strings.Contains(strings.Join(strings.Fields(out.String()), " "), "900 credit writes (120 repeats, 3 owed)") {
		t.Errorf("repeated and owed credit not shown:\n%s", out.String())
	}
}

// TestOutputsFit100Columns: what the quick commands print (bench tables
// of every kind, a network line, a run on a tree with its skew line, the
// profiles, a sweep's summary, a figure's table) fits 100 columns.
func TestOutputsFit100Columns(t *testing.T) {
	t.Setenv("COLUMNS", "")
	spec := filepath.Join(t.TempDir(), "s.yaml")
	if err := os.WriteFile(spec, []byte("name: s\nbase: {bytes-per-node: 65536}\nvary: {design: [MESQ/SR, MEMQ/SR+xrc], nodes: [2, 4], seed: [1, 2]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"bench", "send_bw", "-a", "-n", "20"},
		{"bench", "write_lat", "-n", "20"},
		{"bench", "send_lat", "-D", "10ms"},
		{"bench", "alltoall_bw", "--nodes", "4", "-n", "20"},
		{"bench", "ebb", "--nodes", "8", "--topology", "fat-tree", "--radix", "4", "-n", "2"},
		{"run", "--nodes", "8", "--threads", "1", "--bytes-per-node", "256KiB", "--topology", "fat-tree", "--radix", "4", "--design", "MEMQ/SR+srq"},
		{"profiles"},
		{"sweep", spec, "-o", filepath.Join(t.TempDir(), "s.jsonl")},
	} {
		out, err := run(t, args...)
		if err != nil {
			t.Errorf("%v: %v", args, err)
			continue
		}
		for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
			if n := utf8.RuneCountInString(line); n > 100 {
				t.Errorf("%v: a line of %d columns: %s", args, n, line)
			}
		}
	}
}

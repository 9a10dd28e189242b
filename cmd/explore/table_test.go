package main

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

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
}

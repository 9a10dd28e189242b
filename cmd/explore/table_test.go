package main

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rdmashuffle/rdmashuffle/experiments/figures"
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

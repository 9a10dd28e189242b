package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/experiments/advise"
)

// TestAdviseJSONAndText asks a two-design question of a small cluster:
// the JSON answer names a winner that ranks first with a bottleneck, and
// the text and brief forms say which design to use.
func TestAdviseJSONAndText(t *testing.T) {
	args := []string{"advise", "--nodes", "2", "--threads", "1", "--bytes-per-node", "4MiB", "--screen-bytes", "1MiB", "--designs", "MESQ/SR,SEMQ/SR", "--band", "controls"}
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
		out, err := run(t, append([]string{"advise", "--nodes", "2", "--bytes-per-node", "1MiB"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("advise %v: error %v, want %q\n%s", tc.args, err, tc.want, out)
		}
	}
}

package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestQueryCommand(t *testing.T) {
	cmd := queryCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"--query", "Q4", "--sf", "0.02", "--design", "MESQ/SR", "--nodes", "3", "--payload"})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{"response time", "1-URGENT", "equals the single-node reference", "matched-orders"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	cmd = queryCmd()
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"--query", "Q5"})
	if err := cmd.Execute(); err == nil {
		t.Error("Q5: no error")
	}
}

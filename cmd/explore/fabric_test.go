package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func runFabric(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := fabricCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func TestFabricDescribes(t *testing.T) {
	out, err := runFabric(t, "--topology", "fat-tree", "--nodes", "128", "--radix", "8", "--routing", "minhop")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"fat-tree 3-level radix 8 4:4, 128 hosts", "128 hosts, 80 switches (by level from the leaves: [32 32 16])",
		"32 leaves: 4 hosts and 4 uplinks each; worst oversubscription 1.00:1", "shift permutations (all of 127 stages): at most 4 flows"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	out, err = runFabric(t, "--topology", "fat-tree", "--nodes", "128", "--radix", "8", "--routing", "ftree", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rep fabricReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if rep.ShiftWorst != 1 || rep.Stages != 127 || rep.MaxSwitches != 5 || rep.EBBEstimate < 0.5 || rep.EBBEstimate > 0.8 {
		t.Errorf("ftree on the full three-level radix-8 tree: %+v", rep)
	}
}

// A generated fabric written out loads back as a file with the same
// routes: the two descriptions agree.
func TestFabricWritesWhatItReads(t *testing.T) {
	dir := t.TempDir()
	topoFile, lfts := filepath.Join(dir, "tree.txt"), filepath.Join(dir, "tree.lfts")
	a, err := runFabric(t, "--topology", "fat-tree", "--nodes", "32", "--radix", "8", "--oversubscription", "2:1", "--json",
		"--write-ibnetdiscover", topoFile, "--write-lfts", lfts)
	if err != nil {
		t.Fatal(err)
	}
	b, err := runFabric(t, "--topology", "file:"+topoFile, "--routing", "lft:"+lfts, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var ra, rb fabricReport
	if err := json.Unmarshal([]byte(a), &ra); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(b), &rb); err != nil {
		t.Fatal(err)
	}
	ra.Name, rb.Name, ra.Network, rb.Network, ra.Routing, rb.Routing = "", "", "", "", "", ""
	if !reflect.DeepEqual(ra.Analysis, rb.Analysis) || len(ra.PerStage) == 0 || ra.Oversub != 2 || rb.Oversub != 2 || ra.Cables != rb.Cables {
		t.Errorf("generated %+v, read back %+v", ra, rb)
	}
	if _, err := os.Stat(lfts); err != nil {
		t.Fatal(err)
	}
}

func TestFabricRefuses(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "give fat-tree or file:PATH"},
		{[]string{"--topology", "fat-tree"}, "--nodes: give the nodes"},
		{[]string{"--topology", "fat-tree", "--nodes", "8", "--routing", "adaptive"}, "adaptive routing chooses per packet"},
		{[]string{"--topology", "file:/nonexistent/fabric.txt"}, "nonexistent"},
		{[]string{"--topology", "fat-tree", "--nodes", "1"}, "at least 2"},
	} {
		if _, err := runFabric(t, tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}

// A written fabric carries the profile's width and speed on every cable;
// one cable changed at both ends to 1x in the file is read back as the
// one slow cable, named, and so is one set with --cable.
func TestFabricNamesSlowCables(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tree.txt")
	if _, err := runFabric(t, "--topology", "fat-tree", "--nodes", "16", "--radix", "8", "--write-ibnetdiscover", file); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if strings.Contains(text, "?") || strings.Count(text, "4xEDR") != 64 {
		t.Fatalf("the written fabric does not give every cable edr-cx4's 4xEDR (%d)", strings.Count(text, "4xEDR"))
	}
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, `"S-0200000100000005"[1]`) || strings.Contains(l, `"S-0200000100000001"[5]`) {
			l = strings.Replace(l, "4xEDR", "1xEDR", 1)
		}
		lines = append(lines, l)
	}
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--topology", "file:" + file},
		{"--topology", "fat-tree", "--nodes", "16", "--radix", "8", "--cable", "spine-0/1:1xEDR"},
	} {
		out, err := runFabric(t, append(args, "--json")...)
		if err != nil {
			t.Fatal(err)
		}
		var rep fabricReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatal(err)
		}
		want := []string{"leaf-0/5 to spine-0/1 at 1xEDR (25.0 of 100.0 Gb/s)"}
		if !slices.Equal(rep.SlowCables, want) || len(rep.SwitchSpeeds) != 2 || rep.SwitchSpeeds[1] != (speedCount{Speed: "1xEDR", Gbps: 25, Cables: 1}) {
			t.Errorf("%v: slow cables %q, speeds %+v; want %q and one cable at 1xEDR", args, rep.SlowCables, rep.SwitchSpeeds, want)
		}
	}
}

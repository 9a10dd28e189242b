package ibnet

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric/topo"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (run go test -update if the change is intended):\n%s", path, got)
	}
}

// smallFabric is testdata/small.ibnetdiscover.
func smallFabric(t testing.TB) *topo.Topology {
	t.Helper()
	tp, err := ReadIBNetDiscover(bytes.NewReader(readTestdata(t, "small.ibnetdiscover")), "small")
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

// diffFabric describes the first difference between want and got: hosts,
// switches, cables, LIDs, levels, and GUIDs where want has one.
func diffFabric(want, got *topo.Topology) string {
	if len(want.Hosts) != len(got.Hosts) || len(want.Switches) != len(got.Switches) {
		return fmt.Sprintf("%d hosts and %d switches, want %d and %d", len(got.Hosts), len(got.Switches), len(want.Hosts), len(want.Switches))
	}
	for i, w := range want.Hosts {
		g := got.Hosts[i]
		if w.GUID == 0 {
			g.GUID = 0
		}
		if g != w {
			return fmt.Sprintf("host %d is %+v, want %+v", i, g, w)
		}
	}
	for i, w := range want.Switches {
		g := got.Switches[i]
		if w.Name != g.Name || w.LID != g.LID || w.Level != g.Level || (w.GUID != 0 && w.GUID != g.GUID) {
			return fmt.Sprintf("switch %d is %q lid %d level %d guid %#x, want %q lid %d level %d guid %#x", i, g.Name, g.LID, g.Level, g.GUID, w.Name, w.LID, w.Level, w.GUID)
		}
		if len(w.Ports) != len(g.Ports) {
			return fmt.Sprintf("switch %q has %d ports, want %d", w.Name, len(g.Ports), len(w.Ports))
		}
		for p := range w.Ports {
			if w.Ports[p] != g.Ports[p] {
				return fmt.Sprintf("port %d of switch %q is %+v, want %+v", p+1, w.Name, g.Ports[p], w.Ports[p])
			}
		}
	}
	return ""
}

// bfsTables routes every host over shortest paths, spreading hosts over
// the minimal ports (host h takes the h-th modulo their number).
func bfsTables(t *topo.Topology) *topo.Tables {
	out := make([][]uint8, len(t.Switches))
	for s := range out {
		out[s] = make([]uint8, len(t.Hosts))
	}
	for h, host := range t.Hosts {
		d := t.SwitchHops(h)
		for s := range t.Switches {
			if s == host.Switch {
				out[s][h] = uint8(host.Port)
				continue
			}
			var minimal []int
			for p, pe := range t.Switches[s].Ports {
				if pe.Kind == topo.ToSwitch && d[pe.Index] == d[s]-1 {
					minimal = append(minimal, p+1)
				}
			}
			out[s][h] = uint8(minimal[h%len(minimal)])
		}
	}
	return &topo.Tables{Out: out}
}

// edit replaces old, which must occur exactly once in s, by new.
func edit(t testing.TB, s, old, new string) string {
	t.Helper()
	if n := strings.Count(s, old); n != 1 {
		t.Fatalf("%q occurs %d times in the input", old, n)
	}
	return strings.Replace(s, old, new, 1)
}

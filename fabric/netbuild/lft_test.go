package netbuild_test

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric/netbuild"

	"github.com/rdmashuffle/rdmashuffle/fabric/netspec"
	"github.com/rdmashuffle/rdmashuffle/fabric/route"
	"github.com/rdmashuffle/rdmashuffle/fabric/topo"
	"github.com/rdmashuffle/rdmashuffle/fabric/topo/ibnet"
)

// dumpEntries reads a forwarding-table dump with regular expressions of
// its own (not the reader under test): switch GUID -> LID -> port.
func dumpEntries(t *testing.T, path string) map[uint64]map[topo.LID]int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	head := regexp.MustCompile(`^Unicast lids .* guid 0x([0-9a-f]+)`)
	entry := regexp.MustCompile(`^0x([0-9a-f]{4}) ([0-9]{3}) [:#]`)
	out := map[uint64]map[topo.LID]int{}
	var cur map[topo.LID]int
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := head.FindStringSubmatch(sc.Text()); m != nil {
			g, _ := strconv.ParseUint(m[1], 16, 64)
			cur = map[topo.LID]int{}
			out[g] = cur
		} else if m := entry.FindStringSubmatch(sc.Text()); m != nil && cur != nil {
			l, _ := strconv.ParseUint(m[1], 16, 16)
			p, _ := strconv.Atoi(m[2])
			cur[topo.LID(l)] = p
		} else if len(sc.Text()) > 0 && sc.Text()[0] == 'M' {
			cur = nil // a multicast block
		}
	}
	return out
}

// checkRoutes builds a cluster on the fabric file and the dump and checks
// that every simulated switch forwards every node's packets out of the
// port the dump gives for that node's host LID.
func checkRoutes(t *testing.T, fabricFile, dump string) {
	t.Helper()
	tp, err := ibnet.Load(fabricFile)
	if err != nil {
		t.Fatal(err)
	}
	nodes := len(tp.Hosts)
	b, err := netbuild.Build(netspec.Spec{Kind: netspec.File, Path: fabricFile, LFTPath: dump}, nodes, profile(t), 1)
	if err != nil {
		t.Fatal(err)
	}
	c := cluster(t, nodes, b, 1)
	want := dumpEntries(t, dump)
	checked := 0
	for s, sw := range b.Fabric.Topology.Switches {
		lfts, ok := want[sw.GUID]
		if !ok {
			t.Fatalf("the dump has no block for switch %q (GUID %#x)", sw.Name, sw.GUID)
		}
		for node, h := range b.Fabric.Hosts {
			lid := b.Fabric.Topology.Hosts[h].LID
			got, ok := c.ForwardingPort(s, node)
			if !ok || got != lfts[lid] {
				t.Fatalf("switch %q sends LID %d (node %d) out of port %d; the dump says %d", sw.Name, lid, node, got, lfts[lid])
			}
			checked++
		}
	}
	t.Logf("%s: %d (switch, LID) entries equal the dump's", filepath.Base(fabricFile), checked)
}

func TestRoutesEqualHandWrittenDump(t *testing.T) {
	checkRoutes(t, "../topo/ibnet/testdata/small.ibnetdiscover", "../topo/ibnet/testdata/small.ibroute")
}

// A generated 648-host two-level fabric of 36-port switches, written as
// ibnetdiscover output, with minhop's tables written as OpenSM's dump.
func TestRoutesEqualGeneratedDump(t *testing.T) {
	tp, err := topo.FatTree(topo.FatTreeSpec{Hosts: 648, Radix: 36})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	fabricFile, dump := filepath.Join(dir, "fabric.txt"), filepath.Join(dir, "opensm-lfts.dump")
	write := func(path string, w func(*os.File) error) {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := w(f); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	write(fabricFile, func(f *os.File) error { return ibnet.WriteIBNetDiscover(f, tp) })
	// The tables of the fabric as read back (with the GUIDs the file
	// gave its devices), as OpenSM would dump them.
	loaded, err := ibnet.Load(fabricFile)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := route.Compute(loaded, route.MinHop, 1)
	if err != nil {
		t.Fatal(err)
	}
	write(dump, func(f *os.File) error { return ibnet.WriteLFTs(f, loaded, tb) })
	checkRoutes(t, fabricFile, dump)
}

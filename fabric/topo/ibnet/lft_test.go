package ibnet

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric/topo"
)

// TestReadLFTsIBRoute reads ibroute / dump_fts output (with a multicast
// block, a switch named by its directed route, dump_lfts.sh's warning).
func TestReadLFTsIBRoute(t *testing.T) {
	tp := smallFabric(t)
	tb, err := ReadLFTs(bytes.NewReader(readTestdata(t, "small.ibroute")), tp)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]uint8{{1, 2, 35, 36}, {35, 36, 1, 2}}
	if !reflect.DeepEqual(tb.Out, want) {
		t.Errorf("tables %v, want %v", tb.Out, want)
	}
	var buf bytes.Buffer
	if err := WriteLFTs(&buf, tp, tb); err != nil {
		t.Fatal(err)
	}
	golden(t, "small.lfts.golden", buf.Bytes())
}

// TestLFTRoundTrip writes BFS tables and reads them back, on fabrics with
// GUIDs (matched by GUID) and without (matched by LID).
func TestLFTRoundTrip(t *testing.T) {
	ft, err := topo.FatTree(topo.FatTreeSpec{Hosts: 648, Radix: 36})
	if err != nil {
		t.Fatal(err)
	}
	var file bytes.Buffer
	if err := WriteIBNetDiscover(&file, ft); err != nil {
		t.Fatal(err)
	}
	withGUIDs, err := ReadIBNetDiscover(&file, "fat tree")
	if err != nil {
		t.Fatal(err)
	}
	ft3, err := topo.FatTree(topo.FatTreeSpec{Hosts: 100, Radix: 8, Levels: 3})
	if err != nil {
		t.Fatal(err)
	}
	for name, tp := range map[string]*topo.Topology{
		"small":            smallFabric(t),
		"fat tree":         ft,
		"fat tree, guids":  withGUIDs,
		"three-level, 100": ft3,
	} {
		t.Run(name, func(t *testing.T) {
			tb := bfsTables(tp)
			if err := tp.CheckTables(tb); err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := WriteLFTs(&buf, tp, tb); err != nil {
				t.Fatal(err)
			}
			back, err := ReadLFTs(&buf, tp)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back.Out, tb.Out) {
				t.Error("tables read back differ")
			}
		})
	}
}

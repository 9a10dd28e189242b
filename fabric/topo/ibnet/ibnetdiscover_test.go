package ibnet

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric/topo"
)

func TestReadIBNetDiscoverSmall(t *testing.T) {
	got := smallFabric(t)
	const a, b = "MF0;switch-a:SX6036/U1", "MF0;switch-b:SX6036/U1"
	fdr := topo.Link{Width: 4, Speed: topo.FDR}
	ports := func(cabled map[int]topo.Peer) []topo.Peer {
		p := make([]topo.Peer, 36)
		for k, v := range cabled {
			p[k-1] = v
		}
		return p
	}
	want := &topo.Topology{
		Name: "small",
		Hosts: []topo.Host{
			{Name: "node01 HCA-1", GUID: 0x0002c903000a1b2d, LID: 5, Switch: 0, Port: 1},
			{Name: "node02 HCA-1", GUID: 0x0002c903000a1c41, LID: 6, Switch: 0, Port: 2},
			{Name: "node03 HCA-1 port 1", GUID: 0x0002c903000a1d51, LID: 7, Switch: 1, Port: 1},
			{Name: "node03 HCA-1 port 2", GUID: 0x0002c903000a1d52, LID: 8, Switch: 1, Port: 2},
		},
		Switches: []topo.Switch{
			{Name: a, GUID: 0x0002c90200402c08, LID: 3, Level: 0, Ports: ports(map[int]topo.Peer{
				1: {Kind: topo.ToHost, Index: 0, Link: fdr}, 2: {Kind: topo.ToHost, Index: 1, Link: fdr},
				35: {Kind: topo.ToSwitch, Index: 1, Port: 35, Link: fdr}, 36: {Kind: topo.ToSwitch, Index: 1, Port: 36, Link: fdr},
			})},
			{Name: b, GUID: 0x0002c90200402d10, LID: 4, Level: 0, Ports: ports(map[int]topo.Peer{
				1: {Kind: topo.ToHost, Index: 2, Link: fdr}, 2: {Kind: topo.ToHost, Index: 3, Link: fdr},
				35: {Kind: topo.ToSwitch, Index: 0, Port: 35, Link: fdr}, 36: {Kind: topo.ToSwitch, Index: 0, Port: 36, Link: fdr},
			})},
		},
	}
	if d := diffFabric(want, got); d != "" {
		t.Fatal(d)
	}
	if got.Name != "small" {
		t.Errorf("Name = %q", got.Name)
	}
	var buf bytes.Buffer
	if err := WriteIBNetDiscover(&buf, got); err != nil {
		t.Fatal(err)
	}
	golden(t, "small.golden", buf.Bytes())
}

// TestIBNetDiscoverRoundTrip writes generated fabrics and reads them back.
func TestIBNetDiscoverRoundTrip(t *testing.T) {
	for _, spec := range []topo.FatTreeSpec{
		{Hosts: 648, Radix: 36},
		{Hosts: 100, Radix: 36},
		{Hosts: 100, Radix: 8, Levels: 3},
		{Hosts: 30, Radix: 8, Down: 6, Up: 2},
	} {
		t.Run(spec.String(), func(t *testing.T) {
			ft, err := topo.FatTree(spec)
			if err != nil {
				t.Fatal(err)
			}
			var first bytes.Buffer
			if err := WriteIBNetDiscover(&first, ft); err != nil {
				t.Fatal(err)
			}
			back, err := ReadIBNetDiscover(bytes.NewReader(first.Bytes()), "fat tree")
			if err != nil {
				t.Fatal(err)
			}
			if d := diffFabric(ft, back); d != "" {
				t.Fatal(d)
			}
			// The invented GUIDs are read back and written again as they were.
			var second bytes.Buffer
			if err := WriteIBNetDiscover(&second, back); err != nil {
				t.Fatal(err)
			}
			if first.String() != strings.Replace(second.String(), "# Topology file: fat tree\n", "# Topology file: "+ft.Name+"\n", 1) {
				t.Error("writing what was read back gives a different file")
			}
		})
	}
}

// TestIBNetDiscoverVariants reads what other ibnetdiscover options and
// versions print: -g grouping, -f full information, ports listed in any
// order, a header without sysimgguid.
func TestIBNetDiscoverVariants(t *testing.T) {
	base := string(readTestdata(t, "small.ibnetdiscover"))
	want := smallFabric(t)
	for name, src := range map[string]string{
		"grouping": edit(t, edit(t, edit(t, base,
			"0002c903000a1b2d\n\nvendid", "0002c903000a1b2d\n\nChassis 1 (guid 0x2c90200402c08)\n\n# Spine Nodes\nvendid"),
			"sysimgguid=0x2c90200402c08\n", "sysimgguid=0x2c90200402c08\t\t# Chassis 1 (SX6036)\n"),
			"[35]\t\"S-0002c90200402d10\"[35]", "[35][ext 35]\t\"S-0002c90200402d10\"[35][ext 35]") + "\nNon-Chassis Nodes\n",
		"full":        edit(t, base, "lid 5 lmc 0 \"MF0;switch-a:SX6036/U1\" lid 3 4xFDR", "lid 5 lmc 0 \"MF0;switch-a:SX6036/U1\" lid 3 4xFDR s=16 w=2 v=4"),
		"crlf":        strings.ReplaceAll(base, "\n", "\r\n"),
		"short guids": edit(t, base, "Ca\t2 \"H-0002c903000a1b2c\"", "Ca\t2 \"H-2c903000a1b2c\""),
	} {
		t.Run(name, func(t *testing.T) {
			got, err := ReadIBNetDiscover(strings.NewReader(src), "small")
			if err != nil {
				t.Fatal(err)
			}
			if d := diffFabric(want, got); d != "" {
				t.Fatal(d)
			}
		})
	}
	// Ports of a dual-port adapter listed 2 then 1 keep that order.
	swapped := edit(t, base,
		"[1](2c903000a1d51) \t\"S-0002c90200402d10\"[1]\t\t# lid 7 lmc 0 \"MF0;switch-b:SX6036/U1\" lid 4 4xFDR\n[2](2c903000a1d52) \t\"S-0002c90200402d10\"[2]\t\t# lid 8 lmc 0 \"MF0;switch-b:SX6036/U1\" lid 4 4xFDR",
		"[2](2c903000a1d52) \t\"S-0002c90200402d10\"[2]\t\t# lid 8 lmc 0 \"MF0;switch-b:SX6036/U1\" lid 4 4xFDR\n[1](2c903000a1d51) \t\"S-0002c90200402d10\"[1]\t\t# lid 7 lmc 0 \"MF0;switch-b:SX6036/U1\" lid 4 4xFDR")
	got, err := ReadIBNetDiscover(strings.NewReader(swapped), "swapped")
	if err != nil {
		t.Fatal(err)
	}
	if got.Hosts[2].Name != "node03 HCA-1 port 2" || got.Hosts[3].Name != "node03 HCA-1 port 1" {
		t.Errorf("hosts 2 and 3 are %q and %q", got.Hosts[2].Name, got.Hosts[3].Name)
	}
}

func TestWriteIBNetDiscoverRefuses(t *testing.T) {
	ft, err := topo.FatTree(topo.FatTreeSpec{Hosts: 4, Radix: 4})
	if err != nil {
		t.Fatal(err)
	}
	ft.Hosts[1].Name = "two\nlines"
	if err := WriteIBNetDiscover(&bytes.Buffer{}, ft); err == nil || !strings.Contains(err.Error(), "line break") {
		t.Errorf("a name with a line break: %v", err)
	}
	ft.Hosts[1].Name = "host-1"
	ft.Switches[0].GUID, ft.Switches[1].GUID = 7, 7
	if err := WriteIBNetDiscover(&bytes.Buffer{}, ft); err == nil {
		t.Error("two switches with one GUID were written")
	}
}

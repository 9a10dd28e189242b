package ibnet

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric/topo"
)

// TestBadInputs checks that each bad input gives its sentinel and an
// error naming the line and what is wrong.
func TestBadInputs(t *testing.T) {
	ibnd := string(readTestdata(t, "small.ibnetdiscover"))
	yml := string(readTestdata(t, "small.yaml"))
	lfts := string(readTestdata(t, "small.lfts.golden"))
	small := smallFabric(t)
	type reader func(string) error
	readIB := func(s string) error { _, err := ReadIBNetDiscover(strings.NewReader(s), "f.txt"); return err }
	readYAML := func(s string) error { _, err := ReadYAML(strings.NewReader(s), "f.yaml"); return err }
	readLFTs := func(s string) error { _, err := ReadLFTs(strings.NewReader(s), small); return err }
	cases := []struct {
		name  string
		read  reader
		input string
		want  error
		says  []string // substrings of the message
	}{
		{"truncated port line", readIB,
			edit(t, ibnd, "[2]\t\"H-0002c903000a1c40\"[1](2c903000a1c41) \t\t# \"node02 HCA-1\" lid 6 4xFDR", "[2]\t\"H-0002c903000a1c40\"[1](2c90"),
			ErrSyntax, []string{"f.txt: line 12:", "port GUID"}},
		{"port line without comment", readIB,
			edit(t, ibnd, "[2]\t\"H-0002c903000a1c40\"[1](2c903000a1c41) \t\t# \"node02 HCA-1\" lid 6 4xFDR", "[2]\t\"H-0002c903000a1c40\"[1](2c903000a1c41)"),
			ErrSyntax, []string{"line 12:", "truncated"}},
		{"truncated switch line", readIB,
			edit(t, ibnd, "\"MF0;switch-b:SX6036/U1\" enhanced port 0 lid 4 lmc 0", "\"MF0;switch-b:SX6036/U1\" enhanced po"),
			ErrSyntax, []string{"line 20:", "lid N"}},
		{"adapter port line without its LID", readIB,
			edit(t, ibnd, "# lid 6 lmc 0 \"MF0", "# "),
			ErrSyntax, []string{"line 38:", "LID"}},
		{"port out of range", readIB,
			edit(t, ibnd, "[36]\t\"S-0002c90200402c08\"[36]", "[40]\t\"S-0002c90200402c08\"[36]"),
			topo.ErrBadLink, []string{"line 24:", "port 40 of switch \"MF0;switch-b:SX6036/U1\"", "36 ports"}},
		{"peer port out of range", readIB,
			edit(t, ibnd, "[36]\t\"S-0002c90200402c08\"[36]", "[36]\t\"S-0002c90200402c08\"[37]"),
			topo.ErrBadLink, []string{"line 24:", "port 37", "36 ports"}},
		{"inconsistent cable ends", readIB,
			edit(t, ibnd, "[36]\t\"S-0002c90200402c08\"[36]", "[36]\t\"S-0002c90200402c08\"[35]"),
			topo.ErrBadLink, []string{"line 14:", "line 24", "port 35", "disagree"}},
		{"cable seen from one end", readIB,
			edit(t, ibnd, "[2]\t\"H-0002c903000a1c40\"[1](2c903000a1c41) \t\t# \"node02 HCA-1\" lid 6 4xFDR\n", ""),
			topo.ErrBadLink, []string{"line 37:", "does not list its port 2"}},
		{"adapter GUIDs disagree", readIB,
			edit(t, ibnd, "[1](2c903000a1c41) \t\"S-", "[1](2c903000a1c42) \t\"S-"),
			topo.ErrBadLink, []string{"line 38:", "2c903000a1c41"}},
		{"duplicate LID", readIB,
			edit(t, ibnd, "# lid 6 lmc 0", "# lid 5 lmc 0"),
			topo.ErrDuplicateID, []string{"line 38:", "LID 5", "line 31"}},
		{"switch LID taken by an adapter", readIB,
			edit(t, ibnd, "# lid 6 lmc 0", "# lid 4 lmc 0"),
			topo.ErrDuplicateID, []string{"line 38:", "line 20"}},
		{"node described twice", readIB,
			ibnd + "\nCa\t2 \"H-0002c903000a1d50\"\t\t# \"again\"\n",
			ErrDuplicate, []string{"line 48:", "first at line 44"}},
		{"router", readIB,
			ibnd + "\nrtguid=0x2c903000b0000\nRt\t2 \"R-0002c903000b0000\"\t\t# \"gw\"\n",
			ErrUnsupported, []string{"line 49:", "routers"}},
		{"cable to an undescribed node", readIB,
			edit(t, ibnd, "[2]\t\"H-0002c903000a1c40\"[1]", "[3]\t\"H-0002c903000a1c99\"[1]"),
			ErrUnknownDevice, []string{"line 12:", "H-0002c903000a1c99"}},
		{"cable ends at different speeds", readIB,
			edit(t, ibnd, "# lid 6 lmc 0 \"MF0;switch-a:SX6036/U1\" lid 3 4xFDR", "# lid 6 lmc 0 \"MF0;switch-a:SX6036/U1\" lid 3 1xFDR"),
			topo.ErrBadLink, []string{"line 38:", "1xFDR here", "line 12", "says 4xFDR"}},
		{"unknown link speed", readIB,
			edit(t, ibnd, "# \"node02 HCA-1\" lid 6 4xFDR", "# \"node02 HCA-1\" lid 6 4xZDR"),
			ErrSyntax, []string{"line 12:", `"4xZDR"`}},
		{"ibnetdiscover -l output", readIB,
			"Switch\t : 0x0002c90200402c08 ports 36 devid 0xc738 vendid 0x2c9 \"switch-a\"\n",
			ErrSyntax, []string{"line 1:", "-l"}},
		{"not a topology file", readIB, "hello world\n", ErrSyntax, []string{"line 1:", "ibnetdiscover > fabric.txt"}},
		{"no hosts", readIB, "# nothing\n", topo.ErrNoHosts, []string{"f.txt:"}},

		{"unknown YAML key", readYAML,
			edit(t, yml, "ports: 36, lid: 3,", "ports: 36, lid: 3, speed: EDR,"),
			ErrSyntax, []string{"f.yaml: line 4:", `unknown key "speed" in a switch`}},
		{"unknown top-level YAML key", readYAML, "switches: []\nrouters: []\n", ErrSyntax, []string{"line 2:", `"routers"`}},
		{"second YAML document", readYAML, yml + "---\nswitches: []\n", ErrSyntax, []string{"line 14:", "second YAML document"}},
		{"second empty YAML document", readYAML, yml + "---\n", ErrSyntax, []string{"second YAML document"}},
		{"YAML port cabled twice", readYAML,
			edit(t, yml, "0x0002c903000a1c41, switch: \"MF0;switch-a:SX6036/U1\", port: 2,", "0x0002c903000a1c41, switch: \"MF0;switch-a:SX6036/U1\", port: 1,"),
			topo.ErrBadLink, []string{"line 8:", "already cabled (line 7)"}},
		{"YAML port out of range", readYAML,
			edit(t, yml, "switch-b:SX6036/U1/36\",", "switch-b:SX6036/U1/37\","),
			topo.ErrBadLink, []string{"line 13:", "port 37", "36 ports"}},
		{"YAML unknown link speed", readYAML,
			edit(t, yml, "switch-b:SX6036/U1/36\", 4xFDR]", "switch-b:SX6036/U1/36\", 4xGDR]"),
			ErrSyntax, []string{"line 13:", `"4xGDR"`, "SDR, DDR"}},
		{"YAML link with four entries", readYAML,
			edit(t, yml, "switch-b:SX6036/U1/36\", 4xFDR]", "switch-b:SX6036/U1/36\", 4xFDR, x]"),
			ErrSyntax, []string{"line 13:", "4 entries"}},
		{"YAML host link width", readYAML,
			edit(t, yml, "SX6036/U1\", port: 2, link: 4xFDR}\n  - {name: node03", "SX6036/U1\", port: 2, link: 3xFDR}\n  - {name: node03"),
			ErrSyntax, []string{"line 8:", "node02", "1x, 2x, 4x"}},
		{"YAML unknown switch", readYAML,
			edit(t, yml, "links:", "  - {name: x, lid: 9, switch: nowhere, port: 1}\nlinks:"),
			ErrUnknownDevice, []string{"line 11:", `"nowhere"`}},
		{"YAML duplicate LID", readYAML,
			edit(t, yml, "lid: 8,", "lid: 3,"),
			topo.ErrDuplicateID, []string{"line 10:", "line 4"}},
		{"YAML wrong type", readYAML,
			edit(t, yml, "ports: 36, lid: 3,", "ports: many, lid: 3,"),
			ErrSyntax, []string{"line 4:"}},
		{"empty YAML", readYAML, "# nothing\n", ErrSyntax, []string{"no YAML document"}},

		{"LFT dump missing a switch", readLFTs,
			lfts[:strings.Index(lfts, "Unicast lids [0-8] of switch Lid 4")],
			ErrIncomplete, []string{`switch "MF0;switch-b:SX6036/U1"`, "every switch"}},
		{"LFT dump missing a LID", readLFTs,
			edit(t, lfts, "0x0006 036 # Channel Adapter portguid 0x0002c903000a1c41: 'node02 HCA-1'\n", ""),
			ErrIncomplete, []string{"line 8:", "LID 6", `"node02 HCA-1"`}},
		{"LFT entry to uncabled port", readLFTs,
			edit(t, lfts, "0x0006 002", "0x0006 007"),
			topo.ErrBadRoute, []string{"line 4:", "port 7", "not cabled"}},
		{"LFT entry out of range", readLFTs,
			edit(t, lfts, "0x0006 002", "0x0006 040"),
			topo.ErrBadRoute, []string{"line 4:", "port 40", "1..36"}},
		{"LFT entry without route", readLFTs,
			edit(t, lfts, "0x0006 002", "0x0006 255"),
			topo.ErrBadRoute, []string{"line 4:", "no route"}},
		{"LFT entry with a loop", readLFTs,
			edit(t, lfts, "0x0007 035", "0x0007 036"),
			nil, nil}, // a second uplink to the same switch: still delivers
		{"LFT unknown switch", readLFTs,
			edit(t, lfts, "Lid 4 guid 0x0002c90200402d10", "Lid 4 guid 0x0002c90200409999"),
			ErrUnknownDevice, []string{"line 8:", "0x0002c90200409999"}},
		{"LFT entry before a header", readLFTs, "0x0005 001\n", ErrSyntax, []string{"line 1:"}},
		{"LFT truncated entry", readLFTs, edit(t, lfts, "0x0006 002 # Channel Adapter portguid 0x0002c903000a1c41: 'node02 HCA-1'", "0x00"), ErrSyntax, []string{"line 4:"}},
		{"LFT conflicting duplicate", readLFTs, lfts + "Unicast lids [0-8] of switch Lid 3 guid 0x0002c90200402c08 ('a'):\n0x0005 002\n", ErrDuplicate, []string{"line 16:", "line 3"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.read(c.input)
			if c.want == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("error %v, want %v", err, c.want)
			}
			for _, s := range c.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
		})
	}
}

// TestLFTsCheckTables shows that tables that parse but do not deliver
// are refused by CheckTables.
func TestLFTsCheckTables(t *testing.T) {
	small := smallFabric(t)
	lfts := string(readTestdata(t, "small.lfts.golden"))
	// switch-a sends node03's packets up to switch-b, which sends them back.
	bad := edit(t, lfts, "0x0007 001 # Channel", "0x0007 035 # Channel")
	_, err := ReadLFTs(bytes.NewBufferString(bad), small)
	if !errors.Is(err, topo.ErrBadRoute) || !strings.Contains(err.Error(), "loop") {
		t.Errorf("got %v, want a loop", err)
	}
}

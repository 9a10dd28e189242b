package netspec_test

import (
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric/netspec"
	"github.com/rdmashuffle/rdmashuffle/fabric/route"
	"github.com/rdmashuffle/rdmashuffle/fabric/topo"
)

func TestSpecTextRoundTrip(t *testing.T) {
	for _, s := range []netspec.Spec{
		{},
		{Kind: netspec.FatTree, Engine: route.MinHop},
		{Kind: netspec.FatTree, Levels: 3, Radix: 36, Oversub: 2, Hosts: 700, Engine: route.FTree, Placement: topo.Placement{Kind: topo.Random, Seed: 9}},
		{Kind: netspec.FatTree, Adaptive: true, AdaptiveRC: true, Placement: topo.Placement{Kind: topo.RoundRobin}},
		{Kind: netspec.File, Path: "my fabric.txt", LFTPath: "dir/lfts dump", Placement: topo.Placement{Kind: topo.HostList, Hosts: []string{"node01 HCA-1", "b"}}},
		{Kind: netspec.File, Path: "f.yaml", Engine: route.UpDn},
		{Kind: netspec.FatTree, Engine: route.FTree, VLs: 4},
		{Kind: netspec.File, Path: "f.txt", ProfileSpeeds: true, HostLink: topo.Link{Width: 2, Speed: topo.HDR}, SwitchLink: topo.Link{Width: 4, Speed: topo.HDR}},
		{Kind: netspec.File, Path: "f.txt", Cables: []netspec.CableLink{{Switch: "MF0;switch-a:SX6036/U1", Port: 35, Link: topo.Link{Width: 1, Speed: topo.FDR}}, {Switch: "leaf 0", Port: 2, Link: topo.Link{Width: 2, Speed: topo.EDR}}}},
	} {
		b, err := s.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var got netspec.Spec
		if err := got.UnmarshalText(b); err != nil {
			t.Fatalf("%q: %v", b, err)
		}
		if got.String() != s.String() {
			t.Errorf("%q read back as %q", b, got.String())
		}
	}
	for _, bad := range []string{"single", "fat-tree radix=x", "fat-tree colour=red", `file:"open`, "file:x.txt radix=3", "torus", "fat-tree vls=16", "fat-tree vls=0", "fat-tree speeds=fast", "fat-tree host-link=3xEDR", "fat-tree switch-link=4xGDR", "fat-tree host-link=", "fat-tree cable=leaf-0/5", "fat-tree cable=leaf-0:1xEDR", "fat-tree cable=leaf-0/0:1xEDR", "fat-tree cable=/5:1xEDR", "fat-tree cable=leaf-0/5:5xEDR"} {
		if _, err := netspec.Parse(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// FuzzParseSpec: Parse never panics, and what it accepts writes and
// reads back the same.
func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{"", "fat-tree routing=minhop placement=contiguous", `file:"a b.txt" routing=lft:x adaptive+rc placement=list:a,b`, "fat-tree levels=3 radix=36 oversub=2:1 hosts=700 routing=ftree placement=random:9", "file:f.txt routing=minhop placement=contiguous speeds=profile host-link=2xHDR switch-link=1xEDR", `fat-tree routing=ftree placement=contiguous cable=leaf-0/5:1xEDR cable="a b/1:2xHDR"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		s, err := netspec.Parse(text)
		if err != nil {
			return
		}
		again, err := netspec.Parse(s.String())
		if err != nil {
			t.Fatalf("%q -> %q: %v", text, s.String(), err)
		}
		if again.String() != s.String() {
			t.Fatalf("%q -> %q -> %q", text, s.String(), again.String())
		}
	})
}

// TestBrief: Brief shortens a long host list for people and leaves every
// other spec as String gives it.
func TestBrief(t *testing.T) {
	long, err := netspec.Parse("fat-tree radix=4 routing=ftree placement=list:host-0,host-1,host-2,host-3,host-4,host-5,host-6 vls=2")
	if err != nil {
		t.Fatal(err)
	}
	short, err := netspec.Parse("fat-tree radix=4 placement=list:host-0,host-3")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := long.Brief(), "fat-tree radix=4 routing=ftree placement=list:host-0,host-1,host-2,...,host-6 (7 hosts) vls=2"; got != want {
		t.Errorf("Brief %q, want %q", got, want)
	}
	if short.Brief() != short.String() {
		t.Errorf("a short list: Brief %q, String %q", short.Brief(), short.String())
	}
	if back, err := netspec.Parse(long.String()); err != nil || back.String() != long.String() {
		t.Errorf("String no longer reads back: %v", err)
	}
}

package ibnet

import (
	"bytes"
	"testing"
)

func TestReadYAMLSmall(t *testing.T) {
	got, err := ReadYAML(bytes.NewReader(readTestdata(t, "small.yaml")), "small.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if d := diffFabric(smallFabric(t), got); d != "" {
		t.Fatal(d)
	}
	if got.Name != "small" {
		t.Errorf("Name = %q, want the file's name: small", got.Name)
	}
}

func TestReadYAMLAssigns(t *testing.T) {
	got, err := ReadYAML(bytes.NewReader(readTestdata(t, "leafspine.yaml")), "leafspine.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "leafspine.yaml" {
		t.Errorf("Name = %q", got.Name)
	}
	for i, want := range []struct{ lid, level int }{{1, 0}, {2, 0}, {3, 1}} {
		if s := got.Switches[i]; int(s.LID) != want.lid || s.Level != want.level {
			t.Errorf("switch %q: lid %d level %d, want %d and %d", s.Name, s.LID, s.Level, want.lid, want.level)
		}
	}
	if got.Hosts[0].LID != 4 || got.Hosts[2].LID != 6 {
		t.Errorf("host LIDs %d, %d, %d: want 4, 5, 6", got.Hosts[0].LID, got.Hosts[1].LID, got.Hosts[2].LID)
	}
}

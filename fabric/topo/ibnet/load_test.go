package ibnet

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	small := smallFabric(t)
	for _, c := range []struct{ name, src string }{
		{"fabric.txt", "small.ibnetdiscover"},
		{"fabric.yaml", "small.yaml"},
		{"fabric.yml", "small.yaml"},
		{"fabric", "small.yaml"},               // by content
		{"fabric.topo", "small.ibnetdiscover"}, // by content
	} {
		path := filepath.Join(dir, c.name)
		if err := os.WriteFile(path, readTestdata(t, c.src), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := Load(path)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if d := diffFabric(small, got); d != "" {
			t.Errorf("%s: %s", c.name, d)
		}
	}

	bad := filepath.Join(dir, "bad.txt")
	if err := os.WriteFile(bad, []byte("Switch 36 \"S-0002c90200402c08\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(bad)
	var e *Error
	if !errors.As(err, &e) || e.File != bad || e.Line != 1 || !strings.HasPrefix(err.Error(), bad+": line 1: ") {
		t.Errorf("Load(bad.txt) = %v, want an *Error naming the file and line 1", err)
	}
	if _, err := Load(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Load(missing) = %v", err)
	}

	lfts := filepath.Join(dir, "lfts.dump")
	if err := os.WriteFile(lfts, []byte("Unicast lids [0-8] of switch Lid 3 guid 0x0002c90200402c08 ('a'):\n0x0005 007 # x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadLFTs(lfts, small); err == nil || !strings.HasPrefix(err.Error(), lfts+": line 2: ") {
		t.Errorf("LoadLFTs = %v, want an error naming the file and line 2", err)
	}
	if _, err := LoadLFTs(filepath.Join("testdata", "small.ibroute"), small); err != nil {
		t.Error(err)
	}
}

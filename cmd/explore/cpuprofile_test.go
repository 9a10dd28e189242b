package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCPUProfile: --cpuprofile writes a profile go tool pprof reads (a
// gzipped protocol buffer) once the command returns, and an unwritable
// path is refused before the command runs.
func TestCPUProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.prof")
	for _, tc := range []struct {
		path string
		code int
		want string
	}{
		{path, 0, ""},
		{filepath.Join(t.TempDir(), "no", "such", "dir", "cpu.prof"), exitError, "--cpuprofile: open"},
	} {
		root := newRoot()
		root.SetArgs([]string{"run", "--design", "MESQ/SR", "--nodes", "2", "--bytes-per-node", "64KiB", "--cpuprofile", tc.path})
		root.SetOut(io.Discard)
		var stderr bytes.Buffer
		if code := execute(root, &stderr); code != tc.code || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("--cpuprofile %s: exit %d, stderr %q; want %d and %q", tc.path, code, stderr.String(), tc.code, tc.want)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Errorf("profile: %d bytes, err %v; want a gzipped profile", len(b), err)
	}
}

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/buildinfo"
)

// TestReproduceCache: reproduce run again on the same commit takes every
// run from the cache and writes the same records; another commit runs
// them again; a build with uncommitted changes or none named neither
// takes nor keeps any; --no-cache and --clear-cache do as they say.
func TestReproduceCache(t *testing.T) {
	defer func(b func() buildinfo.Info) { cacheBuild = b }(cacheBuild)
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	var first []byte
	for i, tc := range []struct {
		name, commit string
		flags        []string
		want, not    []string
	}{
		{"first", "c0ffee", nil, []string{"cache: 0 runs taken from", "run and kept"}, []string{"cache off"}},
		{"again", "c0ffee", nil, []string{"cache: 20 runs taken from", ", 0 run and kept"}, []string{"cache off"}},
		{"another commit", "decade", nil, []string{"cache: 0 runs taken from", "20 run and kept"}, nil},
		{"uncommitted changes", "c0ffee+dirty", nil, []string{"cache off: the build does not say which code it is: it was built from c0ffee with uncommitted changes"}, []string{"runs taken"}},
		{"no commit", "unknown", nil, []string{"cache off: the build does not say which code it is: it names no commit"}, []string{"runs taken"}},
		{"no cache", "c0ffee", []string{"--no-cache"}, nil, []string{"cache"}},
		{"cleared", "c0ffee", []string{"--clear-cache"}, []string{"cache: removed the points of 2 build(s)", "cache: 0 runs taken from", "20 run and kept"}, nil},
	} {
		cacheBuild = func() buildinfo.Info { return buildinfo.Info{Commit: tc.commit, Go: "go1.26"} }
		out := filepath.Join(dir, "figs")
		args := append([]string{"reproduce", "--figures", "fig21", "--steady=false", "--no-steady-check", "--out", out, "--validation", filepath.Join(dir, "v.md"), "--cache", cache}, tc.flags...)
		got, err := run(t, args...)
		if err != nil {
			t.Fatalf("%s: %v\n%s", tc.name, err, got)
		}
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: the output lacks %q:\n%s", tc.name, w, got)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(got, w) {
				t.Errorf("%s: the output says %q:\n%s", tc.name, w, got)
			}
		}
		b, err := os.ReadFile(filepath.Join(out, "fig21.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = b
		} else if !bytes.Equal(b, first) {
			t.Errorf("%s: fig21.jsonl differs from the first run's", tc.name)
		}
	}
}

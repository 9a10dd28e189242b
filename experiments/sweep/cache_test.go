package sweep

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/rdmashuffle/rdmashuffle/buildinfo"
	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/fabric/netspec"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// TestMemoRunsSharedPointsOnce: two sweeps that share points, run one
// after the other or at once on shared slots, run each shared point once
// (a failed one is run by each) and write the files they write alone.
func TestMemoRunsSharedPointsOnce(t *testing.T) {
	a := mustParse(t, "name: a\nvary: {nodes: [2, 4], seed: [1, 13]}\n")
	b := mustParse(t, "name: b\nvary: {nodes: [4, 8], seed: [1, 13]}\n")
	alone := map[string][]byte{}
	for _, sw := range []*Sweep{a, b} {
		var calls atomic.Int32
		out := filepath.Join(t.TempDir(), sw.Name+".jsonl")
		if _, err := RunSweep(context.Background(), sw, SweepOptions{Out: out, Run: fakeRun(&calls)}); !errors.Is(err, ErrPointsFailed) {
			t.Fatal(err)
		}
		alone[sw.Name] = readFile(t, out)
	}
	for _, tc := range []struct {
		name     string
		together bool
	}{{"one after the other", false}, {"at once", true}} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			memo := NewMemo()
			dir := t.TempDir()
			var slots *Slots
			if tc.together {
				slots = NewSlots(2)
			}
			var wg sync.WaitGroup
			for _, sw := range []*Sweep{a, b} {
				one := func() {
					_, err := RunSweep(context.Background(), sw, SweepOptions{Out: filepath.Join(dir, sw.Name+".jsonl"), Jobs: 2, Run: fakeRun(&calls), Memo: memo, Slots: slots})
					if !errors.Is(err, ErrPointsFailed) {
						t.Error(err)
					}
				}
				if tc.together {
					wg.Go(one)
				} else {
					one()
				}
			}
			wg.Wait()
			// 8 points, of which nodes=4 seed=1 is shared; seed 13 fails and is run by both.
			if n := calls.Load(); n != 7 || memo.Reused() != 1 {
				t.Errorf("%d runs, %d reused; want 7 and 1", n, memo.Reused())
			}
			for _, sw := range []*Sweep{a, b} {
				if got := readFile(t, filepath.Join(dir, sw.Name+".jsonl")); !bytes.Equal(got, alone[sw.Name]) {
					t.Errorf("%s differs from the sweep run alone:\n%s\nwant\n%s", sw.Name, got, alone[sw.Name])
				}
			}
		})
	}
}

// TestMemoTags: points of different tags are not shared.
func TestMemoTags(t *testing.T) {
	var calls atomic.Int32
	memo := NewMemo()
	s := mustParse(t, "name: a\nvary: {nodes: [2, 4]}\n")
	for _, m := range []*Memo{memo.Tagged("x"), memo.Tagged("y"), memo.Tagged("x")} {
		if _, err := RunSweep(context.Background(), s, SweepOptions{Run: fakeRun(&calls), Memo: m}); err != nil {
			t.Fatal(err)
		}
	}
	if n := calls.Load(); n != 4 {
		t.Errorf("%d runs, want 4 (two tags of two points)", n)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCode: a build that names no commit, or has uncommitted changes,
// gets no cache key.
func TestCode(t *testing.T) {
	for _, tc := range []struct {
		commit string
		ok     bool
	}{{"0123abcd", true}, {"0123abcd+dirty", false}, {"unknown", false}, {"", false}} {
		code, err := Code(buildinfo.Info{Commit: tc.commit, Go: "go1.26"})
		if ok := err == nil; ok != tc.ok || !tc.ok && !errors.Is(err, ErrNoCode) || tc.ok && code == "" {
			t.Errorf("commit %q: code %q, error %v", tc.commit, code, err)
		}
	}
}

// TestCacheAcrossInvocations: a sweep run again with the same cache runs
// nothing and writes the same file; another code, another runner, or a
// profile file whose parameters changed runs again.
func TestCacheAcrossInvocations(t *testing.T) {
	dir := t.TempDir()
	prof := filepath.Join(dir, "p.yaml")
	writeProfile := func(mtu int) {
		p, err := sim.LoadProfile("edr-cx4")
		if err != nil {
			t.Fatal(err)
		}
		p.Link.MTU = mtu
		b, err := yaml.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(prof, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeProfile(4096)
	s := mustParse(t, "name: c\nbase: {profile: "+prof+"}\nvary: {nodes: [2, 4], seed: [1, 13]}\n")
	var want []byte
	for i, tc := range []struct {
		name, code, what string
		mtu              int
		runs             int32
	}{
		{"first", "c1", "run", 4096, 4},
		{"again", "c1", "run", 4096, 2}, // the failed points only
		{"another commit", "c2", "run", 4096, 4},
		{"first commit again", "c1", "run", 4096, 2},
		{"another runner", "c1", "unchecked", 4096, 4},
		{"a changed profile", "c1", "run", 2048, 4},
		{"the profile as it was", "c1", "run", 4096, 2},
	} {
		writeProfile(tc.mtu)
		c, err := OpenCache(filepath.Join(dir, "cache"), tc.code)
		if err != nil {
			t.Fatal(err)
		}
		var calls atomic.Int32
		out := filepath.Join(dir, "c.jsonl")
		if _, err := RunSweep(context.Background(), s, SweepOptions{Out: out, Run: c.Wrap(tc.what, fakeRun(&calls))}); !errors.Is(err, ErrPointsFailed) {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if n := calls.Load(); n != tc.runs || c.Hits() != int64(4-tc.runs) {
			t.Errorf("%s: %d runs, %d from the cache; want %d and %d", tc.name, n, c.Hits(), tc.runs, 4-tc.runs)
		}
		if got := readFile(t, out); i == 0 {
			want = got
		} else if tc.mtu == 4096 && !bytes.Equal(got, want) {
			t.Errorf("%s: the file differs from the first run's:\n%s\nwant\n%s", tc.name, got, want)
		}
		os.Remove(out)
	}
	n, err := ClearCache(filepath.Join(dir, "cache"))
	if err != nil || n != 2 {
		t.Errorf("ClearCache: %d codes removed, %v; want 2", n, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "cache")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the cleared cache's directory is still there: %v", err)
	}
}

// TestCacheKeepsRecordsExactly: a simulated run's record read back from
// the cache is the record as run, byte for byte in a sweep's file.
func TestCacheKeepsRecordsExactly(t *testing.T) {
	c, err := OpenCache(t.TempDir(), "c1")
	if err != nil {
		t.Fatal(err)
	}
	cfg := experiments.DefaultConfig()
	cfg.Design, cfg.Nodes, cfg.Threads, cfg.BytesPerNode, cfg.Adaptive, cfg.MaxBuffers = "MESQ/SR", 3, 1, 256<<10, true, 8
	run := c.Wrap("run", experiments.Run)
	var lines [2][]byte
	for i := range lines {
		rec, err := run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		rec.WallS = 0
		if lines[i], err = (&results.Result{Point: 0, Key: "k", Record: rec}).Line(); err != nil {
			t.Fatal(err)
		}
	}
	if c.Hits() != 1 || c.Kept() != 1 {
		t.Fatalf("%d hits, %d kept; want 1 and 1", c.Hits(), c.Kept())
	}
	if !bytes.Equal(lines[0], lines[1]) {
		t.Errorf("the cached record differs:\n%s\n%s", lines[0], lines[1])
	}
}

// TestKeysHoldEveryField: every field of a configuration, nested ones
// included, changes the keys of the memo and the cache (a field the JSON
// encoding left out would let two different points share a record).
func TestKeysHoldEveryField(t *testing.T) {
	base := experiments.RunConfig{}
	baseMemo, _ := memoKey("", base)
	basePoint, err := pointKey(base)
	if err != nil {
		t.Fatal(err)
	}
	var visit func(path string, v reflect.Value)
	visit = func(path string, v reflect.Value) {
		for i := range v.NumField() {
			f, ft := v.Field(i), v.Type().Field(i)
			if !ft.IsExported() {
				t.Errorf("%s.%s: an unexported field, which the keys do not see", path, ft.Name)
				continue
			}
			name := path + "." + ft.Name
			cfg := base
			switch {
			case name == "RunConfig.Network":
				// A network is its text form (netspec.Spec.String, what a
				// record carries): a field its kind does not use is not in it.
				cfg.Network = netspec.Spec{Kind: netspec.FatTree, Radix: 8}
			case f.Kind() == reflect.Struct:
				visit(name, f)
				continue
			default:
				setNonZero(t, name, reflect.ValueOf(&cfg).Elem().FieldByIndex(fieldIndex(path, i)))
			}
			if m, _ := memoKey("", cfg); m == baseMemo {
				t.Errorf("%s does not change the memo's key", name)
			}
			if p, _ := pointKey(cfg); p == basePoint {
				t.Errorf("%s does not change the cache's key", name)
			}
		}
	}
	visit("RunConfig", reflect.ValueOf(base))
}

// fieldIndex is the index path in a RunConfig of field i of the struct
// reached by path.
func fieldIndex(path string, i int) []int {
	var idx []int
	typ := reflect.TypeOf(experiments.RunConfig{})
	parts := strings.Split(path, ".")[1:]
	for _, p := range parts {
		f, _ := typ.FieldByName(p)
		idx = append(idx, f.Index...)
		typ = f.Type
	}
	return append(idx, i)
}

func setNonZero(t *testing.T, name string, f reflect.Value) {
	switch f.Kind() {
	case reflect.String:
		f.SetString("x")
	case reflect.Bool:
		f.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		f.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		f.SetUint(1)
	case reflect.Float32, reflect.Float64:
		f.SetFloat(1)
	case reflect.Slice:
		s := reflect.MakeSlice(f.Type(), 1, 1)
		setNonZero(t, name+"[0]", s.Index(0))
		f.Set(s)
	case reflect.Pointer:
		p := reflect.New(f.Type().Elem())
		if p.Elem().Kind() != reflect.Struct {
			setNonZero(t, name, p.Elem())
		}
		f.Set(p)
	default:
		t.Fatalf("%s: a %s field; teach setNonZero", name, f.Kind())
	}
}

package experiments

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// TestProfileFieldsAtTheirLimits walks every numeric field of a profile:
// at each end of its range the profile is valid and a shuffle on it ends
// (delivered, or with an error that is no panic), so nothing derived from
// it overflows the model's clock; one step past either end the profile is
// refused naming the field.
func TestProfileFieldsAtTheirLimits(t *testing.T) {
	base := profileMap(t)
	dir := t.TempDir()
	for _, f := range sim.DefaultProfile().Limits() {
		t.Run(f.Field, func(t *testing.T) {
			integer := isInteger(t, f.Field)
			ends := []struct {
				at, past float64
			}{{f.Max, stepPast(f.Max, +1, integer)}}
			switch {
			case f.Min > 0:
				ends = append(ends, struct{ at, past float64 }{f.Min, stepPast(f.Min, -1, integer)})
			case f.AboveZero:
				least := math.SmallestNonzeroFloat64
				if integer {
					least = 1
				}
				ends = append(ends, struct{ at, past float64 }{least, 0})
			default:
				ends = append(ends, struct{ at, past float64 }{0, stepPast(0, -1, integer)})
			}
			for _, e := range ends {
				path := writeProfile(t, dir, base, f.Field, e.at, integer)
				if _, err := sim.LoadProfile(path); err != nil {
					t.Fatalf("%s = %v (its limit) refused: %v", f.Field, e.at, err)
				}
				cfg := goldenBase()
				cfg.Design, cfg.Nodes, cfg.Threads, cfg.BytesPerNode, cfg.Profile = "MEMQ/SR", 2, 1, 64<<10, path
				switch rec, err := Run(cfg); {
				case err != nil && strings.Contains(err.Error(), "panic"):
					t.Errorf("%s = %v: the run panicked: %v", f.Field, e.at, err)
				case err != nil && (refusedAtLimit[f.Field] == "" || !strings.Contains(err.Error(), refusedAtLimit[f.Field])):
					t.Errorf("%s = %v: %v", f.Field, e.at, err)
				case err != nil: // refused as expected
				case rec.Integrity != "ok" || !(rec.ResponseS > 0) || rec.SetupMS < 0:
					t.Errorf("%s = %v: integrity %s, response %v s, setup %v ms", f.Field, e.at, rec.Integrity, rec.ResponseS, rec.SetupMS)
				}
				path = writeProfile(t, dir, base, f.Field, e.past, integer)
				if _, err := sim.LoadProfile(path); err == nil || !strings.Contains(err.Error(), f.Field) {
					t.Errorf("%s = %v (one step past its limit %v): %v, want it refused naming the field", f.Field, e.past, e.at, err)
				}
			}
		})
	}
}

// refusedAtLimit are the fields at one end of whose range the test's
// shuffle (MEMQ/SR, 2 nodes, 64 KiB each) does not run, and why: the
// device limits refuse its queue pairs, completion queues, inline sends
// or regions; a node of 1 core cannot run a sending and a receiving
// thread; at 1 Mbaud the in-flight packets outlast the RC retransmission
// timeout until its retries run out; at 1 ms per tuple one message's
// hashing outlasts the receivers' progress timeout. Every other field at
// either end delivers exactly.
var refusedAtLimit = map[string]string{
	"link.lane_gbaud":    "transport retry exceeded",
	"nic.max_qp":         "nic.max_qp",
	"nic.max_qp_wr":      "max_qp_wr",
	"nic.max_cqe":        "nic.max_cqe",
	"nic.max_inline_rc":  "max inline",
	"nic.max_mr_bytes":   "nic.max_mr_bytes",
	"host.cores":         "two cores per thread",
	"host.hash_tuple_ns": "no progress",
}

// companions are the edits a field's value needs beside it to satisfy
// the rules that relate fields (sim.Profile.Limits): sockets that divide
// the cores, translation caches both on or both off.
func companions(field string, v float64) map[string]any {
	switch {
	case field == "host.sockets":
		return map[string]any{"host.cores": 4096} // 64 sockets and every count up to it divide it
	case field == "host.cores":
		return map[string]any{"host.sockets": 1}
	case field == "nic.mpt_cache_entries" && v > 0:
		return map[string]any{"nic.mtt_cache_entries": 8}
	case field == "nic.mtt_cache_entries" && v > 0:
		return map[string]any{"nic.mpt_cache_entries": 1}
	}
	return nil
}

// stepPast is the next value beyond limit in direction dir (+1, -1): the
// next integer for integer fields, the next float otherwise.
func stepPast(limit float64, dir int, integer bool) float64 {
	if integer {
		return limit + float64(dir)
	}
	return math.Nextafter(limit, float64(dir)*math.Inf(1))
}

// profileMap is the default profile as a YAML map.
func profileMap(t *testing.T) map[string]any {
	t.Helper()
	out, err := yaml.Marshal(sim.DefaultProfile())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// isInteger reports whether field (section.key, by YAML name) is an
// integer in sim.Profile.
func isInteger(t *testing.T, field string) bool {
	t.Helper()
	byTag := func(typ reflect.Type, name string) (reflect.Type, bool) {
		for i := range typ.NumField() {
			if tag, _, _ := strings.Cut(typ.Field(i).Tag.Get("yaml"), ","); tag == name {
				return typ.Field(i).Type, true
			}
		}
		return nil, false
	}
	sec, key, _ := strings.Cut(field, ".")
	st, ok := byTag(reflect.TypeOf(sim.Profile{}), sec)
	if !ok {
		t.Fatalf("no section %q in sim.Profile", sec)
	}
	ft, ok := byTag(st, key)
	if !ok {
		t.Fatalf("no field %q in section %q", key, sec)
	}
	switch ft.Kind() {
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint32, reflect.Uint64, reflect.Uint8:
		return true
	case reflect.Float64:
		return false
	}
	t.Fatalf("field %s is a %s", field, ft.Kind())
	return false
}

// writeProfile writes the profile m with field set to v and returns its path.
func writeProfile(t *testing.T, dir string, m map[string]any, field string, v float64, integer bool) string {
	t.Helper()
	set := func(field string, v any) func() {
		sec, key, _ := strings.Cut(field, ".")
		s := m[sec].(map[string]any)
		old, had := s[key]
		s[key] = v
		return func() {
			if had {
				s[key] = old
			} else {
				delete(s, key)
			}
		}
	}
	if integer {
		defer set(field, int64(v))()
	} else {
		defer set(field, v)()
	}
	for f, x := range companions(field, v) {
		defer set(f, x)()
	}
	out, err := yaml.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, strings.ReplaceAll(field, ".", "_")+strconv.FormatFloat(v, 'g', -1, 64)+".yaml")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

package results

import (
	"math"
	"strings"
	"testing"
)

// TestSummarize1: values computed by hand, t quantiles from a printed
// table (t(0.975; 1) = 12.706, t(0.975; 2) = 4.303, t(0.975; 7) = 2.365).
func TestSummarize1(t *testing.T) {
	for _, tc := range []struct {
		name          string
		xs            []float64
		mean, std, ci float64
		hasCI         bool
		text          string
	}{
		{"one value", []float64{5}, 5, 0, 0, false, "5.000 (n=1, no interval)"},
		{"two values", []float64{1, 3}, 2, math.Sqrt2, 12.706 * math.Sqrt2 / math.Sqrt2, true, "2.000 ± 12.706 (n=2)"},
		{"three values", []float64{1, 2, 3}, 2, 1, 4.303 / math.Sqrt(3), true, "2.000 ± 2.484 (n=3)"},
		{"eight values", []float64{2, 4, 4, 4, 5, 5, 7, 9}, 5, math.Sqrt(32.0 / 7), 2.365 * math.Sqrt(32.0/7) / math.Sqrt(8), true, "5.000 ± 1.787 (n=8)"},
		{"equal values", []float64{3, 3, 3}, 3, 0, 0, true, "3.000 (n=3, all equal)"},
		{"an interval below the precision", []float64{3, 3.00001, 3.00002}, 3.00001, 1e-5, 4.303e-5 / math.Sqrt(3), true, "3.000 ± <0.001 (n=3)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Summarize1(tc.xs)
			if s.N != len(tc.xs) || s.HasCI != tc.hasCI || math.Abs(s.Mean-tc.mean) > 1e-12 || math.Abs(s.Std-tc.std) > 1e-12 || math.Abs(s.CI95-tc.ci) > 1e-3 {
				t.Errorf("got %+v, want mean %v std %v ci %v", s, tc.mean, tc.std, tc.ci)
			}
			if s.String() != tc.text {
				t.Errorf("String() = %q, want %q", s.String(), tc.text)
			}
		})
	}
	if s := Summarize1(nil); s.N != 0 || !math.IsNaN(s.Mean) || s.HasCI || s.String() != "no values" {
		t.Errorf("empty: %+v %q", s, s.String())
	}
}

func TestSummarize(t *testing.T) {
	rec := func(p int, key string, v float64) Result {
		return Result{Point: p, Key: key, Record: &Record{ThroughputGiBs: v}}
	}
	rs := []Result{
		rec(0, "design=A nodes=2 seed=1", 1), rec(1, "design=A nodes=2 seed=2", 3),
		rec(2, "design=B nodes=2 seed=1", 4), {Point: 3, Key: "design=B nodes=2 seed=2", Error: "failed"},
	}
	got := Summarize(rs, KeyWithout("seed"), func(r Result) float64 { return r.ThroughputGiBs })
	if len(got) != 2 || got[0].Group != "design=A nodes=2" || got[0].N != 2 || got[0].Mean != 2 ||
		got[1].Group != "design=B nodes=2" || got[1].N != 1 || got[1].HasCI {
		t.Fatalf("%+v", got)
	}
	for _, tc := range []struct {
		key  string
		drop []string
		want string
	}{
		{"design=A nodes=2 seed=1", []string{"seed"}, "design=A nodes=2"},
		{"design=A nodes=2 seed=1", []string{"seed", "nodes"}, "design=A"},
		{"seed=1", []string{"seed"}, "all"},
		{"base", nil, "base"},
	} {
		if got := KeyDrop(tc.key, tc.drop...); got != tc.want {
			t.Errorf("KeyDrop(%q, %s) = %q, want %q", tc.key, strings.Join(tc.drop, ","), got, tc.want)
		}
	}
	if v, ok := KeyValue("design=MESQ/SR nodes=2", "nodes"); !ok || v != "2" {
		t.Errorf("KeyValue = %q %v", v, ok)
	}
	if _, ok := KeyValue("design=MESQ/SR", "nodes"); ok {
		t.Errorf("KeyValue found an absent parameter")
	}
}

func TestKeyFieldsQuoted(t *testing.T) {
	key := `design=MESQ/SR network="fat-tree radix=8 routing=ftree placement=list:a b,c" seed=1`
	f := KeyFields(key)
	if len(f) != 3 || f[1] != `network="fat-tree radix=8 routing=ftree placement=list:a b,c"` {
		t.Fatalf("KeyFields(%q) = %q", key, f)
	}
	if v, ok := KeyValue(key, "network"); !ok || v != "fat-tree radix=8 routing=ftree placement=list:a b,c" {
		t.Errorf("KeyValue network = %q, %v", v, ok)
	}
	if got := KeyDrop(key, "network"); got != "design=MESQ/SR seed=1" {
		t.Errorf("KeyDrop = %q", got)
	}
}

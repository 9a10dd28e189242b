package results

import (
	"math"
	"slices"
	"testing"
)

func TestFinishSkew(t *testing.T) {
	for _, tc := range []struct {
		name  string
		times []float64
		want  float64
	}{
		{"none", nil, 0},
		{"one node", []float64{4}, 1},
		{"all together", []float64{3, 3, 3, 3}, 1},
		{"odd count: the middle value", []float64{12, 10, 11}, 12.0 / 11},
		{"even count: the mean of the middle two", []float64{10, 14, 12, 20}, 20.0 / 13},
		{"one straggler of eight", []float64{10, 10, 10, 10, 10, 10, 10, 15}, 1.5},
		{"median of zero", []float64{0, 0, 5}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.times)
			if got := FinishSkew(tc.times); math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("FinishSkew(%v) = %v, want %v", tc.times, got, tc.want)
			}
			if !slices.Equal(in, tc.times) {
				t.Errorf("FinishSkew reordered its input: %v", tc.times)
			}
		})
	}
}

func TestLeafMeans(t *testing.T) {
	for _, tc := range []struct {
		name  string
		times []float64
		leaf  []int
		want  []float64
	}{
		{"no leaves", []float64{1, 2}, nil, nil},
		{"lengths differ", []float64{1, 2}, []int{0}, nil},
		{"negative leaf", []float64{1}, []int{-1}, nil},
		{"one leaf", []float64{1, 2, 3}, []int{0, 0, 0}, []float64{2}},
		{"contiguous", []float64{1, 3, 10, 14}, []int{0, 0, 1, 1}, []float64{2, 12}},
		{"round robin", []float64{1, 10, 3, 14, 5, 18}, []int{0, 1, 0, 1, 0, 1}, []float64{3, 14}},
		{"a leaf without nodes", []float64{2, 4}, []int{0, 2}, []float64{2, 0, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := LeafMeans(tc.times, tc.leaf); !slices.Equal(got, tc.want) {
				t.Errorf("LeafMeans(%v, %v) = %v, want %v", tc.times, tc.leaf, got, tc.want)
			}
		})
	}
}

func TestSkewLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		rec  Record
		want string
	}{
		{"old record", Record{ResponseS: 1}, ""},
		{"single switch", Record{NodeFinishMS: []float64{10, 12.34, 11}, FinishSkew: 12.34 / 11},
			"slowest node 1 at 12.3 ms, 1.122x the median"},
		{"two leaves", Record{NodeFinishMS: []float64{10, 12, 11, 13}, FinishSkew: 13 / 11.5, NodeLeaf: []int{0, 0, 1, 1}, LeafFinishMS: []float64{11, 12}},
			"slowest node 3 at 13 ms, 1.130x the median; mean by leaf 11 12 ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := SkewLine(&tc.rec); got != tc.want {
				t.Errorf("SkewLine = %q, want %q", got, tc.want)
			}
		})
	}
}

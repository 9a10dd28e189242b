package results

import (
	"fmt"
	"slices"
	"strings"
)

// Skew between the nodes of a shuffle: a shuffle is as slow as its
// slowest node, and a node whose traffic crosses more (or more loaded)
// links, or that has more work, finishes later. A run record holds each
// node's finish time (NodeFinishMS), their summary (FinishSkew) and, on a
// network of switches, the nodes' leaf switches and each leaf's mean
// finish time (NodeLeaf, LeafFinishMS).

// FinishSkew is the slowest of times over their median (the mean of the
// two middle values for an even count): 1 when every node finishes
// together, 1.2 when the slowest takes a fifth longer than the typical
// node. It is 0 for no times or a median of 0 (nothing to compare).
func FinishSkew(times []float64) float64 {
	if len(times) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(times))
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	if med <= 0 {
		return 0
	}
	return s[n-1] / med
}

// LeafMeans groups node times by leaf (leaf[i] is node i's leaf, numbered
// from 0) and returns each leaf's mean; a leaf with no node gets 0. It
// returns nil when leaf and times differ in length or leaf is empty.
func LeafMeans(times []float64, leaf []int) []float64 {
	if len(leaf) == 0 || len(leaf) != len(times) {
		return nil
	}
	sum := make([]float64, slices.Max(leaf)+1)
	count := make([]int, len(sum))
	for i, l := range leaf {
		if l < 0 {
			return nil
		}
		sum[l] += times[i]
		count[l]++
	}
	for l := range sum {
		if count[l] > 0 {
			sum[l] /= float64(count[l])
		}
	}
	return sum
}

// SlowestNode is the node with the largest time (the first of equals), or
// -1 for no times.
func SlowestNode(times []float64) int {
	if len(times) == 0 {
		return -1
	}
	slow := 0
	for i, v := range times {
		if v > times[slow] {
			slow = i
		}
	}
	return slow
}

// SkewLine describes r's finish-time skew in one line ("slowest node 7
// at 12.3 ms, 1.18x the median; leaves 10.1 11.0 12.2 ms"), or "" when
// the record has no per-node finish times (records made before them, and
// records of other workloads).
func SkewLine(r *Record) string {
	if len(r.NodeFinishMS) == 0 {
		return ""
	}
	slow := SlowestNode(r.NodeFinishMS)
	line := fmt.Sprintf("slowest node %d at %.3g ms, %.3fx the median", slow, r.NodeFinishMS[slow], r.FinishSkew)
	if len(r.LeafFinishMS) > 1 {
		parts := make([]string, len(r.LeafFinishMS))
		for l, v := range r.LeafFinishMS {
			parts[l] = fmt.Sprintf("%.3g", v)
		}
		line += fmt.Sprintf("; mean by leaf %s ms", strings.Join(parts, " "))
	}
	return line
}

package experiments

import (
	"errors"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/tpch"
)

// TestDoorbellsQueryRefused: a query point that names a doorbell choice
// is refused (its runner keeps the profile's choice).
func TestDoorbellsQueryRefused(t *testing.T) {
	q := goldenBase()
	q.Design, q.BytesPerNode, q.Doorbells = "MESQ/SR", 0, DoorbellsShared
	q.Workload = results.Workload{Kind: results.TPCH, Query: string(tpch.Q4), SFPerNode: 0.005}
	if _, err := Run(q); !errors.Is(err, ErrUnsupported) {
		t.Errorf("a TPC-H point with shared doorbells: %v, want ErrUnsupported", err)
	}
}

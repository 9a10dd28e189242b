package experiments

import (
	"slices"
	"strings"
	"testing"
)

func TestCatalogue(t *testing.T) {
	seen := map[string]bool{}
	for _, d := range Catalogue() {
		if seen[d.Name] {
			t.Errorf("%s listed twice", d.Name)
		}
		seen[d.Name] = true
		if (d.Open == nil) != d.Ceiling {
			t.Errorf("%s: an endpoint design needs Open, and only the ceiling goes without: %+v", d.Name, d)
		}
		got, err := LookupDesign(d.Name)
		if err != nil || got.Name != d.Name {
			t.Errorf("LookupDesign(%q) = %v, %v", d.Name, got.Name, err)
		}
	}
	if _, err := LookupDesign("XX/YY"); err == nil || !strings.Contains(err.Error(), "choose one of SESQ/SR, MESQ/SR") {
		t.Errorf("unknown design: %v", err)
	}
	for _, tc := range []struct {
		keep func(CatalogueEntry) bool
		want string
	}{
		{IsPaperDesign, "SESQ/SR MESQ/SR SEMQ/SR MEMQ/SR SEMQ/RD MEMQ/RD SEMQ/WR MEMQ/WR"},
		{IsBaseline, "qperf IPoIB MPI"},
	} {
		if got := strings.Join(DesignNames(tc.keep), " "); got != tc.want {
			t.Errorf("DesignNames: %s, want %s", got, tc.want)
		}
	}
	if slices.Contains(DesignNames(OnSimulator), "TCP") || slices.Contains(DesignNames(MovesTuples), "qperf") {
		t.Error("the simulator lists the real TCP design, or qperf moves tuples")
	}
}

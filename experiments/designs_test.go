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

// TestDesignNamesAnyCase: a design is found whatever the case it is given
// in (as query names are), and runs and queries carry the catalogue's
// spelling.
func TestDesignNamesAnyCase(t *testing.T) {
	for in, want := range map[string]string{"memq/sr": "MEMQ/SR", "Semq/Wr+CW": "SEMQ/WR+cw", "hyper/UNSCHED": "HyPer/unsched", "LOCAL": LocalData, "nosuch": "nosuch"} {
		if got := CanonicalDesign(in); got != want {
			t.Errorf("CanonicalDesign(%q) = %q, want %q", in, got, want)
		}
	}
	if d, err := LookupDesign("mesq/sr"); err != nil || d.Name != "MESQ/SR" {
		t.Errorf("LookupDesign(mesq/sr): %v, %v", d.Name, err)
	}
	cfg := DefaultConfig()
	cfg.Design, cfg.Nodes, cfg.BytesPerNode = "memq/rd", 2, 64<<10
	rec, err := Run(cfg)
	if err != nil || rec.Design != "MEMQ/RD" {
		t.Errorf("a run of memq/rd: record says %q, %v", rec.Design, err)
	}
	q := QueryConfig{Design: "Mesq/SR", Nodes: 2, SF: 0.01}
	if err := q.Normalize(28); err != nil || q.Design != "MESQ/SR" {
		t.Errorf("a query of Mesq/SR: %q, %v", q.Design, err)
	}
}

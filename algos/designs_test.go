package algos_test

import (
	"github.com/rdmashuffle/rdmashuffle/internal/setting"
	"slices"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/fabric"
)

func TestDesignCatalogue(t *testing.T) {
	want := []string{"SESQ/SR", "MESQ/SR", "SEMQ/SR", "MEMQ/SR", "SEMQ/RD", "MEMQ/RD", "SEMQ/WR", "MEMQ/WR"}
	ds := algos.Designs()
	if len(ds) != len(want) {
		t.Fatalf("%d designs, want %d", len(ds), len(want))
	}
	seen := map[string]bool{}
	for i, d := range append(append(append(ds, algos.Baselines()...), algos.Peers()...), algos.Variants()...) {
		if i < len(want) && d.Name != want[i] {
			t.Errorf("design %d is %s, want %s (Liu19's order)", i, d.Name, want[i])
		}
		if seen[d.Name] || d.Name == "" || d.About == "" || d.Open == nil || d.MsgBytes < algos.HeaderBytes+algos.TupleBytes {
			t.Errorf("%s: duplicate, or missing name, about, Open or message size: %+v", d.Name, d)
		}
		seen[d.Name] = true
		// A variant is named after the design it improves, which exists.
		if d.Family == algos.FamilyVariant {
			base, _, ok := strings.Cut(d.Name, "+")
			if !ok || !slices.ContainsFunc(ds, func(x algos.Design) bool { return x.Name == base && x.Verb == d.Verb && x.Shared == d.Shared }) {
				t.Errorf("variant %s does not name one of Liu19's designs with its verb and sharing", d.Name)
			}
		}
		// The name of a Liu19 design spells its descriptor.
		if d.Family == algos.FamilyDesign {
			if d.Shared != strings.HasPrefix(d.Name, "SE") || (d.Transport == fabric.UD) != strings.Contains(d.Name, "SQ/") ||
				d.Notify != strings.HasSuffix(d.Name, "/WR") || d.Recovery != (d.Transport == fabric.UD) {
				t.Errorf("%s: descriptor %+v does not match its name", d.Name, d)
			}
		}
	}
}

func TestDesignCheck(t *testing.T) {
	byName := map[string]algos.Design{}
	for _, d := range append(append(algos.Designs(), algos.Baselines()...), algos.Peers()...) {
		byName[d.Name] = d
	}
	for _, tc := range []struct {
		design  string
		o       algos.Options
		setting string // the option refused; "" for accepted
		errHas  string // and what the error says of it
	}{
		{"MEMQ/WR", algos.Options{Notify: algos.NotifyBuffers}, "", ""},
		{"MEMQ/SR", algos.Options{Notify: algos.NotifyBuffers}, "Notify", "applies to the RDMA Write designs (SEMQ/WR, MEMQ/WR, SEMQ/WR+cw, MEMQ/WR+cw, MEMQ/WR+dc), not MEMQ/SR"},
		{"MESQ/SR", algos.Options{Pattern: "multicast:2"}, "Pattern", "cannot belong to two transmission groups"},
		{"MEMQ/SR", algos.Options{Pattern: "multicast:2"}, "", ""},
		{"MPI", algos.Options{Pattern: "multicast:3"}, "", ""},
		{"SESQ/SR", algos.Options{Recover: true}, "", ""},
		{"SEMQ/RD", algos.Options{Recover: true}, "UDRecovery", "applies to the UD designs (SESQ/SR, MESQ/SR); SEMQ/RD runs over RC"},
		{"MEMQ/RD", algos.Options{Adaptive: true}, "", ""},
		{"IPoIB", algos.Options{Adaptive: true}, "Adaptive", "not with IPoIB"},
		{"HyPer", algos.Options{Adaptive: true}, "Adaptive", "not with HyPer"},
	} {
		err := byName[tc.design].Check(tc.o)
		se, ok := setting.As(err)
		switch {
		case tc.setting == "" && err != nil:
			t.Errorf("%s %+v: %v, want accepted", tc.design, tc.o, err)
		case tc.setting != "" && (!ok || se.Setting != tc.setting || !strings.Contains(se.Problem, tc.errHas)):
			t.Errorf("%s %+v: %v, want %s refused with %q", tc.design, tc.o, err, tc.setting, tc.errHas)
		}
	}
}

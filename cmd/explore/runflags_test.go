package main

import (
	"slices"
	"testing"

	"github.com/spf13/pflag"

	"github.com/rdmashuffle/rdmashuffle/experiments"
	"github.com/rdmashuffle/rdmashuffle/experiments/sweep"
)

// TestRunFlags: every sweep parameter is a flag with help text, defaulting to
// the configuration it is bound to, and a value given as a flag sets the
// configuration as the same value given to SetParam does.
func TestRunFlags(t *testing.T) {
	cfg := experiments.DefaultConfig()
	fs := pflag.NewFlagSet("run", pflag.ContinueOnError)
	addRunFlags(fs, &cfg)
	var names []string
	fs.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	if want := slices.Sorted(slices.Values(sweep.Params())); !slices.Equal(names, want) {
		t.Fatalf("flags %v, want the parameters %v", names, want)
	}
	def := experiments.DefaultConfig()
	for _, tc := range []struct {
		key, flag string
		value     any // the same value as a spec gives it
	}{
		{"design", "SEMQ/SR", "SEMQ/SR"}, {"notify", "buffers", "buffers"}, {"nodes", "3", 3}, {"threads", "4", 4},
		{"pattern", "multicast:2", "multicast:2"}, {"profile", "fdr-cx3", "fdr-cx3"}, {"msg-bytes", "8192", 8192},
		{"buffers", "5", 5}, {"credit-every", "4", 4}, {"bytes-per-node", "1MiB", 1 << 20}, {"bytes-per-pair", "4096", 4096},
		{"cycles-per-tuple", "95", 95}, {"node-cycles", "21,95", "21,95"}, {"adaptive", "true", true}, {"max-buffers", "64", 64},
		{"ud-recovery", "true", true}, {"pinned-cap-mib", "512", 512}, {"seed", "7", 7}, {"payload", "true", true},
		{"timeout-ms", "2.5", 2.5},
	} {
		t.Run(tc.key, func(t *testing.T) {
			f := fs.Lookup(tc.key)
			if f == nil {
				t.Fatalf("no flag --%s", tc.key)
			}
			if f.Usage == "" {
				t.Errorf("--%s has no help text", tc.key)
			}
			if got := sweep.ParamString(def, tc.key); f.DefValue != got {
				t.Errorf("--%s defaults to %q, the configuration has %q", tc.key, f.DefValue, got)
			}
			if err := fs.Set(tc.key, tc.flag); err != nil {
				t.Fatal(err)
			}
			want := experiments.DefaultConfig()
			if err := sweep.SetParam(&want, tc.key, tc.value); err != nil {
				t.Fatal(err)
			}
			if got, w := sweep.ParamString(cfg, tc.key), sweep.ParamString(want, tc.key); got != w || w == sweep.ParamString(def, tc.key) {
				t.Errorf("--%s %s gave %q, SetParam %q (default %q)", tc.key, tc.flag, got, w, sweep.ParamString(def, tc.key))
			}
		})
	}
	if got := sweep.ParamString(cfg, "design"); got != "SEMQ/SR" {
		t.Errorf("the flags did not set the configuration they are bound to: design %q", got)
	}
}

package host_test

import (
	"testing"
	"time"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/fabrictest"
	"github.com/rdmashuffle/rdmashuffle/fabric/host"
)

// TestExecConformance runs the execution contract's cases on real
// threads (no device: the verbs cases need one; package loopback runs
// both on this environment).
func TestExecConformance(t *testing.T) {
	fabrictest.RunExec(t, func(tb fabrictest.TB, nodes int) fabric.Fabric {
		f, err := host.OpenLocal(host.Config{Cores: 4, Seed: 1, TimeLimit: time.Minute}, nodes)
		if err != nil {
			tb.Fatalf("host.OpenLocal: %v", err)
		}
		tb.Cleanup(func() {
			if err := f.Close(); err != nil {
				tb.Fatalf("Close: %v", err)
			}
		})
		return f
	})
}

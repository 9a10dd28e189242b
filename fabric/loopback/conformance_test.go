package loopback_test

import (
	"testing"
	"time"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/fabrictest"
	"github.com/rdmashuffle/rdmashuffle/fabric/host"
	"github.com/rdmashuffle/rdmashuffle/fabric/loopback"
)

func factory(t fabrictest.TB, nodes int) fabric.Fabric {
	f, err := loopback.Open(host.Config{Seed: 1, TimeLimit: time.Minute}, nodes)
	if err != nil {
		t.Fatalf("loopback.Open: %v", err)
	}
	t.Cleanup(func() {
		if err := f.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	})
	return f
}

func TestConformance(t *testing.T) { fabrictest.Run(t, factory) }

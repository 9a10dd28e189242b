//go:build ibverbs

package ibv

import (
	"errors"
	"os"
	"strconv"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/fabrictest"
)

// The suite runs on the first device (or $RDMASHUFFLE_TEST_DEVICE, port
// $RDMASHUFFLE_TEST_PORT, GID index $RDMASHUFFLE_TEST_GID) with both nodes
// in this process, connected through the adapter's loopback.
func testDeviceEnv() (string, int, int) {
	port, gid := 1, -1
	if v, err := strconv.Atoi(os.Getenv("RDMASHUFFLE_TEST_PORT")); err == nil {
		port = v
	}
	if v, err := strconv.Atoi(os.Getenv("RDMASHUFFLE_TEST_GID")); err == nil {
		gid = v
	}
	return os.Getenv("RDMASHUFFLE_TEST_DEVICE"), port, gid
}

func TestConformance(t *testing.T) {
	if _, err := Devices(); errors.Is(err, fabric.ErrNoDevice) {
		if os.Getenv("RDMASHUFFLE_REQUIRE_DEVICE") != "" {
			t.Fatalf("RDMASHUFFLE_REQUIRE_DEVICE is set and there is no device: %v", err)
		}
		t.Skip("no RDMA device (ibv_get_device_list found none): skipping the libibverbs conformance suite")
	} else if err != nil {
		t.Fatal(err)
	}
	dev, port, gid := testDeviceEnv()
	fabrictest.Run(t, func(tb fabrictest.TB, nodes int) fabric.Fabric {
		f, err := OpenLocal(dev, port, gid, nodes)
		if err != nil {
			tb.Fatalf("OpenLocal(%q, %d, %d, %d): %v", dev, port, gid, nodes, err)
		}
		tb.Cleanup(func() {
			if err := f.Close(); err != nil {
				tb.Fatalf("Close: %v", err)
			}
		})
		return f
	})
}

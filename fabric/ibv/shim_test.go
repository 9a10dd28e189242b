//go:build ibverbs

package ibv

import (
	"errors"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

func TestHeaderConstants(t *testing.T) {
	for name, v := range headerConstants() {
		if v[0] != v[1] {
			t.Errorf("%s = %d in <infiniband/verbs.h>, %d in mapping.go", name, v[0], v[1])
		}
	}
}

func TestSendChain(t *testing.T) {
	for _, p := range checkSendChain() {
		t.Error(p)
	}
}

func TestDCPost(t *testing.T) {
	for _, p := range checkDCPost() {
		t.Error(p)
	}
}

func TestWCConversion(t *testing.T) {
	for _, p := range checkWCConversion() {
		t.Error(p)
	}
}

// Without a device every entry point reports ErrNoDevice (with the reason)
// rather than crashing; with one, Devices lists it.
func TestEntryPointsWithoutDevice(t *testing.T) {
	devs, err := Devices()
	if err == nil {
		if len(devs) == 0 {
			t.Fatal("Devices: no error and no device")
		}
		t.Logf("devices: %+v", devs)
		return
	}
	if !errors.Is(err, fabric.ErrNoDevice) {
		t.Fatalf("Devices: %v", err)
	}
	if _, err := OpenLocal("", 1, 0, 2); !errors.Is(err, fabric.ErrNoDevice) {
		t.Fatalf("OpenLocal: %v", err)
	}
	if !Available() {
		t.Fatal("Available() is false in the ibverbs build")
	}
}

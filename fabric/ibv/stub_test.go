//go:build !ibverbs

package ibv

import (
	"errors"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

func TestStubReportsHowToBuild(t *testing.T) {
	if Available() {
		t.Fatal("Available() in the default build")
	}
	_, e1 := Devices()
	_, e2 := OpenLocal("", 1, 0, 2)
	_, e3 := Open("")
	_, e4 := OpenConfig(Config{})
	_, e5 := OpenLocalConfig(Config{}, 2)
	for i, err := range []error{e1, e2, e3, e4, e5} {
		if !errors.Is(err, fabric.ErrNoDevice) || !strings.Contains(err.Error(), "-tags ibverbs") {
			t.Errorf("entry point %d: %v", i, err)
		}
	}
}

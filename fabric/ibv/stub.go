//go:build !ibverbs

package ibv

import (
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// errNotBuilt is what every entry point of this build returns.
var errNotBuilt = fmt.Errorf("%w: this binary was built without the libibverbs backend; rebuild with -tags ibverbs (needs libibverbs-dev)", fabric.ErrNoDevice)

// Available reports whether this binary was built with the libibverbs
// backend: false in this build.
func Available() bool { return false }

// Devices would list the RDMA devices; in this build it reports how to get
// a build that can (an error wrapping fabric.ErrNoDevice).
func Devices() ([]DeviceInfo, error) { return nil, errNotBuilt }

// OpenLocal would open nodes nodes on one local device; in this build it
// reports how to get a build that can (an error wrapping fabric.ErrNoDevice).
func OpenLocal(device string, port, gidIndex, nodes int) (fabric.Fabric, error) {
	return nil, errNotBuilt
}

// OpenLocalConfig is OpenLocal with a Config; unavailable in this build.
func OpenLocalConfig(cfg Config, nodes int) (fabric.Fabric, error) { return nil, errNotBuilt }

// Open would open this process's node of a distributed job; in this build
// it reports how to get a build that can (an error wrapping
// fabric.ErrNoDevice).
func Open(device string) (fabric.Fabric, error) { return nil, errNotBuilt }

// OpenConfig is Open with a Config; unavailable in this build.
func OpenConfig(cfg Config) (fabric.Fabric, error) { return nil, errNotBuilt }

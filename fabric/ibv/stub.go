//go:build !ibverbs

package ibv

import (
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// Available reports whether this binary was built with the libibverbs
// backend.
func Available() bool { return false }

// Open would open the local RDMA device; in this build it reports how to get
// a build that can.
func Open(device string) (fabric.Fabric, error) {
	return nil, fmt.Errorf("%w: this binary was built without the libibverbs backend; rebuild with -tags ibverbs (needs libibverbs-dev)", fabric.ErrNoDevice)
}

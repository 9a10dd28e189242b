package sim

import (
	"errors"
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// dcQueues checks the arguments of a DC queue pair.
func (p *pd) dcQueues(init fabric.QPInit) (scq, rcq *cq, caps fabric.QPCaps, s *srq, d *xrcd, err error) {
	return nil, nil, caps, nil, nil, fmt.Errorf("%w: %v queue pairs are not simulated yet", errors.ErrUnsupported, init.Type)
}

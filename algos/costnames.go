package algos

import (
	"fmt"
	"strings"
)

// costName is one of the baselines' estimated software costs, by the name
// the sensitivity analysis and the evidence fits use ("mpi.call_cycles"):
// where it lives in MPICosts or IPoIBCosts.
type costName struct {
	name  string
	mpi   func(*MPICosts) *int64
	ipoib func(*IPoIBCosts) *int64
	eager bool // MPICosts.EagerBytes, an int
}

var costNames = []costName{
	{name: "mpi.call_cycles", mpi: func(c *MPICosts) *int64 { return &c.CallCycles }},
	{name: "mpi.match_cycles", mpi: func(c *MPICosts) *int64 { return &c.MatchCycles }},
	{name: "mpi.eager_bytes", eager: true},
	{name: "mpi.relock_cycles", mpi: func(c *MPICosts) *int64 { return &c.Wait.YieldCycles }},
	{name: "ipoib.syscall_cycles", ipoib: func(c *IPoIBCosts) *int64 { return &c.SyscallCycles }},
	{name: "ipoib.tx_segment_cycles", ipoib: func(c *IPoIBCosts) *int64 { return &c.TxSegmentCycles }},
	{name: "ipoib.rx_segment_cycles", ipoib: func(c *IPoIBCosts) *int64 { return &c.RxSegmentCycles }},
}

// CostNames are the names of the baselines' software costs that Cost and
// SetCost know, in a fixed order.
func CostNames() []string {
	names := make([]string, len(costNames))
	for i, c := range costNames {
		names[i] = c.name
	}
	return names
}

func findCost(name string) (costName, error) {
	for _, c := range costNames {
		if c.name == name {
			return c, nil
		}
	}
	return costName{}, fmt.Errorf("no software cost %q: choose one of %s", name, strings.Join(CostNames(), ", "))
}

// Cost returns the software cost called name in mpi or ipoib.
func Cost(mpi MPICosts, ipoib IPoIBCosts, name string) (int64, error) {
	c, err := findCost(name)
	switch {
	case err != nil:
		return 0, err
	case c.eager:
		return int64(mpi.EagerBytes), nil
	case c.mpi != nil:
		return *c.mpi(&mpi), nil
	}
	return *c.ipoib(&ipoib), nil
}

// SetCost sets the software cost called name, in mpi or ipoib, to v. An
// MPI eager threshold must still hold a message header.
func SetCost(mpi *MPICosts, ipoib *IPoIBCosts, name string, v int64) error {
	c, err := findCost(name)
	switch {
	case err != nil:
		return err
	case v < 0:
		return fmt.Errorf("software cost %s: %d is negative", name, v)
	case c.eager:
		if v < HeaderBytes {
			return fmt.Errorf("software cost %s: %d cannot hold a message header (%d bytes)", name, v, HeaderBytes)
		}
		mpi.EagerBytes = int(v)
	case c.mpi != nil:
		*c.mpi(mpi) = v
	default:
		*c.ipoib(ipoib) = v
	}
	return nil
}

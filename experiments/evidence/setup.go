package evidence

import (
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// Set-up cost points (registration.yaml, qp_setup.yaml): the control-path
// verbs a point times, called by one thread of node 0 on a cluster of the
// point's profile, which charges them its `setup` costs. The model's value
// is the simulated time of the timed calls, in the point's unit.

// setupVerbs are the verbs setupOf handles; the other set-up verbs are
// reported with the reason.
var setupVerbs = map[string]bool{
	"reg_mr": true, "dereg_mr": true, "reg_dereg_mr": true, "create_cq": true,
	"create_qp": true, "modify_qp": true, "connect_rc": true, "create_cm_id": true,
	"connect_verbs": true,
}

// setupOf maps a set-up cost point to its timed calls: reg_mr, dereg_mr
// and reg_dereg_mr time one region of x.gigabytes (10^9 bytes, as the
// sources print GB) or x.megabytes (2^20 bytes, as they print MiB) being
// registered, deregistered, or both one after the other, on one thread;
// create_cq times one completion queue of x.cq_entries. ok is false for a
// point that is not a set-up cost.
func setupOf(p Point) (run runner, how, why string, ok bool) {
	if !setupVerbs[p.Verb] {
		return nil, "", "", false
	}
	scale, err := durationScale(p.Unit)
	if err != nil {
		return nil, "", err.Error(), true
	}
	switch p.Verb {
	case "reg_mr", "dereg_mr", "reg_dereg_mr":
		if par, _ := p.X["parallel"].(bool); par {
			return nil, "", "registration from several threads: the source does not state how many", true
		}
		if d, _ := p.X["devices"].(int); d > 1 {
			return nil, "", fmt.Sprintf("registration on %d devices of one host: a simulated node has one NIC", d), true
		}
		bytes, what, ok := regionBytes(p)
		if !ok {
			return nil, "", "the region's size is not stated", true
		}
		how = fmt.Sprintf("%s of one %s region, one thread", p.Verb, what)
		return timeCalls(scale, func(th fabric.Thread, pd fabric.PD) (fabric.Duration, error) {
			var spent fabric.Duration
			t0 := th.Now()
			mr, err := pd.RegMR(bytes, fabric.AccessLocalWrite)
			if err != nil {
				return 0, err
			}
			if p.Verb != "dereg_mr" {
				spent += th.Now().Sub(t0)
			}
			t1 := th.Now()
			if err := mr.Dereg(); err != nil {
				return 0, err
			}
			if p.Verb != "reg_mr" {
				spent += th.Now().Sub(t1)
			}
			return spent, nil
		}), how, "", true
	case "create_cq":
		depth, ok := p.X["cq_entries"].(int)
		if !ok || depth < 1 {
			return nil, "", "the completion queue's size is not stated", true
		}
		how = fmt.Sprintf("create_cq of %d entries, one thread", depth)
		if depth == 1 {
			how = "create_cq of 1 entry, one thread"
		}
		return timeCalls(scale, func(th fabric.Thread, _ fabric.PD) (fabric.Duration, error) {
			t0 := th.Now()
			_, err := th.Node().Device().CreateCQ(depth)
			return th.Now().Sub(t0), err
		}), how, "", true
	case "connect_verbs":
		return nil, "", "each connection opens the device first (ibv_open_device), which the fabric contract has no call for: a process opens its device once, before any design's set-up", true
	}
	return nil, "", fmt.Sprintf("no model of %s measurements yet: the source times it through the connection manager (rdma_cm), which the simulator does not model", p.Verb), true
}

// regionBytes is a registration point's region: x.gigabytes (10^9 bytes)
// or x.megabytes (2^20 bytes).
func regionBytes(p Point) (int, string, bool) {
	if gb, ok := number(p.X["gigabytes"]); ok {
		return int(gb * 1e9), fmt.Sprintf("%g GB", gb), true
	}
	if mb, ok := number(p.X["megabytes"]); ok {
		return int(mb * (1 << 20)), fmt.Sprintf("%g MiB", mb), true
	}
	return 0, "", false
}

// number reads an x value written as an integer or a decimal.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int:
		return float64(n), true
	case float64:
		return n, true
	}
	return 0, false
}

// durationScale is the number of a unit's time in one second.
func durationScale(unit string) (float64, error) {
	switch unit {
	case "s":
		return 1, nil
	case "ms":
		return 1e3, nil
	case "us":
		return 1e6, nil
	}
	return 0, fmt.Errorf("a set-up cost in %q: only s, ms and us are modelled", unit)
}

// timeCalls runs calls on one thread of node 0 (with a protection domain
// of its own) and returns their simulated time in seconds times scale.
func timeCalls(scale float64, calls func(fabric.Thread, fabric.PD) (fabric.Duration, error)) runner {
	return func(c *sim.Cluster) (float64, error) {
		var spent fabric.Duration
		err := c.Run(func(th fabric.Thread) error {
			if th.Node().ID() != 0 {
				return nil
			}
			pd, err := th.Node().Device().AllocPD()
			if err != nil {
				return err
			}
			spent, err = calls(th, pd)
			return err
		})
		return spent.Seconds() * scale, err
	}
}

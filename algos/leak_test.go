package algos_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/adaptive"
	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

const leakNodes = 3

// leakVariant is a design with the options it is checked with.
type leakVariant struct {
	name     string
	open     func(fabric.Thread, algos.Config) (algos.Endpoint, error)
	recover  bool
	adaptive bool
}

// leakVariants are every endpoint design, baseline and peer kind: the UD
// designs also with loss recovery, the eight designs also with adaptive
// buffers.
func leakVariants() []leakVariant {
	var out []leakVariant
	for _, d := range append(algos.Designs(), algos.Variants()...) {
		out = append(out, leakVariant{name: d.Name, open: d.Open})
		if d.Recovery {
			out = append(out, leakVariant{name: d.Name + "+recovery", open: d.Open, recover: true})
		}
		if d.Adaptive {
			out = append(out, leakVariant{name: d.Name + "+adaptive", open: d.Open, adaptive: true})
		}
	}
	for _, d := range append(algos.Baselines(), algos.Peers()...) {
		if d.Name == "HyPer" || d.Name == "RDMA-MW" || d.Family == algos.FamilyBaseline {
			out = append(out, leakVariant{name: d.Name, open: d.Open})
		}
	}
	return out
}

// TestFailedEndpointFreesEverything checks that an endpoint frees every
// queue pair, region, completion queue, address handle and protection
// domain it created when its Open fails part-way (the last node crashes
// before the connection exchange) and when its Close gives up (every node
// but the last ends its streams without reading anything, so the
// end-of-stream bookkeeping times out or the closing barrier finds the
// last node crashed): afterwards the surviving nodes hold no object, and
// the error is the failure's, not a teardown's.
func TestFailedEndpointFreesEverything(t *testing.T) {
	const nodes, crashed = leakNodes, leakNodes - 1
	for _, sc := range []struct {
		name    string
		crashAt fabric.Time
		close   bool // open succeeds; Close is what fails
	}{
		{"open/peer-crashed-before-exchange", 0, false},
		{"close/bookkeeping-gives-up", fabric.Time(20 * fabric.Millisecond), true},
	} {
		for _, v := range leakVariants() {
			t.Run(sc.name+"/"+v.name, func(t *testing.T) {
				prof, err := sim.LoadProfile("edr-cx4")
				if err != nil {
					t.Fatal(err)
				}
				c, err := sim.New(sim.Config{Nodes: nodes, Profile: prof, Seed: 3})
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				plan := sim.NewPlan()
				plan.Rules = []sim.Rule{{Action: sim.Crash, Node: crashed, From: sc.crashAt}}
				if err := c.SetPlan(plan); err != nil {
					t.Fatal(err)
				}
				errs, poolErrs := make([]error, nodes), make([]error, nodes)
				finished := make([]bool, nodes)
				c.Run(func(th fabric.Thread) error {
					me := th.Node().ID()
					// Errors are recorded, not returned: a thread's error
					// would end the run before the other nodes clean up.
					errs[me], poolErrs[me] = leakNode(th, v, sc.close && me != crashed)
					finished[me] = true
					return nil
				})
				for me := 0; me < crashed; me++ {
					if !finished[me] {
						t.Fatalf("node %d did not finish", me)
					}
					if poolErrs[me] != nil {
						t.Errorf("node %d: closing the buffer pool: %v", me, poolErrs[me])
					}
					err := errs[me]
					switch {
					case err == nil:
						t.Errorf("node %d: no error, want the crash's or a timeout", me)
					case errors.Is(err, fabric.ErrBusy) || errors.Is(err, fabric.ErrClosed):
						t.Errorf("node %d: the teardown's error replaced the cause: %v", me, err)
					case !sc.close && !strings.Contains(err.Error(), fmt.Sprintf("node %d crashed", crashed)):
						t.Errorf("node %d: %v, want the exchange's error naming node %d", me, err, crashed)
					}
				}
				var left []sim.OpenObject
				for _, o := range c.OpenObjects() {
					if o.Node != crashed {
						left = append(left, o)
					}
				}
				if len(left) > 0 {
					t.Fatalf("%d objects left open on surviving nodes (errors %v): %v", len(left), errs[:crashed], left)
				}
			})
		}
	}
}

// leakNode opens one endpoint of v on th's node; with shuffle it sends one
// buffer ending the stream to every node, reads nothing and closes the
// endpoint. It returns the endpoint's error, and that of closing the
// node's buffer pool, if any.
func leakNode(th fabric.Thread, v leakVariant, shuffle bool) (epErr, poolErr error) {
	cfg := algos.Config{Nodes: leakNodes, MsgBytes: 4096, Buffers: 2, CreditEvery: 2, Threads: 1,
		Timeout: fabric.Millisecond, Recover: v.recover}
	var pool *adaptive.Pool
	var pd fabric.PD
	if v.adaptive {
		var err error
		if pd, err = th.Node().Device().AllocPD(); err != nil {
			return nil, err
		}
		if pool, err = adaptive.NewPool(pd, th.Node().NewMutex(), 0, fabric.AccessLocalWrite|fabric.AccessRemoteWrite|fabric.AccessRemoteRead); err != nil {
			return nil, err
		}
		cfg.Adaptive = &algos.AdaptiveBuffers{Pool: pool, MaxRecv: 4, MaxSend: 4}
	}
	epErr = func() error {
		ep, err := v.open(th, cfg)
		if err != nil || !shuffle {
			return err
		}
		b, err := ep.Acquire(th)
		if err == nil {
			err = ep.PutData(th, b, []int{0, 1, 2}, algos.Depleted)
		}
		return errors.Join(err, ep.Close(th))
	}()
	if pool != nil {
		poolErr = errors.Join(pool.Close(), pd.Dealloc())
	}
	return epErr, poolErr
}

package loopback_test

import (
	"errors"
	"testing"
	"time"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/host"
	"github.com/rdmashuffle/rdmashuffle/fabric/loopback"
)

// TestLimits gives the loopback devices a RoCE port's MTU and an mlx5
// provider's send queues, scaled down (max_qp_wr 256: 128 UD requests, 64
// RC requests), and checks that they report and enforce them.
func TestLimits(t *testing.T) {
	if _, err := loopback.OpenLimits(host.Config{}, 1, loopback.Limits{MTU: 1500}); !errors.Is(err, fabric.ErrInvalidArg) {
		t.Errorf("MTU 1500: %v", err)
	}
	lim := loopback.Limits{MTU: 1024, MaxQPWR: 256, SendQueue: fabric.MLX5SendQueue(256)}
	f, err := loopback.OpenLimits(host.Config{Seed: 1, TimeLimit: time.Minute}, 1, lim)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	err = f.Run(func(th fabric.Thread) error {
		dev := th.Node().Device()
		if a := dev.Attr(); a.MTU != 1024 || a.MaxQPWR != 256 || a.SendQueue != lim.SendQueue {
			t.Errorf("Attr %+v", a)
		}
		pd, err := dev.AllocPD()
		if err != nil {
			return err
		}
		cq, err := dev.CreateCQ(16)
		if err != nil {
			return err
		}
		for _, c := range []struct {
			typ          fabric.QPType
			send, inline int
			ok           bool
		}{
			{fabric.UD, 128, 24, true},
			{fabric.UD, 129, 24, false},
			{fabric.RC, 64, 32, true},
			{fabric.RC, 65, 32, false},
			{fabric.RC, 52, 64, false}, // 5 blocks a request: 51 fit
		} {
			qp, err := pd.CreateQP(fabric.QPInit{Type: c.typ, SendCQ: cq, RecvCQ: cq, Caps: fabric.QPCaps{MaxSendWR: c.send, MaxRecvWR: 256, MaxInline: c.inline}})
			switch {
			case c.ok && err != nil:
				t.Errorf("%v send %d inline %d: %v", c.typ, c.send, c.inline, err)
			case !c.ok && !errors.Is(err, fabric.ErrLimit):
				t.Errorf("%v send %d inline %d: %v, want a device limit", c.typ, c.send, c.inline, err)
			}
			if qp != nil {
				if err := qp.Destroy(); err != nil {
					return err
				}
			}
		}
		if err := cq.Destroy(); err != nil {
			return err
		}
		return pd.Dealloc()
	})
	if err != nil {
		t.Fatal(err)
	}
}

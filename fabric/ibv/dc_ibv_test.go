//go:build ibverbs

package ibv

import (
	"errors"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// TestDCRefusedWithoutMLX5: on a device the mlx5 provider does not drive
// (the software RDMA device, rxe, siw), creating a DCT or a DCI fails with
// an error wrapping errors.ErrUnsupported that names the device and says
// DC needs an mlx5 device; the objects it was given stay usable (the SRQ
// and CQ are not counted as used, so they are destroyed).
func TestDCRefusedWithoutMLX5(t *testing.T) {
	onDevice(t, 1, func(th fabric.Thread) error {
		d := th.Node().Device()
		if d.(*device).mlx5 {
			t.Skipf("%s is an mlx5 device: DC is supported there (the conformance suite's DC cases run it)", d.Attr().Name)
		}
		p, err := d.AllocPD()
		if err != nil {
			return err
		}
		cq, err := d.CreateCQ(16)
		if err != nil {
			return err
		}
		srq, err := p.CreateSRQ(fabric.SRQInit{MaxWR: 4, MaxSGE: 1})
		if err != nil {
			return err
		}
		for _, init := range []fabric.QPInit{
			{Type: fabric.DCT, RecvCQ: cq, SRQ: srq, DCKey: 7},
			{Type: fabric.DCI, SendCQ: cq, Caps: fabric.QPCaps{MaxSendWR: 4}},
		} {
			q, err := p.CreateQP(init)
			if q != nil || !errors.Is(err, errors.ErrUnsupported) {
				t.Errorf("CreateQP(%v) on %s: %v, %v; want an error wrapping errors.ErrUnsupported", init.Type, d.Attr().Name, q, err)
				continue
			}
			for _, w := range []string{"mlx5", "ConnectX-4", d.Attr().Name, init.Type.String()} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("CreateQP(%v): %q does not name %q", init.Type, err, w)
				}
			}
		}
		if err := srq.Destroy(); err != nil {
			return err
		}
		if err := cq.Destroy(); err != nil {
			return err
		}
		return p.Dealloc()
	})
}

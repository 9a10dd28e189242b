//go:build ibverbs

package ibv

import (
	"errors"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/fabrictest"
)

// TestConnectAsksNoState: taking a queue pair from RESET to RTS is three
// ibv_modify_qp calls and no ibv_query_qp (each a firmware command on
// ConnectX); the backend knows the state it set.
func TestConnectAsksNoState(t *testing.T) {
	if _, err := Devices(); errors.Is(err, fabric.ErrNoDevice) {
		t.Skip("no RDMA device")
	}
	dev, port, gid := testDeviceEnv()
	f, err := OpenLocal(dev, port, gid, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	err = f.Run(func(th fabric.Thread) error {
		d := th.Node().Device().(*device)
		before := d.stateQueries.Load()
		if _, err := fabrictest.Connect(th, 1-th.Node().ID(), fabrictest.Options{}); err != nil {
			return err
		}
		if n := d.stateQueries.Load() - before; n != 0 {
			t.Errorf("node %d: %d ibv_query_qp calls while connecting, want 0", th.Node().ID(), n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestTimeRegMR: the backend times a registration apart from allocating
// and zeroing the memory (fabric.RegTimer), and the region it returns is a
// usable one.
func TestTimeRegMR(t *testing.T) {
	if _, err := Devices(); errors.Is(err, fabric.ErrNoDevice) {
		t.Skip("no RDMA device")
	}
	dev, port, gid := testDeviceEnv()
	f, err := OpenLocal(dev, port, gid, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	err = f.Run(func(th fabric.Thread) error {
		p, err := th.Node().Device().AllocPD()
		if err != nil {
			return err
		}
		rt, ok := p.(fabric.RegTimer)
		if !ok {
			t.Fatal("the ibv protection domain does not time registrations (fabric.RegTimer)")
		}
		m, took, err := rt.TimeRegMR(1<<20, fabric.AccessLocalWrite)
		if err != nil {
			return err
		}
		if took < 0 || m.Len() != 1<<20 || m.Addr()%fabric.MRAlign != 0 {
			t.Errorf("TimeRegMR: %v, %d bytes at %#x", took, m.Len(), m.Addr())
		}
		if err := m.Dereg(); err != nil {
			return err
		}
		return p.Dealloc()
	})
	if err != nil {
		t.Fatal(err)
	}
}

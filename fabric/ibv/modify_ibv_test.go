//go:build ibverbs

package ibv

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/fabrictest"
)

// onDevice runs body as the main thread of each of nodes nodes opened on
// the test device in this process; it skips without a device.
func onDevice(t *testing.T, nodes int, body func(th fabric.Thread) error) {
	t.Helper()
	if _, err := Devices(); errors.Is(err, fabric.ErrNoDevice) {
		t.Skip("no RDMA device")
	}
	dev, port, gid := testDeviceEnv()
	f, err := OpenLocal(dev, port, gid, nodes)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Run(body); err != nil {
		t.Fatal(err)
	}
}

// TestConnectAsksNoState: taking a queue pair from RESET to RTS is three
// ibv_modify_qp calls and no ibv_query_qp (each a firmware command on
// ConnectX); the backend knows the state it set.
func TestConnectAsksNoState(t *testing.T) {
	onDevice(t, 2, func(th fabric.Thread) error {
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
}

// TestTimeRegMR: the backend times a registration apart from allocating
// and zeroing the memory (fabric.RegTimer), and the region it returns is a
// usable one.
func TestTimeRegMR(t *testing.T) {
	onDevice(t, 1, func(th fabric.Thread) error {
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
}

// TestSendQueueLimit: a send queue deeper than the device's layout holds
// (an RC request takes 4 of mlx5's 64-byte blocks) is refused before the
// provider sees it, as a device limit naming the layout; the deepest one
// that fits is created.
func TestSendQueueLimit(t *testing.T) {
	onDevice(t, 1, func(th fabric.Thread) error {
		d := th.Node().Device()
		p, _ := d.AllocPD()
		cq, err := d.CreateCQ(16)
		if err != nil {
			return err
		}
		most := d.Attr().MaxSendWR(fabric.RC, 1, 0)
		if most >= d.Attr().MaxQPWR {
			t.Skipf("%s sizes send queues in requests (max %d)", d.Attr().Name, most)
		}
		init := fabric.QPInit{Type: fabric.RC, SendCQ: cq, RecvCQ: cq, Caps: fabric.QPCaps{MaxSendWR: most + 1, MaxRecvWR: 1}}
		if _, err := p.CreateQP(init); !errors.Is(err, fabric.ErrLimit) || !strings.Contains(err.Error(), "blocks") {
			t.Errorf("send queue of %d on a device that holds %d: %v, want a device limit naming its blocks", most+1, most, err)
		}
		init.Caps.MaxSendWR = most
		q, err := p.CreateQP(init)
		if err != nil {
			return fmt.Errorf("send queue of %d, the most that fits: %w", most, err)
		}
		return q.Destroy()
	})
}

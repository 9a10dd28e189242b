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

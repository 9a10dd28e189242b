package ibv

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

func TestSendQueueLayoutOfDriver(t *testing.T) {
	root := t.TempDir()
	link := func(dev, driver string) {
		dir := filepath.Join(root, "class", "infiniband", dev, "device")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join("..", "..", "..", "bus", "pci", "drivers", driver), filepath.Join(dir, "driver")); err != nil {
			t.Fatal(err)
		}
	}
	link("mlx5_0", "mlx5_core")
	link("rocep65s0f0", "mlx5_core") // renamed by udev
	link("mlx4_0", "mlx4_core")
	link("rxe0", "virtio-pci")
	mlx5 := fabric.MLX5SendQueue(32768)
	for _, c := range []struct {
		dev  string
		want fabric.SendQueueLayout
	}{
		{"mlx5_0", mlx5},
		{"rocep65s0f0", mlx5},
		{"mlx4_0", fabric.SendQueueLayout{}},
		{"rxe0", fabric.SendQueueLayout{}},
		{"mlx5_7", mlx5},                     // no sysfs entry: the kernel's name says mlx5
		{"ibp1s0", fabric.SendQueueLayout{}}, // no sysfs entry, no telling name
	} {
		got := sendQueueLayout(kernelDriver(filepath.Join(root, "class", "infiniband", c.dev)), c.dev, 0, 0, 32768)
		if got != c.want {
			t.Errorf("%s: layout %+v, want %+v", c.dev, got, c.want)
		}
	}
	// Without sysfs the part number decides: a ConnectX-4 (4115) is mlx5,
	// a ConnectX-3 (4099) is not, whatever the device is called.
	if got := sendQueueLayout("", "ibp1s0", vendorMellanox, 4115, 32768); got != mlx5 {
		t.Errorf("ConnectX-4 part without sysfs: %+v", got)
	}
	if got := sendQueueLayout("", "mlx5_9", vendorMellanox, 4099, 32768); got != (fabric.SendQueueLayout{}) {
		t.Errorf("ConnectX-3 part: %+v", got)
	}
	if got := sendQueueLayout("mlx5_core", "mlx5_0", 0, 0, 0); got != (fabric.SendQueueLayout{}) {
		t.Errorf("max_qp_wr 0: %+v", got)
	}
	attr := fabric.DeviceAttr{Name: "mlx5_0", MaxQPWR: 32768, SendQueue: sendQueueLayout("mlx5_core", "mlx5_0", 0, 0, 32768)}
	if ud, rc := attr.MaxSendWR(fabric.UD, 1, 0), attr.MaxSendWR(fabric.RC, 1, 0); ud != 16384 || rc != 8192 {
		t.Errorf("mlx5 at max_qp_wr 32768: UD %d, RC %d; want 16384, 8192", ud, rc)
	}
}

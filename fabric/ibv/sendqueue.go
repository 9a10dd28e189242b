package ibv

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// sysfsRoot is where the kernel's device tree is mounted.
const sysfsRoot = "/sys"

// deviceSendQueue is the send-queue layout of RDMA device name whose
// max_qp_wr is maxQPWR: the mlx5 provider's (fabric.MLX5SendQueue) when
// the device's kernel driver is mlx5, else the zero layout, which counts
// requests (the rules of other providers are not modelled: their limit
// stays max_qp_wr).
func deviceSendQueue(name string, maxQPWR int) fabric.SendQueueLayout {
	return sendQueueLayout(kernelDriver(sysfsRoot, name), name, maxQPWR)
}

// sendQueueLayout is the layout for a device of kernel driver driver ("" if
// unknown) named name.
func sendQueueLayout(driver, name string, maxQPWR int) fabric.SendQueueLayout {
	mlx5 := strings.HasPrefix(driver, "mlx5")
	if driver == "" {
		// No sysfs: the kernel's own name for an mlx5 device (udev may
		// rename it, to rocep... or ibp..., and then sysfs is the way).
		mlx5 = strings.HasPrefix(name, "mlx5_")
	}
	if !mlx5 || maxQPWR < 1 {
		return fabric.SendQueueLayout{}
	}
	return fabric.MLX5SendQueue(maxQPWR)
}

// kernelDriver is the name of the kernel driver behind RDMA device name,
// from sysfs (<root>/class/infiniband/<name>/device/driver links to it:
// "mlx5_core" for ConnectX-4 and later, "mlx4_core" for ConnectX-3), or ""
// when it cannot be read.
func kernelDriver(root, name string) string {
	if name == "" || strings.ContainsAny(name, "/\x00") {
		return ""
	}
	target, err := os.Readlink(filepath.Join(root, "class", "infiniband", name, "device", "driver"))
	if err != nil {
		return ""
	}
	return filepath.Base(target)
}

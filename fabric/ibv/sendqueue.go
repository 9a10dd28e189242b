package ibv

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// deviceSendQueue is the send-queue layout of the RDMA device named name
// (sysfs directory ibdevPath, as libibverbs found it) with the given
// vendor, part and max_qp_wr: the mlx5 provider's (fabric.MLX5SendQueue)
// for an mlx5 device, else the zero layout, which counts requests (the
// rules of other providers are not modelled: their limit stays max_qp_wr).
func deviceSendQueue(ibdevPath, name string, vendor, part uint32, maxQPWR int) fabric.SendQueueLayout {
	return sendQueueLayout(kernelDriver(ibdevPath), name, vendor, part, maxQPWR)
}

// Mellanox's IEEE OUI, the vendor_id of every ConnectX, and the first part
// (PCI device ID) the mlx5 provider drives: 4113 is Connect-IB; ConnectX-4
// (4115) and every later ConnectX and BlueField part are numbered above it,
// the mlx4 parts (ConnectX-3: 4099, 4103) below.
const (
	vendorMellanox = 0x02c9
	firstMLX5Part  = 4113
)

// sendQueueLayout is the layout for a device of kernel driver driver ("" if
// unknown). The kernel driver decides when sysfs names one; else the part
// number, else the kernel's own name for an mlx5 device (udev may rename
// it, to rocep... or ibp...).
func sendQueueLayout(driver, name string, vendor, part uint32, maxQPWR int) fabric.SendQueueLayout {
	var mlx5 bool
	switch {
	case driver != "":
		mlx5 = strings.HasPrefix(driver, "mlx5")
	case vendor == vendorMellanox:
		mlx5 = part >= firstMLX5Part
	default:
		mlx5 = strings.HasPrefix(name, "mlx5_")
	}
	if !mlx5 || maxQPWR < 1 {
		return fabric.SendQueueLayout{}
	}
	return fabric.MLX5SendQueue(maxQPWR)
}

// kernelDriver is the name of the kernel driver behind the RDMA device
// whose sysfs directory is ibdevPath (<sysfs>/class/infiniband/<name>; its
// device/driver links to the driver: "mlx5_core" for ConnectX-4 and later,
// "mlx4_core" for ConnectX-3), or "" when it cannot be read.
func kernelDriver(ibdevPath string) string {
	if ibdevPath == "" || strings.ContainsRune(ibdevPath, 0) {
		return ""
	}
	target, err := os.Readlink(filepath.Join(ibdevPath, "device", "driver"))
	if err != nil {
		return ""
	}
	return filepath.Base(target)
}

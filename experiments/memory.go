package experiments

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// MemoryEstimate is about how many bytes of memory a simulated run of cfg
// takes at its peak. The simulator keeps state per node, peer and sending
// thread (queue pairs or address handles, posted receives, flow-control
// records), so memory grows with the square of the cluster size; in
// payload mode the registered buffers hold real bytes as well.
//
// Calibrated on peak resident sizes (/usr/bin/time -f %M explore run
// --bytes-per-node 65536 ..., size-only unless noted, edr-cx4):
//
//	MEMQ/SR, 2 threads, 2 buffers:  32 nodes 106 MiB, 64 nodes 409 MiB, 128 nodes 1826 MiB
//	MESQ/SR, 2 threads, 2 buffers:  32 nodes  87 MiB, 64 nodes 560 MiB, 128 nodes 2237 MiB
//	MEMQ/SR, 64 nodes: 8 buffers 836 MiB, 4 threads 733 MiB, --payload 1307 MiB
//
// that is 51-70 KiB per node, peer and thread with 2 buffers, 9 KiB more
// per further buffer, and in payload mode about half the registered
// bytes. The estimate takes the upper end (MESQ/SR's), so it errs towards
// too much.
func MemoryEstimate(cfg RunConfig) int64 {
	n, t, b := int64(max(cfg.Nodes, 1)), int64(max(cfg.Threads, 1)), int64(max(cfg.Buffers, 1))
	if cfg.Threads == 0 {
		t = 2
	}
	if cfg.Buffers == 0 {
		b = 2
	}
	const base, perPair, perBuffer = 64 << 20, 52 << 10, 9 << 10
	est := base + n*n*t*(perPair+perBuffer*b)
	if cfg.Payload {
		msg := int64(cfg.MsgBytes)
		if msg == 0 {
			msg = int64(DesignOf(cfg.Design).MsgBytes)
		}
		registered := 2 * t * n * b * msg // per node: send and receive buffers
		est += n * registered / 2
	}
	return est
}

// AvailableMemory is the memory the operating system says a new process
// can use without swapping (MemAvailable in /proc/meminfo), and false
// where it does not say.
func AvailableMemory() (int64, bool) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 3 && fields[0] == "MemAvailable:" && fields[2] == "kB" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}

// CheckMemory refuses a run whose MemoryEstimate exceeds available bytes,
// with the estimate, what it grows with, and how to run it anyway.
func CheckMemory(cfg RunConfig, available int64) error {
	est := MemoryEstimate(cfg)
	if est <= available {
		return nil
	}
	gib := func(v int64) string { return fmt.Sprintf("%.1f GiB", float64(v)/(1<<30)) }
	return fmt.Errorf("--nodes %d: the simulated cluster would need about %s of memory (it grows with nodes squared times threads and buffers), more than the %s available: use fewer nodes, threads or buffers, or pass --no-memory-check to run it anyway",
		cfg.Nodes, gib(est), gib(available))
}

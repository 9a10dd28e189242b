package host

import (
	"bufio"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// cpuGHz is the CPU clock Compute converts cycles with: the highest "cpu
// MHz" of /proc/cpuinfo, or 2.5 GHz when that cannot be read.
func cpuGHz() float64 {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return 2.5
	}
	defer f.Close()
	if g := parseCPUInfoGHz(f); g > 0 {
		return g
	}
	return 2.5
}

// parseCPUInfoGHz returns the highest "cpu MHz" in a /proc/cpuinfo text, in
// GHz, or 0 if there is none.
func parseCPUInfoGHz(r io.Reader) float64 {
	best := 0.0
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || strings.TrimSpace(k) != "cpu MHz" {
			continue
		}
		if mhz, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && mhz > 0 && mhz/1000 > best {
			best = mhz / 1000
		}
	}
	return best
}

// allowedCPUs lists the CPUs this process may run on (its affinity mask on
// Linux), or 0..NumCPU-1.
func allowedCPUs() []int {
	if cpus := affinityCPUs(); len(cpus) > 0 {
		return cpus
	}
	out := make([]int, runtime.NumCPU())
	for i := range out {
		out[i] = i
	}
	return out
}

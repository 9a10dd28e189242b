//go:build unix

package sim

import "syscall"

// lazyRegionMin is the smallest region whose memory is its own anonymous
// mapping rather than the Go heap.
const lazyRegionMin = 64 << 10

// regionBytes returns n zero bytes for a memory region, aligned to
// fabric.MRAlign, with cap n, and whether they are a mapping of their own
// (release them with releaseRegion). A region of lazyRegionMin bytes or
// more is a private anonymous mapping: its pages cost memory only once
// written, and nothing zeroes them (the kernel's pages are zero), where
// the Go heap zeroes reused memory and keeps it resident.
func regionBytes(n int) ([]byte, bool) {
	if n < lazyRegionMin {
		return alignedBytes(n), false
	}
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return alignedBytes(n), false
	}
	return b, true
}

// releaseRegion unmaps bytes regionBytes mapped.
func releaseRegion(b []byte) {
	if err := syscall.Munmap(b); err != nil {
		panic("sim: releasing a region's mapping: " + err.Error())
	}
}

//go:build unix

package sim

import (
	"sync"
	"syscall"
)

// zeroArena is the shared read-only zero mapping behind unbacked regions
// (zeromem.go), shared by every cluster of the process. Reading it maps
// the kernel's zero page, which counts in no process's resident memory; a
// write faults (a bug: unbacked regions are never written). It grows by
// mapping a larger one; earlier mappings stay, as regions still view them.
var zeroArena struct {
	sync.Mutex
	b []byte
}

// minZeroArena is the smallest zero mapping: address space only.
const minZeroArena = 1 << 30

// zeroView returns n zero bytes for an unbacked region, with cap n, and
// whether they are a view of the zero mapping (else they are ordinary
// memory: the mapping failed).
func zeroView(n int) ([]byte, bool) {
	zeroArena.Lock()
	defer zeroArena.Unlock()
	if len(zeroArena.b) < n {
		size := max(minZeroArena, 2*len(zeroArena.b), n)
		b, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ, syscall.MAP_PRIVATE|syscall.MAP_ANON)
		if err != nil {
			return alignedBytes(n), false
		}
		zeroArena.b = b
	}
	return zeroArena.b[:n:n], true
}

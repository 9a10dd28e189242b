//go:build !unix

package sim

// zeroView returns ordinary memory where no read-only zero mapping is
// available: regions are backed from the start.
func zeroView(n int) ([]byte, bool) { return alignedBytes(n), false }

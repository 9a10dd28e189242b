//go:build !unix

package sim

// regionBytes returns n zero bytes from the Go heap where anonymous
// mappings are not available; never a mapping.
func regionBytes(n int) ([]byte, bool) { return alignedBytes(n), false }

func releaseRegion([]byte) {}

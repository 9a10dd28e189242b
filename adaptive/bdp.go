package adaptive

import (
	"fmt"
	"math"
)

// BDPBuffers is the query-oblivious sizing of Liu19 §6: enough buffers
// of msgBytes to cover the bandwidth-delay product of a link, bandwidth
// bytesPerSecond (the available bandwidth, as measured by qperf) times the
// round-trip time rttSeconds, rounded up, and at least one. Liu19
// reports 44 buffers on EDR this way.
func BDPBuffers(bytesPerSecond, rttSeconds float64, msgBytes int) (int, error) {
	if bytesPerSecond <= 0 || rttSeconds <= 0 || msgBytes <= 0 ||
		math.IsInf(bytesPerSecond, 0) || math.IsNaN(bytesPerSecond) || math.IsInf(rttSeconds, 0) || math.IsNaN(rttSeconds) {
		return 0, fmt.Errorf("adaptive: bandwidth-delay product of %g B/s x %g s in %d-byte buffers: every input must be positive and finite",
			bytesPerSecond, rttSeconds, msgBytes)
	}
	n := math.Ceil(bytesPerSecond * rttSeconds / float64(msgBytes))
	if n > math.MaxInt32 {
		return 0, fmt.Errorf("adaptive: bandwidth-delay product needs %g buffers", n)
	}
	return max(1, int(n)), nil
}

package fabric_test

import (
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// TestTransition: the queue-pair state machine every NIC-emulating
// backend shares: each state is reached only from its predecessor (INIT
// also again), RESET and ERROR from anywhere, and an allowed move still
// has its attributes checked.
func TestTransition(t *testing.T) {
	states := []fabric.QPState{fabric.StateReset, fabric.StateInit, fabric.StateRTR, fabric.StateRTS, fabric.StateError}
	good := fabric.QPAttr{Dest: fabric.Address{QPN: 0x101}, Timeout: 14, RetryCnt: 7, RNRRetry: 7}
	allowed := map[[2]fabric.QPState]bool{
		{fabric.StateReset, fabric.StateInit}: true, {fabric.StateInit, fabric.StateInit}: true,
		{fabric.StateInit, fabric.StateRTR}: true, {fabric.StateRTR, fabric.StateRTS}: true,
	}
	for _, from := range states {
		for _, to := range states {
			why := good.Transition(fabric.RC, from, to, 4096, 16)
			want := allowed[[2]fabric.QPState{from, to}] || to == fabric.StateReset || to == fabric.StateError
			if (why == "") != want {
				t.Errorf("%v -> %v: %q, want allowed %v", from, to, why, want)
			}
		}
	}
	bad := good
	bad.Dest.QPN = 0
	if why := bad.Transition(fabric.RC, fabric.StateInit, fabric.StateRTR, 4096, 16); !strings.Contains(why, "destination QPN") {
		t.Errorf("RTR with QPN 0: %q", why)
	}
	if why := bad.Transition(fabric.UD, fabric.StateInit, fabric.StateRTR, 4096, 16); why != "" {
		t.Errorf("UD needs no destination: %q", why)
	}
}

package sim

import "testing"

// TestHandoffCostByPlacement: a lock passes between cores of one socket
// at lock_handoff_ns and across sockets at lock_handoff_remote_ns, with
// cores numbered socket by socket; one socket, or no remote figure, is
// lock_handoff_ns everywhere.
func TestHandoffCostByPlacement(t *testing.T) {
	two := HostProfile{Cores: 28, Sockets: 2, LockHandoffNS: 45, LockHandoffRemoteNS: 128}
	one := HostProfile{Cores: 28, Sockets: 1, LockHandoffNS: 45, LockHandoffRemoteNS: 128}
	noRemote := HostProfile{Cores: 28, Sockets: 2, LockHandoffNS: 45}
	for _, tc := range []struct {
		name     string
		h        HostProfile
		from, to int
		want     float64 // ns
	}{
		{"same socket, first", two, 0, 13, 45},
		{"same socket, second", two, 14, 27, 45},
		{"across sockets", two, 13, 14, 128},
		{"across sockets, back", two, 27, 0, 128},
		{"a core beyond the host wraps", two, 28, 1, 45},
		{"one socket", one, 0, 27, 45},
		{"no remote figure", noRemote, 0, 27, 45},
	} {
		if got := tc.h.handoffCost(tc.from, tc.to); got != ns(tc.want) {
			t.Errorf("%s: cores %d -> %d cost %v, want %v ns", tc.name, tc.from, tc.to, got, tc.want)
		}
	}
}

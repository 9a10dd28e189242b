package figures

import "testing"

// TestClassicConnections: Roediger15's classic exchange at 6 servers of 40
// threads connects every parallel unit to every other.
func TestClassicConnections(t *testing.T) {
	if got := ClassicConnections(6, 40); got != 57360 {
		t.Errorf("classic exchange at 6 x 40: %d connections, want 57,360", got)
	}
}

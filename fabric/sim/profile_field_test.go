package sim

import (
	"strings"
	"testing"
)

// TestProfileField reads and sets profile fields by their names in a
// profile file, as the sensitivity analysis and the evidence suite's fits
// do, and refuses what a profile file would refuse.
func TestProfileField(t *testing.T) {
	p := DefaultProfile()
	for _, tt := range []struct {
		path  string
		want  float64
		whole bool
		err   string
	}{
		{"nic.qp_cache_entries", float64(p.NIC.QPCacheEntries), true, ""},
		{"host.lock_ns", p.Host.LockNS, false, ""},
		{"link.mtu", float64(p.Link.MTU), true, ""},
		{"link.encoding", 0, false, `no numeric field "link.encoding"`},
		{"nic.no_such", 0, false, `no numeric field "nic.no_such"`},
		{"nosection.x", 0, false, `no section "nosection"`},
		{"nic", 0, false, `no numeric field "nic"`},
	} {
		v, whole, err := p.Field(tt.path)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Field(%q): %v, want an error with %q", tt.path, err, tt.err)
			}
			continue
		}
		if err != nil || v != tt.want || whole != tt.whole {
			t.Errorf("Field(%q) = %v, %v, %v; want %v, %v", tt.path, v, whole, err, tt.want, tt.whole)
		}
	}

	for _, tt := range []struct {
		path string
		v    float64
		get  func(*Profile) float64
		err  string
	}{
		{"nic.qp_cache_ways", 2, func(q *Profile) float64 { return float64(q.NIC.QPCacheWays) }, ""},
		{"host.lock_ns", 33.5, func(q *Profile) float64 { return q.Host.LockNS }, ""},
		{"nic.qp_cache_entries", 10.5, nil, "not a whole number"},
		{"host.lock_ns", -1, nil, "host.lock_ns"}, // out of range: the profile check names it
		{"link.mtu", 1000, nil, "link.mtu"},       // not an InfiniBand MTU
		{"link.encoding", 1, nil, "no numeric field"},
	} {
		q, err := p.WithField(tt.path, tt.v)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("WithField(%q, %v): %v, want an error with %q", tt.path, tt.v, err, tt.err)
			}
			continue
		}
		if err != nil || tt.get(q) != tt.v {
			t.Errorf("WithField(%q, %v): %v", tt.path, tt.v, err)
			continue
		}
		if q.Hash() == p.Hash() || q.Source() != p.Source() {
			t.Errorf("WithField(%q): hash unchanged or source %q lost", tt.path, p.Source())
		}
	}
	if fresh := DefaultProfile(); fresh.Hash() != p.Hash() {
		t.Error("WithField changed the profile it was called on")
	}
}

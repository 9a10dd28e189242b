package sim

import "testing"

func TestProfileHash(t *testing.T) {
	base, err := LoadProfile("edr-cx4")
	if err != nil {
		t.Fatal(err)
	}
	renamed := *base
	renamed.Name, renamed.Description = "my-cluster", "a copy"
	slower := *base
	slower.Host.LockNS *= 2
	fdr, err := LoadProfile("fdr-cx3")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		p    *Profile
		same bool
	}{
		{"reloaded", DefaultProfile(), true},
		{"renamed, described", &renamed, true},
		{"one parameter changed", &slower, false},
		{"another profile", fdr, false},
	}
	h := base.Hash()
	if len(h) != 16 {
		t.Fatalf("Hash() = %q, want 16 hex digits", h)
	}
	for _, tt := range tests {
		if got := tt.p.Hash(); (got == h) != tt.same {
			t.Errorf("%s: hash %s vs edr-cx4's %s, want same=%v", tt.name, got, h, tt.same)
		}
	}
}

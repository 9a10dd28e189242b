package flowctl

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func TestCountReordered(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 1))
			const n = 50
			order := r.Perm(n)
			c := NewCount(true)
			for i, k := range order {
				seq := uint64(k + 1)
				if err := c.Add(seq, seq == n); err != nil {
					t.Fatal(err)
				}
				if done := c.Done(); done != (i == n-1) {
					t.Fatalf("after %d messages Done = %v", i+1, done)
				}
			}
		})
	}
}

func TestCountErrors(t *testing.T) {
	c := NewCount(true)
	c.Add(1, false)
	if err := c.Add(1, false); err == nil {
		t.Fatal("duplicate not detected")
	}
	c2 := NewCount(false)
	c2.Add(3, true)
	if c2.Done() || c2.Missing() != 2 {
		t.Fatalf("end arrived first: done %v missing %d", c2.Done(), c2.Missing())
	}
	if err := c2.Add(4, false); err == nil {
		t.Fatal("a message beyond the announced total must be an error")
	}
	if err := NewCount(false).Add(0, false); err == nil {
		t.Fatal("sequence 0 must be rejected")
	}
	c3 := NewCount(false)
	c3.Add(1, true)
	if err := c3.Add(2, true); err == nil {
		t.Fatal("second end must be an error")
	}
}

// TestCountContiguous: the cumulative acknowledgement advances over gaps
// only once they are filled, and Seen covers both the contiguous prefix
// and the messages above it.
func TestCountContiguous(t *testing.T) {
	c := NewCount(true)
	for _, tc := range []struct {
		add  uint64
		want uint64
	}{{2, 0}, {1, 2}, {5, 2}, {3, 3}, {4, 5}, {6, 6}} {
		if err := c.Add(tc.add, false); err != nil {
			t.Fatal(err)
		}
		if c.Contiguous() != tc.want {
			t.Fatalf("after %d: contiguous %d, want %d", tc.add, c.Contiguous(), tc.want)
		}
	}
	for seq := uint64(1); seq <= 6; seq++ {
		if !c.Seen(seq) {
			t.Errorf("message %d not seen", seq)
		}
	}
	if c.Seen(7) || c.Seen(0) {
		t.Error("unsent messages seen")
	}
	if err := c.Add(3, false); err == nil {
		t.Error("duplicate below the contiguous prefix accepted")
	}
	if u := NewCount(false); u.Seen(1) || u.Contiguous() != 0 {
		t.Error("an untracked counter tracks nothing")
	}
}

package algos

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestOwnedFree checks the teardown's order (by kind, each kind in the
// order of creation), that a failing step does not stop the others, and
// that the first error is returned and never replaces a cause.
func TestOwnedFree(t *testing.T) {
	var o owned
	var order []string
	step := func(name string, err error) func() error {
		return func() error { order = append(order, name); return err }
	}
	errQP := errors.New("qp busy")
	o.kinds[ownPD] = append(o.kinds[ownPD], step("pd", nil))
	o.kinds[ownCQ] = append(o.kinds[ownCQ], step("scq", nil), step("rcq", nil))
	o.kinds[ownMR] = append(o.kinds[ownMR], step("mr", errors.New("mr busy")))
	o.lent(step("buffers", nil))
	o.kinds[ownQP] = append(o.kinds[ownQP], step("qp0", errQP), step("qp1", nil))
	o.kinds[ownAH] = append(o.kinds[ownAH], step("ah", nil))
	err := o.free()
	if got, want := strings.Join(order, " "), "ah qp0 qp1 scq rcq mr buffers pd"; got != want {
		t.Errorf("freed %s, want %s", got, want)
	}
	if err != errQP {
		t.Errorf("free returned %v, want the first error %v", err, errQP)
	}
	order = nil
	if err := o.free(); err != nil || len(order) > 0 {
		t.Errorf("a second free freed %v (%v), want nothing", order, err)
	}
	cause := fmt.Errorf("exchange failed")
	for _, tc := range []struct {
		cause, teardown error
		want            []error
	}{
		{nil, nil, nil},
		{cause, nil, []error{cause}},
		{nil, errQP, []error{errQP}},
		{cause, errQP, []error{cause, errQP}},
	} {
		got := freed(tc.cause, tc.teardown)
		if (got == nil) != (tc.want == nil) {
			t.Fatalf("freed(%v, %v) = %v", tc.cause, tc.teardown, got)
		}
		for _, w := range tc.want {
			if !errors.Is(got, w) {
				t.Errorf("freed(%v, %v) = %v, does not wrap %v", tc.cause, tc.teardown, got, w)
			}
		}
		if tc.cause != nil && !strings.HasPrefix(got.Error(), tc.cause.Error()) {
			t.Errorf("freed(%v, %v) = %v: the cause must come first", tc.cause, tc.teardown, got)
		}
	}
}

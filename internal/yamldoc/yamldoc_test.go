package yamldoc

import (
	"errors"
	"testing"
)

func TestOne(t *testing.T) {
	for _, tc := range []struct {
		in   string
		line int // -1: one document
	}{
		{"a: 1\n", -1},
		{"---\na: 1\n", -1},
		{"", -1},
		{"# only a comment\n", -1},
		{"a: 1\n---\nb: 2\n", 3},
		{"loss: [{rate: 1e-300}]\n---\ncrash: [{node: 1, at: 1us}]\n", 3},
		{"a: 1\n---\n", 0},
		{"a: [1\n", -1}, // a syntax error is the decoder's to report
		{"a: 1\n---\nb: [\n", 0},
	} {
		err := One([]byte(tc.in))
		if tc.line < 0 {
			if err != nil {
				t.Errorf("%q: %v", tc.in, err)
			}
			continue
		}
		var e *Error
		if !errors.As(err, &e) || !errors.Is(err, ErrMultipleDocuments) {
			t.Errorf("%q: %v, want a second document", tc.in, err)
			continue
		}
		if tc.line > 0 && e.Line != tc.line {
			t.Errorf("%q: line %d, want %d", tc.in, e.Line, tc.line)
		}
	}
}

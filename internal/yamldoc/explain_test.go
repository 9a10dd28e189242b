package yamldoc

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

type inner struct {
	Rate float64 `yaml:"rate"`
	Node int     `yaml:"node"`
}

type outer struct {
	Name string `yaml:"name"`
	Link inner  `yaml:"link"`
}

// TestExplain: unknown fields are named with the section and the fields
// it has, not with Go type names; a value of the wrong type names the
// field on its line.
func TestExplain(t *testing.T) {
	names := SectionNames(reflect.TypeFor[outer](), "thing")
	for _, tc := range []struct{ yaml, want, not string }{
		{"name: a\nlink:\n  rat: 1\n", `line 3: unknown field "rat" in link (fields: rate, node)`, "yamldoc.inner"},
		{"nam: a\n", `unknown field "nam" in the thing (fields: name, link)`, "yamldoc.outer"},
		{"link:\n  node: four\n", "line 2: field node: cannot unmarshal", "unmarshal errors"},
	} {
		dec := yaml.NewDecoder(bytes.NewReader([]byte(tc.yaml)))
		dec.KnownFields(true)
		var v outer
		err := dec.Decode(&v)
		if err == nil {
			t.Fatalf("%q decoded", tc.yaml)
		}
		got := Explain(err, []byte(tc.yaml), names)
		if !strings.Contains(got, tc.want) || strings.Contains(got, tc.not) {
			t.Errorf("%q: %s, want %q without %q", tc.yaml, got, tc.want, tc.not)
		}
	}
}

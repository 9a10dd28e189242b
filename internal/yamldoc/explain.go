package yamldoc

import (
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
)

var (
	notFound = regexp.MustCompile(`field (\S+) not found in type (\S+)`)
	badType  = regexp.MustCompile("line (\\d+): cannot unmarshal ([^\n]*)")
)

// Explain words a decoding error of yaml.v3 for the person who wrote the
// file: "field X not found in type T" becomes `unknown field "X" in D`,
// where D is names[T] (T's Go name when names lacks it, so that a
// forgotten entry shows rather than hides); "line N: cannot unmarshal"
// names the field on that line of data; the decoder's prefixes go.
func Explain(err error, data []byte, names map[string]string) string {
	msg := notFound.ReplaceAllStringFunc(err.Error(), func(m string) string {
		sub := notFound.FindStringSubmatch(m)
		where := names[sub[2]]
		if where == "" {
			where = sub[2]
		}
		return fmt.Sprintf("unknown field %q in %s", sub[1], where)
	})
	msg = badType.ReplaceAllStringFunc(msg, func(m string) string {
		// Name the field on that line: yaml.v3 gives only the line.
		sub := badType.FindStringSubmatch(m)
		n, _ := strconv.Atoi(sub[1])
		lines := strings.Split(string(data), "\n")
		if n < 1 || n > len(lines) {
			return m
		}
		key, _, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(lines[n-1]), "- "), ":")
		if !ok {
			return m
		}
		return fmt.Sprintf("line %s: field %s: cannot unmarshal %s", sub[1], strings.TrimSpace(key), sub[2])
	})
	msg = strings.TrimPrefix(msg, "yaml: ")
	msg = strings.ReplaceAll(msg, "unmarshal errors:\n  ", "")
	return strings.ReplaceAll(msg, "\n  ", "; ")
}

// FieldNames lists the YAML keys of struct type t, in order.
func FieldNames(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

// SectionNames describes a struct type and the struct types of its
// fields for Explain: the root as "the <what> (fields: ...)", each
// section as "<key> (fields: ...)".
func SectionNames(root reflect.Type, what string) map[string]string {
	names := map[string]string{root.String(): fmt.Sprintf("the %s (fields: %s)", what, strings.Join(FieldNames(root), ", "))}
	for i := range root.NumField() {
		f := root.Field(i)
		key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if f.Type.Kind() == reflect.Struct && key != "" {
			names[f.Type.String()] = fmt.Sprintf("%s (fields: %s)", key, strings.Join(FieldNames(f.Type), ", "))
		}
	}
	return names
}

package sim

import (
	"fmt"
	"math"
	"reflect"
	"strings"
)

// Field returns the numeric profile field at path, named as in a profile
// file ("nic.qp_cache_entries", "host.lock_ns"), and whether it is a
// whole-number field. It fails, naming the path, when the profile has no
// such numeric field. The sensitivity analysis and the evidence suite's
// fits move parameters through Field and WithField, so that any field a
// profile file can set is reachable by its name.
func (p *Profile) Field(path string) (v float64, whole bool, err error) {
	f, err := p.field(path)
	if err != nil {
		return 0, false, err
	}
	if f.CanInt() {
		return float64(f.Int()), true, nil
	}
	return f.Float(), false, nil
}

// WithField returns a copy of p with the numeric field at path set to v,
// validated as a profile file is, so a value outside the field's range is
// an error naming it. A whole-number field takes only whole numbers. p is
// not changed.
func (p *Profile) WithField(path string, v float64) (*Profile, error) {
	q := *p // a Profile is plain values: the copy is independent
	f, err := q.field(path)
	if err != nil {
		return nil, err
	}
	if f.CanInt() {
		if v != math.Trunc(v) || math.Abs(v) > 1<<53 {
			return nil, fmt.Errorf("profile field %s: %g is not a whole number", path, v)
		}
		f.SetInt(int64(v))
	} else {
		f.SetFloat(v)
	}
	if err := q.Validate(); err != nil {
		return nil, fmt.Errorf("%s = %g on profile %s: %w", path, v, p.Name, err)
	}
	return &q, nil
}

// field finds the numeric field at path (its YAML names) in p's struct.
func (p *Profile) field(path string) (reflect.Value, error) {
	v := reflect.ValueOf(p).Elem()
	keys := strings.Split(path, ".")
	for i, k := range keys {
		if v.Kind() != reflect.Struct {
			return reflect.Value{}, fmt.Errorf("profile %s has no numeric field %q", p.Name, path)
		}
		next, ok := reflect.Value{}, false
		for j := 0; j < v.NumField(); j++ {
			sf := v.Type().Field(j)
			if name, _, _ := strings.Cut(sf.Tag.Get("yaml"), ","); sf.IsExported() && name == k {
				next, ok = v.Field(j), true
				break
			}
		}
		if !ok {
			if i < len(keys)-1 {
				return reflect.Value{}, fmt.Errorf("profile %s has no section %q (field %q)", p.Name, k, path)
			}
			return reflect.Value{}, fmt.Errorf("profile %s has no numeric field %q", p.Name, path)
		}
		v = next
	}
	switch v.Kind() {
	case reflect.Int, reflect.Int64, reflect.Float64:
		return v, nil
	}
	return reflect.Value{}, fmt.Errorf("profile %s has no numeric field %q", p.Name, path)
}

package results

import (
	"encoding"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
)

// CSVHeader returns WriteCSV's column names: sweep (the sweep's name: a
// figure's CSV joins several sweeps, whose point numbers restart), point,
// key, the run record's JSON field names, error.
func CSVHeader() []string {
	h := []string{"sweep", "point", "key"}
	rt := reflect.TypeFor[Record]()
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		if name == "-" || name == "" {
			continue
		}
		h = append(h, name)
	}
	return append(h, "error")
}

// WriteCSV writes results to path as CSV with the CSVHeader columns; a
// failed point has empty record columns and its error.
func WriteCSV(path string, rs []Result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	w.Write(CSVHeader())
	rt := reflect.TypeFor[Record]()
	for _, r := range rs {
		row := []string{r.Sweep, strconv.Itoa(r.Point), r.Key}
		for i := range rt.NumField() {
			name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
			if name == "-" || name == "" {
				continue
			}
			if r.Record == nil {
				row = append(row, "")
				continue
			}
			row = append(row, csvValue(reflect.ValueOf(r.Record).Elem().Field(i)))
		}
		w.Write(append(row, r.Error))
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func csvValue(v reflect.Value) string {
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case reflect.Pointer: // absent: empty; else as in the JSON record
		if v.IsNil() {
			return ""
		}
		b, err := json.Marshal(v.Interface())
		if err != nil {
			return err.Error()
		}
		return string(b)
	case reflect.Struct: // a value with a text form (the network) is written as records write it
		if t, ok := v.Interface().(encoding.TextMarshaler); ok {
			b, err := t.MarshalText()
			if err != nil {
				return err.Error()
			}
			return string(b)
		}
	}
	return fmt.Sprint(v.Interface())
}

// Metric returns a y function for SeriesOf: the numeric run-record field
// with JSON name name (throughput_gibps, response_s, setup_ms, ...).
func Metric(name string) (func(Result) float64, error) {
	rt := reflect.TypeFor[Record]()
	var numeric []string
	for i := range rt.NumField() {
		f := rt.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch f.Type.Kind() {
		case reflect.Int, reflect.Int64, reflect.Uint64, reflect.Float64:
		default:
			continue
		}
		if tag == name {
			return func(r Result) float64 {
				v := reflect.ValueOf(r.Record).Elem().Field(i)
				switch v.Kind() {
				case reflect.Float64:
					return v.Float()
				case reflect.Uint64:
					return float64(v.Uint())
				}
				return float64(v.Int())
			}, nil
		}
		numeric = append(numeric, tag)
	}
	return nil, fmt.Errorf("metric %q: want a numeric field of the run record: %s", name, strings.Join(numeric, ", "))
}

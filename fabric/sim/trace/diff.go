package trace

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
)

// Divergence is where two traces first part.
type Divergence struct {
	// Index is the position (from 1) of the first event in which the
	// traces differ; 0 when they are identical.
	Index uint64 `json:"index"`
	// Before holds up to the context's number of events the traces share
	// just before Index (the last of them at Index-1).
	Before []Event `json:"before,omitempty"`
	// A and B hold each trace's events from Index on (up to the context's
	// number plus one); an empty one means that trace ended there.
	A []Event `json:"a,omitempty"`
	B []Event `json:"b,omitempty"`
	// Events is the number of events the traces share (all of them when
	// identical).
	Events uint64 `json:"events"`
	// Header lists the header fields in which the runs differ, as
	// "field: a | b".
	Header []string `json:"header,omitempty"`
}

// Identical says whether the traces hold the same events.
func (d *Divergence) Identical() bool { return d.Index == 0 }

// Diff reads two traces in step and returns where they first differ,
// with context events of each side around the divergence.
func Diff(a, b *Reader, context int) (*Divergence, error) {
	context = max(context, 0)
	d := &Divergence{Header: headerDiff(a.Header, b.Header)}
	ring := make([]Event, 0, context)
	for {
		ea, errA := a.Read()
		eb, errB := b.Read()
		if errA != nil && errA != io.EOF {
			return nil, fmt.Errorf("first trace: %w", errA)
		}
		if errB != nil && errB != io.EOF {
			return nil, fmt.Errorf("second trace: %w", errB)
		}
		if errA == io.EOF && errB == io.EOF {
			return d, nil
		}
		if errA == nil && errB == nil && ea == eb {
			d.Events++
			if context > 0 {
				if len(ring) == context {
					ring = append(ring[:0], ring[1:]...)
				}
				ring = append(ring, ea)
			}
			continue
		}
		d.Index, d.Before = d.Events+1, ring
		var err error
		if d.A, err = take(a, ea, errA, context+1); err != nil {
			return nil, fmt.Errorf("first trace: %w", err)
		}
		if d.B, err = take(b, eb, errB, context+1); err != nil {
			return nil, fmt.Errorf("second trace: %w", err)
		}
		return d, nil
	}
}

// take returns first (unless the trace had ended) and up to n-1 more.
func take(r *Reader, first Event, err error, n int) ([]Event, error) {
	if err == io.EOF {
		return nil, nil
	}
	out := []Event{first}
	for len(out) < n {
		e, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, nil
}

// headerDiff lists the run fields whose values differ.
func headerDiff(a, b Header) []string {
	keys := map[string]bool{}
	for k := range a.Run {
		keys[k] = true
	}
	for k := range b.Run {
		keys[k] = true
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		va, vb := show(a.Run[k]), show(b.Run[k])
		if va != vb {
			out = append(out, fmt.Sprintf("%s: %s | %s", k, va, vb))
		}
	}
	return out
}

func show(v any) string {
	if v == nil {
		return "(absent)"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// Format writes the divergence for a person: the header differences, the
// shared events before it, then each trace's events from it on, the
// differing fields of the first pair named.
func (d *Divergence) Format(w io.Writer, nameA, nameB string) {
	if len(d.Header) > 0 {
		fmt.Fprintf(w, "the runs differ in their configuration (%s | %s):\n", nameA, nameB)
		for _, h := range d.Header {
			fmt.Fprintf(w, "  %s\n", h)
		}
	}
	if d.Identical() {
		fmt.Fprintf(w, "the traces are identical: %d events\n", d.Events)
		return
	}
	fmt.Fprintf(w, "the traces agree on %d events and part at event %d", d.Events, d.Index)
	if len(d.A) > 0 && len(d.B) > 0 {
		fmt.Fprintf(w, " (%s)", fieldsDiffering(&d.A[0], &d.B[0]))
	}
	fmt.Fprintln(w, ":")
	for i, e := range d.Before {
		fmt.Fprintf(w, "  #%-9d %s\n", d.Index-uint64(len(d.Before)-i), e.String())
	}
	side := func(name string, evs []Event) {
		if len(evs) == 0 {
			fmt.Fprintf(w, "%s: ends after event %d\n", name, d.Index-1)
			return
		}
		fmt.Fprintf(w, "%s:\n", name)
		for i, e := range evs {
			mark := " "
			if i == 0 {
				mark = ">"
			}
			fmt.Fprintf(w, "%s #%-9d %s\n", mark, d.Index+uint64(i), e.String())
		}
	}
	side(nameA, d.A)
	side(nameB, d.B)
}

// fieldsDiffering names the fields in which two events differ.
func fieldsDiffering(a, b *Event) string {
	var f []string
	add := func(differ bool, name string) {
		if differ {
			f = append(f, name)
		}
	}
	add(a.At != b.At, "time")
	add(a.Source != b.Source, "source")
	add(a.Node != b.Node || a.Unit != b.Unit || a.Name != b.Name, "component")
	add(a.What != b.What || a.Arg != b.Arg || a.Value != b.Value, "event")
	add(a.Pkt != b.Pkt, "packet")
	return "differs in " + joinAnd(f)
}

func joinAnd(s []string) string {
	switch len(s) {
	case 0:
		return "nothing"
	case 1:
		return s[0]
	}
	out := ""
	for i, x := range s {
		switch {
		case i == 0:
		case i == len(s)-1:
			out += " and "
		default:
			out += ", "
		}
		out += x
	}
	return out
}

package fabric

import "bytes"

// PackedRow is one node's slices for an OOB.Exchange, copied into one
// allocation (the caller keeps its slices; each goes to one node only):
// slice j is buf[ends[j-1]:ends[j]]. Offsets, not n slices, so that the
// collector has one pointer per node to follow, not n. The backends'
// Exchange implementations keep what each node gives in these.
type PackedRow struct {
	buf  []byte
	ends []int
}

// PackRow copies out into one PackedRow.
func PackRow(out [][]byte) PackedRow {
	p := PackedRow{buf: bytes.Join(out, nil), ends: make([]int, len(out))} // Join does not clear first
	at := 0
	for j, d := range out {
		at += len(d)
		p.ends[j] = at
	}
	return p
}

// Entry is the slice for node j, capped at its length; nil when empty.
func (p PackedRow) Entry(j int) []byte {
	start := 0
	if j > 0 {
		start = p.ends[j-1]
	}
	if p.ends[j] == start {
		return nil
	}
	return p.buf[start:p.ends[j]:p.ends[j]]
}

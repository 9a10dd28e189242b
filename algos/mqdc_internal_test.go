package algos

import (
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// TestDCPoolPick: how an endpoint chooses the DCI for a destination. A
// destination with requests outstanding stays on their DCI (order), one
// a DCI was last connected to goes there, any other takes the least
// recently used idle DCI, and when all are busy, the least loaded (the
// least recently used of those tied).
func TestDCPoolPick(t *testing.T) {
	for _, tc := range []struct {
		name string
		busy []int // per DCI
		to   []int // per DCI: last destination
		last []uint64
		pend map[int]int // destination -> DCI with requests outstanding
		d    int
		want int
	}{
		{"outstanding keeps its DCI", []int{3, 0, 0}, []int{5, 1, 2}, []uint64{3, 1, 2}, map[int]int{7: 0}, 7, 0},
		{"last target, idle", []int{2, 0, 0}, []int{4, 7, 2}, []uint64{3, 1, 2}, nil, 7, 1},
		{"last target, busy with it", []int{0, 2, 0}, []int{4, 7, 2}, []uint64{3, 1, 2}, map[int]int{7: 1}, 7, 1},
		{"new target: least recently used idle", []int{1, 0, 0}, []int{4, 1, 2}, []uint64{1, 3, 2}, nil, 9, 2},
		{"all busy: least loaded", []int{3, 1, 2}, []int{4, 1, 2}, []uint64{1, 3, 2}, nil, 9, 1},
		{"all busy, tied: least recently used", []int{2, 1, 1}, []int{4, 1, 2}, []uint64{1, 3, 2}, nil, 9, 2},
		{"before any request", []int{0, 0, 0}, []int{-1, -1, -1}, []uint64{0, 0, 0}, nil, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &dcPool{busy: tc.busy, to: tc.to, last: tc.last, pend: make([]int, 10), on: make([]int, 10), dcis: make([]fabric.QP, len(tc.busy))}
			for d, k := range tc.pend {
				p.pend[d], p.on[d] = 1, k
			}
			if got := p.pick(tc.d); got != tc.want {
				t.Fatalf("pick(%d) = DCI %d, want %d", tc.d, got, tc.want)
			}
			if p.to[tc.want] != tc.d || p.on[tc.d] != tc.want || p.last[tc.want] != p.picks {
				t.Fatalf("after the pick: DCI %d's target %d, destination %d on DCI %d", tc.want, p.to[tc.want], tc.d, p.on[tc.d])
			}
		})
	}
}

// TestDCPoolCompleted: a DCI completes its requests in order, so each
// completion frees the oldest request's destination; once a
// destination's last request has completed it may take another DCI.
func TestDCPoolCompleted(t *testing.T) {
	p := &dcPool{of: map[uint32]int{0x10: 0, 0x11: 1}, busy: []int{0, 0}, to: []int{-1, -1}, last: []uint64{0, 0},
		dests: make([][]int, 2), pend: make([]int, 4), on: make([]int, 4), dcis: make([]fabric.QP, 2)}
	k := p.pick(2)
	p.posted(k, 2, 2)
	j := p.pick(3)
	p.posted(j, 3, 1)
	if k == j || p.busy[k] != 2 || p.pend[2] != 2 || p.pend[3] != 1 {
		t.Fatalf("posted: DCIs %d and %d, busy %v, pending %v", k, j, p.busy, p.pend)
	}
	p.completed(fabric.WC{QPN: 0x10 + uint32(k)})
	if p.pend[2] != 1 || p.busy[k] != 1 || p.pick(2) != k {
		t.Fatalf("after one completion: pending %v, busy %v", p.pend, p.busy)
	}
	p.completed(fabric.WC{QPN: 0x10 + uint32(k)})
	p.completed(fabric.WC{QPN: 0x99}) // another queue pair's: ignored
	if p.pend[2] != 0 || p.busy[k] != 0 || len(p.dests[k]) != 0 {
		t.Fatalf("after both: pending %v, busy %v, queued %v", p.pend, p.busy, p.dests[k])
	}
}

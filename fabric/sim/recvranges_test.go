package sim

import (
	"math/rand/v2"
	"testing"
)

// TestRecvRangesAgainstScan: a region's posted receive ranges, added and
// removed in random orders (mostly in address order and without overlap,
// as programs post them, sometimes over each other), are found and
// overlapped exactly as a scan of every range finds them, whatever
// findRecv's first guess was.
func TestRecvRangesAgainstScan(t *testing.T) {
	for seed := uint64(1); seed <= 40; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		m := &mr{buf: make([]byte, 1<<14)}
		var posted [][2]int
		slice := func(lo, hi int) []byte { return m.buf[lo:hi] }
		next := 0
		for step := 0; step < 400; step++ {
			switch r := rng.IntN(10); {
			case r < 6 || len(posted) == 0: // post
				var lo, n int
				if rng.IntN(4) > 0 { // the next slot in address order
					lo, n = next%(1<<14-64), 16+rng.IntN(48)
					next = lo + n
				} else { // anywhere, perhaps over another
					lo, n = rng.IntN(1<<14-64), 1+rng.IntN(63)
				}
				m.addRecv(slice(lo, lo+n), 0)
				posted = append(posted, [2]int{lo, lo + n})
			default: // complete one
				k := rng.IntN(len(posted))
				m.removeRecv(slice(posted[k][0], posted[k][1]))
				posted = append(posted[:k], posted[k+1:]...)
			}
			live := 0
			for _, r := range m.recvs {
				if r.n > 0 {
					live++
				}
			}
			if live != m.live {
				t.Fatalf("seed %d step %d: %d ranges posted, live counts %d", seed, step, live, m.live)
			}
			for i := 1; i < len(m.recvs); i++ {
				if !recvBefore(m.recvs[i-1], m.recvs[i].lo, m.recvs[i].hi) {
					t.Fatalf("seed %d step %d: ranges out of order at %d: %+v", seed, step, i, m.recvs)
				}
			}
			for q := 0; q < 8; q++ {
				m.recvAt = rng.IntN(len(m.recvs) + 3) // any first guess
				lo := uint64(rng.IntN(1 << 14))
				hi := lo + uint64(rng.IntN(80))
				if q%2 == 0 && len(posted) > 0 { // an existing range
					p := posted[rng.IntN(len(posted))]
					lo, hi = uint64(p[0]), uint64(p[1])
				}
				wantAt, wantFound := len(m.recvs), false
				for i, r := range m.recvs {
					if !recvBefore(r, lo, hi) {
						wantAt, wantFound = i, r.lo == lo && r.hi == hi
						break
					}
				}
				if at, found := m.findRecv(lo, hi); at != wantAt || found != wantFound {
					t.Fatalf("seed %d step %d: findRecv(%d, %d) = %d, %v; a scan finds %d, %v", seed, step, lo, hi, at, found, wantAt, wantFound)
				}
				m.recvAt = rng.IntN(len(m.recvs) + 3)
				wantFirst, wantOK := 0, false
				for i, r := range m.recvs {
					if r.lo < hi && r.hi > lo && r.n > 0 {
						wantFirst, wantOK = i, true
						break
					}
				}
				if first, ok := m.overlapRecv(lo, hi); first != wantFirst || ok != wantOK {
					t.Fatalf("seed %d step %d (%d shared): overlapRecv(%d, %d) = %d, %v; a scan finds %d, %v", seed, step, m.shared, lo, hi, first, ok, wantFirst, wantOK)
				}
			}
		}
	}
}

package algos

import (
	"fmt"
	"testing"
)

// TestBcastAlgorithm: MPICH's choice (ibcast.c, MPIR_Ibcast_sched_intra)
// with its default thresholds.
func TestBcastAlgorithm(t *testing.T) {
	for _, tc := range []struct {
		n, bytes int
		want     string
	}{
		{2, 65536, bcastBinomial},
		{7, 1 << 20, bcastBinomial},
		{16, 12287, bcastBinomial},
		{8, 12288, bcastScatterRecDbl},
		{16, 65536, bcastScatterRecDbl},
		{16, 524287, bcastScatterRecDbl},
		{16, 524288, bcastScatterRing},
		{12, 65536, bcastScatterRing},
		{9, 12288, bcastScatterRing},
	} {
		if got := bcastAlgorithm(tc.n, tc.bytes); got != tc.want {
			t.Errorf("%d processes, %d bytes: %s, want %s", tc.n, tc.bytes, got, tc.want)
		}
	}
}

// TestBcastSchedule runs every node's schedule against the others' as
// the progress engine would (a step starts once the one before has
// completed; a receive completes once its sender has reached the
// matching send) and checks that every send meets exactly one receive of
// the same piece, that no schedule deadlocks, and that every node ends
// with every byte of the message.
func TestBcastSchedule(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 5, 7, 8, 9, 12, 16, 17, 32} {
		for _, bytes := range []int{1, 100, 12287, 12288, 65536, 65539, 524288, 1<<20 + 3} {
			for _, root := range []int{0, n / 2, n - 1} {
				t.Run(fmt.Sprintf("n%d/b%d/r%d", n, bytes, root), func(t *testing.T) {
					checkBcast(t, n, bytes, root)
				})
			}
		}
	}
}

func checkBcast(t *testing.T, n, bytes, root int) {
	t.Helper()
	scheds := make([][][]bcastOp, n)
	for me := range n {
		scheds[me] = bcastSchedule(n, me, root, bytes)
	}
	if n == 1 {
		if len(scheds[0]) != 0 {
			t.Fatalf("one node: %d steps", len(scheds[0]))
		}
		return
	}
	// Pair every send with one receive: (src, dst, off) -> count.
	type key struct{ src, dst, off, n int }
	sends, recvs := map[key]int{}, map[key]int{}
	for me, s := range scheds {
		for _, step := range s {
			for _, op := range step {
				if op.send {
					sends[key{me, op.peer, op.off, op.n}]++
				} else {
					recvs[key{op.peer, me, op.off, op.n}]++
				}
			}
		}
	}
	for k, c := range sends {
		if recvs[k] != c {
			t.Fatalf("send %+v x%d meets %d receives", k, c, recvs[k])
		}
	}
	for k, c := range recvs {
		if sends[k] != c {
			t.Fatalf("receive %+v x%d meets %d sends", k, c, sends[k])
		}
	}
	// Run: posted sends per (src, dst, off); a receive completes when its
	// send is posted; a step is done when its receives are.
	step := make([]int, n)
	posted := map[key]int{}
	have := make([][]bool, n)
	for me := range n {
		have[me] = make([]bool, bytes)
	}
	for i := range bytes {
		have[root][i] = true
	}
	started := make([]bool, n)
	for progress := true; progress; {
		progress = false
		for me := range n {
			s := scheds[me]
			if step[me] == len(s) {
				continue
			}
			ops := s[step[me]]
			if !started[me] {
				started[me] = true
				for _, op := range ops {
					if op.send {
						for i := op.off; i < op.off+op.n; i++ {
							if !have[me][i] {
								t.Fatalf("node %d sends byte %d to node %d before it has it", me, i, op.peer)
							}
						}
						posted[key{me, op.peer, op.off, op.n}]++
					}
				}
			}
			ready := true
			for _, op := range ops {
				if !op.send && posted[key{op.peer, me, op.off, op.n}] == 0 {
					ready = false
				}
			}
			if !ready {
				continue
			}
			for _, op := range ops {
				if !op.send {
					posted[key{op.peer, me, op.off, op.n}]--
					for i := op.off; i < op.off+op.n; i++ {
						have[me][i] = true
					}
				}
			}
			step[me]++
			started[me] = false
			progress = true
		}
	}
	for me := range n {
		if step[me] != len(scheds[me]) {
			t.Fatalf("node %d stuck at step %d of %d (%s)", me, step[me], len(scheds[me]), bcastAlgorithm(n, bytes))
		}
		for i, ok := range have[me] {
			if !ok {
				t.Fatalf("node %d ends without byte %d (%s)", me, i, bcastAlgorithm(n, bytes))
			}
		}
	}
}

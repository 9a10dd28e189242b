package sim

import "github.com/rdmashuffle/rdmashuffle/fabric"

// timerHeap holds at most one deadline per thread (Thread.Wait's
// deadline), so that threads that wait with ever-new deadlines do not fill
// the event queue with stale wake-ups. It is an indexed binary heap ordered
// like the event queue, by (time, sequence).
type timerHeap struct{ h []*thread }

func (t *timerHeap) less(a, b *thread) bool {
	return a.tAt < b.tAt || (a.tAt == b.tAt && a.tSeq < b.tSeq)
}

func (t *timerHeap) peek() *thread {
	if len(t.h) == 0 {
		return nil
	}
	return t.h[0]
}

// set arms or moves th's deadline.
func (t *timerHeap) set(th *thread, at fabric.Time, seq uint64) {
	th.tAt, th.tSeq = at, seq
	if th.tIdx < 0 {
		th.tIdx = len(t.h)
		t.h = append(t.h, th)
	}
	t.fix(th.tIdx)
}

// clear disarms th's deadline, if any.
func (t *timerHeap) clear(th *thread) {
	i := th.tIdx
	if i < 0 {
		return
	}
	n := len(t.h) - 1
	t.swap(i, n)
	t.h[n] = nil
	t.h = t.h[:n]
	th.tIdx = -1
	if i < n {
		t.fix(i)
	}
}

func (t *timerHeap) swap(i, j int) {
	t.h[i], t.h[j] = t.h[j], t.h[i]
	t.h[i].tIdx, t.h[j].tIdx = i, j
}

func (t *timerHeap) fix(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !t.less(t.h[i], t.h[p]) {
			break
		}
		t.swap(i, p)
		i = p
	}
	for {
		l, m := 2*i+1, i
		if l < len(t.h) && t.less(t.h[l], t.h[m]) {
			m = l
		}
		if r := l + 1; r < len(t.h) && t.less(t.h[r], t.h[m]) {
			m = r
		}
		if m == i {
			return
		}
		t.swap(i, m)
		i = m
	}
}

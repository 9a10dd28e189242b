package adaptive

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// TestLaneRule drives a receiver lane event by event through the cases of
// Liu19 §6.
func TestLaneRule(t *testing.T) {
	l, err := NewLane(2, 1, 4)
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// Both buffers fill; the receiver takes one while the other is ready:
	// over-supply, so the taken one is marked to retire.
	must(l.Filled())
	must(l.Filled())
	if l.Starving() {
		t.Fatal("starving with two buffers ready")
	}
	retire, err := l.Take()
	must(err)
	if !retire {
		t.Fatal("a buffer taken while another is ready must be marked")
	}
	// Marked buffers leave only after consumption: the circulation is
	// still 2 while it is lent.
	if l.Circulation() != 2 {
		t.Fatalf("circulation %d while the marked buffer is consumed", l.Circulation())
	}
	must(l.Return(true))
	if l.Circulation() != 1 {
		t.Fatalf("circulation %d after retiring", l.Circulation())
	}
	// The last ready buffer: taken with nothing else ready, and at min:
	// not marked.
	if retire, err = l.Take(); err != nil || retire {
		t.Fatalf("take at min: retire=%v err=%v", retire, err)
	}
	// Nothing ready, nothing waiting: starving; grow.
	if !l.Starving() {
		t.Fatal("not starving with no buffer ready or waiting")
	}
	must(l.Grow())
	must(l.Return(false))
	if l.Circulation() != 2 || l.Waiting() != 2 || l.Stats().Grown != 1 || l.Stats().Retired != 1 {
		t.Fatalf("lane %+v", *l)
	}
	// Never beyond max.
	for l.Circulation() < 4 {
		must(l.Grow())
	}
	if err := l.Grow(); err == nil {
		t.Fatal("grew beyond max")
	}
	for _, bad := range [][3]int{{0, 0, 1}, {1, 2, 3}, {5, 1, 4}, {1, 1, 0}} {
		if _, err := NewLane(bad[0], bad[1], bad[2]); err == nil {
			t.Errorf("NewLane%v accepted", bad)
		}
	}
}

// TestLaneInvariants: random legal event sequences keep the circulation
// within [min, max], never lose a buffer, and retire only marked ones.
func TestLaneInvariants(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 200; trial++ {
		minB, maxB := 1+r.IntN(3), 4+r.IntN(8)
		l, _ := NewLane(minB, minB, maxB)
		var lent []bool // marks of lent buffers
		retired := 0
		for step := 0; step < 500; step++ {
			switch r.IntN(4) {
			case 0:
				if l.Waiting() > 0 {
					if err := l.Filled(); err != nil {
						t.Fatal(err)
					}
				}
			case 1:
				if l.Ready() > 0 {
					m, err := l.Take()
					if err != nil {
						t.Fatal(err)
					}
					lent = append(lent, m)
				}
			case 2:
				if len(lent) > 0 {
					i := r.IntN(len(lent))
					if err := l.Return(lent[i]); err != nil {
						t.Fatal(err)
					}
					if lent[i] {
						retired++
					}
					lent = append(lent[:i], lent[i+1:]...)
				}
			case 3:
				if l.Hungry() {
					if err := l.Grow(); err != nil {
						t.Fatal(err)
					}
				}
			}
			c := l.Circulation()
			if c < minB-0 && len(lent) == 0 || c > maxB {
				t.Fatalf("trial %d step %d: circulation %d outside [%d, %d]", trial, step, c, minB, maxB)
			}
			if int64(minB)+l.Stats().Grown-l.Stats().Retired != int64(c) || l.Stats().Retired != int64(retired) {
				t.Fatalf("trial %d: buffers lost: %+v, circulation %d", trial, l.Stats(), c)
			}
			if l.Lent() != len(lent) {
				t.Fatalf("lent %d, tracked %d", l.Lent(), len(lent))
			}
		}
	}
}

func TestSenderLane(t *testing.T) {
	l, _ := NewLane(4, 2, 8)
	if got := l.Shed(); got != 2 {
		t.Fatalf("4 free, min 2: shed %d, want 2 (all but one, down to min)", got)
	}
	if err := l.RetireFree(3); err == nil {
		t.Fatal("retired below min")
	}
	if err := l.RetireFree(2); err != nil {
		t.Fatal(err)
	}
	if err := l.TakeFree(); err != nil {
		t.Fatal(err)
	}
	if err := l.TakeFree(); err != nil {
		t.Fatal(err)
	}
	if !l.Starving() {
		t.Fatal("sender with nothing free is starving")
	}
}

// fake backend: a PD that registers plain memory and counts.
type fakePD struct {
	fabric.PD
	regs, deregs int
}
type fakeMR struct {
	fabric.MR
	pd  *fakePD
	mem []byte
}
type fakeMu struct{}

func (fakeMu) Lock()   {}
func (fakeMu) Unlock() {}

func (p *fakePD) RegMR(n int, _ fabric.Access) (fabric.MR, error) {
	p.regs++
	return &fakeMR{pd: p, mem: make([]byte, n)}, nil
}
func (m *fakeMR) Dereg() error  { m.pd.deregs++; return nil }
func (m *fakeMR) Bytes() []byte { return m.mem }

// TestPoolCapAndAccounting: buffers are registered in chunks and reused
// before registering more, the cap is never exceeded (idle chunks are
// deregistered first, a chunk shrinks to what fits), and after Close every
// registered byte is accounted for.
func TestPoolCapAndAccounting(t *testing.T) {
	pd := &fakePD{}
	p, err := NewPool(pd, fakeMu{}, 10_000, fabric.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	get := func(size int) *Buf {
		t.Helper()
		b, err := p.Get(size)
		if err != nil {
			t.Fatal(err)
		}
		if len(b.Bytes()) != size {
			t.Fatalf("buffer of %d bytes, want %d", len(b.Bytes()), size)
		}
		return b
	}
	var bufs []*Buf
	for i := 0; i < 8; i++ {
		bufs = append(bufs, get(1000))
	}
	if pd.regs != 1 || p.Stats().Registered != 8000 {
		t.Fatalf("8 buffers should come from one chunk: %d registrations, %+v", pd.regs, p.Stats())
	}
	a, b := get(1000), get(1000) // a chunk of 2: all that fits under the cap
	if pd.regs != 2 || p.Stats().Registered != 10_000 {
		t.Fatalf("second chunk: %d registrations, %+v", pd.regs, p.Stats())
	}
	if _, err := p.Get(1000); !errors.Is(err, ErrPinnedCap) {
		t.Fatalf("over the cap: %v", err)
	}
	p.Put(a)
	p.Put(b)
	if c := get(1000); pd.regs != 2 || c.chunk != a.chunk {
		t.Fatalf("an idle buffer must be reused (%d registrations)", pd.regs)
	} else {
		p.Put(c)
	}
	// A new size: the idle chunk of two goes, then one 1500-byte buffer fits.
	big := get(1500)
	if st := p.Stats(); st.Registered != 9500 || st.Deregistrations != 1 || st.Registered > 10_000 {
		t.Fatalf("memory pressure: %+v", st)
	}
	if err := p.Put(&Buf{}); err == nil {
		t.Fatal("Put of a foreign buffer accepted")
	}
	if err := p.Close(); err == nil || !strings.Contains(err.Error(), "still lent") {
		t.Fatalf("close with lent buffers: %v", err)
	}
	for _, b := range append(bufs, big) {
		if err := p.Put(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	st := p.Stats()
	if st.RegisteredTotal != st.DeregisteredTotal+st.Registered || st.Registered != 0 || pd.regs != pd.deregs {
		t.Fatalf("accounting after close: %+v, %d registrations, %d deregistrations", st, pd.regs, pd.deregs)
	}
}

func TestBDP(t *testing.T) {
	for _, tc := range []struct {
		bw, rtt float64
		msg     int
		want    int
		bad     bool
	}{
		{12.5e9, 2e-6, 4096, 7, false},
		{1, 1e-9, 4096, 1, false},
		{0, 1, 1, 0, true},
		{1, -1, 1, 0, true},
	} {
		got, err := BDPBuffers(tc.bw, tc.rtt, tc.msg)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("BDPBuffers(%g, %g, %d) = %d, %v; want %d", tc.bw, tc.rtt, tc.msg, got, err, tc.want)
		}
	}
}

// TestLaneObserve: the time integrals give the mean circulation and the
// mean buffers per state.
func TestLaneObserve(t *testing.T) {
	l, _ := NewLane(2, 1, 8)
	l.Observe(0)
	l.Observe(100) // 2 waiting for 100
	l.Filled()
	l.Observe(300) // 1 waiting, 1 ready for 200
	l.Grow()
	l.Observe(400) // 2 waiting, 1 ready for 100
	st := l.Stats()
	if st.Span != 400 || st.CircTime != 2*100+2*200+3*100 {
		t.Fatalf("circulation integral %v over %d", st.CircTime, st.Span)
	}
	if st.StateTime != [3]float64{2*100 + 1*200 + 2*100, 200 + 100, 0} {
		t.Fatalf("state integrals %v", st.StateTime)
	}
}

package flowctl

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

func TestCreditSender(t *testing.T) {
	var s CreditSender
	if err := s.Consume(); !errors.Is(err, ErrNoCredit) {
		t.Fatalf("consume without credit: %v", err)
	}
	if !s.Update(2) || s.Available() != 2 {
		t.Fatalf("update to 2: available %d", s.Available())
	}
	if s.Update(1) { // stale: a reordered older write-back
		t.Fatal("a lower absolute credit must be ignored")
	}
	for i := 0; i < 2; i++ {
		if err := s.Consume(); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Consume(); !errors.Is(err, ErrNoCredit) {
		t.Fatalf("third consume on credit 2: %v", err)
	}
	s.Update(5)
	if s.Owed() != 3 || s.Sent() != 2 || s.Credit() != 5 {
		t.Fatalf("owed %d sent %d credit %d", s.Owed(), s.Sent(), s.Credit())
	}
}

func TestCreditReceiverWriteBack(t *testing.T) {
	for _, tc := range []struct {
		every  int
		posts  []int
		writes []uint64 // value written after each post, 0 for none
	}{
		{1, []int{1, 1, 1}, []uint64{1, 2, 3}},
		{2, []int{1, 1, 1, 1}, []uint64{0, 2, 0, 4}},
		{2, []int{3, 1}, []uint64{3, 0}},
		{16, []int{8, 8, 1}, []uint64{0, 16, 0}},
	} {
		t.Run(fmt.Sprintf("every=%d/%v", tc.every, tc.posts), func(t *testing.T) {
			r, err := NewCreditReceiver(tc.every)
			if err != nil {
				t.Fatal(err)
			}
			for i, n := range tc.posts {
				v, ok := r.Posted(n)
				if want := tc.writes[i]; ok != (want != 0) || v != want {
					t.Fatalf("post %d: wrote %d (%v), want %d", i, v, ok, want)
				}
			}
		})
	}
	if _, err := NewCreditReceiver(0); err == nil {
		t.Fatal("frequency 0 must be rejected")
	}
}

func TestCreditReceiverFlushAndClose(t *testing.T) {
	r, _ := NewCreditReceiver(4)
	r.Posted(3)
	if v, ok := r.Flush(); !ok || v != 3 {
		t.Fatalf("flush: %d %v", v, ok)
	}
	if v, ok := r.Flush(); !ok || v != 3 {
		t.Fatalf("a repeated flush must repeat the value (a write-back may be lost): %d %v", v, ok)
	}
	r.Posted(2)
	if total := r.Close(); total != 3 {
		t.Fatalf("close: %d credited, want 3 (the 2 unwritten receives were never credited)", total)
	}
	if _, ok := r.Posted(10); ok {
		t.Fatal("no credit after close")
	}
}

// TestCreditReceiverFlushValue: FlushValue is what Flush would return,
// and leaves the value unwritten, so that the write-back of the next
// posting still falls due.
func TestCreditReceiverFlushValue(t *testing.T) {
	r, _ := NewCreditReceiver(2)
	if _, ok := r.FlushValue(); ok {
		t.Fatal("a value before any receive was posted")
	}
	r.Posted(2)
	r.Posted(1)
	if v, ok := r.FlushValue(); !ok || v != 3 || r.Written() != 2 {
		t.Fatalf("FlushValue %d %v, written %d; want 3, true and 2 still written", v, ok, r.Written())
	}
	if v, ok := r.Posted(1); !ok || v != 4 {
		t.Fatalf("after FlushValue the next write-back is %d %v, want 4 due", v, ok)
	}
	r.Close()
	if _, ok := r.FlushValue(); ok {
		t.Fatal("a value after close")
	}
}

// TestCreditProtocolInvariants runs a sender and a receiver against a
// credit channel that loses, delays and reorders write-backs, event by
// event, for many seeds, and checks on every event that the sender never
// sends more than the receiver has posted receives for, that the stream
// never deadlocks while the receiver keeps posting, and that at the end
// sends and credited receives match (parity).
func TestCreditProtocolInvariants(t *testing.T) {
	for seed := uint64(1); seed <= 50; seed++ {
		for _, every := range []int{1, 2, 16} {
			t.Run(fmt.Sprintf("seed=%d/every=%d", seed, every), func(t *testing.T) {
				checkCredit(t, seed, every)
			})
		}
	}
}

func checkCredit(t *testing.T, seed uint64, every int) {
	r := rand.New(rand.NewPCG(seed, 7))
	var snd CreditSender
	rcv, _ := NewCreditReceiver(every)
	var inflight []uint64 // credit write-backs on their way, any order
	const data = 500      // data messages to send
	window := every + r.IntN(8)
	if v, ok := rcv.Posted(window); ok { // initial receives
		inflight = append(inflight, v)
	}
	delivered, sentData := uint64(0), 0
	for step := 0; step < 100000; step++ {
		switch r.IntN(4) {
		case 0: // the sender sends if it may
			if sentData < data && snd.Available() > 0 {
				if err := snd.Consume(); err != nil {
					t.Fatal(err)
				}
				sentData++
			}
		case 1: // a send arrives and its receive is reposted
			if delivered < snd.Sent() {
				delivered++
				if v, ok := rcv.Posted(1); ok {
					inflight = append(inflight, v)
				}
			}
		case 2: // a credit write-back arrives (any one of those in flight) or is lost
			if len(inflight) > 0 {
				i := r.IntN(len(inflight))
				v := inflight[i]
				inflight = append(inflight[:i], inflight[i+1:]...)
				if r.IntN(10) > 0 {
					snd.Update(v)
				}
			}
		case 3: // a receiver timer repeats the credit (rarely)
			if r.IntN(20) == 0 {
				if v, ok := rcv.Flush(); ok {
					inflight = append(inflight, v)
				}
			}
		}
		if snd.Sent() > rcv.PostedCount() {
			t.Fatalf("step %d: %d sent but only %d receives posted", step, snd.Sent(), rcv.PostedCount())
		}
		if sentData == data && delivered == snd.Sent() {
			break
		}
	}
	if sentData != data {
		t.Fatalf("stalled: %d of %d sent (credit %d)", sentData, data, snd.Credit())
	}
	// End of stream: the receiver stops issuing credit; the sender learns the
	// final value and sends empty messages until parity.
	total := rcv.Close()
	snd.Update(total)
	for snd.Owed() > 0 {
		if err := snd.Consume(); err != nil {
			t.Fatal(err)
		}
	}
	if snd.Sent() != total || total > rcv.PostedCount() {
		t.Fatalf("parity: %d sent, %d credited, %d posted", snd.Sent(), total, rcv.PostedCount())
	}
}

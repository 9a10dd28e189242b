package flowctl

import (
	"errors"
	"fmt"
)

// ErrNoCredit is returned when a sender tries to consume a credit it does
// not have.
var ErrNoCredit = errors.New("flowctl: no credit")

// CreditSender is the sending side of one connection (one destination).
// Counts are absolute since the connection opened and never wrap in
// practice (uint64).
type CreditSender struct {
	sent   uint64 // sends issued
	credit uint64 // last absolute credit received
}

// Available is how many sends may be issued now.
func (s *CreditSender) Available() uint64 { return s.credit - s.sent }

// Consume takes one credit for a send about to be posted.
func (s *CreditSender) Consume() error {
	if s.sent >= s.credit {
		return fmt.Errorf("%w: %d sent, credit %d", ErrNoCredit, s.sent, s.credit)
	}
	s.sent++
	return nil
}

// Update applies an absolute credit value written back by the receiver.
// Values can arrive out of order or be lost; a value below the current
// credit is stale and ignored. It reports whether the credit grew.
func (s *CreditSender) Update(absolute uint64) bool {
	if absolute <= s.credit {
		return false
	}
	s.credit = absolute
	return true
}

// Sent is the number of sends issued.
func (s *CreditSender) Sent() uint64 { return s.sent }

// Credit is the last absolute credit received.
func (s *CreditSender) Credit() uint64 { return s.credit }

// Owed is how many more sends (empty ones if no data is left) the sender
// must issue at the end of the stream so that every receive the receiver
// posted, as far as the sender knows, is matched: send/receive parity.
func (s *CreditSender) Owed() uint64 { return s.credit - s.sent }

// CreditReceiver is the receiving side of one connection (one source). It
// decides when to write the credit back: every Every receives, and on
// demand (Flush) when the stream must not stall.
type CreditReceiver struct {
	every   int    // receives posted per write-back (the paper's f)
	posted  uint64 // receives posted so far: the absolute credit
	written uint64 // the last value written back
	closed  bool
}

// NewCreditReceiver makes a receiver that writes credit back every `every`
// posted receives (Liu19 settles on 2). every must be at least 1.
func NewCreditReceiver(every int) (*CreditReceiver, error) {
	if every < 1 {
		return nil, fmt.Errorf("flowctl: credit write-back frequency %d: must be at least 1", every)
	}
	return &CreditReceiver{every: every}, nil
}

// Posted records n receives just posted (credit is issued only after the
// receives are posted, so every credited send finds one). It returns the
// absolute value to write back, and ok when a write-back is due.
func (r *CreditReceiver) Posted(n int) (value uint64, ok bool) {
	if r.closed || n <= 0 {
		return 0, false
	}
	r.posted += uint64(n)
	if r.posted-r.written >= uint64(r.every) {
		r.written = r.posted
		return r.posted, true
	}
	return 0, false
}

// Flush returns the absolute credit to write back now, written or not:
// a timer calls it when a connection has been quiet, both to credit a
// remainder below the write-back frequency and to repeat a write-back that
// may have been lost (absolute values make repeating harmless).
func (r *CreditReceiver) Flush() (value uint64, ok bool) {
	if r.closed || r.posted == 0 {
		return 0, false
	}
	r.written = r.posted
	return r.posted, true
}

// FlushValue is the value Flush would return, without marking it
// written: a caller that may not be able to send it asks first.
func (r *CreditReceiver) FlushValue() (value uint64, ok bool) {
	if r.closed || r.posted == 0 {
		return 0, false
	}
	return r.posted, true
}

// Close stops issuing credit once the source has announced the end of its
// stream, so the parity target stops moving. It returns how many receives
// were credited in total: the sender must send exactly that many.
func (r *CreditReceiver) Close() uint64 {
	r.closed = true
	return r.written
}

// PostedCount is the number of receives posted so far.
func (r *CreditReceiver) PostedCount() uint64 { return r.posted }

// Written is the last credit value written back.
func (r *CreditReceiver) Written() uint64 { return r.written }

package algos

// Credit owed, for SQ/SR.
//
// A receiver's credit messages share one UD queue pair per endpoint, whose
// send queue (2 x creditSignalEvery + 8 requests) frees slots only as the
// NIC sends them and their completions are polled; the NIC sends one
// credit message per turn of its round robin with the data queue pair, a
// 4 KiB data packet between two. A repeat walk (repeats.go) posted a
// message to every quiet connection at once, hundreds at 256 nodes, and
// filled it. A credit that did not fit used to be dropped, on the grounds
// that credit is absolute and the next message to the same source carries
// it. But the value had been marked written (CreditReceiver.Flush), so the
// regular write-back after the next release did not fall due, and the
// source, one credit short of what the receiver had counted, sent nothing
// more to it until the connection's next repeat, 50 us or more later.
// With one sending thread per node, that wait stops all of the node's
// sending: with 256 nodes a 32 KiB-per-pair shuffle dropped some 100,000
// credit messages, all from repeat scans, and ran at 0.97 GiB/s per node,
// its senders idle 44% of the time (docs/topology.md).
//
// Now a source whose credit did not fit is owed it: it joins a list, and
// the receiver sends each owed source its latest credit (one message
// however many were refused) as soon as slots free: after polling
// completions as a receiving thread looks for data, as it releases a
// buffer, and, while it waits with credit still owed, every OwedRetry
// (CreditTimers). Repeats are not owed: a repeat walk stops at a full
// queue and its next look walks what it left (repeats.go), so the list
// holds only credit a source needs. On the run above, owing everything that did not fit,
// repeats included, gave 3.01 GiB/s with 62,242 messages owed; with walks
// that stop, 3.04 with none owed and 75,391 repeats instead of 101,598.
// (A send queue with room for a message to every source gave 3.00: the
// queue stays small, and an owed source gets one message with its latest
// value where a deeper queue sends it every value in turn.)

// How often a waiting receiver with credit still owed polls its send
// completions for room is CreditTimers.OwedRetry: by default a few turns
// of the NIC's round robin (a 4 KiB packet takes 0.33 us at EDR's rate).

// A source's place in the owed list (sqsr.owed).
const (
	notOwed uint8 = iota // not in the list
	owed                 // in the list, its latest credit not sent
	paid                 // in the list, its credit sent since (by sendCredit)
)

// owe records that source src is owed its latest credit.
func (e *sqsr) owe(src int) {
	if e.owedState == nil {
		e.owedState = make([]uint8, e.n)
	}
	if e.owedState[src] == notOwed {
		e.owed = append(e.owed, src)
	}
	e.owedState[src] = owed
}

// sentCredit records that source src has been sent its latest credit.
func (e *sqsr) sentCredit(src int) {
	if e.owedState != nil && e.owedState[src] == owed {
		e.owedState[src] = paid
	}
}

// payOwed sends owed sources their latest credit, in the order they were
// refused, as far as the send queue has room, and reports whether any
// remain owed.
func (e *sqsr) payOwed() (bool, error) {
	if len(e.owed) == 0 {
		return false, nil
	}
	if _, err := e.reap(); err != nil {
		return true, err
	}
	for i, s := range e.owed {
		if e.owedState[s] == owed {
			sent, err := e.tryCredit(s, e.cr[s].Written())
			if err != nil {
				return true, err
			}
			if !sent {
				e.owed = append(e.owed[:0], e.owed[i:]...)
				return true, nil
			}
			e.info.CreditOwed++
		}
		e.owedState[s] = notOwed
	}
	e.owed = e.owed[:0]
	return false, nil
}

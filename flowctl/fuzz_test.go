package flowctl

import (
	"encoding/binary"
	"testing"
)

// FuzzCreditValues feeds a credit sender arbitrary absolute credit values
// (the encoding receivers write back: stale, repeated, reordered or huge)
// interleaved with sends: credit never decreases, and the sender never
// sends beyond the largest value it was given.
func FuzzCreditValues(f *testing.F) {
	f.Add([]byte{0, 4, 1, 1, 1, 0, 2, 1, 1, 1, 1})
	f.Add([]byte{0, 255, 0, 1, 1})
	f.Fuzz(func(t *testing.T, ops []byte) {
		var s CreditSender
		var best uint64
		for i := 0; i+1 < len(ops); i += 2 {
			if ops[i]&1 == 0 {
				v := uint64(ops[i+1]) << (ops[i] >> 1 % 64)
				before := s.Credit()
				grew := s.Update(v)
				if grew != (v > before) || s.Credit() < before {
					t.Fatalf("update %d from %d: grew %v, credit %d", v, before, grew, s.Credit())
				}
				best = max(best, v)
				continue
			}
			if err := s.Consume(); err == nil && s.Sent() > best {
				t.Fatalf("sent %d with credit at most %d", s.Sent(), best)
			}
			if s.Sent() > s.Credit() {
				t.Fatalf("sent %d beyond credit %d", s.Sent(), s.Credit())
			}
		}
	})
}

// FuzzCount feeds end-of-stream counting arbitrary message numbers (the
// header's sequence field and end flag): it never reports a stream done
// unless every number from 1 to the announced total arrived exactly once.
func FuzzCount(f *testing.F) {
	f.Add([]byte{1, 0, 2, 0, 3, 1})
	f.Add([]byte{3, 1, 1, 0, 2, 0})
	f.Add([]byte{1, 0, 1, 0, 2, 1})
	f.Fuzz(func(t *testing.T, msgs []byte) {
		c := NewCount(true)
		seen := map[uint64]int{}
		for i := 0; i+1 < len(msgs); i += 2 {
			seq := uint64(binary.LittleEndian.Uint16([]byte{msgs[i], 0}))
			if err := c.Add(seq, msgs[i+1]&1 == 1); err != nil {
				return // an error stops the stream
			}
			seen[seq]++
			if c.Done() {
				for k := uint64(1); k <= c.Received(); k++ {
					if seen[k] != 1 {
						t.Fatalf("done after %d messages but message %d arrived %d times", c.Received(), k, seen[k])
					}
				}
			}
		}
	})
}

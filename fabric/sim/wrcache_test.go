package sim

import "testing"

// TestWRCache: a request is held while there is room, retired by its ACK
// or response (a hit), and, when the cache was full at its processing,
// read again (a miss); a key that is not outstanding costs nothing, and a
// queue pair's reset forgets its requests.
func TestWRCache(t *testing.T) {
	type step struct {
		op   string // insert, retire, drop, forget
		qpn  uint32
		i    uint64
		miss bool // retire: want a miss
	}
	for _, tc := range []struct {
		name       string
		capacity   int
		steps      []step
		resident   int
		hits, miss int64
	}{
		{"off", 0, []step{{"insert", 1, 0, false}, {"retire", 1, 0, false}}, 0, 0, 0},
		{"hit", 2, []step{{"insert", 1, 0, false}, {"retire", 1, 0, false}}, 0, 1, 0},
		{"full: the third is not kept", 2, []step{
			{"insert", 1, 0, false}, {"insert", 1, 1, false}, {"insert", 1, 2, false},
			{"retire", 1, 2, true}, {"retire", 1, 0, false}, {"retire", 1, 1, false}}, 0, 2, 1},
		{"room again after a retire", 2, []step{
			{"insert", 1, 0, false}, {"insert", 1, 1, false}, {"retire", 1, 0, false},
			{"insert", 1, 2, false}, {"retire", 1, 2, false}}, 1, 2, 0},
		{"not outstanding: free", 2, []step{{"retire", 7, 3, false}}, 0, 0, 0},
		{"retransmission keeps one entry", 2, []step{
			{"insert", 1, 0, false}, {"insert", 1, 0, false}, {"insert", 1, 1, false}, {"retire", 1, 1, false}}, 1, 1, 0},
		{"drop: an unsignaled request on the wire", 2, []step{
			{"insert", 1, 0, false}, {"drop", 1, 0, false}, {"retire", 1, 0, false}}, 0, 0, 0},
		{"forget one queue pair", 4, []step{
			{"insert", 1, 0, false}, {"insert", 2, 0, false}, {"insert", 1, 1, false}, {"forget", 1, 0, false},
			{"retire", 1, 0, false}, {"retire", 2, 0, false}}, 0, 1, 0},
		{"the send queue position wraps in the key", 2, []step{
			{"insert", 1, 1<<32 + 5, false}, {"retire", 1, 5, false}}, 0, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newWRCache(tc.capacity)
			for n, s := range tc.steps {
				k := wrKey(s.qpn, s.i)
				switch s.op {
				case "insert":
					c.insert(k)
				case "drop":
					c.drop(k)
				case "forget":
					c.forget(s.qpn)
				case "retire":
					if got := c.retire(k); got != s.miss {
						t.Errorf("step %d: retire(%d, %d) miss = %v, want %v", n, s.qpn, s.i, got, s.miss)
					}
				}
			}
			if c.held != tc.resident || c.hits != tc.hits || c.misses != tc.miss {
				t.Errorf("resident %d, hits %d, misses %d; want %d, %d, %d", c.held, c.hits, c.misses, tc.resident, tc.hits, tc.miss)
			}
			kept := 0
			for _, k := range c.where {
				if k {
					kept++
				}
			}
			if kept != c.held {
				t.Errorf("%d requests marked kept, count says %d", kept, c.held)
			}
		})
	}
}

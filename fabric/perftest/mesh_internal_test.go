package perftest

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

func TestOfferedTo(t *testing.T) {
	blob := func(owners ...int) []byte {
		var b []byte
		for i, o := range owners {
			enc, _ := fabric.QPInfo{QPN: uint32(100 + i)}.MarshalBinary()
			b = binary.BigEndian.AppendUint32(b, uint32(o))
			b = append(b, enc...)
		}
		return b
	}
	for _, tc := range []struct {
		name         string
		b            []byte
		me, peer, qp int
		want         []uint32 // QPNs
	}{
		{"in order, me below the peer", blob(0, 0, 1, 1, 3, 3), 1, 2, 2, []uint32{102, 103}},
		{"in order, me above the peer", blob(0, 0, 1, 1, 3, 3), 3, 2, 2, []uint32{104, 105}},
		{"another order: scanned", blob(3, 1, 0, 1), 1, 2, 2, []uint32{101, 103}},
		{"nothing for me", blob(0, 3), 1, 2, 1, nil},
		{"short blob", blob(0), 1, 2, 1, nil},
	} {
		got, err := offeredTo(nil, tc.b, tc.me, tc.peer, tc.qp)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var qpns []uint32
		for _, g := range got {
			qpns = append(qpns, g.QPN)
		}
		if len(qpns) != len(tc.want) {
			t.Errorf("%s: got QPNs %v, want %v", tc.name, qpns, tc.want)
			continue
		}
		for i := range qpns {
			if qpns[i] != tc.want[i] {
				t.Errorf("%s: got QPNs %v, want %v", tc.name, qpns, tc.want)
				break
			}
		}
	}
}

// gather is an OOB whose all-gather returns fixed contributions.
type gather [][]byte

func (g gather) AllGather(string, []byte) ([][]byte, error) { return g, nil }
func (gather) Exchange(string, [][]byte) ([][]byte, error)  { return nil, errors.New("not an exchange") }
func (gather) Barrier(string) error                         { return nil }

// TestExchangeCounts: each node learns the sum of what every node sent
// it, and a table of the wrong shape or with an impossible count (another
// version or a corrupt exchange) is an error, not a wrong total.
func TestExchangeCounts(t *testing.T) {
	table := func(counts ...uint64) []byte {
		var b []byte
		for _, c := range counts {
			b = binary.LittleEndian.AppendUint64(b, c)
		}
		return b
	}
	for _, tc := range []struct {
		name string
		all  gather
		want int64
		err  string
	}{
		{"sum", gather{table(0, 5, 7), table(3, 0, 1), table(4, 6, 0)}, 11, ""},
		{"short table", gather{table(0, 5, 7), table(3, 0), table(4, 6, 0)}, 0, "node 1 sent 16 bytes"},
		{"missing node", gather{table(0, 5, 7), table(3, 0, 1)}, 0, "has 2 nodes, want 3"},
		{"corrupt count", gather{table(0, 5, 7), table(3, 0, 1), table(4, maxCount+1, 0)}, 0, "corrupt"},
	} {
		got, err := exchangeCounts(tc.all, 1, 3, []int64{1, 0, 2})
		if tc.err == "" && (err != nil || got != tc.want) || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: %d, %v; want %d, %q", tc.name, got, err, tc.want, tc.err)
		}
	}
}

// TestShare: messages covered by one completion count in proportion to
// the part of their interval inside the measured one.
func TestShare(t *testing.T) {
	w := window{on: true, from: 100, to: 200}
	for _, tc := range []struct {
		from, to fabric.Time
		n        int
		want     float64
	}{
		{0, 50, 10, 0},
		{50, 150, 10, 5},
		{120, 180, 10, 10},
		{150, 250, 10, 5},
		{0, 300, 30, 10},
		{150, 150, 4, 4}, // at one instant inside
		{200, 200, 4, 0}, // the end is outside
	} {
		if got := w.share(tc.from, tc.to, tc.n); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("share(%d, %d, %d) = %v, want %v", tc.from, tc.to, tc.n, got, tc.want)
		}
	}
}

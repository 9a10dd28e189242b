package perftest

import (
	"encoding/binary"
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
		got, err := offeredTo(tc.b, tc.me, tc.peer, tc.qp)
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

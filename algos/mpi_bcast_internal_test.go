package algos

import (
	"errors"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// bcastMsg is a collective message as node 0's MPI endpoint receives it
// from node 1.
type bcastMsg struct {
	kind, seq, root int
	tuples, sum     uint64
	n               int
}

// deliverBcastMsg opens MPI endpoints with broadcasts on three nodes and
// hands m to node 0's, as its progress engine would after reading it from
// node 1's connection; it returns what bcastIncoming said.
func deliverBcastMsg(t testing.TB, m bcastMsg) error {
	t.Helper()
	prof, err := sim.LoadProfile("edr-cx4")
	if err != nil {
		t.Fatal(err)
	}
	c, err := sim.New(sim.Config{Nodes: 3, Profile: prof, Seed: 1, SizeOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var got error
	err = c.Run(func(th fabric.Thread) error {
		ep, err := OpenMPI(th, Config{Nodes: 3, MsgBytes: 65536, Buffers: 2, CreditEvery: 1, Timeout: fabric.Millisecond, Broadcast: true}, DefaultMPICosts)
		if err != nil {
			return err
		}
		e := ep.(*mpi)
		if th.Node().ID() == 0 {
			e.lock()
			n := min(max(m.n, 0), e.slotBytes-HeaderBytes)
			got = e.bcastIncoming(th, 1, m.kind, m.seq&mpiSlotMask, m.root, header{src: 1, n: m.n, tuples: m.tuples, sum: m.sum}, make([]byte, n))
			e.unlock()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestBcastBadMessages: a collective message that names no broadcast this
// node takes part in, a piece outside the message, a clear-to-send or FIN
// for nothing it sent or was asked for, is refused as a malformed message.
func TestBcastBadMessages(t *testing.T) {
	piece := func(off, n int) uint64 { return uint64(off)<<32 | uint64(n) }
	for _, tc := range []struct {
		name string
		m    bcastMsg
		ok   bool
	}{
		{"root beyond the cluster", bcastMsg{kind: mpiBcEager, root: 7, sum: piece(0, 16), n: 16}, false},
		{"piece beyond the message", bcastMsg{kind: mpiBcRTS, root: 1, sum: piece(65530, 100)}, false},
		{"eager length differs", bcastMsg{kind: mpiBcEager, root: 1, sum: piece(0, 64), n: 32}, false},
		{"clear-to-send for nothing", bcastMsg{kind: mpiBcCTS, root: 0, sum: piece(0, 65536)}, false},
		{"FIN for nothing", bcastMsg{kind: mpiBcFIN, root: 1, sum: piece(0, 65536)}, false},
		{"wrong size for the posted piece", bcastMsg{kind: mpiBcRTS, root: 1, sum: piece(0, 4096)}, false},
		// Node 0 is node 1's only child in a 3-node binomial tree: the
		// whole message, by rendezvous; so an RTS for it is expected.
		{"the expected RTS", bcastMsg{kind: mpiBcRTS, root: 1, sum: piece(0, 65536)}, true},
		// A later broadcast of node 2's, not yet posted: unexpected, kept.
		{"an unexpected eager piece", bcastMsg{kind: mpiBcEager, root: 2, seq: 9, sum: piece(0, 16), n: 16}, true},
	} {
		err := deliverBcastMsg(t, tc.m)
		if tc.ok && err != nil || !tc.ok && !errors.Is(err, ErrBadMessage) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// FuzzBcastMessage: no collective message makes the MPI endpoint panic;
// it is taken, kept as unexpected, or refused as malformed.
func FuzzBcastMessage(f *testing.F) {
	f.Add(mpiBcEager, 0, 1, uint64(0), uint64(16), 16)
	f.Add(mpiBcRTS, 0, 1, uint64(0), uint64(65536), 0)
	f.Add(mpiBcCTS, 0, 0, uint64(0), uint64(1)<<32|4096, 0)
	f.Add(mpiBcFIN, 3, 2, uint64(0), uint64(0), 0)
	f.Fuzz(func(t *testing.T, kind, seq, root int, tuples, sum uint64, n int) {
		if kind < mpiBcEager || kind > mpiBcFIN || root < 0 || n < 0 || n > 1<<20 {
			return // the caller decodes these fields and bounds n by the slot
		}
		if err := deliverBcastMsg(t, bcastMsg{kind: kind, seq: seq, root: root, tuples: tuples, sum: sum, n: n}); err != nil && !errors.Is(err, ErrBadMessage) {
			t.Fatalf("%v", err)
		}
	})
}

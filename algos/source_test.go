package algos_test

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// sliceSource is a Source over materialized tuples.
type sliceSource []byte

func (s sliceSource) FillVector(vec []byte, from int64) {
	copy(vec, s[from*algos.TupleBytes:])
}

// TestShuffleSourceReceiveFunc shuffles a Source other than Relation and
// checks that ReceiveFunc hands every tuple to its consumer exactly once.
func TestShuffleSourceReceiveFunc(t *testing.T) {
	const nodes, perNode = 2, 3000
	prof, err := sim.LoadProfile("edr-cx4")
	if err != nil {
		t.Fatal(err)
	}
	c, err := sim.New(sim.Config{Nodes: nodes, Profile: prof, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	groups, err := algos.NewGroups(algos.Repartition, nodes)
	if err != nil {
		t.Fatal(err)
	}
	got := make([][]uint64, nodes) // per node: received keys
	counted := make([]uint64, nodes)
	err = c.Run(func(th fabric.Thread) error {
		me := th.Node().ID()
		ep, err := algos.OpenMQSR(th, algos.Config{Nodes: nodes, MsgBytes: 4096, Buffers: 2, CreditEvery: 1})
		if err != nil {
			return err
		}
		src := make(sliceSource, perNode*algos.TupleBytes)
		for i := 0; i < perNode; i++ {
			binary.LittleEndian.PutUint64(src[i*16:], uint64(me*perNode+i))
			binary.LittleEndian.PutUint64(src[i*16+8:], uint64(i*7))
		}
		done := th.Node().NewSignal()
		left := 2
		var ferr error
		th.Spawn("send", 1, func(st fabric.Thread) error {
			defer func() { left--; done.Notify() }()
			_, err := algos.Shuffle(st, ep, algos.ShuffleInput{Src: src, From: 0, To: perNode}, groups, nil)
			ferr = err
			return err
		})
		th.Spawn("recv", 2, func(rt fabric.Thread) error {
			defer func() { left--; done.Notify() }()
			_, err := algos.ReceiveFunc(rt, ep, nodes, 1, func(tuples []byte, n uint64) {
				counted[me] += n
				for i := 0; i+16 <= len(tuples); i += 16 {
					got[me] = append(got[me], binary.LittleEndian.Uint64(tuples[i:]))
				}
			})
			if err != nil {
				ferr = err
			}
			return err
		})
		for left > 0 && ferr == nil {
			th.Wait(fabric.Forever, done)
		}
		if ferr != nil {
			return ferr
		}
		return ep.Close(th)
	})
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n < nodes; n++ {
		var want []uint64
		for k := 0; k < nodes*perNode; k++ {
			if k%nodes == n {
				want = append(want, uint64(k))
			}
		}
		slices.Sort(got[n])
		if !slices.Equal(got[n], want) || counted[n] != uint64(len(want)) {
			t.Fatalf("node %d: %d keys (%d counted), want %d", n, len(got[n]), counted[n], len(want))
		}
	}
}

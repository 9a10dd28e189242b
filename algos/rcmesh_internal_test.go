package algos

import (
	"fmt"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// handedNode is a node whose out-of-band calls count the bytes each hands
// this node back.
type handedNode struct {
	fabric.Node
	handed *int
}

func (n handedNode) OOB() fabric.OOB { return handedOOB{n.Node.OOB(), n.handed} }

type handedOOB struct {
	fabric.OOB
	handed *int
}

func (o handedOOB) count(all [][]byte, err error) ([][]byte, error) {
	for _, d := range all {
		*o.handed += len(d)
	}
	return all, err
}

func (o handedOOB) AllGather(key string, data []byte) ([][]byte, error) {
	return o.count(o.OOB.AllGather(key, data))
}

func (o handedOOB) Exchange(key string, out [][]byte) ([][]byte, error) {
	return o.count(o.OOB.Exchange(key, out))
}

// TestGatherQPInfoIsPersonal: in the RC designs' connection exchange each
// node gets every node's records for it, and is handed those only: n*per
// records, not every node's whole list (an all-gather hands each node
// n*n*per records, 239 MB at 1024 nodes with 4 records per pair).
func TestGatherQPInfoIsPersonal(t *testing.T) {
	for _, tc := range []struct{ nodes, per int }{{1, 1}, {2, 1}, {16, 3}, {64, 4}} {
		t.Run(fmt.Sprintf("nodes=%d/per=%d", tc.nodes, tc.per), func(t *testing.T) {
			n, per := tc.nodes, tc.per
			c, err := sim.New(sim.Config{Nodes: n, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			handed := make([]int, n)
			err = c.Run(func(th fabric.Thread) error {
				me := th.Node().ID()
				var blob []byte
				for j := 0; j < n; j++ {
					for k := 0; k < per; k++ {
						b, err := fabric.QPInfo{Node: uint32(me), QPN: uint32(j*100 + k)}.MarshalBinary()
						if err != nil {
							return err
						}
						blob = append(blob, b...)
					}
				}
				got, err := gatherQPInfo(handedNode{th.Node(), &handed[me]}, "qp", blob, n, per)
				if err != nil {
					return err
				}
				for j := range got {
					for k, q := range got[j] {
						if q.Node != uint32(j) || q.QPN != uint32(me*100+k) {
							return fmt.Errorf("node %d: record %d from node %d is node %d's QPN %d, want node %d's QPN %d", me, k, j, q.Node, q.QPN, j, me*100+k)
						}
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			want := n * per * fabric.QPInfoWireBytes
			for r, h := range handed {
				if h != want {
					t.Errorf("node %d was handed %d bytes, want its %d records' %d", r, h, n*per, want)
				}
			}
		})
	}
}

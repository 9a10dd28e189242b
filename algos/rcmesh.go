package algos

import (
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// rcPSN is the first packet sequence number node me sends with on its
// connection to node j; both ends compute it, so any agreed value works.
func rcPSN(me, j int) uint32 { return uint32(mix(uint64(me*1000+j)) & 0xffffff) }

// gatherQPInfo is the connection exchange of the RC designs: this node
// publishes per records for every node (blob holds n*per encoded QPInfo,
// node j's at j*per) and gets what every node published for it:
// got[j][k] is node j's k-th record for this node. A node that sent
// another amount is named (it runs another design or cluster size).
func gatherQPInfo(node fabric.Node, key string, blob []byte, n, per int) ([][]fabric.QPInfo, error) {
	all, err := node.OOB().AllGather(key, blob)
	if err != nil {
		return nil, err
	}
	rec := per * fabric.QPInfoWireBytes
	me := node.ID()
	got := make([][]fabric.QPInfo, n)
	for j := 0; j < n; j++ {
		if len(all[j]) != n*rec {
			return nil, fmt.Errorf("node %d sent %d bytes of queue-pair information, want %d (same --nodes and design everywhere?)",
				j, len(all[j]), n*rec)
		}
		got[j] = make([]fabric.QPInfo, per)
		for k := range got[j] {
			off := me*rec + k*fabric.QPInfoWireBytes
			if err := got[j][k].UnmarshalBinary(all[j][off : off+fabric.QPInfoWireBytes]); err != nil {
				return nil, fmt.Errorf("from node %d: %w", j, err)
			}
		}
	}
	return got, nil
}

// connectRC takes an RC queue pair in INIT to RTS towards the peer r (its
// address and first PSN), sending from PSN mine, with rdAtomic RDMA Reads
// outstanding at most in each direction, the transport's retries at
// their maximum and RNR retried for ever.
func connectRC(qp fabric.QP, r fabric.QPInfo, mine uint32, rdAtomic int) error {
	if err := qp.Modify(fabric.StateRTR, fabric.QPAttr{Dest: r.Address(), RemotePSN: r.PSN, MinRNRTimer: 1, MaxDestRdAtomic: rdAtomic}); err != nil {
		return err
	}
	return qp.Modify(fabric.StateRTS, fabric.QPAttr{SendPSN: mine, Timeout: 14, RetryCnt: 7, RNRRetry: 7, MaxRdAtomic: rdAtomic})
}

// newRCQP creates an RC queue pair on pd with the given completion queues
// and capacities and moves it to INIT with the remote access a design
// needs (its peers' RDMA Writes, and Reads for the RDMA Read design).
func newRCQP(pd fabric.PD, scq, rcq fabric.CQ, caps fabric.QPCaps, remote fabric.Access) (fabric.QP, error) {
	qp, err := pd.CreateQP(fabric.QPInit{Type: fabric.RC, SendCQ: scq, RecvCQ: rcq, Caps: caps})
	if err != nil {
		return nil, err
	}
	if err := qp.Modify(fabric.StateInit, fabric.QPAttr{Access: remote | fabric.AccessLocalWrite}); err != nil {
		return nil, err
	}
	return qp, nil
}

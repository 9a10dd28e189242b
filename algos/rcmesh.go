package algos

import (
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// rcPSN is the first packet sequence number node me sends with on its
// connection to node j; both ends compute it, so any agreed value works.
func rcPSN(me, j int) fabric.PSN { return fabric.PSNOf(mix(uint64(me*1000 + j))) }

// gatherQPInfo is the connection exchange of the RC designs: this node
// publishes per records for every node (blob holds n*per encoded QPInfo,
// node j's at j*per) and gets what every node published for it:
// got[j][k] is node j's k-th record for this node. Each node is sent only
// its own records (OOB.Exchange), so a node moves O(n) records, not the
// O(n*n) of an all-gather of every node's blob. A node that sent another
// amount is named (it runs another design or cluster size).
func gatherQPInfo(node fabric.Node, key string, blob []byte, n, per int) ([][]fabric.QPInfo, error) {
	rec := per * fabric.QPInfoWireBytes
	if len(blob) != n*rec {
		return nil, fmt.Errorf("%w: %d bytes of queue-pair information for %d nodes of %d records", fabric.ErrInvalidArg, len(blob), n, per)
	}
	out := make([][]byte, n)
	for j := range out {
		out[j] = blob[j*rec : (j+1)*rec]
	}
	in, err := node.OOB().Exchange(key, out)
	if err != nil {
		return nil, err
	}
	got := make([][]fabric.QPInfo, n)
	for j := 0; j < n; j++ {
		if len(in[j]) != rec {
			return nil, fmt.Errorf("node %d sent %d bytes of queue-pair information for this node, want %d (the same node count and design everywhere?)",
				j, len(in[j]), rec)
		}
		got[j] = make([]fabric.QPInfo, per)
		for k := range got[j] {
			off := k * fabric.QPInfoWireBytes
			if err := got[j][k].UnmarshalBinary(in[j][off : off+fabric.QPInfoWireBytes]); err != nil {
				return nil, fmt.Errorf("from node %d: %w", j, err)
			}
		}
	}
	return got, nil
}

// connectPeers ends the connection setup of a design with one RC queue
// pair per node: it publishes blob (one encoded QPInfo per node, node j's
// at j) under name, checks that every peer registered want bytes (unless
// want is 0), takes qps[j] to RTS towards what node j published for this
// node (for every node, this one too when self is true) and waits at the
// barrier name+"/up". It returns what every node published for this node.
func connectPeers(node fabric.Node, name string, blob []byte, qps []fabric.QP, want uint64, self bool, sl uint8) ([]fabric.QPInfo, error) {
	n, me := len(qps), node.ID()
	got, err := gatherQPInfo(node, name, blob, n, 1)
	if err != nil {
		return nil, err
	}
	peers := make([]fabric.QPInfo, n)
	for j := range peers {
		if j == me && !self {
			continue
		}
		peers[j] = got[j][0]
		if want != 0 && peers[j].Bytes != want {
			return nil, fmt.Errorf("node %d registered %d bytes, this node %d: same configuration everywhere?", j, peers[j].Bytes, want)
		}
		if err := connectRC(qps[j], peers[j], rcPSN(me, j), 1, sl); err != nil {
			return nil, err
		}
	}
	return peers, node.OOB().Barrier(name + "/up")
}

// connectRC takes an RC queue pair in INIT to RTS towards the peer r (its
// address and first PSN), sending from PSN mine, with rdAtomic RDMA Reads
// outstanding at most in each direction, the transport's retries at
// their maximum and RNR retried for ever, on service level sl.
func connectRC(qp fabric.QP, r fabric.QPInfo, mine fabric.PSN, rdAtomic int, sl uint8) error {
	dest := r.Address()
	dest.SL = sl
	if err := qp.Modify(fabric.StateRTR, fabric.QPAttr{Dest: dest, RemotePSN: r.PSN, MinRNRTimer: 1, MaxDestRdAtomic: rdAtomic}); err != nil {
		return err
	}
	return qp.Modify(fabric.StateRTS, fabric.QPAttr{SendPSN: mine, Timeout: 14, RetryCnt: 7, RNRRetry: 7, MaxRdAtomic: rdAtomic})
}

// newRCQP creates an RC queue pair on pd with the given completion queues
// and capacities, records it in own and moves it to INIT with the remote
// access a design needs (its peers' RDMA Writes, and Reads for the RDMA
// Read design).
func newRCQP(own *owned, pd fabric.PD, scq, rcq fabric.CQ, caps fabric.QPCaps, remote fabric.Access) (fabric.QP, error) {
	qp, err := pd.CreateQP(fabric.QPInit{Type: fabric.RC, SendCQ: scq, RecvCQ: rcq, Caps: caps})
	if err != nil {
		return nil, err
	}
	own.qp(qp)
	if err := qp.Modify(fabric.StateInit, fabric.QPAttr{Access: remote | fabric.AccessLocalWrite}); err != nil {
		return nil, err
	}
	return qp, nil
}

// pollAll drains cq through wcs, handing each completion to each, and
// reports whether there was any. A completion that failed is a
// fabric.CompletionError naming node me (each never sees it).
func pollAll(cq fabric.CQ, wcs []fabric.WC, me int, each func(fabric.WC) error) (moved bool, err error) {
	for {
		k, err := pollOnce(cq, wcs, me, each)
		if err != nil {
			return moved, err
		}
		moved = moved || k > 0
		if k < len(wcs) {
			return moved, nil
		}
	}
}

// pollOnce polls cq once through wcs, hands each completion to each, and
// returns how many there were. A completion that failed is a
// fabric.CompletionError naming node me (each never sees it).
func pollOnce(cq fabric.CQ, wcs []fabric.WC, me int, each func(fabric.WC) error) (int, error) {
	k, err := cq.Poll(wcs)
	if err != nil {
		return 0, err
	}
	for _, wc := range wcs[:k] {
		if wc.Status != fabric.StatusSuccess {
			return 0, &fabric.CompletionError{WC: wc, Node: me}
		}
		if err := each(wc); err != nil {
			return 0, err
		}
	}
	return k, nil
}

// localDelivery tells a delivery that a multiplexing endpoint (HyPer, the
// RDMA Write middleware) handed its own node without the network (its id
// is -1 - the id of the sender's buffer, one of n) from one that came
// over the network; for a local one it returns the buffer's id, or
// errForeignDelivery when the delivery is not one this node made.
func localDelivery(d Delivery, me, n int) (id int, local bool, err error) {
	if d.id >= 0 {
		return 0, false, nil
	}
	if id = -1 - d.id; id >= n || d.Src != me {
		return 0, true, errForeignDelivery
	}
	return id, true, nil
}

// errForeignDelivery is what Release returns for a delivery its endpoint
// did not make (or one released already).
var errForeignDelivery = fmt.Errorf("%w: Release of a delivery this endpoint did not make (or one already released)", ErrConfig)

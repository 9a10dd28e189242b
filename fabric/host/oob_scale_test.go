package host

import (
	"encoding/binary"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// qpRecord is what a rank of the RC designs publishes for each peer in
// their connection exchange (algos.gatherQPInfo): up to 4 queue-pair
// records (MQ/WR with FreeArr).
const qpRecord = 4 * fabric.QPInfoWireBytes

// qpBlob is rank r's records for every one of n ranks, the one for rank j
// at j*qpRecord, each stamped with (r, j).
func qpBlob(r, n int) []byte {
	b := make([]byte, n*qpRecord)
	for j := 0; j < n; j++ {
		stampRecord(b[j*qpRecord:(j+1)*qpRecord], r, j)
	}
	return b
}

func stampRecord(rec []byte, from, to int) {
	binary.BigEndian.PutUint32(rec, uint32(from))
	binary.BigEndian.PutUint32(rec[4:], uint32(to))
	rec[qpRecord-1] = byte(from + to)
}

func checkRecord(rec []byte, from, to int) error {
	if len(rec) != qpRecord || binary.BigEndian.Uint32(rec) != uint32(from) || binary.BigEndian.Uint32(rec[4:]) != uint32(to) || rec[qpRecord-1] != byte(from+to) {
		return fmt.Errorf("record from rank %d to %d garbled: %d bytes, want %d stamped with both", from, to, len(rec), qpRecord)
	}
	return nil
}

// qpExchangeMethods are the ways a rank can get the records addressed to
// it: an all-gather of every rank's whole blob, of which it reads its
// column (how the designs exchanged before fabric.OOB.Exchange), and
// fabric.OOB.Exchange, which hands each rank its column only. Each returns
// the bytes the rank was handed.
var qpExchangeMethods = map[string]func(o fabric.OOB, r, n int) (int, error){
	"exchange": func(o fabric.OOB, r, n int) (int, error) {
		blob := qpBlob(r, n)
		out := make([][]byte, n)
		for j := range out {
			out[j] = blob[j*qpRecord : (j+1)*qpRecord]
		}
		in, err := o.Exchange("qp", out)
		if err != nil {
			return 0, err
		}
		got := 0
		for j, d := range in {
			got += len(d)
			if err := checkRecord(d, j, r); err != nil {
				return got, err
			}
		}
		return got, nil
	},
	"allgather": func(o fabric.OOB, r, n int) (int, error) {
		all, err := o.AllGather("qp", qpBlob(r, n))
		if err != nil {
			return 0, err
		}
		got := 0
		for j, d := range all {
			got += len(d)
			if len(d) != n*qpRecord {
				return got, fmt.Errorf("rank %d sent %d bytes", j, len(d))
			}
			if err := checkRecord(d[r*qpRecord:(r+1)*qpRecord], j, r); err != nil {
				return got, err
			}
		}
		return got, nil
	},
}

// BenchmarkQPExchange measures the queue-pair exchange of the RC designs
// among ranks in this process: on the in-memory hub (OpenLocal, the
// loopback backend) and on the TCP channel of a distributed job, every
// rank a goroutine with its own connection to node 0 on loopback. B/rank
// is what the busiest rank other than node 0 moves per exchange: over TCP
// the bytes it sends and receives (frames with their headers); on the hub
// its contribution and what it is handed (the all-gather hands shared,
// read-only contributions: handed, not copied). node0-B is node 0's
// traffic over TCP. The all-gather over TCP stops at 256 ranks.
//
//	go test -run '^$' -bench QPExchange -benchtime 3x ./fabric/host/
func BenchmarkQPExchange(b *testing.B) {
	for _, method := range []string{"allgather", "exchange"} {
		for _, tr := range []string{"hub", "tcp"} {
			for _, n := range []int{64, 256, 1024} {
				b.Run(fmt.Sprintf("%s/%s/ranks=%d", method, tr, n), func(b *testing.B) {
					if method == "allgather" && tr == "tcp" && n > 256 {
						b.Skip("node 0 would send every rank every record: 244 GB at 1024 ranks")
					}
					benchQPExchange(b, qpExchangeMethods[method], tr, n)
				})
			}
		}
	}
}

func benchQPExchange(b *testing.B, method func(o fabric.OOB, r, n int) (int, error), transport string, n int) {
	oobs := make([]fabric.OOB, n)
	var tcp []*tcpOOB
	if transport == "hub" {
		h := newLocalHub(n, time.Minute)
		for r := range oobs {
			oobs[r] = h.view(r)
		}
	} else {
		var errs []error
		tcp, errs = startJob(b, n, sameSig(n, "bench"), nil, time.Minute)
		for r, err := range errs {
			if err != nil {
				b.Fatalf("node %d: %v", r, err)
			}
		}
		for r, o := range tcp {
			o.timeout = 10 * time.Minute
			oobs[r] = o
		}
	}
	handed := make([]int, n)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		errs := make([]error, n)
		var wg sync.WaitGroup
		for r := range oobs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				handed[r], errs[r] = method(oobs[r], r, n)
			}()
		}
		wg.Wait()
		for r, err := range errs {
			if err != nil {
				b.Fatalf("rank %d: %v", r, err)
			}
		}
	}
	b.StopTimer()
	var perRank, node0 int64
	if tcp == nil {
		for r := 1; r < n; r++ {
			perRank = max(perRank, int64(n*qpRecord+handed[r]))
		}
	} else {
		for r, o := range tcp {
			for _, pc := range o.conns {
				if pc == nil {
					continue
				}
				if moved := (pc.sent.Load() + pc.recvd.Load()) / int64(b.N); r == 0 {
					node0 += moved
				} else {
					perRank = max(perRank, moved)
				}
			}
		}
		b.ReportMetric(float64(node0), "node0-B")
	}
	b.ReportMetric(float64(perRank), "B/rank")
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/exchange")
}

package engine

import (
	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// meter wraps a thread and measures the time it spends in Wait.
type meter struct {
	fabric.Thread
	idle fabric.Duration
}

// Wait waits as the wrapped thread does and adds the time to idle.
func (m *meter) Wait(deadline fabric.Time, on ...fabric.Waitable) {
	t0 := m.Now()
	m.Thread.Wait(deadline, on...)
	m.idle += m.Now().Sub(t0)
}

// releaseMeter wraps an endpoint for one receiving thread and measures the
// time that thread spends in Release.
type releaseMeter struct {
	algos.Endpoint
	spent fabric.Duration
}

func (r *releaseMeter) Release(th fabric.Thread, d algos.Delivery) error {
	t0 := th.Now()
	err := r.Endpoint.Release(th, d)
	r.spent += th.Now().Sub(t0)
	return err
}

// nodeMeter sums one node's thread meters.
type nodeMeter struct {
	sendIdle, sendTime, recvIdle, recvTime, release fabric.Duration
}

func (a *nodeMeter) add(b nodeMeter) {
	a.sendIdle += b.sendIdle
	a.sendTime += b.sendTime
	a.recvIdle += b.recvIdle
	a.recvTime += b.recvTime
	a.release += b.release
}

func ratio(a, b fabric.Duration) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// Integrity compares what every node sent to each destination with what
// each destination received from it.
func Integrity(sent, got [][]algos.Tally, corrupt []int) string {
	for i := range corrupt {
		if corrupt[i] > 0 {
			return "corrupt"
		}
	}
	for s := range sent {
		for d := range sent[s] {
			a, b := sent[s][d], got[d][s]
			switch {
			case b.Tuples < a.Tuples:
				return "missing"
			case b.Tuples > a.Tuples:
				return "duplicate"
			case a.Sum != b.Sum:
				return "corrupt"
			}
		}
	}
	return "ok"
}

package algos

import (
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/internal/setting"
)

// Queue pairs within a device's limits. A receive queue holds at most
// max_qp_wr requests; a send queue can hold fewer
// (fabric.DeviceAttr.MaxSendWR: providers such as mlx5 size send queues in
// blocks, several per request). A design states what it asks of each kind
// of queue pair as a function of the one setting its depths grow with
// (a lever); fitQueues gives the send depths to create them with, or
// refuses, naming the limit, the setting and how far it may go.

// queueAsk is what a design asks of one kind of queue pair.
type queueAsk struct {
	what   string // the queue pair, for errors: "MQ/RD's queue pair per peer"
	typ    fabric.QPType
	inline int // the max inline bytes it is created with (one SGE always)
	send   int // the send depth the design sizes for
	least  int // the least send depth it works with (send, when it needs every slot)
	recv   int // the receive depth
}

// lever is the setting a design's queue depths grow with: its name as the
// configuration names it (a setting.Error carries it: Buffers, MaxBuffers,
// Threads, Nodes), its value, and what the design asks at a value of it.
// What it asks grows with the value.
type lever struct {
	name  string
	value int
	ask   func(v int) []queueAsk
}

// fit is the send depth to create q with on a device of attr (q.send, or
// the device's limit when that is lower but not below q.least), and
// whether q fits at all.
func (q queueAsk) fit(attr fabric.DeviceAttr) (int, bool) {
	most := attr.MaxSendWR(q.typ, 1, q.inline)
	if q.recv > attr.MaxQPWR || q.least > most {
		return 0, false
	}
	return min(q.send, most), true
}

// fitQueues returns the send depth of each queue pair l asks for at its
// value on a device of attr in a cluster of nodes nodes, or a
// setting.Error naming l's setting and wrapping fabric.ErrLimit: which
// queue does not fit, the limit and where it comes from, and the largest
// value of the setting that fits.
func fitQueues(attr fabric.DeviceAttr, nodes int, l lever) ([]int, error) {
	asks := l.ask(l.value)
	depths := make([]int, len(asks))
	for i, q := range asks {
		d, ok := q.fit(attr)
		if !ok {
			return nil, setting.New(l.name, l.value, "%s; %s", q.tooDeep(attr, nodes), l.advice(attr, nodes)).Sentinel(fabric.ErrLimit)
		}
		depths[i] = d
	}
	return depths, nil
}

// tooDeep says why q does not fit a device of attr.
func (q queueAsk) tooDeep(attr fabric.DeviceAttr, nodes int) string {
	if q.recv > attr.MaxQPWR {
		return fmt.Sprintf("%s needs a receive queue of %d requests at %d nodes, above %d (max_qp_wr of %s)", q.what, q.recv, nodes, attr.MaxQPWR, attr.Name)
	}
	return fmt.Sprintf("%s needs a send queue of at least %d requests at %d nodes, above the %d its device accepts (%s)",
		q.what, q.least, nodes, attr.MaxSendWR(q.typ, 1, q.inline), attr.SendLimitReason(q.typ, 1, q.inline))
}

// advice names the largest value of l's setting whose queue pairs fit a
// device of attr, below l.value (what l asks grows with the value).
func (l lever) advice(attr fabric.DeviceAttr, nodes int) string {
	fits := func(v int) bool {
		for _, q := range l.ask(v) {
			if _, ok := q.fit(attr); !ok {
				return false
			}
		}
		return true
	}
	most := 0
	for lo, hi := 1, l.value-1; lo <= hi; {
		mid := lo + (hi-lo)/2
		if fits(mid) {
			most, lo = mid, mid+1
		} else {
			hi = mid - 1
		}
	}
	if most == 0 {
		return fmt.Sprintf("no %s fits at %d nodes", l.name, nodes)
	}
	return fmt.Sprintf("at most %d fits", most)
}

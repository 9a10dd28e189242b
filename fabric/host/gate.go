package host

import "github.com/rdmashuffle/rdmashuffle/fabric"

// Gate orders the memory accesses of a node's threads against a NIC that
// places bytes into registered memory from its own goroutines (a software
// NIC, package loopback). Every thread of the node holds the gate while it
// runs and lets go of it only at its synchronizing points: Sync, Wait,
// Busy and Compute, while it waits for a Mutex, during out-of-band calls,
// and when it returns. The NIC takes the gate exclusively to place a
// one-sided write, so the write lands between two synchronizing points of
// every thread, never during a read, and a thread sees it after its next
// one: the visibility rule of the fabric contract (Thread.Sync), with
// happens-before edges that Go's race detector can check.
//
// Enter and Leave are called by the thread's own goroutine, strictly
// alternating, starting with Enter.
type Gate interface {
	Enter()
	Leave()
}

// GatedDevice is a Device whose NIC needs its node's threads to pass a
// Gate. NewLocal finds it with a type assertion; hardware devices (the NIC
// is outside the Go memory model) do not implement it.
type GatedDevice interface {
	fabric.Device
	Gate() Gate
}

// gatedOOB lets go of the gate during out-of-band calls, which block until
// every node has made the same call.
type gatedOOB struct {
	oobChannel
	g Gate
}

func (o gatedOOB) AllGather(key string, data []byte) ([][]byte, error) {
	o.g.Leave()
	defer o.g.Enter()
	return o.oobChannel.AllGather(key, data)
}

func (o gatedOOB) Exchange(key string, out [][]byte) ([][]byte, error) {
	o.g.Leave()
	defer o.g.Enter()
	return o.oobChannel.Exchange(key, out)
}

func (o gatedOOB) Barrier(key string) error {
	o.g.Leave()
	defer o.g.Enter()
	return o.oobChannel.Barrier(key)
}

package host

import (
	"time"
)

// Config tunes the execution environment of real hosts and places the
// process in a job. The zero value is usable: every CPU, no pinning, no
// time limit, the job layout from the environment.
//
// A Config is a value: copy it freely; it holds no resources.
type Config struct {
	// Cores is the number of cores of each node (Node.Cores). 0 means the
	// CPUs this process may run on, divided among the nodes of OpenLocal.
	Cores int
	// Pin binds each thread to its core's CPU with sched_setaffinity
	// (Linux). Node i's core k is the (i*Cores+k)-th allowed CPU, modulo
	// their number.
	Pin bool
	// GHz is the CPU clock that Thread.Compute converts cycles with; 0
	// reads /proc/cpuinfo (2.5 when it cannot be read).
	GHz float64
	// Seed seeds the threads' random sources (each thread's stream is
	// derived from Seed and its name).
	Seed uint64
	// TimeLimit fails a Run with ErrTimeLimit after this much wall-clock
	// time; 0 means none.
	TimeLimit time.Duration
	// Signature is this job's identity (design, thread count, release...):
	// every process of a distributed job must pass the same one, and a
	// process with another is reported by name at startup.
	Signature string
	// Bootstrap places the process in a distributed job; nil reads the
	// environment (BootstrapFromEnv). Ignored by OpenLocal.
	Bootstrap *Bootstrap
	// ConnectTimeout bounds the start of a distributed job: connecting to
	// node 0 and waiting for every node to connect (default 30s).
	ConnectTimeout time.Duration
	// OOBTimeout bounds each out-of-band call (AllGather, Exchange,
	// Barrier): the time the slowest node may take to reach it (default
	// 10 minutes).
	OOBTimeout time.Duration
	// Log, if not nil, is told what a distributed job goes on despite but
	// a person should know: on node 0, each connection it refuses because
	// it comes from another job (Bootstrap.Job).
	Log func(msg string)
}

// WithDefaults returns c with the default timeouts filled in.
func (c Config) WithDefaults() Config {
	if c.ConnectTimeout <= 0 {
		c.ConnectTimeout = 30 * time.Second
	}
	if c.OOBTimeout <= 0 {
		c.OOBTimeout = 10 * time.Minute
	}
	return c
}

package evidence

import (
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// streamBytes is about how many payload bytes a stream point moves: enough
// for the baselines' pipelines (two buffers per destination) to run many
// times over, little enough for a point to take a second or two.
const streamBytes = 32 << 20

// streamMessages is how many messages each of streams threads sends.
func streamMessages(bytes, streams int) int {
	return min(2000, max(50, streamBytes/(bytes*streams)))
}

// osuWindow is the window of non-blocking sends osu_bw keeps in flight
// (and mt-p2p-msgrate, whose runs state it); below osuWindowBound the MPI
// design runs with it (algos.OpenMPINonblocking). From osuWindowBound on
// it sends with blocking MPI_Send, as the shuffle does: a 1 MiB transfer
// takes tens of microseconds even at HDR's rate, against a rendezvous
// round trip of a few, so the window adds little there.
const (
	osuWindow      = 64
	osuWindowBound = 1 << 20
)

// msgRateMessages is how many messages each thread of a multithreaded
// message-rate point sends: mt-p2p-msgrate's 3200 when the point does not
// say.
const msgRateMessages = 3200

// pingPongMessages is how many round trips a ping-pong point runs.
func pingPongMessages(bytes int) int { return min(1000, max(20, streamBytes/8/bytes)) }

// baselineOf maps a point of the baselines' benchmarks to a run of the
// baseline design between two nodes (stream.go): iperf over IPoIB
// (ipoib_tcp, x.parallel streams) on the IPoIB design, osu_bw (mpi_bw)
// and IMB PingPong (mpi_pingpong) on the MPI design. ok is false for the
// other verbs.
func baselineOf(p Point, bytes int, sw Software) (run runner, how, why string, ok bool) {
	streams := 1
	if n, isInt := p.X["parallel"].(int); isInt {
		streams = n
	}
	var name string
	switch p.Verb {
	case "ipoib_tcp":
		name = algos.NameIPoIB
	case "ipoib_tcp_datagram":
		return nil, "", "IPoIB in datagram mode: the IPoIB design models connected mode (one RC connection per peer node, 65,520-byte segments, no offloads)", true
	case "mpi_bw", "mpi_bibw", "mpi_pingpong":
		name = algos.NameMPI
	case "mpi_msgrate_mt":
		name = algos.NameMPI
		if t, isInt := p.X["threads"].(int); isInt {
			streams = t
		}
	default:
		return nil, "", "", false
	}
	if r, isInt := p.X["ranks"].(int); isInt && r != 2 {
		return nil, "", fmt.Sprintf("%d ranks: only two-rank point-to-point runs are modelled", r), true
	}
	d, err := baseline(name)
	if err != nil {
		return nil, "", err.Error(), true
	}
	cfg := streamConfig{Design: d, Streams: streams, Bytes: bytes, MPI: sw.MPI, IPoIB: sw.IPoIB}
	if p.Verb == "mpi_pingpong" {
		cfg.Messages = pingPongMessages(bytes)
		run, why := pingPongRunner(p, cfg)
		return run, fmt.Sprintf("%s ping-pong: %d round trips of %d bytes", name, cfg.Messages, bytes), why, true
	}
	cfg.Messages = streamMessages(bytes, streams)
	var scale float64
	if p.Verb == "mpi_msgrate_mt" {
		if p.Unit != "Mops/s" {
			return nil, "", fmt.Sprintf("unit %q: a message-rate point reports Mops/s", p.Unit), true
		}
		// The threads share the library (MPI_THREAD_MULTIPLE) and wait
		// in it as MPICH does; the sources are MPICH or derived from it.
		cfg.Window, cfg.Messages, cfg.Wait = osuWindow, msgRateMessages, algos.MPICHWait
		if w, isInt := p.X["window"].(int); isInt {
			cfg.Window = w
		}
		scale = 1 / float64(bytes) / 1e6 // bytes per second to million messages per second
	} else {
		var why string
		if scale, why = rateScale(p.Unit); why != "" {
			return nil, "", why, true
		}
		if (p.Verb == "mpi_bw" || p.Verb == "mpi_bibw") && bytes < osuWindowBound {
			cfg.Window = osuWindow
			cfg.Messages = max(cfg.Messages, 4*osuWindow)
		}
		cfg.Both = p.Verb == "mpi_bibw" // osu_bibw: both ranks send, the rate is the sum
	}
	run = func(c *sim.Cluster) (float64, error) {
		r, err := runStream(c, cfg)
		return r * scale, err
	}
	dir := "node 0 -> node 1"
	if cfg.Both {
		dir = "node 0 <-> node 1 (both directions, summed)"
	}
	how = fmt.Sprintf("%s stream %s: %d x %d messages of %d bytes", name, dir, streams, cfg.Messages, bytes)
	switch {
	case cfg.Window > 0:
		how += fmt.Sprintf(" (MPI_Isend, a window of %d per thread)", cfg.Window)
	case name == algos.NameMPI:
		how += " (blocking MPI_Send, not osu_bw's window of 64: alike at this size)"
	}
	return run, how, "", true
}

// rateScale converts bytes per second to unit.
func rateScale(unit string) (float64, string) {
	switch unit {
	case "Gb/s":
		return 8 / 1e9, ""
	case "MB/s":
		return 1 / 1e6, ""
	case "MiB/s":
		return 1.0 / (1 << 20), ""
	case "GB/s":
		return 1 / 1e9, ""
	}
	return 0, fmt.Sprintf("unit %q: a stream reports a rate", unit)
}

// pingPongRunner reports IMB PingPong's t[usec] (half the round trip) or
// its Mbytes/sec: bytes / t, which IMB 4.x counted in 2^20 bytes (unit
// MiB/s: bytes / 1.048576 / t) and IMB 2018 on in 10^6 bytes (MB/s).
func pingPongRunner(p Point, cfg streamConfig) (runner, string) {
	switch p.Unit {
	case "us", "MB/s", "MiB/s":
	default:
		return nil, fmt.Sprintf("unit %q: a ping-pong reports us, MB/s or MiB/s", p.Unit)
	}
	return func(c *sim.Cluster) (float64, error) {
		half, err := runPingPong(c, cfg)
		us := half.Seconds() * 1e6
		switch p.Unit {
		case "us":
			return us, err
		case "MiB/s":
			return float64(cfg.Bytes) / 1.048576 / us, err
		}
		return float64(cfg.Bytes) / us, err
	}, ""
}

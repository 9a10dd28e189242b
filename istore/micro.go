package istore

import (
	"encoding/binary"
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// CyclesPerValue is the CPU cost of the microbenchmarks' pipeline per
// 8-byte value: scan a 2 KB block and add up its 256 integers (Salama17
// §5.2), about one cycle per value for a scalar loop over data the NIC
// just wrote (an estimate; with SIMD it is less).
const CyclesPerValue = 1

// ValuesPerBlock is the 8-byte integers in a microbenchmark block.
const ValuesPerBlock = BlockBytes / 8

// MicroConfig is a streaming microbenchmark (Salama17's experiment 2):
// node 0 is the only memory server and holds Blocks blocks of 256 8-byte
// integers; nodes 1..Readers are compute servers that each scan and sum
// all of them, with Threads worker threads (each a stream over every
// Threads-th block) and Depth outstanding reads per thread. With
// Multicast the readers form relay chains (one per thread) instead of
// reading on their own.
type MicroConfig struct {
	Readers   int
	Depth     int
	Threads   int
	Blocks    int
	Multicast bool
	Seed      uint64
	Timeout   fabric.Duration
}

// MicroResult is a microbenchmark's outcome.
type MicroResult struct {
	// PerReader is each reader's scanned blocks per second (simulated).
	PerReader []float64
	// Mean is PerReader's mean.
	Mean float64
	// MaxOutstanding is the most RDMA Reads one worker thread had in
	// flight (never above Depth).
	MaxOutstanding int
	Reads          int64 // RDMA Reads, over the cluster
	Forwards       int64 // relay writes, over the cluster
	QPsPerNode     int
	SumOK          bool // payload mode: every reader's sum was right
	SetupS         float64
}

func (c *MicroConfig) check(nodes int) error {
	switch {
	case c.Readers < 1:
		return fmt.Errorf("%w: %d readers: want at least 1", ErrConfig, c.Readers)
	case nodes != c.Readers+1:
		return fmt.Errorf("%w: %d readers need a %d-node cluster (a memory server and the readers), not %d nodes", ErrConfig, c.Readers, c.Readers+1, nodes)
	case c.Blocks < 1:
		return fmt.Errorf("%w: %d blocks: want at least 1", ErrConfig, c.Blocks)
	case c.Threads < 1:
		return fmt.Errorf("%w: %d threads per reader: want at least 1", ErrConfig, c.Threads)
	}
	return nil
}

// microValue is value i of block b.
func microValue(seed uint64, b, i int) uint64 { return mix(seed+uint64(b)<<8+uint64(i)) & 0xffffff }

// RunMicro runs the microbenchmark on f (Readers+1 nodes).
func RunMicro(f fabric.Fabric, cfg MicroConfig) (*MicroResult, error) {
	if err := cfg.check(f.Size()); err != nil {
		return nil, err
	}
	n := f.Size()
	ec := &EngineConfig{Nodes: n, Memory: []int{0}, Threads: cfg.Threads, Depth: cfg.Depth, Timeout: cfg.Timeout}
	for r := 1; r < n; r++ {
		ec.Compute = append(ec.Compute, r)
	}
	for b := range cfg.Blocks {
		ec.Locs = append(ec.Locs, Loc{Node: 0, Off: int64(b) * BlockBytes})
	}
	split := func(k int) []int {
		var bs []int
		for b := k; b < cfg.Blocks; b += cfg.Threads {
			bs = append(bs, b)
		}
		return bs
	}
	for k := range cfg.Threads {
		if cfg.Multicast {
			ec.Streams = append(ec.Streams, Stream{Members: ec.Compute, Blocks: split(k), Thread: k})
			continue
		}
		for _, r := range ec.Compute {
			ec.Streams = append(ec.Streams, Stream{Members: []int{r}, Blocks: split(k), Thread: k})
		}
	}
	var want uint64
	for b := range cfg.Blocks {
		for i := range ValuesPerBlock {
			want += microValue(cfg.Seed, b, i)
		}
	}
	ec.Region = func(_ int, mem []byte, payload bool) int64 {
		if payload {
			for b := range cfg.Blocks {
				for i := range ValuesPerBlock {
					binary.LittleEndian.PutUint64(mem[b*BlockBytes+i*8:], microValue(cfg.Seed, b, i))
				}
			}
		}
		return int64(cfg.Blocks) * BlockBytes
	}
	sums := make([][]uint64, n) // per node, per thread (node-local)
	ec.Process = func(th fabric.Thread, s *Stream, _ int, data []byte) error {
		th.Compute(CyclesPerValue * ValuesPerBlock)
		if data != nil {
			var sum uint64
			for i := 0; i < BlockBytes; i += 8 {
				sum += binary.LittleEndian.Uint64(data[i:])
			}
			sums[th.Node().ID()][s.Thread] += sum
		}
		return nil
	}
	res := &MicroResult{PerReader: make([]float64, cfg.Readers), SumOK: true}
	err := f.Run(func(th fabric.Thread) error {
		me := th.Node().ID()
		sums[me] = make([]uint64, cfg.Threads)
		start, ends, st, teardown, err := runEngine(th, ec)
		if err != nil {
			return err
		}
		if err := teardown(); err != nil {
			return err
		}
		var end fabric.Time
		var total uint64
		for k, t := range ends {
			end = max(end, t)
			total += sums[me][k]
		}
		// Node results over the out-of-band channel, so that one process
		// per node works: time (ps), reads, forwards, QPs, max outstanding,
		// sum, setup (ps).
		vals := []int64{int64(end.Sub(start)), st.Reads, st.Forwards, int64(st.QPs), int64(st.MaxOutstanding), int64(total), int64(st.Setup)}
		all, err := algos.GatherInts(th, "istore/micro", vals)
		if err != nil {
			return err
		}
		if me != f.Local()[0].ID() {
			return nil
		}
		for j, v := range all {
			res.Reads += v[1]
			res.Forwards += v[2]
			res.QPsPerNode = max(res.QPsPerNode, int(v[3]))
			res.MaxOutstanding = max(res.MaxOutstanding, int(v[4]))
			res.SetupS = max(res.SetupS, fabric.Duration(v[6]).Seconds())
			if j == 0 {
				continue
			}
			res.PerReader[j-1] = float64(cfg.Blocks) / fabric.Duration(v[0]).Seconds()
			res.Mean += res.PerReader[j-1] / float64(cfg.Readers)
			if th.Node().Payload() && uint64(v[5]) != want {
				res.SumOK = false
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

package istore

import (
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/tpch"
)

// CPU costs of the join pipelines, in cycles per row, charged with
// fabric.Thread.Compute where the work happens: the TPC-H plans' operator
// costs (tpch.CyclesScan and so on; docs/tpch.md gives their basis), so
// that the remote-read and the shuffle plans are costed alike. A compute
// server builds a dimension row into its local array (scan + build) and
// probes a fact row against each joined dimension (scan, a probe per join,
// a group update).
const (
	CyclesBuildRow = tpch.CyclesScan + tpch.CyclesBuild
	CyclesScanRow  = tpch.CyclesScan
	CyclesProbe    = tpch.CyclesProbe
	CyclesAgg      = tpch.CyclesAgg
)

// Config is one remote-read query run.
type Config struct {
	Query Query
	// Parts is the partitions per join key (default: the number of
	// compute servers, as the paper's 8 on 8 servers).
	Parts int
	// Memory and Compute are the servers' node ids (default: every node
	// is both).
	Memory, Compute []int
	// Threads is the worker threads per compute server (default half the
	// cores: the paper's 10 of 20).
	Threads int
	// Depth is the outstanding reads per worker thread (default 8).
	Depth int
	// Multicast relays dimension partitions that several compute servers
	// need along chains of those servers; otherwise each reads them.
	Multicast bool
	Timeout   fabric.Duration
}

// Result is a remote-read query run's outcome.
type Result struct {
	Answer    *Answer // every compute server's (they agree; checked)
	ResponseS float64 // from the start barrier to the last answer
	SetupS    float64
	Tiles     [3]int
	// BlocksRead counts RDMA Reads, Forwards relay writes (cluster);
	// DimBlocks and FactBlocks the blocks each compute server received,
	// summed over servers.
	BlocksRead, Forwards  int64
	DimBlocks, FactBlocks int64
	MaxOutstanding        int
	QPsPerNode            int
	RegisteredPerNode     int64
}

// Normalize fills in defaults for an n-node cluster with cores per node
// and checks the knobs.
func (c *Config) Normalize(n, cores int) error {
	if _, err := ParseQuery(int(c.Query)); err != nil {
		return fmt.Errorf("%w: %v", ErrConfig, err)
	}
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	if len(c.Memory) == 0 {
		c.Memory = all
	}
	if len(c.Compute) == 0 {
		c.Compute = all
	}
	if c.Parts == 0 {
		c.Parts = len(c.Compute)
	}
	if c.Threads == 0 {
		c.Threads = max(1, cores/2)
	}
	if c.Depth == 0 {
		c.Depth = 8
	}
	if c.Parts < 1 || c.Parts > 64 {
		return fmt.Errorf("%w: %d partitions per join key: want 1..64", ErrConfig, c.Parts)
	}
	ec := EngineConfig{Nodes: n, Memory: c.Memory, Compute: c.Compute, Threads: c.Threads, Depth: c.Depth}
	return ec.check(n, cores)
}

// Run evaluates cfg.Query over db on f with remote reads: every node
// computes the layout and the tiling, memory servers register and fill
// their regions, compute servers build their dimension partitions (phase
// 0) and probe their fact cells (phase 1) with Threads workers each, and
// the partial aggregates are gathered over the out-of-band channel (the
// only exchange, as in the paper).
func Run(f fabric.Fabric, db *DB, cfg Config) (*Result, error) {
	n := f.Size()
	if err := cfg.Normalize(n, f.Local()[0].Cores()); err != nil {
		return nil, err
	}
	q := cfg.Query
	l, err := NewLayout(db, cfg.Parts, cfg.Memory)
	if err != nil {
		return nil, err
	}
	tl, err := NewTiling(db, q, cfg.Parts, len(cfg.Compute))
	if err != nil {
		return nil, err
	}
	j := &joinRun{q: q, l: l, cfg: cfg, states: make([]*joinNode, n), answers: make([]*Answer, n),
		sizes: [3]int{len(db.Customers), len(db.Parts), len(db.Suppliers)}, res: &Result{Tiles: tl.Tiles}, first: f.Local()[0].ID()}
	j.ec = &EngineConfig{Nodes: n, Memory: cfg.Memory, Compute: cfg.Compute, Threads: cfg.Threads, Depth: cfg.Depth, Timeout: cfg.Timeout,
		Streams: joinStreams(q, l, tl, cfg), Process: j.process}
	for _, b := range l.Blocks {
		j.ec.Locs = append(j.ec.Locs, Loc{Node: b.Node, Off: b.Off})
	}
	j.ec.Region = func(node int, mem []byte, payload bool) int64 {
		if payload {
			for i := range l.Blocks {
				if b := &l.Blocks[i]; b.Node == node {
					l.Encode(b, mem[b.Off:])
				}
			}
		}
		return l.MemBytes[node]
	}
	if err := f.Run(j.node); err != nil {
		return nil, err
	}
	for _, node := range f.Local() {
		if a := j.answers[node.ID()]; !a.Equal(j.answers[j.first]) {
			return nil, fmt.Errorf("istore: node %d's answer differs from node %d's", node.ID(), j.first)
		}
	}
	j.res.Answer = j.answers[j.first]
	facts := 0
	for _, c := range l.Cells {
		facts += len(c)
	}
	if j.res.FactBlocks != int64(facts) {
		return nil, fmt.Errorf("istore: the compute servers probed %d fact blocks, want each of the %d once", j.res.FactBlocks, facts)
	}
	return j.res, nil
}

// joinStreams plans a join's streams. Phase 0: per joined dimension and
// tile, the tile's partitions; its members are the compute servers of
// that tile (in compute-server order), relayed or each reading on its own.
// Phase 1: each compute server's fact cells. Each stream's blocks are dealt
// to the Threads workers in turn.
func joinStreams(q Query, l *Layout, tl Tiling, cfg Config) []Stream {
	T := cfg.Threads
	split := func(bs []int, k int) []int {
		var out []int
		for i := k; i < len(bs); i += T {
			out = append(out, bs[i])
		}
		return out
	}
	var streams []Stream
	for d := range q.Joins() {
		for u := range tl.Tiles[d] {
			var members []int
			for s, node := range cfg.Compute {
				if tl.Coord(s)[d] == u {
					members = append(members, node)
				}
			}
			lo, hi := tl.DimParts(d, u)
			var bs []int
			for p := lo; p < hi; p++ {
				bs = append(bs, l.Dim[d][p]...)
			}
			for k := range T {
				if cfg.Multicast {
					streams = append(streams, Stream{Members: members, Blocks: split(bs, k), Thread: k, Tag: d})
					continue
				}
				for _, m := range members {
					streams = append(streams, Stream{Members: []int{m}, Blocks: split(bs, k), Thread: k, Tag: d})
				}
			}
		}
	}
	for s, node := range cfg.Compute {
		var bs []int
		for _, c := range tl.Cells(l, s) {
			bs = append(bs, l.Cells[c]...)
		}
		for k := range T {
			streams = append(streams, Stream{Members: []int{node}, Blocks: split(bs, k), Thread: k, Phase: 1, Tag: 3})
		}
	}
	return streams
}

// joinRun is one star join across the fabric's nodes.
type joinRun struct {
	q       Query
	l       *Layout
	cfg     Config
	ec      *EngineConfig
	sizes   [3]int      // rows per dimension
	states  []*joinNode // per node
	answers []*Answer   // per node
	res     *Result     // filled by this process's first node
	first   int         // this process's first node
}

// joinNode is one node's state: the dimension arrays (attribute + 1 by
// key; 0: not built), and per worker thread its partial aggregate.
type joinNode struct {
	dims [3][]uint8
	agg  [][Groups]Agg
	dimB int64
	fact int64
	mu   fabric.Mutex
}

// process handles one block a worker read: a dimension block builds the
// dimension's array, a fact block probes them and aggregates.
func (j *joinRun) process(th fabric.Thread, s *Stream, blk int, data []byte) error {
	ns, l, q := j.states[th.Node().ID()], j.l, j.q
	b := &l.Blocks[blk]
	if s.Tag < 3 { // build
		th.Compute(CyclesBuildRow * int64(len(b.Rows)))
		arr := ns.dims[s.Tag]
		ns.mu.Lock()
		ns.dimB++
		err := l.Rows(b, data, func(a, v uint64) {
			if a >= 1 && a <= uint64(j.sizes[s.Tag]) {
				arr[a] = uint8(v) + 1
			}
		})
		ns.mu.Unlock()
		return err
	}
	th.Compute(int64(CyclesScanRow+q.Joins()*CyclesProbe+CyclesAgg) * int64(len(b.Rows)))
	agg := &ns.agg[s.Thread]
	var missing error
	err := l.Rows(b, data, func(a, v uint64) {
		cust, part, supp, rev := a&0xffffffff, a>>32, v&0xffffffff, int64(v>>32)
		var attrs [3]uint8
		keys := [3]uint64{cust, part, supp}
		for d, key := range keys[:q.Joins()] {
			if x := ns.dims[d][key]; x > 0 {
				attrs[d] = x - 1
			} else if missing == nil {
				missing = fmt.Errorf("istore: node %d: fact row of block %d probes %s key %d, which its tile did not build", th.Node().ID(), b.Seq, Table(d), key)
			}
		}
		g := &agg[group(attrs[0], attrs[1], attrs[2])]
		g.Sum += rev
		g.Count++
	})
	if err != nil {
		return err
	}
	ns.mu.Lock()
	ns.fact++
	ns.mu.Unlock()
	return missing
}

// node runs one node: the engine, then the gathered answer and statistics.
func (j *joinRun) node(th fabric.Thread) error {
	me := th.Node().ID()
	ns := &joinNode{agg: make([][Groups]Agg, j.cfg.Threads), mu: th.Node().NewMutex()}
	for d := range j.q.Joins() {
		ns.dims[d] = make([]uint8, j.sizes[d]+1)
	}
	j.states[me] = ns
	start, _, st, teardown, err := runEngine(th, j.ec)
	if err != nil {
		return err
	}
	if j.answers[me], err = j.gatherAnswer(th, ns); err != nil {
		return err
	}
	end := th.Now()
	if err := teardown(); err != nil {
		return err
	}
	stats, err := algos.GatherInts(th, "istore/stats", []int64{int64(end.Sub(start)), int64(st.Setup), st.Reads, st.Forwards,
		ns.dimB, ns.fact, int64(st.MaxOutstanding), int64(st.QPs), st.RegisteredBytes})
	if err != nil || me != j.first {
		return err
	}
	res := j.res
	for _, v := range stats {
		res.ResponseS = max(res.ResponseS, fabric.Duration(v[0]).Seconds())
		res.SetupS = max(res.SetupS, fabric.Duration(v[1]).Seconds())
		res.BlocksRead += v[2]
		res.Forwards += v[3]
		res.DimBlocks += v[4]
		res.FactBlocks += v[5]
		res.MaxOutstanding = max(res.MaxOutstanding, int(v[6]))
		res.QPsPerNode = max(res.QPsPerNode, int(v[7]))
		res.RegisteredPerNode = max(res.RegisteredPerNode, v[8])
	}
	return nil
}

// gatherAnswer sums the node's partial aggregates and gathers every
// node's, which make the answer.
func (j *joinRun) gatherAnswer(th fabric.Thread, ns *joinNode) (*Answer, error) {
	var part [Groups]Agg
	for k := range ns.agg {
		for g := range part {
			part[g].Sum += ns.agg[k][g].Sum
			part[g].Count += ns.agg[k][g].Count
		}
	}
	flat := make([]int64, 0, 2*Groups+8)
	for _, g := range part {
		flat = append(flat, g.Sum, g.Count)
	}
	all, err := algos.GatherInts(th, "istore/agg", flat)
	if err != nil {
		return nil, err
	}
	ans := &Answer{Query: j.q}
	for _, v := range all {
		if len(v) != 2*Groups {
			return nil, fmt.Errorf("istore: a node sent %d aggregate values, want %d", len(v), 2*Groups)
		}
		for g := range Groups {
			ans.Groups[g].Sum += v[2*g]
			ans.Groups[g].Count += v[2*g+1]
		}
	}
	return ans, nil
}

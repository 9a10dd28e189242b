package istore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// Loc is where a block lies: its memory server's node id and the offset in
// that server's region.
type Loc struct {
	Node int
	Off  int64
}

// Stream is a sequence of blocks that every member (a compute server's
// node id) processes on worker thread Thread, in order. The first member
// reads each block with an RDMA Read; each member forwards it to the next
// one with an RDMA Write with immediate (a relay chain: our multicast).
// A stream of one member is a plain read stream. Streams of Phase p start
// on a node once every worker thread of that node finished phase p-1.
type Stream struct {
	Members []int
	Blocks  []int // indices into the engine's locations
	Thread  int
	Phase   int
	Tag     int // the caller's
}

// Process handles one block on a worker thread: data is the block's bytes
// as they arrived in the ring slot (valid only during the call).
type Process func(th fabric.Thread, s *Stream, block int, data []byte) error

// EngineConfig configures the streaming engine of one run.
type EngineConfig struct {
	Nodes   int   // cluster size
	Memory  []int // memory servers
	Compute []int // compute servers
	Threads int   // worker threads per compute server
	Depth   int   // outstanding reads (and ring slots) per stream and thread
	Locs    []Loc
	Streams []Stream
	// Region returns memory server node's region size and, in payload
	// mode, fills it (called on that node during setup).
	Region  func(node int, mem []byte, payload bool) int64
	Process Process
	Timeout fabric.Duration // no progress for this long fails the run (default 1 s)
}

// EngineStats is what one node's engine did.
type EngineStats struct {
	Reads, Forwards, Credits int64
	MaxOutstanding           int // most RDMA Reads one worker had in flight
	QPs                      int
	RegisteredBytes          int64
	Setup                    fabric.Duration
}

// Errors of bad knobs.
var ErrConfig = errors.New("istore: bad configuration")

func (c *EngineConfig) check(nodes, cores int) error {
	switch {
	case c.Threads < 1 || c.Threads > cores:
		return fmt.Errorf("%w: %d worker threads per compute server: want 1..%d (the cores of a node)", ErrConfig, c.Threads, cores)
	case c.Depth < 1 || c.Depth > 64:
		return fmt.Errorf("%w: %d outstanding reads: want 1..64", ErrConfig, c.Depth)
	case len(c.Memory) == 0 || len(c.Compute) == 0:
		return fmt.Errorf("%w: need at least one memory server and one compute server", ErrConfig)
	}
	for _, set := range [][]int{c.Memory, c.Compute} {
		for i, n := range set {
			if n < 0 || n >= nodes || slices.Contains(set[:i], n) {
				return fmt.Errorf("%w: server node %d: not a distinct node of the %d-node cluster", ErrConfig, n, nodes)
			}
		}
	}
	for i, s := range c.Streams {
		if s.Thread < 0 || s.Thread >= c.Threads || len(s.Members) == 0 {
			return fmt.Errorf("%w: stream %d: thread %d of %d, %d members", ErrConfig, i, s.Thread, c.Threads, len(s.Members))
		}
		for j, m := range s.Members {
			if !slices.Contains(c.Compute, m) || slices.Contains(s.Members[:j], m) {
				return fmt.Errorf("%w: stream %d: member %d is not a distinct compute server", ErrConfig, i, m)
			}
		}
		for _, b := range s.Blocks {
			if b < 0 || b >= len(c.Locs) || !slices.Contains(c.Memory, c.Locs[b].Node) {
				return fmt.Errorf("%w: stream %d: block %d has no location on a memory server", ErrConfig, i, b)
			}
		}
	}
	return nil
}

const (
	wrRead   = 1 << 40
	wrFwd    = 2 << 40
	wrCredit = 3 << 40
	wrRecv   = 4 << 40
	wrKind   = 0xff << 40
	// creditBytes at the end of a ring: the downstream member's count of
	// freed slots (blocks it is done with).
	creditBytes = 64
	cqDepth     = 4096
)

// ring is one member's state of one stream.
type ring struct {
	s        *Stream
	idx      int // stream index
	local    int // index among this thread's rings (in work request ids)
	pos      int
	mr       fabric.MR
	up, down fabric.QP     // from the previous member, to the next
	downRing fabric.QPInfo // the next member's ring
	upCredit fabric.QPInfo // the previous member's credit word

	// ready[slot] is 1 + the block (position in the stream) the slot
	// holds once it arrived, 0 while it is empty or being filled.
	ready      []int
	recvPosted int
}

func (r *ring) postRecv() error {
	_, err := r.up.PostRecv([]fabric.RecvWR{{ID: wrRecv | uint64(r.local)<<24}})
	r.recvPosted++
	return err
}

// engine is one node's part of a run.
type engine struct {
	cfg     *EngineConfig
	me      int
	nodes   int
	payload bool
	pd      fabric.PD
	region  fabric.MR
	remote  map[int]fabric.QPInfo // memory server node -> its region
	cqs     []fabric.CQ           // per worker thread
	pair    [][]fabric.QP         // [thread][node]: the read (or served) connection
	rings   [][]*ring             // [thread]: this node's streams in order
	stats   EngineStats
	qps     []fabric.QP
	mrs     []fabric.MR
}

type entry struct {
	tag  uint64
	info fabric.QPInfo
}

func pairTag(thread, peer int) uint64 { return 1<<62 | uint64(thread)<<24 | uint64(peer) }
func ringTag(stream, pos int, up bool) uint64 {
	t := 2<<62 | uint64(stream)<<20 | uint64(pos)<<1
	if up {
		t |= 1
	}
	return t
}

// setup creates this node's resources and connects them (every node calls
// it at the same time).
func (e *engine) setup(th fabric.Thread) error {
	t0 := th.Now()
	mine, err := e.create(th)
	if err != nil {
		return err
	}
	peers, err := e.exchange(th, mine)
	if err != nil {
		return err
	}
	if err := e.connectAll(peers); err != nil {
		return err
	}
	e.stats.QPs = len(e.qps)
	for _, mr := range e.mrs {
		e.stats.RegisteredBytes += int64(mr.Len())
	}
	e.stats.Setup = th.Now().Sub(t0)
	return nil
}

// create makes the node's protection domain, its region (a memory
// server), the read connections' and the stream rings' queue pairs and
// memory, and returns the entries to offer the other nodes.
func (e *engine) create(th fabric.Thread) ([]entry, error) {
	cfg := e.cfg
	dev := th.Node().Device()
	var err error
	if e.pd, err = dev.AllocPD(); err != nil {
		return nil, err
	}
	isMem, isComp := slices.Contains(cfg.Memory, e.me), slices.Contains(cfg.Compute, e.me)
	var mine []entry
	if isMem {
		size := cfg.Region(e.me, nil, false)
		if e.region, err = e.pd.RegMR(int(max(size, 64)), fabric.AccessLocalWrite|fabric.AccessRemoteRead); err != nil {
			return nil, err
		}
		e.mrs = append(e.mrs, e.region)
		if e.payload {
			cfg.Region(e.me, e.region.Bytes(), true)
		}
	}
	e.cqs = make([]fabric.CQ, cfg.Threads)
	e.pair = make([][]fabric.QP, cfg.Threads)
	e.rings = make([][]*ring, cfg.Threads)
	// Read connections: a compute server to every memory server, per
	// worker thread; the memory server's end is passive. One queue pair
	// serves both directions when both nodes have both roles.
	n := dev.Attr().MaxQPWR
	for k := range cfg.Threads {
		e.pair[k] = make([]fabric.QP, e.nodes)
		for p := range e.pair[k] {
			pm, pc := slices.Contains(cfg.Memory, p), slices.Contains(cfg.Compute, p)
			if !(isComp && pm || isMem && pc) {
				continue
			}
			qp, err := e.newQP(dev, k, min(cfg.Depth+8, n), 1)
			if err != nil {
				return nil, err
			}
			e.pair[k][p] = qp
			mine = append(mine, e.offer(qp, pairTag(k, p), e.region, 0, 0))
		}
	}
	// Stream rings, in stream order per thread.
	for i := range cfg.Streams {
		s := &cfg.Streams[i]
		pos := slices.Index(s.Members, e.me)
		if pos < 0 {
			continue
		}
		r := &ring{s: s, idx: i, local: len(e.rings[s.Thread]), pos: pos, ready: make([]int, cfg.Depth)}
		if len(s.Blocks) >= 1<<24 || r.local >= 1<<16 {
			return nil, fmt.Errorf("%w: stream %d has %d blocks (at most %d) or thread %d has too many streams", ErrConfig, i, len(s.Blocks), 1<<24-1, s.Thread)
		}
		if r.mr, err = e.pd.RegMR(cfg.Depth*BlockBytes+creditBytes, fabric.AccessLocalWrite|fabric.AccessRemoteWrite); err != nil {
			return nil, err
		}
		e.mrs = append(e.mrs, r.mr)
		k := s.Thread
		if pos > 0 {
			if r.up, err = e.newQP(dev, k, min(cfg.Depth+8, n), cfg.Depth); err != nil {
				return nil, err
			}
			mine = append(mine, e.offer(r.up, ringTag(i, pos, true), r.mr, 0, cfg.Depth*BlockBytes))
			for range min(cfg.Depth, len(s.Blocks)) {
				if err := r.postRecv(); err != nil {
					return nil, err
				}
			}
		}
		if pos < len(s.Members)-1 {
			if r.down, err = e.newQP(dev, k, min(cfg.Depth+8, n), 1); err != nil {
				return nil, err
			}
			mine = append(mine, e.offer(r.down, ringTag(i, pos, false), r.mr, cfg.Depth*BlockBytes, 8))
		}
		e.rings[k] = append(e.rings[k], r)
	}
	for k := range e.cqs {
		if e.cqs[k] == nil {
			if e.cqs[k], err = dev.CreateCQ(16); err != nil {
				return nil, err
			}
		}
	}
	// Memory servers offer their region too.
	if isMem {
		in := fabric.QPInfo{Node: uint32(e.me), Addr: e.region.Addr(), RKey: e.region.RKey(), Bytes: uint64(e.region.Len())}
		mine = append(mine, entry{0, in})
	}
	return mine, nil
}

// newQP creates an RC queue pair of worker thread k (on its completion
// queue, created with the first) and moves it to INIT.
func (e *engine) newQP(dev fabric.Device, k, sendWR, recvWR int) (fabric.QP, error) {
	if e.cqs[k] == nil {
		var err error
		if e.cqs[k], err = dev.CreateCQ(min(cqDepth, dev.Attr().MaxCQE)); err != nil {
			return nil, err
		}
	}
	qp, err := e.pd.CreateQP(fabric.QPInit{Type: fabric.RC, SendCQ: e.cqs[k], RecvCQ: e.cqs[k],
		Caps: fabric.QPCaps{MaxSendWR: sendWR, MaxRecvWR: recvWR, MaxInline: 8}})
	if err != nil {
		return nil, err
	}
	if err := qp.Modify(fabric.StateInit, fabric.QPAttr{Access: fabric.AccessLocalWrite | fabric.AccessRemoteWrite | fabric.AccessRemoteRead}); err != nil {
		return nil, err
	}
	e.qps = append(e.qps, qp)
	return qp, nil
}

// offer describes qp (and n bytes at off of mr, if any) to the other
// nodes under tag; the first PSN is derived from the tag and the node.
func (e *engine) offer(qp fabric.QP, tag uint64, mr fabric.MR, off, n int) entry {
	in := qp.Info()
	in.PSN = e.psn(tag)
	if mr != nil {
		in.Addr, in.RKey, in.Bytes = mr.Addr()+uint64(off), mr.RKey(), uint64(n)
	}
	return entry{tag, in}
}

// psn is the first PSN this node sends with on the connection tag.
func (e *engine) psn(tag uint64) fabric.PSN { return fabric.PSNOf(mix(tag ^ uint64(e.me)<<50)) }

// exchange all-gathers every node's entries and returns them by node and
// tag; memory servers' regions (tag 0) go to e.remote.
func (e *engine) exchange(th fabric.Thread, mine []entry) ([]map[uint64]fabric.QPInfo, error) {
	var blob []byte
	for _, en := range mine {
		enc, _ := en.info.MarshalBinary()
		blob = binary.BigEndian.AppendUint64(blob, en.tag)
		blob = append(blob, enc...)
	}
	all, err := th.Node().OOB().AllGather("istore/setup", blob)
	if err != nil {
		return nil, err
	}
	const rec = 8 + fabric.QPInfoWireBytes
	peers := make([]map[uint64]fabric.QPInfo, len(all))
	e.remote = map[int]fabric.QPInfo{}
	for j, b := range all {
		if len(b)%rec != 0 {
			return nil, fmt.Errorf("istore: node %d sent %d bytes of connection data (same version everywhere?)", j, len(b))
		}
		peers[j] = map[uint64]fabric.QPInfo{}
		for ; len(b) > 0; b = b[rec:] {
			var in fabric.QPInfo
			if err := in.UnmarshalBinary(b[8:rec]); err != nil {
				return nil, fmt.Errorf("istore: from node %d: %w", j, err)
			}
			tag := binary.BigEndian.Uint64(b)
			peers[j][tag] = in
			if tag == 0 {
				e.remote[j] = in
			}
		}
	}
	return peers, nil
}

// connectAll brings every read connection and ring link to RTS with the
// peer's matching entry.
func (e *engine) connectAll(peers []map[uint64]fabric.QPInfo) error {
	find := func(node int, tag uint64) (fabric.QPInfo, error) {
		in, ok := peers[node][tag]
		if !ok {
			return in, fmt.Errorf("istore: node %d offered no connection %#x to node %d (same configuration everywhere?)", node, tag, e.me)
		}
		return in, nil
	}
	connect := func(qp fabric.QP, myTag uint64, peer fabric.QPInfo) error {
		if err := qp.Modify(fabric.StateRTR, fabric.QPAttr{Dest: peer.Address(), RemotePSN: peer.PSN, MinRNRTimer: 1, MaxDestRdAtomic: 16}); err != nil {
			return err
		}
		return qp.Modify(fabric.StateRTS, fabric.QPAttr{SendPSN: e.psn(myTag), Timeout: 14, RetryCnt: 7, RNRRetry: 7, MaxRdAtomic: 16})
	}
	for k := range e.pair {
		for p, qp := range e.pair[k] {
			if qp == nil {
				continue
			}
			in, err := find(p, pairTag(k, e.me))
			if err != nil {
				return err
			}
			if err := connect(qp, pairTag(k, p), in); err != nil {
				return err
			}
		}
	}
	for k := range e.rings {
		for _, r := range e.rings[k] {
			i := r.idx
			if r.up != nil {
				in, err := find(r.s.Members[r.pos-1], ringTag(i, r.pos-1, false))
				if err != nil {
					return err
				}
				r.upCredit = in
				if err := connect(r.up, ringTag(i, r.pos, true), in); err != nil {
					return err
				}
			}
			if r.down != nil {
				in, err := find(r.s.Members[r.pos+1], ringTag(i, r.pos+1, true))
				if err != nil {
					return err
				}
				r.downRing = in
				if err := connect(r.down, ringTag(i, r.pos, false), in); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// runEngine runs cfg on the calling node: setup, a start barrier, the
// worker threads (compute servers) and a done barrier. It returns the
// start time (after the barrier), each worker's end time, the node's
// statistics and the teardown, which the caller runs once it has taken its
// own end time (deregistering is not part of a query's response time).
func runEngine(th fabric.Thread, cfg *EngineConfig) (start fabric.Time, ends []fabric.Time, st EngineStats, teardown func() error, err error) {
	node := th.Node()
	if cfg.Timeout == 0 {
		cfg.Timeout = fabric.Second
	}
	if err := cfg.check(cfg.Nodes, node.Cores()); err != nil {
		return 0, nil, st, nil, err
	}
	e := &engine{cfg: cfg, me: node.ID(), nodes: cfg.Nodes, payload: node.Payload()}
	if err := e.setup(th); err != nil {
		return 0, nil, st, nil, fmt.Errorf("istore: node %d setup: %w", e.me, err)
	}
	if err := node.OOB().Barrier("istore/start"); err != nil {
		return 0, nil, st, nil, err
	}
	start = th.Now()
	if slices.Contains(cfg.Compute, e.me) {
		if ends, err = e.runWorkers(th); err != nil {
			return 0, nil, st, nil, err
		}
	}
	if err := node.OOB().Barrier("istore/done"); err != nil {
		return 0, nil, st, nil, err
	}
	return start, ends, e.stats, e.teardown, nil
}

func (e *engine) teardown() error {
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	for _, qp := range e.qps {
		keep(qp.Destroy())
	}
	for _, mr := range e.mrs {
		keep(mr.Dereg())
	}
	for _, cq := range e.cqs {
		keep(cq.Destroy())
	}
	keep(e.pd.Dealloc())
	return first
}

// runWorkers runs the worker threads and waits for them.
func (e *engine) runWorkers(th fabric.Thread) ([]fabric.Time, error) {
	cfg := e.cfg
	node := th.Node()
	phases := 0
	for _, s := range cfg.Streams {
		phases = max(phases, s.Phase)
	}
	arrived := make([]int, phases+1)
	phaseSig := node.NewSignal()
	done := node.NewSignal()
	ends := make([]fabric.Time, cfg.Threads)
	errs := make([]error, cfg.Threads)
	stats := make([]EngineStats, cfg.Threads)
	running := cfg.Threads
	mu := node.NewMutex()
	locked := func(f func() bool) bool {
		mu.Lock()
		defer mu.Unlock()
		return f()
	}
	for k := range cfg.Threads {
		th.Spawn(fmt.Sprintf("istore-worker%d", k), k%node.Cores(), func(wt fabric.Thread) error {
			defer func() {
				locked(func() bool { running--; return true })
				done.Notify()
			}()
			barrier := func(p int) {
				locked(func() bool { arrived[p]++; return true })
				phaseSig.Notify()
				for !locked(func() bool { return arrived[p] >= cfg.Threads }) {
					wt.Wait(fabric.Forever, phaseSig)
				}
			}
			phase := 0
			for _, r := range e.rings[k] {
				for phase < r.s.Phase {
					barrier(phase)
					phase++
				}
				if err := e.stream(wt, k, r, &stats[k]); err != nil {
					locked(func() bool {
						errs[k] = err
						for p := range arrived {
							arrived[p] = cfg.Threads // release the others
						}
						return true
					})
					phaseSig.Notify()
					return err
				}
			}
			for ; phase < phases; phase++ {
				barrier(phase)
			}
			ends[k] = wt.Now()
			return nil
		})
	}
	for locked(func() bool { return running > 0 }) {
		th.Wait(fabric.Forever, done)
	}
	for k := range cfg.Threads {
		if errs[k] != nil {
			return nil, errs[k]
		}
		e.stats.Reads += stats[k].Reads
		e.stats.Forwards += stats[k].Forwards
		e.stats.Credits += stats[k].Credits
		e.stats.MaxOutstanding = max(e.stats.MaxOutstanding, stats[k].MaxOutstanding)
	}
	return ends, nil
}

// stream runs this node's part of stream r on worker thread k.
func (e *engine) stream(th fabric.Thread, k int, r *ring, st *EngineStats) error {
	w := &streamWork{e: e, k: k, r: r, st: st, head: r.pos == 0, last: r.pos == len(r.s.Members)-1}
	cfg := e.cfg
	cq := e.cqs[k]
	wcs := make([]fabric.WC, 32)
	steps := [...]func(fabric.Thread) (bool, error){w.read, w.forward, w.process, w.credit}
	lastProgress := th.Now()
	for !w.finished() {
		nwc, err := cq.Poll(wcs)
		if err != nil {
			return err
		}
		if err := w.completed(wcs[:nwc]); err != nil {
			return err
		}
		progress := nwc > 0
		for _, step := range steps {
			moved, err := step(th)
			if err != nil {
				return err
			}
			progress = progress || moved
		}
		now := th.Now()
		if progress {
			lastProgress = now
			continue
		}
		if now.Sub(lastProgress) > cfg.Timeout {
			return w.stalled(fmt.Sprintf("for %v", cfg.Timeout))
		}
		th.Wait(lastProgress.Add(cfg.Timeout+1), cq, r.mr)
	}
	return nil
}

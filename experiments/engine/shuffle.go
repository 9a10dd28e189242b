package engine

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/rdmashuffle/rdmashuffle/adaptive"
	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/experiments/catalogue"
	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// This file is one shuffle on any fabric: every node opens its endpoints
// (nodeRun.open), runs its sending and receiving threads (exchange),
// closes what it opened (close), and reports its counts, which every
// process gathers over the out-of-band channel; the record is built from
// the gathered counts (buildRecord).

// nodeResult is what one node reports at the end of a shuffle, gathered
// over the out-of-band channel so that every process can build the record.
type nodeResult struct {
	Sent, Got []algos.Tally
	Corrupt   int
	Setup     fabric.Duration
	Resp      fabric.Duration
	Info      algos.EndpointInfo
	Meter     [5]fabric.Duration // sendIdle, sendTime, recvIdle, recvTime, release
	PoolPeak  int64
}

// nodeRun is one node's part of a shuffle: its endpoints, its buffer pool
// (adaptive buffers) and what it measured. Owned by the node's driver
// thread; its sending and receiving threads write res under mu.
type nodeRun struct {
	cfg    *Config
	design catalogue.Entry
	groups algos.Groups
	me     int
	eps    []algos.Endpoint // one shared or one per thread; nil once closed
	pool   *adaptive.Pool
	poolPD fabric.PD
	res    nodeResult
	meter  nodeMeter
}

// shuffleOn runs cfg (normalized) on f and builds the record. ended, if
// not nil, marks each node whose driver thread returned (with or without
// an error) rather than being stopped by the end of the run.
func shuffleOn(f fabric.Fabric, cfg Config, ended []bool) (*results.Record, error) {
	groups, err := algos.NewGroups(cfg.Pattern, cfg.Nodes)
	if err != nil {
		return nil, err
	}
	design := catalogue.DesignOf(cfg.Design)
	var gathered [][]byte // every node's nodeResult, kept by this process's first node
	firstLocal := f.Local()[0].ID()
	t0 := time.Now()
	err = f.Run(func(th fabric.Thread) error {
		nr := &nodeRun{cfg: &cfg, design: design, groups: groups, me: th.Node().ID()}
		all, err := nr.run(th)
		if nr.me == firstLocal && err == nil {
			gathered = all
		}
		if ended != nil { // not reached when the run's end stops the thread
			ended[nr.me] = true
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	// Every node's results, also those of nodes in other processes.
	res := make([]nodeResult, cfg.Nodes)
	for j, blob := range gathered {
		if err := json.Unmarshal(blob, &res[j]); err != nil || len(res[j].Sent) != cfg.Nodes || len(res[j].Got) != cfg.Nodes {
			return nil, fmt.Errorf("node %d reported malformed results (same version everywhere?): %v", j, err)
		}
	}
	rec := buildRecord(cfg, design, f.Backend(), res)
	rec.WallS = time.Since(t0).Seconds()
	if c, ok := f.(*sim.Cluster); ok {
		// Waiting for a lock is not Thread.Wait, so the idle fractions
		// count it as busy; the simulator measures it (all threads).
		var threads fabric.Duration
		for _, r := range res {
			threads += r.Meter[1] + r.Meter[3]
		}
		st := c.Stats()
		rec.LockWait = ratio(st.LockWait+st.MutexWait, threads)
	}
	return rec, nil
}

// run is the node's driver: open, exchange, close, report; it returns
// every node's report.
func (nr *nodeRun) run(th fabric.Thread) ([][]byte, error) {
	defer func() {
		// On an error of this thread's own, close what the node opened
		// and has not closed (a failed run leaves no objects behind on a
		// node that can still act). Not when the end of the run unwinds
		// the thread: it may not call the fabric.
		if r := recover(); r != nil {
			panic(r)
		}
		nr.closeAll(th)
	}()
	begin := th.Now()
	if err := nr.open(th); err != nil {
		return nil, err
	}
	nr.res.Setup = th.Now().Sub(begin)
	if err := th.Node().OOB().Barrier("start"); err != nil {
		return nil, err
	}
	if err := nr.exchange(th); err != nil {
		return nil, err
	}
	if err := nr.close(th); err != nil {
		return nil, err
	}
	m := nr.meter
	nr.res.Meter = [5]fabric.Duration{m.sendIdle, m.sendTime, m.recvIdle, m.recvTime, m.release}
	blob, err := json.Marshal(nr.res)
	if err != nil {
		return nil, err
	}
	return th.Node().OOB().AllGather("results", blob)
}

// open opens the node's buffer pool (adaptive buffers) and endpoints.
func (nr *nodeRun) open(th fabric.Thread) error {
	cfg := nr.cfg
	if cfg.Adaptive {
		var err error
		if nr.poolPD, err = th.Node().Device().AllocPD(); err != nil {
			return err
		}
		access := fabric.AccessLocalWrite | fabric.AccessRemoteWrite | fabric.AccessRemoteRead
		if nr.pool, err = adaptive.NewPool(nr.poolPD, th.Node().NewMutex(), cfg.PinnedCapMiB<<20, access); err != nil {
			return err
		}
	}
	neps := cfg.Threads
	if nr.design.Shared {
		neps = 1
	}
	nr.eps = make([]algos.Endpoint, neps)
	for k := range nr.eps {
		ec := algos.Config{Nodes: cfg.Nodes, Tag: k, MsgBytes: cfg.MsgBytes, Buffers: cfg.Buffers, CreditEvery: cfg.CreditEvery,
			Timeout: cfg.Timeout, Notify: cfg.Notify, Recover: cfg.UDRecovery, Broadcast: cfg.Pattern == algos.Broadcast,
			SL: cfg.SL, ControlSL: cfg.SL}
		if cfg.ControlSL != nil {
			ec.ControlSL = *cfg.ControlSL
		}
		ApplySoftware(cfg.Software, &ec)
		if nr.pool != nil {
			ec.Adaptive = &algos.AdaptiveBuffers{Pool: nr.pool, MaxRecv: cfg.MaxBuffers, MaxSend: cfg.MaxBuffers}
		}
		if nr.design.Shared {
			ec.Threads = cfg.Threads
		}
		ep, err := nr.design.Open(th, ec)
		if err != nil {
			return err
		}
		nr.eps[k] = ep
	}
	return nil
}

// exchange runs the node's sending threads (SHUFFLE over its slice of the
// relation) and receiving threads (RECEIVE with the fragment's work per
// tuple) and records what they sent, received and waited.
func (nr *nodeRun) exchange(th fabric.Thread) error {
	cfg, me, n, t := nr.cfg, nr.me, nr.cfg.Nodes, nr.cfg.Threads
	start := th.Now()
	nr.res.Sent = make([]algos.Tally, n)
	nr.res.Got = make([]algos.Tally, n)
	var end fabric.Time
	mu := th.Node().NewMutex()
	tuples := cfg.BytesPerNode / algos.TupleBytes
	rel := algos.Relation{Seed: cfg.Seed, Node: me, Tuples: tuples}
	cycles := cfg.CyclesPerTuple
	if len(cfg.NodeCycles) > 0 {
		cycles = cfg.NodeCycles[me%len(cfg.NodeCycles)]
	}
	endpoint := func(k int) algos.Endpoint { return nr.eps[min(k, len(nr.eps)-1)] }
	step := algos.Step{Threads: t, Shared: nr.design.Shared, Lock: mu}
	step.Send = func(st fabric.Thread, k int, last func() bool) error {
		m := &meter{Thread: st}
		from, to := tuples*int64(k)/int64(t), tuples*int64(k+1)/int64(t)
		s, err := algos.Shuffle(m, endpoint(k), algos.ShuffleInput{Rel: rel, From: from, To: to}, nr.groups, last)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		for d := range s {
			nr.res.Sent[d].Add(s[d])
		}
		nr.meter.sendIdle += m.idle
		nr.meter.sendTime += st.Now().Sub(start)
		return nil
	}
	step.Receive = func(rt fabric.Thread, k int) error {
		m := &meter{Thread: rt}
		rep := &releaseMeter{Endpoint: endpoint(k)}
		r, err := algos.Receive(m, rep, n, cycles)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		for s := range r.From {
			nr.res.Got[s].Add(r.From[s])
		}
		nr.res.Corrupt += r.Corrupt
		nr.meter.recvIdle += m.idle
		nr.meter.recvTime += rt.Now().Sub(start)
		nr.meter.release += rep.spent
		end = max(end, rt.Now())
		return nil
	}
	if err := step.Run(th); err != nil {
		return err
	}
	nr.res.Resp = end.Sub(start)
	return nil
}

// close sums the endpoints' counters and closes them, then closes the
// buffer pool and checks that every registered byte was deregistered.
func (nr *nodeRun) close(th fabric.Thread) error {
	for k, ep := range nr.eps {
		nr.res.Info.Add(ep.Info())
		nr.eps[k] = nil // closed here, whatever Close says
		if err := ep.Close(th); err != nil {
			return err
		}
	}
	p, pd := nr.pool, nr.poolPD
	if p == nil {
		return nil
	}
	nr.pool, nr.poolPD = nil, nil // closed here, whatever Close says
	// Every registered byte is accounted for: what was registered was
	// deregistered, and nothing is still lent.
	if err := p.Close(); err != nil {
		return err
	}
	st := p.Stats()
	if st.RegisteredTotal != st.DeregisteredTotal || st.Registered != 0 {
		return fmt.Errorf("node %d: buffer pool leaked: %+v", nr.me, st)
	}
	nr.res.PoolPeak = st.Peak
	return pd.Dealloc()
}

// closeAll closes, ignoring errors, whatever the node still has open
// after a failure.
func (nr *nodeRun) closeAll(th fabric.Thread) {
	for _, ep := range nr.eps {
		if ep != nil {
			ep.Close(th)
		}
	}
	if nr.pool != nil {
		nr.pool.Close()
	}
	if nr.poolPD != nil {
		nr.poolPD.Dealloc()
	}
}

// buildRecord builds the run record from every node's report.
func buildRecord(cfg Config, design catalogue.Entry, backend string, res []nodeResult) *results.Record {
	n := cfg.Nodes
	rec := &results.Record{Experiment: "run", Label: cfg.Label, Backend: backend, Design: cfg.Design, Notify: string(cfg.Notify), Pattern: string(cfg.Pattern),
		Nodes: n, Threads: cfg.Threads, MsgBytes: cfg.MsgBytes, Buffers: cfg.Buffers, CreditEvery: cfg.CreditEvery, Seed: cfg.Seed,
		BytesPerNode: cfg.BytesPerNode, BytesPerPair: cfg.BytesPerPair, CyclesPerTuple: cfg.CyclesPerTuple, NodeCycles: cfg.NodeCycles,
		Adaptive: cfg.Adaptive, MaxBuffers: cfg.MaxBuffers, PinnedCapMiB: cfg.PinnedCapMiB, UDRecovery: cfg.UDRecovery}
	Stamp(rec, cfg)
	sent, got, corrupt := make([][]algos.Tally, n), make([][]algos.Tally, n), make([]int, n)
	for i, r := range res {
		sent[i], got[i], corrupt[i] = r.Sent, r.Got, r.Corrupt
	}
	rec.Integrity = Integrity(sent, got, corrupt)
	var recvBytes float64
	var all nodeMeter
	var transfers, writes, slotReturns int64
	var slotNS, creditNS float64
	for i, r := range res {
		info := r.Info
		all.add(nodeMeter{r.Meter[0], r.Meter[1], r.Meter[2], r.Meter[3], r.Meter[4]})
		rec.ResponseS = max(rec.ResponseS, r.Resp.Seconds())
		rec.NodeFinishMS = append(rec.NodeFinishMS, r.Resp.Seconds()*1e3)
		rec.SetupMS = max(rec.SetupMS, r.Setup.Seconds()*1e3)
		for j := 0; j < n; j++ {
			rec.TuplesSent += sent[i][j].Tuples
			rec.TuplesReceived += got[i][j].Tuples
			recvBytes += float64(got[i][j].Tuples * algos.TupleBytes)
		}
		rec.QPsPerNode = max(rec.QPsPerNode, info.QPs)
		rec.RegisteredPer = max(rec.RegisteredPer, info.RegisteredBytes)
		rec.RecvPoolPer = max(rec.RecvPoolPer, info.RecvPoolBytes)
		creditNS += info.CreditNS
		rec.CreditWrites += info.CreditWrites
		rec.CreditRepeats += info.CreditRepeats
		rec.CreditOwed += info.CreditOwed
		rec.Retransmits += info.Retransmits
		rec.Duplicates += info.Duplicates
		rec.RecvBuffersMean += info.RecvBuffersMean / float64(n)
		if cfg.Adaptive {
			rec.RecvBuffersByNode = append(rec.RecvBuffersByNode, info.RecvBuffersMean)
			if rec.RecvStateMeans == nil {
				rec.RecvStateMeans = make([]float64, 3)
			}
			for k := range rec.RecvStateMeans {
				rec.RecvStateMeans[k] += info.RecvStateMeans[k] / float64(n)
			}
		}
		rec.BuffersGrown += info.AdaptiveGrown
		rec.BuffersRetired += info.AdaptiveRetired
		rec.PoolPeakBytes = max(rec.PoolPeakBytes, r.PoolPeak)
		rec.CreditStalls += info.CreditStalls
		transfers += info.Transfers
		writes += info.Transfers + info.NoticeWrites + info.CreditWrites + info.FreeWrites
		slotNS, slotReturns = slotNS+info.SlotReturnNS, slotReturns+info.SlotReturns
	}
	// The RDMA Write designs: writes per transfer and slot return latency.
	if (design.Family == algos.FamilyDesign || design.Family == algos.FamilyVariant) && design.Verb == algos.VerbWrite {
		if transfers > 0 {
			rec.WritesPerTransfer = float64(writes) / float64(transfers)
		}
		if slotReturns > 0 {
			rec.SlotReturnUS = slotNS / float64(slotReturns) / 1e3
		}
	}
	rec.FinishSkew = results.FinishSkew(rec.NodeFinishMS)
	rec.SenderIdle = ratio(all.sendIdle, all.sendTime)
	rec.ReceiverIdle = ratio(all.recvIdle, all.recvTime)
	if recvBytes > 0 {
		rec.ReleaseMSPerGiB = all.release.Seconds() * 1e3 / (recvBytes / (1 << 30))
		rec.CreditMSPerGiB = creditNS / 1e6 / (recvBytes / (1 << 30))
	}
	if rec.ResponseS > 0 {
		rec.ThroughputGiBs = recvBytes / float64(n) / rec.ResponseS / (1 << 30)
	}
	return rec
}

package algos

import (
	"encoding/binary"
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// mqrd is the MQ/RD endpoint (seed 000 Algorithm 3, seed 001 Algorithm 4):
// the receiver pulls data with RDMA Reads over one RC queue pair per node.
// A sender announces a full buffer by writing a 16-byte descriptor (its
// number, the buffer, the length) into the receiver's ring for that sender
// (ValidArr) with an inline RDMA Write. The receiver polls its rings,
// reads announced buffers into free local slots, and as soon as a read
// completes writes the buffer's id back into the sender's ring for that
// receiver (FreeArr). A buffer returns to the sender's pool only when every
// member of its transmission group has read it, which is what slows this
// design under broadcast (seed 001 §7.1.4). No credit is needed: a ring
// holds as many descriptors as the sender has buffers.
type mqrd struct {
	srBase
	pd  fabric.PD
	rcq fabric.CQ // no receives are posted; RC queue pairs need one
	mr  fabric.MR
	qps []fabric.QP

	ringN                                                int // descriptors per ring (the send pool size)
	sendOff, recvOff, validOff, freeOff, scratchOff, end int

	// Sender side.
	annSent  []uint64 // per destination: descriptors written
	readers  []int    // per send buffer: destinations that have not read it
	freeSeen []uint64 // per receiver: FreeArr entries taken
	depleted []bool

	// Receiver side.
	peer      []rdPeer // per source: its buffers, and our rings at it
	validSeen []uint64 // per source: descriptors taken
	localFree [][]int  // per source: free local slots
	reading   []rdRead // per local slot: the read in flight or done
	closedSrc []bool
	freeCount []uint32 // per source: FreeArr entries written to it
	unsig     []int    // inline writes posted unsignaled, per queue pair
}

type rdPeer struct {
	bufs  fabric.QPInfo // the source's send buffers (address, rkey)
	valid fabric.QPInfo // our descriptor ring at that node (we are its sender)
	free  fabric.QPInfo // our FreeArr ring at that node (we are its receiver)
}

type rdRead struct {
	src, buf int
}

const (
	descBytes = 16
	wrRead    = 4 << 48
	wrNotice  = 5 << 48
)

// OpenMQRD opens an MQ/RD endpoint on the calling thread's node; every node
// must open endpoint cfg.Tag at the same time.
func OpenMQRD(th fabric.Thread, cfg Config) (Endpoint, error) {
	if err := cfg.check(0); err != nil {
		return nil, err
	}
	if cfg.Adaptive != nil {
		return nil, fmt.Errorf("%w: MQ/RD does not support adaptive buffers: its buffers are read by the peers at addresses exchanged at setup", ErrConfig)
	}
	e := &mqrd{}
	e.init("MQ/RD", th, cfg)
	if err := e.setup(th); err != nil {
		return nil, fmt.Errorf("algos: open MQ/RD endpoint %d on node %d: %w", cfg.Tag, e.me, err)
	}
	return e, nil
}

func (e *mqrd) setup(th fabric.Thread) error {
	e.cfg.Buffers *= e.cfg.Threads
	n, b, msg := e.n, e.cfg.Buffers, e.cfg.MsgBytes
	dev := e.node.Device()
	var err error
	if e.pd, err = dev.AllocPD(); err != nil {
		return err
	}
	e.ringN = n * b
	if e.scq, err = dev.CreateCQ(min(4*n*e.ringN+64, dev.Attr().MaxCQE)); err != nil {
		return err
	}
	e.sendOff = 0
	e.recvOff = n * b * msg
	e.validOff = e.recvOff + n*b*msg
	e.freeOff = e.validOff + n*e.ringN*descBytes
	e.scratchOff = e.freeOff + n*e.ringN*8
	e.end = e.scratchOff + 2*n*descBytes
	if e.mr, err = e.pd.RegMR(e.end, fabric.AccessLocalWrite|fabric.AccessRemoteWrite|fabric.AccessRemoteRead); err != nil {
		return err
	}
	e.info.RegisteredBytes = int64(e.end)
	e.initPool(e.mr, e.sendOff, n*b, msg)
	e.annSent = make([]uint64, n)
	e.readers = make([]int, n*b)
	e.freeSeen = make([]uint64, n)
	e.depleted = make([]bool, n)
	e.validSeen = make([]uint64, n)
	e.reading = make([]rdRead, n*b)
	e.closedSrc = make([]bool, n)
	e.freeCount = make([]uint32, n)
	e.unsig = make([]int, n)
	for j := 0; j < n; j++ {
		var slots []int
		for k := b - 1; k >= 0; k-- {
			slots = append(slots, j*b+k)
		}
		e.localFree = append(e.localFree, slots)
	}
	if e.rcq, err = dev.CreateCQ(4); err != nil {
		return err
	}
	var blob []byte
	for j := 0; j < n; j++ {
		qp, err := e.pd.CreateQP(fabric.QPInit{Type: fabric.RC, SendCQ: e.scq, RecvCQ: e.rcq,
			Caps: fabric.QPCaps{MaxSendWR: 2*e.ringN + 2*creditSignalEvery + 8, MaxRecvWR: 1, MaxInline: descBytes}})
		if err != nil {
			return err
		}
		if err := qp.Modify(fabric.StateInit, fabric.QPAttr{Access: fabric.AccessRemoteWrite | fabric.AccessRemoteRead | fabric.AccessLocalWrite}); err != nil {
			return err
		}
		e.qps = append(e.qps, qp)
		info := qp.Info()
		info.PSN = uint32(mix(uint64(e.me*1000+j)) & 0xffffff)
		info.Addr, info.RKey, info.Bytes = e.mr.Addr()+uint64(e.sendOff), e.mr.RKey(), uint64(n*b*msg)
		valid := fabric.QPInfo{Node: uint32(e.me), QPN: info.QPN, Addr: e.mr.Addr() + uint64(e.validOff+j*e.ringN*descBytes), RKey: e.mr.RKey()}
		free := fabric.QPInfo{Node: uint32(e.me), QPN: info.QPN, Addr: e.mr.Addr() + uint64(e.freeOff+j*e.ringN*8), RKey: e.mr.RKey()}
		for _, q := range []fabric.QPInfo{info, valid, free} {
			enc, _ := q.MarshalBinary()
			blob = append(blob, enc...)
		}
	}
	e.info.QPs = n
	all, err := e.node.OOB().AllGather(fmt.Sprintf("mqrd/%d", e.cfg.Tag), blob)
	if err != nil {
		return err
	}
	e.peer = make([]rdPeer, n)
	const rec = 3 * fabric.QPInfoWireBytes
	for j := 0; j < n; j++ {
		if len(all[j]) != n*rec {
			return fmt.Errorf("node %d sent %d bytes of queue-pair information, want %d (same design everywhere?)", j, len(all[j]), n*rec)
		}
		x := all[j][e.me*rec:]
		var qi fabric.QPInfo
		for i, dst := range []*fabric.QPInfo{&qi, &e.peer[j].valid, &e.peer[j].free} {
			if err := dst.UnmarshalBinary(x[i*fabric.QPInfoWireBytes : (i+1)*fabric.QPInfoWireBytes]); err != nil {
				return fmt.Errorf("from node %d: %w", j, err)
			}
		}
		e.peer[j].bufs = qi
		mine := uint32(mix(uint64(e.me*1000+j)) & 0xffffff)
		if err := e.qps[j].Modify(fabric.StateRTR, fabric.QPAttr{Dest: qi.Address(), RemotePSN: qi.PSN, MinRNRTimer: 1, MaxDestRdAtomic: 16}); err != nil {
			return err
		}
		if err := e.qps[j].Modify(fabric.StateRTS, fabric.QPAttr{SendPSN: mine, Timeout: 14, RetryCnt: 7, RNRRetry: 7, MaxRdAtomic: 16}); err != nil {
			return err
		}
	}
	return e.node.OOB().Barrier(fmt.Sprintf("mqrd/%d/up", e.cfg.Tag))
}

// notify writes 16 bytes from scratch slot i to a remote address with an
// inline RDMA Write on the queue pair to node d.
func (e *mqrd) notify(d, i int, raddr uint64, rkey uint32, n int) error {
	wr := fabric.SendWR{ID: wrNotice, Op: fabric.OpWrite, Local: e.mr.SGE(e.scratchOff+i*descBytes, n), Flags: fabric.Inline,
		RemoteAddr: raddr, RKey: rkey}
	e.signalSome(&wr, &e.unsig[d], false)
	_, err := e.qps[d].PostSend([]fabric.SendWR{wr})
	return err
}

// poll handles send-queue completions: reads (receiver side) and signaled
// notices.
func (e *mqrd) poll() (int, error) {
	n, err := e.scq.Poll(e.wcs)
	if err != nil {
		return 0, err
	}
	for _, wc := range e.wcs[:n] {
		if wc.Status != fabric.StatusSuccess {
			return 0, &fabric.CompletionError{WC: wc, Node: e.me}
		}
		if wc.ID&wrKind == wrRead {
			if err := e.readDone(int(wc.ID &^ wrKind)); err != nil {
				return 0, err
			}
			continue
		}
		e.signaled--
	}
	return n, nil
}

// takeFree applies the FreeArr entries receivers have written.
func (e *mqrd) takeFree(th fabric.Thread) int {
	th.Sync()
	got := 0
	for r := 0; r < e.n; r++ {
		for {
			k := e.freeSeen[r] % uint64(e.ringN)
			v := binary.LittleEndian.Uint64(e.mr.Bytes()[e.freeOff+(r*e.ringN+int(k))*8:])
			if v>>32 != (e.freeSeen[r]+1)&0xffffffff {
				break
			}
			e.freeSeen[r]++
			id := int(v & 0xffffffff)
			if id < len(e.readers) {
				if e.readers[id]--; e.readers[id] == 0 {
					e.free = append(e.free, id)
				}
			}
			got++
		}
	}
	return got
}

func (e *mqrd) Acquire(th fabric.Thread) (*Buffer, error) {
	e.lock()
	defer e.unlock()
	deadline := th.Now().Add(e.cfg.Timeout)
	for len(e.free) == 0 {
		n, err := e.poll()
		if err != nil {
			return nil, err
		}
		if n+e.takeFree(th) > 0 {
			deadline = th.Now().Add(e.cfg.Timeout)
			continue
		}
		if err := e.wait(th, deadline, e.mr, "waiting for receivers to read a send buffer"); err != nil {
			return nil, err
		}
	}
	i := e.free[len(e.free)-1]
	e.free = e.free[:len(e.free)-1]
	b := e.bufs[i]
	b.N, b.Tuples, b.Sum = 0, 0, 0
	return b, nil
}

func (e *mqrd) PutData(th fabric.Thread, b *Buffer, dests []int, st State) error {
	if err := e.checkBuffer(b); err != nil {
		return err
	}
	e.lock()
	defer e.unlock()
	h := e.headerFor(b, st)
	h.put(e.mr.Bytes()[e.sendOff+b.id*e.cfg.MsgBytes:])
	if len(dests) == 0 {
		e.free = append(e.free, b.id)
		return nil
	}
	e.readers[b.id] = len(dests)
	for _, d := range dests {
		if d < 0 || d >= e.n {
			return fmt.Errorf("%w: destination node %d in a %d-node cluster", ErrConfig, d, e.n)
		}
		e.annSent[d]++
		desc := e.mr.Bytes()[e.scratchOff+d*descBytes:]
		binary.LittleEndian.PutUint64(desc, e.annSent[d])
		binary.LittleEndian.PutUint32(desc[8:], uint32(b.id))
		binary.LittleEndian.PutUint32(desc[12:], uint32(HeaderBytes+b.N))
		k := (e.annSent[d] - 1) % uint64(e.ringN)
		p := e.peer[d].valid
		if err := e.notify(d, d, p.Addr+k*descBytes, p.RKey, descBytes); err != nil {
			return err
		}
		if st == Depleted {
			e.depleted[d] = true
		}
	}
	return nil
}

// scan takes announced descriptors and starts reads while local slots are
// free.
func (e *mqrd) scan(th fabric.Thread) (int, error) {
	th.Sync()
	started := 0
	for s := 0; s < e.n; s++ {
		for !e.closedSrc[s] && len(e.localFree[s]) > 0 {
			k := e.validSeen[s] % uint64(e.ringN)
			desc := e.mr.Bytes()[e.validOff+(s*e.ringN+int(k))*descBytes:]
			if binary.LittleEndian.Uint64(desc) != e.validSeen[s]+1 {
				break
			}
			e.validSeen[s]++
			id, n := int(binary.LittleEndian.Uint32(desc[8:])), int(binary.LittleEndian.Uint32(desc[12:]))
			if id >= e.ringN || n < HeaderBytes || n > e.cfg.MsgBytes {
				return 0, fmt.Errorf("%w: descriptor from node %d names buffer %d of %d bytes", ErrBadMessage, s, id, n)
			}
			slot := e.localFree[s][len(e.localFree[s])-1]
			e.localFree[s] = e.localFree[s][:len(e.localFree[s])-1]
			e.reading[slot] = rdRead{src: s, buf: id}
			wr := fabric.SendWR{ID: wrRead | uint64(slot), Op: fabric.OpRead, Flags: fabric.Signaled,
				Local:      e.mr.SGE(e.recvOff+slot*e.cfg.MsgBytes, n),
				RemoteAddr: e.peer[s].bufs.Addr + uint64(id*e.cfg.MsgBytes), RKey: e.peer[s].bufs.RKey}
			if _, err := e.qps[s].PostSend([]fabric.SendWR{wr}); err != nil {
				return 0, err
			}
			started++
		}
	}
	return started, nil
}

// readDone delivers a read buffer and tells its sender the buffer is free.
func (e *mqrd) readDone(slot int) error {
	r := e.reading[slot]
	buf := e.mr.Bytes()[e.recvOff+slot*e.cfg.MsgBytes : e.recvOff+(slot+1)*e.cfg.MsgBytes]
	var h header
	if err := h.get(buf, e.cfg.MsgBytes-HeaderBytes); err != nil {
		return fmt.Errorf("from node %d: %w", r.src, err)
	}
	// FreeArr entry: its number (high 32 bits, from 1) and the buffer id.
	e.freeCount[r.src]++
	ent := e.mr.Bytes()[e.scratchOff+(e.n+r.src)*descBytes:]
	binary.LittleEndian.PutUint64(ent, uint64(e.freeCount[r.src])<<32|uint64(r.buf))
	p := e.peer[r.src].free
	k := uint64(e.freeCount[r.src]-1) % uint64(e.ringN)
	if err := e.notify(r.src, e.n+r.src, p.Addr+k*8, p.RKey, 8); err != nil {
		return err
	}
	d := Delivery{Src: r.src, Data: buf[HeaderBytes : HeaderBytes+h.n], N: h.n, Tuples: h.tuples, Sum: h.sum, id: slot}
	if h.flags&flagDepleted != 0 {
		d.State = Depleted
		e.closedSrc[r.src] = true
		e.doneCount++
	}
	e.ready = append(e.ready, d)
	return nil
}

func (e *mqrd) GetData(th fabric.Thread) (Delivery, error) {
	return e.getData(th, receiving{on: []fabric.Waitable{e.mr, e.scq}, progress: func() (int, error) {
		n, err := e.poll()
		if err != nil {
			return 0, err
		}
		started, err := e.scan(th)
		return n + started, err
	}})
}

func (e *mqrd) Release(th fabric.Thread, d Delivery) error {
	if d.End {
		return nil
	}
	e.lock()
	defer e.unlock()
	if d.id < 0 || d.id >= len(e.reading) || d.Src != e.reading[d.id].src {
		return fmt.Errorf("%w: Release of a delivery this endpoint did not make", ErrConfig)
	}
	e.localFree[d.Src] = append(e.localFree[d.Src], d.id)
	return nil
}

// Close waits until every receiver has read every buffer this endpoint
// announced and every notice has completed, meets the other nodes'
// endpoints at a barrier, and frees everything.
func (e *mqrd) Close(th fabric.Thread) error {
	e.lock()
	defer e.unlock()
	deadline := th.Now().Add(e.cfg.Timeout)
	for len(e.free) < len(e.bufs) || e.signaled > 0 {
		n, err := e.poll()
		if err != nil {
			return err
		}
		if n+e.takeFree(th) > 0 {
			continue
		}
		if err := e.wait(th, deadline, e.mr, "waiting for receivers to read the last buffers"); err != nil {
			return err
		}
	}
	if err := e.node.OOB().Barrier(fmt.Sprintf("mqrd/%d/down", e.cfg.Tag)); err != nil {
		return err
	}
	return release(e.qps, e.scq.Destroy, e.rcq.Destroy, e.mr.Dereg, e.pd.Dealloc)
}

package algos

import (
	"encoding/binary"
	"fmt"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// mqrd is the MQ/RD endpoint (Liu17 Algorithm 3, Liu19 Algorithm 4):
// the receiver pulls data with RDMA Reads over one RC queue pair per node.
// A sender announces a full buffer by writing a 32-byte descriptor (its
// number, the buffer id, the length, and the buffer's address and rkey)
// into the receiver's ring for that sender (ValidArr) with an inline RDMA
// Write. The receiver polls its rings and reads announced buffers into free
// local slots from the address the descriptor names; when the receiving
// fragment releases the local copy (Release, Liu17 Algorithm 3), it writes
// the buffer's id back into the sender's ring for that receiver (FreeArr),
// and the slot takes the next read. A buffer returns to the sender's pool
// only when every
// member of its transmission group has read it, which is what slows this
// design under broadcast (Liu19 §7.1.4). No credit is needed: a ring
// holds as many descriptors as the sender can have buffers.
//
// With adaptive buffers (cfg.Adaptive) the send buffers come from the
// node's pool, each in its own memory region, and the send lane grows and
// shrinks them; the descriptor carries each buffer's address and rkey, so
// the receivers need no addresses beyond those of the rings. The receive
// slots stay fixed: they are local, and reads into them are bounded by
// them.
type mqrd struct {
	endpointBase
	pd  fabric.PD
	rcq fabric.CQ // no receives are posted; RC queue pairs need one
	mr  fabric.MR
	qps []fabric.QP

	ringN                                                int // descriptors per ring (the most send buffers there can be)
	sendOff, recvOff, validOff, freeOff, scratchOff, end int

	// Sender side.
	annSent  []uint64 // per destination: descriptors written
	readers  []int    // per send buffer id (up to ringN): destinations that have not read it
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
	// descBytes is an MQ/WR notice (mqsr): the slot (4 bytes), the length
	// (4) and the message's number, its seal (8, at noticeSeqAt).
	descBytes   = 16
	noticeSeqAt = 8
	// rdDescBytes is an MQ/RD descriptor: the buffer id (4 bytes), the
	// length (4), the buffer's address (8) and rkey (4), 4 bytes of
	// padding, and its number (8, at rdSeqAt). The polled number is last
	// in both (polled.go).
	rdDescBytes = 32
	rdSeqAt     = 24
	wrRead      = 4 << 48
	wrNotice    = 5 << 48
)

// OpenMQRD opens an MQ/RD endpoint on the calling thread's node; every node
// must open endpoint cfg.Tag at the same time.
func OpenMQRD(th fabric.Thread, cfg Config) (Endpoint, error) {
	if err := cfg.check(0); err != nil {
		return nil, err
	}
	e := &mqrd{}
	e.init("MQ/RD", th, cfg)
	if err := e.setup(th); err != nil {
		return nil, fmt.Errorf("algos: open MQ/RD endpoint %d on node %d: %w", cfg.Tag, e.me, freed(err, e.own.free()))
	}
	e.recv = e.receiving()
	return e, nil
}

func (e *mqrd) setup(th fabric.Thread) error {
	e.cfg.Buffers *= e.cfg.Threads
	n, b, msg := e.n, e.cfg.Buffers, e.cfg.MsgBytes
	dev := e.node.Device()
	var err error
	ad := e.cfg.Adaptive
	// A ring per peer holds as many entries as there can be send buffers:
	// a buffer's descriptor or FreeArr entry is outstanding only while the
	// buffer is, and endpointBase.addSendBuffer reuses retired ids, so ids stay
	// below the most buffers in circulation.
	e.ringN = n * b
	if ad != nil {
		e.ringN = max(n*b, ad.MaxSend*e.cfg.Threads*n)
		e.pd = ad.Pool.PD() // the pool owns the protection domain
	} else {
		if e.pd, err = dev.AllocPD(); err != nil {
			return err
		}
		e.own.pd(e.pd)
	}
	lev := lever{name: "Buffers", value: b / e.cfg.Threads}
	if ad != nil {
		lev = lever{name: "MaxBuffers", value: ad.MaxSend}
	}
	depths, err := fitQueues(dev.Attr(), n, mqrdLever(n, e.cfg.Threads, b, e.ringN, ad != nil, lev))
	if err != nil {
		return err
	}
	if e.scq, err = dev.CreateCQ(min(4*n*e.ringN+64, dev.Attr().MaxCQE)); err != nil {
		return err
	}
	e.own.cq(e.scq)
	e.sendOff, e.recvOff = 0, n*b*msg
	if ad != nil {
		e.recvOff = 0 // send buffers come from the pool
	}
	e.validOff = alignUp(e.recvOff+n*b*msg, rdDescBytes) // polled rings aligned (polled.go): a no-op for sizes that are a multiple of 16
	e.freeOff = e.validOff + n*e.ringN*rdDescBytes
	e.scratchOff = e.freeOff + n*e.ringN*8
	e.end = e.scratchOff + 2*n*rdDescBytes
	if e.mr, err = e.pd.RegMR(e.end, fabric.AccessLocalWrite|fabric.AccessRemoteWrite|fabric.AccessRemoteRead); err != nil {
		return err
	}
	e.own.mr(e.mr)
	if err := polledAt("descriptor rings", e.mr.Bytes(), e.validOff, rdDescBytes, n*e.ringN); err != nil {
		return err
	}
	if err := polledAt("FreeArr rings", e.mr.Bytes(), e.freeOff, 8, n*e.ringN); err != nil {
		return err
	}
	e.info.RegisteredBytes = int64(e.end)
	e.info.RecvPoolBytes = int64(n * b * msg)
	if err := e.initSendBuffers(e.mr, e.sendOff, n*b, msg); err != nil {
		return err
	}
	e.annSent = make([]uint64, n)
	e.readers = make([]int, e.ringN)
	e.freeSeen = make([]uint64, n)
	e.depleted = make([]bool, n)
	e.validSeen = make([]uint64, n)
	e.reading = make([]rdRead, n*b)
	for i := range e.reading {
		e.reading[i] = rdRead{src: -1, buf: -1} // no read yet
	}
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
	e.own.cq(e.rcq)
	sqDepth := depths[0] // mqrdLever says what the send queue holds
	sendBytes := 0       // adaptive: no send region; descriptors name pool buffers
	if ad == nil {
		sendBytes = n * b * msg
	}
	var blob []byte
	for j := 0; j < n; j++ {
		qp, err := newRCQP(&e.own, e.pd, e.scq, e.rcq, fabric.QPCaps{MaxSendWR: sqDepth, MaxRecvWR: 1, MaxInline: rdDescBytes},
			fabric.AccessRemoteWrite|fabric.AccessRemoteRead)
		if err != nil {
			return err
		}
		e.qps = append(e.qps, qp)
		info := qp.Info()
		info.PSN = rcPSN(e.me, j)
		info.Addr, info.RKey, info.Bytes = e.mr.Addr()+uint64(e.sendOff), e.mr.RKey(), uint64(sendBytes)
		valid := fabric.QPInfo{Node: uint32(e.me), QPN: info.QPN, Addr: e.mr.Addr() + uint64(e.validOff+j*e.ringN*rdDescBytes), RKey: e.mr.RKey()}
		free := fabric.QPInfo{Node: uint32(e.me), QPN: info.QPN, Addr: e.mr.Addr() + uint64(e.freeOff+j*e.ringN*8), RKey: e.mr.RKey()}
		for _, q := range []fabric.QPInfo{info, valid, free} {
			enc, _ := q.MarshalBinary()
			blob = append(blob, enc...)
		}
	}
	e.info.QPs = n
	got, err := gatherQPInfo(e.node, fmt.Sprintf("mqrd/%d", e.cfg.Tag), blob, n, 3)
	if err != nil {
		return err
	}
	e.peer = make([]rdPeer, n)
	for j := 0; j < n; j++ {
		e.peer[j] = rdPeer{bufs: got[j][0], valid: got[j][1], free: got[j][2]}
		if err := connectRC(e.qps[j], got[j][0], rcPSN(e.me, j), 16, e.cfg.SL); err != nil {
			return err
		}
	}
	return e.node.OOB().Barrier(fmt.Sprintf("mqrd/%d/up", e.cfg.Tag))
}

// mqrdLever is what an MQ/RD endpoint on n nodes asks of its queue pair per
// peer as the setting of l moves: at l.value b local slots per source and
// rings of ringN entries; at another value v, b is threads times v (the
// setting is Buffers), or with adaptive buffers the rings hold v send
// buffers per thread and peer (MaxBuffers: experiments.RunConfig's name
// for the adaptive maximum).
func mqrdLever(n, threads, b, ringN int, adaptive bool, l lever) lever {
	value := l.value
	l.ask = func(v int) []queueAsk {
		bv, rv := b, ringN
		switch {
		case v == value:
		case adaptive:
			rv = max(n*b, v*threads*n)
		default:
			bv = v * threads
			rv = n * bv
		}
		// Reads (at most b, the local slots for the peer), a descriptor
		// per buffer announced and a FreeArr entry per buffer read (each
		// at most ringN), and up to creditSignalEvery notices awaiting a
		// signaled one, twice over. A shallower queue works while the
		// notices' slots come back as fast as they are taken (they
		// complete in microseconds): at least a descriptor for every send
		// buffer, a read into every local slot for the peer and a FreeArr
		// entry for each.
		signals := 2*creditSignalEvery + 8
		return []queueAsk{{what: "MQ/RD's queue pair per peer", typ: fabric.RC, inline: rdDescBytes,
			send: 2*rv + signals, least: min(rv+2*bv, 2*rv) + signals, recv: 1}}
	}
	return l
}

// notify writes n bytes from scratch slot i to a remote address with an
// inline RDMA Write on the queue pair to node d.
func (e *mqrd) notify(d, i int, raddr uint64, rkey uint32, n int) error {
	wr := fabric.SendWR{ID: wrNotice, Op: fabric.OpWrite, Local: e.mr.SGE(e.scratchOff+i*rdDescBytes, n), Flags: fabric.Inline,
		RemoteAddr: raddr, RKey: rkey}
	e.signalSome(&wr, &e.unsig[d], false)
	err := e.postSend1(e.qps[d], wr)
	return err
}

// poll handles send-queue completions: reads (receiver side) and signaled
// notices.
func (e *mqrd) poll() (int, error) {
	return pollOnce(e.scq, e.wcs, e.me, func(wc fabric.WC) error {
		if wc.ID&wrKind == wrRead {
			return e.readDone(int(wc.ID &^ wrKind))
		}
		e.signaled--
		return nil
	})
}

// takeFree applies the FreeArr entries receivers have written; a buffer
// every destination has read is free again (and its send lane told).
func (e *mqrd) takeFree(th fabric.Thread) (int, error) {
	th.Sync()
	got, reads := 0, 0
	defer func() { e.pollLines(th, reads) }()
	for r := 0; r < e.n; r++ {
		for {
			reads++
			k := e.freeSeen[r] % uint64(e.ringN)
			v := loadWord(e.mr.Bytes()[e.freeOff+(r*e.ringN+int(k))*8:])
			if v>>32 != (e.freeSeen[r]+1)&0xffffffff {
				break
			}
			e.freeSeen[r]++
			id := int(v & 0xffffffff)
			if id >= len(e.readers) || e.readers[id] <= 0 {
				return 0, fmt.Errorf("%w: FreeArr entry from node %d names buffer %d, which is not being read", ErrBadMessage, r, id)
			}
			if e.readers[id]--; e.readers[id] == 0 {
				if err := e.freeBuffer(id); err != nil {
					return 0, err
				}
			}
			got++
		}
	}
	return got, nil
}

// progressFree polls completions and applies FreeArr entries, reporting
// how much it found.
func (e *mqrd) progressFree(th fabric.Thread) (int, error) {
	n, err := e.poll()
	if err != nil {
		return 0, err
	}
	got, err := e.takeFree(th)
	return n + got, err
}

// readersIdle reports whether some destination has fewer buffers
// announced by this endpoint and not yet read than it has read slots for
// it (cfg.Buffers per source).
func (e *mqrd) readersIdle() bool {
	for d := 0; d < e.n; d++ {
		if e.annSent[d]-e.freeSeen[d] < uint64(e.cfg.Buffers) {
			return true
		}
	}
	return false
}

func (e *mqrd) Acquire(th fabric.Thread) (*Buffer, error) {
	e.lock()
	defer e.unlock()
	deadline := th.Now().Add(e.cfg.Timeout)
	for {
		if e.slane != nil {
			// Take the buffers receivers have finished with before the
			// lane judges whether it starves, and let it grow only while
			// some destination could read more: nothing but the send
			// buffers holds a sender back here (there is no credit), so
			// when every destination already has as many buffers
			// announced and unread as it has read slots for us, the
			// readers are the bottleneck and a new buffer would only wait.
			if len(e.free) == 0 {
				if _, err := e.progressFree(th); err != nil {
					return nil, err
				}
			}
			if len(e.free) > 0 || e.readersIdle() {
				if _, err := e.adaptSend(th); err != nil {
					return nil, err
				}
			}
		}
		if len(e.free) > 0 {
			break
		}
		n, err := e.progressFree(th)
		if err != nil {
			return nil, err
		}
		if n > 0 {
			deadline = th.Now().Add(e.cfg.Timeout)
			continue
		}
		if err := e.wait(th, deadline, e.mr, waiting{format: "waiting for receivers to release a send buffer (FreeArr)"}); err != nil {
			return nil, err
		}
	}
	return e.lendFree()
}

func (e *mqrd) PutData(th fabric.Thread, b *Buffer, dests []int, st State) error {
	e.lock() // before checkBuffer: adaptive buffers grow e.bufs under the lock
	defer e.unlock()
	if err := e.checkBuffer(b); err != nil {
		return err
	}
	h := e.headerFor(b, st)
	h.put(b.mr.Bytes()[b.off:])
	if len(dests) == 0 {
		return e.freeBuffer(b.id)
	}
	if b.id >= e.ringN {
		return fmt.Errorf("algos: MQ/RD endpoint %d on node %d: send buffer id %d beyond the %d ring entries", e.cfg.Tag, e.me, b.id, e.ringN)
	}
	e.readers[b.id] = len(dests)
	for _, d := range dests {
		if d < 0 || d >= e.n {
			return fmt.Errorf("%w: destination node %d in a %d-node cluster", ErrConfig, d, e.n)
		}
		e.annSent[d]++
		desc := e.mr.Bytes()[e.scratchOff+d*rdDescBytes:]
		binary.LittleEndian.PutUint32(desc, uint32(b.id))
		binary.LittleEndian.PutUint32(desc[4:], uint32(HeaderBytes+b.N))
		binary.LittleEndian.PutUint64(desc[8:], b.mr.Addr()+uint64(b.off))
		binary.LittleEndian.PutUint32(desc[16:], b.mr.RKey())
		binary.LittleEndian.PutUint32(desc[20:], 0)
		binary.LittleEndian.PutUint64(desc[rdSeqAt:], e.annSent[d]) // last: polled.go
		k := (e.annSent[d] - 1) % uint64(e.ringN)
		p := e.peer[d].valid
		if err := e.notify(d, d, p.Addr+k*rdDescBytes, p.RKey, rdDescBytes); err != nil {
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
	started, reads := 0, 0
	defer func() { e.pollLines(th, reads) }()
	for s := 0; s < e.n; s++ {
		for !e.closedSrc[s] && len(e.localFree[s]) > 0 {
			reads++
			k := e.validSeen[s] % uint64(e.ringN)
			desc := e.mr.Bytes()[e.validOff+(s*e.ringN+int(k))*rdDescBytes:]
			if loadWord(desc[rdSeqAt:]) != e.validSeen[s]+1 {
				break
			}
			e.validSeen[s]++
			id, n := int(binary.LittleEndian.Uint32(desc)), int(binary.LittleEndian.Uint32(desc[4:]))
			addr, rkey := binary.LittleEndian.Uint64(desc[8:]), binary.LittleEndian.Uint32(desc[16:])
			if id >= e.ringN || n < HeaderBytes || n > e.cfg.MsgBytes {
				return 0, fmt.Errorf("%w: descriptor from node %d names buffer %d of %d bytes", ErrBadMessage, s, id, n)
			}
			// A fixed send region (exchanged at setup) must hold the
			// announced range; pool buffers have their own regions, which
			// the read's rkey check guards.
			if pb := e.peer[s].bufs; pb.Bytes > 0 && (addr < pb.Addr || addr-pb.Addr+uint64(n) > pb.Bytes) {
				return 0, fmt.Errorf("%w: descriptor from node %d names %d bytes at %#x, outside its send buffers", ErrBadMessage, s, n, addr)
			}
			slot := e.localFree[s][len(e.localFree[s])-1]
			e.localFree[s] = e.localFree[s][:len(e.localFree[s])-1]
			e.reading[slot] = rdRead{src: s, buf: id}
			wr := fabric.SendWR{ID: wrRead | uint64(slot), Op: fabric.OpRead, Flags: fabric.Signaled,
				Local:      e.mr.SGE(e.recvOff+slot*e.cfg.MsgBytes, n),
				RemoteAddr: addr, RKey: rkey}
			if err := e.postSend1(e.qps[s], wr); err != nil {
				return 0, err
			}
			started++
		}
	}
	return started, nil
}

// readDone delivers a read buffer.
func (e *mqrd) readDone(slot int) error {
	r := e.reading[slot]
	buf := e.mr.Bytes()[e.recvOff+slot*e.cfg.MsgBytes : e.recvOff+(slot+1)*e.cfg.MsgBytes]
	var h header
	if err := h.get(buf, e.cfg.MsgBytes-HeaderBytes); err != nil {
		return fmt.Errorf("from node %d: %w", r.src, err)
	}
	d := Delivery{Src: r.src, Data: buf[HeaderBytes : HeaderBytes+h.n], N: h.n, Tuples: h.tuples, Sum: h.sum, id: slot}
	if h.flags&flagDepleted != 0 {
		d.State = Depleted
		e.closedSrc[r.src] = true
		e.doneCount++
	}
	e.ready.push(d)
	return nil
}

func (e *mqrd) GetData(th fabric.Thread) (Delivery, error) { return e.getData(th, &e.recv) }

// receiving is GetData's progress: read completions, and new descriptors.
func (e *mqrd) receiving() receiving {
	return receiving{on: []fabric.Waitable{e.mr, e.scq}, progress: func(th fabric.Thread) (int, error) {
		n, err := e.poll()
		if err != nil {
			return 0, err
		}
		started, err := e.scan(th)
		return n + started, err
	}}
}

func (e *mqrd) Release(th fabric.Thread, d Delivery) error {
	if d.End {
		return nil
	}
	e.lock()
	defer e.unlock()
	if d.id < 0 || d.id >= len(e.reading) || d.Src != e.reading[d.id].src || e.reading[d.id].buf < 0 {
		return errForeignDelivery
	}
	r := e.reading[d.id]
	// FreeArr entry: its number (high 32 bits, from 1) and the buffer id.
	e.freeCount[r.src]++
	ent := e.mr.Bytes()[e.scratchOff+(e.n+r.src)*rdDescBytes:]
	binary.LittleEndian.PutUint64(ent, uint64(e.freeCount[r.src])<<32|uint64(r.buf))
	p := e.peer[r.src].free
	k := uint64(e.freeCount[r.src]-1) % uint64(e.ringN)
	if err := e.notify(r.src, e.n+r.src, p.Addr+k*8, p.RKey, 8); err != nil {
		return err
	}
	e.info.FreeWrites++
	e.reading[d.id].buf = -1 // released: a second Release is refused
	e.localFree[d.Src] = append(e.localFree[d.Src], d.id)
	return nil
}

// Close waits until every receiver has read every buffer this endpoint
// announced and every notice has completed, meets the other nodes'
// endpoints at a barrier, and frees everything. Should any of that fail,
// it still frees everything, and returns that error.
func (e *mqrd) Close(th fabric.Thread) error {
	e.lock()
	defer e.unlock()
	return freed(e.finish(th), e.own.free())
}

// finish is Close's bookkeeping. Called with the lock held.
func (e *mqrd) finish(th fabric.Thread) error {
	deadline := th.Now().Add(e.cfg.Timeout)
	// Buffers live: adaptive ids retired to the pool are not waited for.
	for len(e.free) < len(e.bufs)-len(e.retiredIDs) || e.signaled > 0 {
		n, err := e.progressFree(th)
		if err != nil {
			return err
		}
		if n > 0 {
			continue
		}
		if err := e.wait(th, deadline, e.mr, waiting{format: "waiting for receivers to release the last buffers (FreeArr)"}); err != nil {
			return err
		}
	}
	return e.node.OOB().Barrier(fmt.Sprintf("mqrd/%d/down", e.cfg.Tag))
}

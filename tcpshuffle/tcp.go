// Package tcpshuffle is the sockets transport of the shuffle: an
// algos.Endpoint over real TCP connections, the IPoIB baseline run for real
// (over IPoIB on a cluster, over loopback or any network here). It runs on
// a fabric of real hosts (host.Open, host.OpenLocal, or the
// libibverbs fabric, whose devices it does not use), never on the
// simulator: it moves real bytes through the kernel in real time. Unlike
// package algos it starts goroutines (one reader per connection) and
// blocks on Go channels.
package tcpshuffle

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// frameHeader is the header of every message on a connection:
// magic (1), flags (1), source (2), payload bytes (4), tuples (8),
// checksum (8), all little-endian.
const frameHeader = 24

const (
	frameMagic    = 0x7c
	flagDepleted  = 1
	dialTimeout   = 10 * time.Second
	acceptTimeout = 30 * time.Second
)

// Endpoint is the TCP endpoint: one connection per pair of nodes for each
// endpoint index (Config.Tag), a reader goroutine per connection that
// fills receive buffers, and send buffers written with one write per
// destination (TCP has no multicast). Flow control is TCP's: a reader that
// has no free receive buffer stops reading, the socket buffers fill, and
// the sender's write blocks. Safe for concurrent use by the node's
// threads.
type Endpoint struct {
	cfg   algos.Config
	me, n int
	ln    net.Listener
	conns []net.Conn   // by peer; nil for this node
	wmu   []sync.Mutex // one writer at a time per connection

	free    chan *algos.Buffer // send buffers
	recv    chan []byte        // free receive buffers
	ready   chan delivery      // filled receive buffers
	errs    chan error         // first reader error
	ended   []bool             // per source, seen by GetData
	endedN  int
	gmu     sync.Mutex    // guards ended, endedN
	allEnd  chan struct{} // closed once every source has ended: wakes every GetData
	readers sync.WaitGroup
	sent    atomic.Int64 // frames written (EndpointInfo.Transfers); threads send concurrently
	// Buffers lent to the caller (send buffers by Acquire, receive buffers
	// by GetData, by their first byte), so that one handed back twice or
	// not lent at all is an error rather than a second owner.
	lmu      sync.Mutex
	lentSend map[*algos.Buffer]bool
	lentRecv map[*byte]bool
	closed   bool
}

type delivery struct {
	d   algos.Delivery
	buf []byte
}

// Open opens endpoint cfg.Tag on the calling thread's node: it listens on
// host (an address of this machine, e.g. "127.0.0.1" or the IPoIB
// interface's), exchanges addresses with every node over the out-of-band
// channel and connects to every other node. Every node must open the same
// endpoint at the same time.
func Open(th fabric.Thread, cfg algos.Config, host string) (*Endpoint, error) {
	if cfg.Nodes < 1 || cfg.MsgBytes < algos.HeaderBytes+algos.TupleBytes || cfg.Buffers < 1 {
		return nil, fmt.Errorf("%w: TCP endpoint: %d nodes, %d-byte messages, %d buffers", algos.ErrConfig, cfg.Nodes, cfg.MsgBytes, cfg.Buffers)
	}
	if cfg.Adaptive != nil || cfg.Recover {
		return nil, fmt.Errorf("%w: the TCP endpoint keeps plain buffers and relies on TCP for loss: no adaptive buffers or UD recovery", algos.ErrConfig)
	}
	threads := max(1, cfg.Threads)
	me, n := th.Node().ID(), cfg.Nodes
	e := &Endpoint{cfg: cfg, me: me, n: n, conns: make([]net.Conn, n), wmu: make([]sync.Mutex, n), ended: make([]bool, n),
		errs: make(chan error, 1), allEnd: make(chan struct{}), lentSend: map[*algos.Buffer]bool{}, lentRecv: map[*byte]bool{}}
	payload := cfg.MsgBytes - algos.HeaderBytes
	sendBufs := cfg.Buffers * n * threads
	e.free = make(chan *algos.Buffer, sendBufs)
	for i := 0; i < sendBufs; i++ {
		e.free <- &algos.Buffer{Data: make([]byte, payload)}
	}
	recvBufs := cfg.Buffers * n * threads
	e.recv = make(chan []byte, recvBufs)
	for i := 0; i < recvBufs; i++ {
		e.recv <- make([]byte, payload)
	}
	e.ready = make(chan delivery, recvBufs+n)
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, fmt.Errorf("TCP endpoint %d on node %d: listen on %s: %w", cfg.Tag, me, host, err)
	}
	e.ln = ln
	all, err := th.Node().OOB().AllGather(fmt.Sprintf("tcp/%d", cfg.Tag), []byte(ln.Addr().String()))
	if err != nil {
		ln.Close()
		return nil, err
	}
	if len(all) != n {
		ln.Close()
		return nil, fmt.Errorf("TCP endpoint: %d nodes answered, want %d (the same node count everywhere?)", len(all), n)
	}
	// Node i dials every node j > i and accepts from every j < i; the
	// dialer introduces itself with its node id.
	accepted := make(chan error, 1)
	go func() { accepted <- e.accept(me) }()
	// giveUp closes everything once the accepting goroutine has stopped
	// (closing the listener stops it), so that no connection it takes
	// meanwhile is left open and e.conns has one writer at a time.
	giveUp := func() {
		e.ln.Close()
		<-accepted
		e.Abort()
	}
	for j := me + 1; j < n; j++ {
		addr := string(all[j])
		c, err := net.DialTimeout("tcp", addr, dialTimeout)
		if err != nil {
			giveUp()
			return nil, fmt.Errorf("TCP endpoint %d: node %d cannot connect to node %d at %s: %w", cfg.Tag, me, j, addr, err)
		}
		var id [2]byte
		binary.LittleEndian.PutUint16(id[:], uint16(me))
		if _, err := c.Write(id[:]); err != nil {
			c.Close()
			giveUp()
			return nil, err
		}
		e.conns[j] = c
	}
	if err := <-accepted; err != nil {
		e.Abort()
		return nil, fmt.Errorf("TCP endpoint %d on node %d: %w", cfg.Tag, me, err)
	}
	for j, c := range e.conns {
		if c != nil {
			e.readers.Add(1)
			go e.read(j, c)
		}
	}
	if err := th.Node().OOB().Barrier(fmt.Sprintf("tcp/%d/up", cfg.Tag)); err != nil {
		// Nobody will close an endpoint that failed to open: its readers
		// and connections go now.
		e.Abort()
		e.readers.Wait()
		return nil, err
	}
	return e, nil
}

// accept takes a connection from every node below me.
func (e *Endpoint) accept(me int) error {
	if tl, ok := e.ln.(*net.TCPListener); ok {
		tl.SetDeadline(time.Now().Add(acceptTimeout))
	}
	for k := 0; k < me; k++ {
		c, err := e.ln.Accept()
		if err != nil {
			return fmt.Errorf("waiting for %d more nodes to connect: %w", me-k, err)
		}
		var id [2]byte
		c.SetReadDeadline(time.Now().Add(dialTimeout))
		if _, err := io.ReadFull(c, id[:]); err != nil {
			c.Close()
			return fmt.Errorf("a connecting node did not introduce itself: %w", err)
		}
		c.SetReadDeadline(time.Time{})
		j := int(binary.LittleEndian.Uint16(id[:]))
		if j >= me || e.conns[j] != nil {
			c.Close()
			return fmt.Errorf("unexpected connection claiming to be node %d", j)
		}
		e.conns[j] = c
	}
	return nil
}

// read moves frames from source j's connection into receive buffers.
func (e *Endpoint) read(j int, c net.Conn) {
	defer e.readers.Done()
	r := bufio.NewReaderSize(c, 256<<10)
	var h [frameHeader]byte
	for {
		if _, err := io.ReadFull(r, h[:]); err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				e.fail(fmt.Errorf("TCP endpoint: reading from node %d: %w", j, err))
			}
			return
		}
		d, err := parseHeader(h[:], e.cfg.MsgBytes-algos.HeaderBytes)
		if err != nil || d.Src != j {
			e.fail(fmt.Errorf("%w: TCP frame from node %d: %v (source %d)", algos.ErrBadMessage, j, err, d.Src))
			return
		}
		buf := <-e.recv
		if _, err := io.ReadFull(r, buf[:d.N]); err != nil {
			e.fail(fmt.Errorf("TCP endpoint: reading a message from node %d: %w", j, err))
			return
		}
		d.Data = buf[:d.N]
		e.ready <- delivery{d: d, buf: buf}
		if d.State == algos.Depleted {
			return // the stream from j has ended
		}
	}
}

func (e *Endpoint) fail(err error) {
	select {
	case e.errs <- err:
	default:
	}
}

func putHeader(h []byte, src int, b *algos.Buffer, st algos.State) {
	h[0], h[1] = frameMagic, 0
	if st == algos.Depleted {
		h[1] = flagDepleted
	}
	binary.LittleEndian.PutUint16(h[2:], uint16(src))
	binary.LittleEndian.PutUint32(h[4:], uint32(b.N))
	binary.LittleEndian.PutUint64(h[8:], b.Tuples)
	binary.LittleEndian.PutUint64(h[16:], b.Sum)
}

// parseHeader decodes a frame header; max is the largest payload.
func parseHeader(h []byte, max int) (algos.Delivery, error) {
	var d algos.Delivery
	if len(h) < frameHeader || h[0] != frameMagic {
		return d, fmt.Errorf("not a frame header")
	}
	d.Src = int(binary.LittleEndian.Uint16(h[2:]))
	d.N = int(binary.LittleEndian.Uint32(h[4:]))
	d.Tuples = binary.LittleEndian.Uint64(h[8:])
	d.Sum = binary.LittleEndian.Uint64(h[16:])
	if h[1]&flagDepleted != 0 {
		d.State = algos.Depleted
	}
	if d.N < 0 || d.N > max || d.N%algos.TupleBytes != 0 {
		return d, fmt.Errorf("payload of %d bytes in a %d-byte buffer", d.N, max)
	}
	return d, nil
}

// abortPoll is how often a thread that waits in the endpoint (on a
// channel or a socket, where the fabric cannot reach it) calls
// Thread.Wait, in which a host fabric unwinds the thread of a run that
// another thread or node has failed. Before the endpoint's waits did, a
// thread waiting for a live peer's data held its run for the host's 10 s
// grace after a node of the job died, and the process with it.
const abortPoll = 100 * time.Millisecond

// watch is a waiting thread's check, every abortPoll: it returns when the
// run goes on (and unwinds th when it does not).
func watch(th fabric.Thread) { th.Wait(th.Now()) }

// Acquire returns a free send buffer, waiting for one.
func (e *Endpoint) Acquire(th fabric.Thread) (*algos.Buffer, error) {
	tick := time.NewTicker(abortPoll)
	defer tick.Stop()
	deadline := time.Now().Add(timeout(e.cfg))
	for {
		select {
		case b := <-e.free:
			b.N, b.Tuples, b.Sum = 0, 0, 0
			e.lmu.Lock()
			e.lentSend[b] = true
			e.lmu.Unlock()
			return b, nil
		case now := <-tick.C:
			watch(th)
			if now.After(deadline) {
				return nil, fmt.Errorf("TCP endpoint %d on node %d: no free send buffer for %v", e.cfg.Tag, e.me, timeout(e.cfg))
			}
		}
	}
}

// minTimeout is the least time the endpoint waits for progress: real
// hosts are scheduled by an operating system (and tests run beside other
// work), so the simulator's default of 100 ms would fail healthy runs.
const minTimeout = 30 * time.Second

func timeout(cfg algos.Config) time.Duration {
	return max(minTimeout, time.Duration(cfg.Timeout.Seconds()*float64(time.Second)))
}

// PutData writes b to every destination (a frame per destination; this
// node's own share goes straight to its receive side) and takes b back.
func (e *Endpoint) PutData(th fabric.Thread, b *algos.Buffer, dests []int, st algos.State) error {
	if b == nil || b.N < 0 || b.N > len(b.Data) {
		return fmt.Errorf("%w: PutData with a malformed buffer", algos.ErrConfig)
	}
	e.lmu.Lock()
	lent := e.lentSend[b]
	delete(e.lentSend, b)
	e.lmu.Unlock()
	if !lent {
		return fmt.Errorf("%w: PutData with a buffer this endpoint did not lend (or one already handed back)", algos.ErrConfig)
	}
	defer func() { e.free <- b }()
	var h [frameHeader]byte
	putHeader(h[:], e.me, b, st)
	for _, d := range dests {
		if d < 0 || d >= e.n {
			return fmt.Errorf("%w: destination node %d in a %d-node cluster", algos.ErrConfig, d, e.n)
		}
		e.sent.Add(1)
		if d == e.me {
			buf, err := e.recvBuffer(th)
			if err != nil {
				return err
			}
			copy(buf, b.Data[:b.N])
			del, _ := parseHeader(h[:], len(buf))
			del.Data = buf[:b.N]
			e.ready <- delivery{d: del, buf: buf}
			continue
		}
		e.wmu[d].Lock()
		err := e.write(th, e.conns[d], net.Buffers{h[:], b.Data[:b.N]})
		e.wmu[d].Unlock()
		if err != nil {
			return fmt.Errorf("TCP endpoint %d: node %d writing to node %d: %w", e.cfg.Tag, e.me, d, err)
		}
	}
	return nil
}

// recvBuffer takes a free receive buffer for this node's own share,
// waiting for the receiving threads to release one.
func (e *Endpoint) recvBuffer(th fabric.Thread) ([]byte, error) {
	tick := time.NewTicker(abortPoll)
	defer tick.Stop()
	deadline := time.Now().Add(timeout(e.cfg))
	for {
		select {
		case buf := <-e.recv:
			return buf, nil
		case now := <-tick.C:
			watch(th)
			if now.After(deadline) {
				return nil, fmt.Errorf("TCP endpoint %d on node %d: no receive buffer released for %v (for its own share)", e.cfg.Tag, e.me, timeout(e.cfg))
			}
		}
	}
}

// write writes bufs to c. A peer that stops reading blocks the write: it
// fails after the endpoint's timeout instead of hanging, and the thread
// checks every abortPoll whether its run goes on.
func (e *Endpoint) write(th fabric.Thread, c net.Conn, bufs net.Buffers) error {
	deadline := time.Now().Add(timeout(e.cfg))
	for {
		next := time.Now().Add(abortPoll)
		if next.After(deadline) {
			next = deadline
		}
		c.SetWriteDeadline(next)
		_, err := bufs.WriteTo(c) // consumes what it wrote
		if err == nil || !errors.Is(err, os.ErrDeadlineExceeded) || !time.Now().Before(deadline) {
			return err
		}
		watch(th)
	}
}

// GetData returns the next received buffer; End once every source ended.
func (e *Endpoint) GetData(th fabric.Thread) (algos.Delivery, error) {
	tick := time.NewTicker(abortPoll)
	defer tick.Stop()
	deadline := time.Now().Add(timeout(e.cfg))
	for {
		e.gmu.Lock()
		done := e.endedN == e.n
		e.gmu.Unlock()
		if done {
			return algos.Delivery{End: true}, nil
		}
		select {
		case r := <-e.ready:
			if r.d.State == algos.Depleted {
				e.gmu.Lock()
				if !e.ended[r.d.Src] {
					e.ended[r.d.Src] = true
					if e.endedN++; e.endedN == e.n {
						close(e.allEnd)
					}
				}
				e.gmu.Unlock()
			}
			e.lmu.Lock()
			e.lentRecv[&r.buf[0]] = true
			e.lmu.Unlock()
			return r.d, nil
		case <-e.allEnd:
			// Another thread took the last end of stream: nothing more
			// comes (without this, a second receiving thread waited for
			// the timeout and failed).
		case err := <-e.errs:
			e.fail(err) // others see it too
			return algos.Delivery{}, err
		case now := <-tick.C:
			watch(th)
			if !now.After(deadline) {
				continue
			}
			e.gmu.Lock()
			var missing []string
			for s, ok := range e.ended {
				if !ok {
					missing = append(missing, fmt.Sprint(s))
				}
			}
			e.gmu.Unlock()
			return algos.Delivery{}, fmt.Errorf("TCP endpoint %d on node %d: nothing received for %v; streams not ended from nodes %s",
				e.cfg.Tag, e.me, timeout(e.cfg), strings.Join(missing, ", "))
		}
	}
}

// Release hands a received buffer back to the readers.
func (e *Endpoint) Release(th fabric.Thread, d algos.Delivery) error {
	if d.End {
		return nil
	}
	if cap(d.Data) != e.cfg.MsgBytes-algos.HeaderBytes {
		return fmt.Errorf("%w: Release of a delivery this endpoint did not make", algos.ErrConfig)
	}
	buf := d.Data[:cap(d.Data)]
	e.lmu.Lock()
	lent := e.lentRecv[&buf[0]]
	delete(e.lentRecv, &buf[0])
	e.lmu.Unlock()
	if !lent {
		return fmt.Errorf("%w: Release of a delivery this endpoint did not make, or released twice", algos.ErrConfig)
	}
	e.recv <- buf
	return nil
}

// Close waits for the readers (every stream has ended), meets the other
// nodes at a barrier and closes the connections.
func (e *Endpoint) Close(th fabric.Thread) error {
	if e.closed {
		return fmt.Errorf("%w: TCP endpoint closed twice", fabric.ErrClosed)
	}
	e.closed = true
	if err := th.Node().OOB().Barrier(fmt.Sprintf("tcp/%d/down", e.cfg.Tag)); err != nil {
		e.Abort()
		return err
	}
	e.Abort()
	e.readers.Wait()
	select {
	case err := <-e.errs:
		return err
	default:
	}
	return nil
}

// Abort closes every connection and the listener at once.
func (e *Endpoint) Abort() {
	if e.ln != nil {
		e.ln.Close()
	}
	for _, c := range e.conns {
		if c != nil {
			c.Close()
		}
	}
}

// Info describes the endpoint: no queue pairs and no registered memory;
// a socket per peer.
func (e *Endpoint) Info() algos.EndpointInfo { return algos.EndpointInfo{Transfers: e.sent.Load()} }

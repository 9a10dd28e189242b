package host

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// tcpOOB is the out-of-band channel of a distributed job: a star around
// node 0, which listens, checks every node's hello (protocol version, job
// size, rank, job signature) and then relays each AllGather and Barrier.
// Collectives carry a sequence number and the caller's key, so nodes that
// make different calls are reported, not mismatched silently. Any failure
// (a run error on some node, a lost connection, a mismatch, a timeout) is
// broadcast as an abort, so no node waits for one that will never come.
type tcpOOB struct {
	b       Bootstrap
	sig     string
	timeout time.Duration
	// resolve looks a host name up (net.DefaultResolver.LookupHost; tests
	// put in a fake).
	resolve func(ctx context.Context, host string) ([]string, error)
	// onAbort is told about failures reported by other nodes (the
	// environment fails the local run with it).
	onAbort atomic.Pointer[func(error)]
	// log, if not nil, is told about connections node 0 refuses without
	// failing the job (Config.Log).
	log func(string)
	// foreign records them for the bootstrap's own error, should it fail.
	foreignMu sync.Mutex
	foreign   []string

	mu  sync.Mutex // serializes collectives
	seq uint64

	conns []*peerConn // node 0: indexed by rank (nil at 0); others: conns[0] is node 0

	abortOnce sync.Once
	abortErr  error
	abortCh   chan struct{}
	closing   atomic.Bool
}

type peerConn struct {
	rank int
	name string
	c    net.Conn
	wmu  sync.Mutex
	in   chan inFrame
	dead chan struct{} // closed when the reader stops
	err  error         // why the reader stopped (valid once dead is closed)
	bye  atomic.Bool   // the peer closed cleanly
	// sent and recvd count the frames' bytes, headers included, after
	// the hello (for measurements).
	sent, recvd atomic.Int64
}

type inFrame struct {
	typ  byte
	body []byte
}

// pending returns a frame pc's reader delivered before its connection
// ended. The reader hands every frame over before it closes dead, but a
// select that finds both ready picks one at random: a peer that sent its
// last frame and closed (node 0 after a job's final all-gather) would
// otherwise be reported lost with the answer waiting.
func (pc *peerConn) pending() (inFrame, bool) {
	select {
	case f := <-pc.in:
		return f, true
	default:
		return inFrame{}, false
	}
}

// dialOOB sets up the out-of-band channel of node b.Rank. Node 0 listens on
// ln (or, when ln is nil, on the coordinator's port on every interface) and
// waits for the others; the others connect to node 0, retrying until
// connectTimeout.
func dialOOB(b Bootstrap, sig string, connectTimeout, timeout time.Duration, ln net.Listener) (*tcpOOB, error) {
	return dialOOBLog(b, sig, connectTimeout, timeout, ln, nil)
}

// dialOOBLog is dialOOB with node 0 telling log about the connections it
// refuses without failing the job.
func dialOOBLog(b Bootstrap, sig string, connectTimeout, timeout time.Duration, ln net.Listener, log func(string)) (*tcpOOB, error) {
	o := &tcpOOB{b: b, sig: sig, timeout: timeout, abortCh: make(chan struct{}), resolve: net.DefaultResolver.LookupHost, log: log}
	if b.Size < 1 || b.Rank < 0 || b.Rank >= b.Size {
		return nil, fmt.Errorf("%w: host: rank %d of %d nodes", fabric.ErrInvalidArg, b.Rank, b.Size)
	}
	if b.Size == 1 {
		if ln != nil {
			ln.Close()
		}
		return o, nil
	}
	if b.Rank == 0 {
		if ln == nil {
			_, port, err := net.SplitHostPort(b.Coordinator)
			if err != nil {
				return nil, fmt.Errorf("%w: host: coordinator address %q: %v", fabric.ErrInvalidArg, b.Coordinator, err)
			}
			if ln, err = net.Listen("tcp", net.JoinHostPort("", port)); err != nil {
				return nil, fmt.Errorf("host: node 0 cannot listen for the other nodes on port %s: %w", port, err)
			}
		}
		if err := o.accept(ln, connectTimeout); err != nil { // accept closes ln
			return nil, err
		}
	} else if err := o.connect(connectTimeout); err != nil {
		return nil, err
	}
	for _, pc := range o.conns {
		if pc != nil {
			go o.read(pc)
		}
	}
	return o, nil
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "?"
	}
	return h
}

// peerName names node r for messages, preferring the peers list.
func (o *tcpOOB) peerName(r int, h helloMsg, addr net.Addr) string {
	if r < len(o.b.Peers) {
		return o.b.Name(r)
	}
	return fmt.Sprintf("node %d (%s, from %v)", r, h.Host, addr)
}

type arrival struct {
	c   net.Conn
	h   helloMsg
	err error
}

// accept is node 0's side of the bootstrap. It owns ln: closed when the
// job is confirmed; after a failure it stays open until the connect
// deadline, so that nodes that had not connected yet are told why the job
// failed instead of being refused and timing out with no reason.
func (o *tcpOOB) accept(ln net.Listener, connectTimeout time.Duration) (err error) {
	n := o.b.Size
	deadline := time.Now().Add(connectTimeout)
	done := make(chan struct{})
	defer close(done)
	defer func() {
		if err == nil {
			ln.Close()
			return
		}
		time.AfterFunc(time.Until(deadline), func() { ln.Close() })
	}()
	var failure atomic.Pointer[string] // why the bootstrap failed, for late arrivals
	arrivals := make(chan arrival)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				h, err := readHello(c, deadline)
				if o.foreignJob(h, err) {
					o.refuse(c, h)
					return
				}
				select {
				case arrivals <- arrival{c, h, err}:
				case <-done:
					if msg := failure.Load(); msg != nil && err == nil {
						c.SetWriteDeadline(time.Now().Add(5 * time.Second))
						writeFrame(c, frameAck, ackMsg{Msg: *msg}.encode())
					}
					c.Close()
				}
			}()
		}
	}()
	conns := make([]*peerConn, n)
	got := 0
	fail := func(err error) error {
		msg := err.Error()
		failure.Store(&msg)
		for _, pc := range conns {
			if pc != nil {
				pc.write(frameAck, 5*time.Second, ackMsg{Msg: err.Error()}.encode())
				pc.c.Close()
			}
		}
		return err
	}
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	for got < n-1 {
		select {
		case a := <-arrivals:
			if a.err != nil {
				if errors.Is(a.err, errVersion) {
					msg := fmt.Sprintf("host: a process at %v speaks another out-of-band protocol: %v", a.c.RemoteAddr(), a.err)
					writeFrame(a.c, frameAck, ackMsg{Msg: msg}.encode())
					a.c.Close()
					return fail(errors.New(msg))
				}
				a.c.Close() // not one of ours (a port scanner, a stray client): ignore
				continue
			}
			r := int(a.h.Rank)
			name := o.peerName(r, a.h, a.c.RemoteAddr())
			var bad string
			switch {
			case int(a.h.Size) != n:
				bad = fmt.Sprintf("host: %s was started for a job of %d nodes, node 0 for %d", name, a.h.Size, n)
			case r < 1 || r >= n:
				bad = fmt.Sprintf("host: a process at %v (%s) claims rank %d, outside 1..%d", a.c.RemoteAddr(), a.h.Host, r, n-1)
			case conns[r] != nil:
				bad = fmt.Sprintf("host: two processes claim rank %d: %s and %s, from %v", r, conns[r].name, a.h.Host, a.c.RemoteAddr())
			case a.h.Signature != o.sig:
				bad = fmt.Sprintf("host: %s runs %q, expected %q (node 0's job signature)", name, a.h.Signature, o.sig)
			}
			if bad != "" {
				writeFrame(a.c, frameAck, ackMsg{Msg: bad}.encode())
				a.c.Close()
				return fail(errors.New(bad))
			}
			a.c.SetReadDeadline(time.Time{})
			conns[r] = &peerConn{rank: r, name: name, c: a.c, in: make(chan inFrame, 4), dead: make(chan struct{})}
			got++
		case <-timer.C:
			var missing []string
			for r := 1; r < n; r++ {
				if conns[r] == nil {
					missing = append(missing, o.b.Name(r))
				}
			}
			return fail(fmt.Errorf("host: %s did not connect within %v%s", strings.Join(missing, ", "), connectTimeout, o.refused()))
		}
	}
	for _, pc := range conns[1:] {
		if err := pc.write(frameAck, connectTimeout, ackMsg{OK: true}.encode()); err != nil {
			return fail(fmt.Errorf("host: confirming the job to %s: %w", pc.name, err))
		}
	}
	o.conns = conns
	return nil
}

// readHello reads a connection's first frame, which must be a hello, with
// a small frame limit: nothing large is allocated before the hello is
// checked.
func readHello(c net.Conn, deadline time.Time) (helloMsg, error) {
	c.SetReadDeadline(deadline)
	typ, body, err := readFrameMax(c, maxHello)
	if err != nil {
		return helloMsg{}, err
	}
	if typ != frameHello {
		return helloMsg{}, fmt.Errorf("%w: first frame of type %d, want a hello", errNotPeer, typ)
	}
	return decodeHello(body)
}

// foreignJob reports whether a hello (read with err) comes from a process
// of another job: one that names a job, or has none where node 0 has one.
// A hello of another protocol version counts only if it names a job
// (older ones do not say).
func (o *tcpOOB) foreignJob(h helloMsg, err error) bool {
	switch {
	case err == nil:
		return h.Job != o.b.Job
	case errors.Is(err, errVersion):
		return h.Job != "" && h.Job != o.b.Job
	}
	return false
}

// jobName quotes a job's identity for messages.
func jobName(job string) string {
	if job == "" {
		return "(none: its launcher names no job and " + EnvJob + " is not set)"
	}
	return fmt.Sprintf("%q", job)
}

// refuse answers a process of another job that reached node 0's port: it
// is told why and closed, node 0's log is told, and the job goes on.
func (o *tcpOOB) refuse(c net.Conn, h helloMsg) {
	why := fmt.Sprintf("node 0 of job %s refused a process of job %s (rank %d of %d, host %s, from %v): another job uses the same coordinator port; give each job its own (%s, or the launcher's)",
		jobName(o.b.Job), jobName(h.Job), h.Rank, h.Size, h.Host, c.RemoteAddr(), EnvPort)
	// Recorded and logged before the answer, so that whoever learns of the
	// refusal from the refused process finds it in node 0's log too.
	o.foreignMu.Lock()
	o.foreign = append(o.foreign, why)
	o.foreignMu.Unlock()
	if o.log != nil {
		o.log("host: " + why)
	}
	c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	writeFrame(c, frameAck, ackMsg{Msg: why}.encode())
	c.Close()
}

// refused says which processes of other jobs node 0 refused, for an error
// of the bootstrap (a node of this job whose identity differs is among
// them).
func (o *tcpOOB) refused() string {
	o.foreignMu.Lock()
	defer o.foreignMu.Unlock()
	switch len(o.foreign) {
	case 0:
		return ""
	case 1:
		return "; meanwhile " + o.foreign[0]
	}
	return fmt.Sprintf("; meanwhile %s (and %d more)", o.foreign[0], len(o.foreign)-1)
}

// resolvable fails at once when the coordinator's host name does not
// exist (a typo, or a name the cluster's DNS does not know): retrying
// until the connect timeout would only delay the same error. A lookup
// that fails for another reason (a DNS server not answering) is left to
// the dial loop's retries.
func (o *tcpOOB) resolvable(deadline time.Time) error {
	host, _, err := net.SplitHostPort(o.b.Coordinator)
	if err != nil {
		return fmt.Errorf("%w: host: coordinator address %q: %v", fabric.ErrInvalidArg, o.b.Coordinator, err)
	}
	if net.ParseIP(host) != nil {
		return nil
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	_, err = o.resolve(ctx, host)
	var dns *net.DNSError
	if errors.As(err, &dns) && dns.IsNotFound {
		return fmt.Errorf("host: node %d: the coordinator's host %q does not resolve (%v): check %s, the peers list or the Slurm nodelist (from %s)",
			o.b.Rank, host, err, EnvCoordinator, o.b.Source)
	}
	return nil
}

// connect is the bootstrap of every node but node 0.
func (o *tcpOOB) connect(connectTimeout time.Duration) error {
	coord := o.b.Name(0)
	deadline := time.Now().Add(connectTimeout)
	if err := o.resolvable(deadline); err != nil {
		return err
	}
	var c net.Conn
	var lastErr error
	for backoff := 50 * time.Millisecond; ; backoff = min(2*backoff, time.Second) {
		remain := time.Until(deadline)
		if remain <= 0 {
			return fmt.Errorf("host: node %d: %s, the coordinator, did not accept a connection within %v (last error: %v)", o.b.Rank, coord, connectTimeout, lastErr)
		}
		var err error
		if c, err = net.DialTimeout("tcp", o.b.Coordinator, min(remain, 2*time.Second)); err == nil {
			break
		}
		lastErr = err
		time.Sleep(min(backoff, max(time.Until(deadline), 0)))
	}
	h := helloMsg{Job: o.b.Job, Rank: uint32(o.b.Rank), Size: uint32(o.b.Size), Signature: o.sig, Host: hostname()}
	hello := h.encode()
	if len(hello)+1 > maxHello {
		c.Close()
		return fmt.Errorf("%w: host: node %d: a hello of %d bytes exceeds the %d node 0 reads (is the job signature that long?)", fabric.ErrInvalidArg, o.b.Rank, len(hello)+1, maxHello)
	}
	c.SetDeadline(time.Now().Add(connectTimeout))
	if err := writeFrame(c, frameHello, hello); err != nil {
		c.Close()
		return fmt.Errorf("host: node %d: sending the hello to %s: %w", o.b.Rank, coord, err)
	}
	// Node 0 confirms once every node has connected, or says what is wrong.
	c.SetDeadline(time.Now().Add(connectTimeout + 5*time.Second))
	typ, body, err := readFrameMax(c, maxAck) // an ack, or whatever else listens there
	if err != nil {
		c.Close()
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			return fmt.Errorf("host: node %d: %s accepted the connection but did not confirm the job within %v (is another node missing?)", o.b.Rank, coord, connectTimeout)
		}
		return fmt.Errorf("host: node %d: waiting for %s to confirm the job: %w", o.b.Rank, coord, err)
	}
	var a ackMsg
	if typ == frameAck {
		a, err = decodeAck(body)
	} else {
		err = fmt.Errorf("%w: frame of type %d, want an ack", errWire, typ)
	}
	if err != nil {
		c.Close()
		return fmt.Errorf("host: node %d: %s answered the hello with: %w", o.b.Rank, coord, err)
	}
	if !a.OK {
		c.Close()
		return fmt.Errorf("host: node %d: %s refused the job: %s", o.b.Rank, coord, a.Msg)
	}
	c.SetDeadline(time.Time{})
	pc := &peerConn{rank: 0, name: coord, c: c, in: make(chan inFrame, 4), dead: make(chan struct{})}
	pc.recvd.Store(int64(frameHeader + len(body)))
	o.conns = []*peerConn{pc}
	return nil
}

// write writes a frame whose body is the concatenation of parts.
func (pc *peerConn) write(typ byte, timeout time.Duration, parts ...[]byte) error {
	pc.wmu.Lock()
	defer pc.wmu.Unlock()
	pc.c.SetWriteDeadline(time.Now().Add(timeout))
	if err := writeFrame(pc.c, typ, parts...); err != nil {
		return err
	}
	size := frameHeader
	for _, p := range parts {
		size += len(p)
	}
	pc.sent.Add(int64(size))
	return nil
}

// read delivers pc's frames until its connection ends.
func (o *tcpOOB) read(pc *peerConn) {
	defer close(pc.dead)
	for {
		typ, body, err := readFrame(pc.c)
		if err != nil {
			pc.err = err
			if !o.closing.Load() && !pc.bye.Load() {
				o.fail(fmt.Errorf("host: lost the out-of-band connection to %s: %v (did that process crash?)", pc.name, err), pc)
			}
			return
		}
		pc.recvd.Add(int64(frameHeader + len(body)))
		switch typ {
		case frameGather, frameResult, frameExchange:
			select {
			case pc.in <- inFrame{typ, body}:
			case <-o.abortCh:
			}
		case frameAbort:
			m, err := decodeAbort(body)
			if err != nil {
				o.fail(fmt.Errorf("host: %s sent a malformed abort: %v", pc.name, err), pc)
				continue
			}
			o.fail(fmt.Errorf("host: %s failed: %s", o.b.Name(int(m.Node)), m.Msg), pc)
		case frameBye:
			pc.bye.Store(true)
		default:
			pc.err = fmt.Errorf("%w: unexpected frame type %d", errWire, typ)
			o.fail(fmt.Errorf("host: %s: %v", pc.name, pc.err), pc)
			pc.c.Close()
			return
		}
	}
}

// fail records a failure reported by (or about) another node: it tells the
// local environment and, on node 0, every other node but from.
func (o *tcpOOB) fail(err error, from *peerConn) {
	if o.setAborted(err) {
		o.broadcastAbort(uint32(o.b.Rank), err.Error(), from)
		if f := o.onAbort.Load(); f != nil {
			(*f)(err)
		}
	}
}

// abort is a failure of this node's run: every other node is told.
func (o *tcpOOB) abort(err error) {
	if o.setAborted(err) {
		o.broadcastAbort(uint32(o.b.Rank), err.Error(), nil)
	}
}

func (o *tcpOOB) setAborted(err error) bool {
	first := false
	o.abortOnce.Do(func() {
		first = true
		o.abortErr = err
		close(o.abortCh)
	})
	return first
}

func (o *tcpOOB) broadcastAbort(node uint32, msg string, except *peerConn) {
	body := abortMsg{Node: node, Msg: msg}.encode()
	for _, pc := range o.conns {
		if pc != nil && pc != except {
			pc.write(frameAbort, 5*time.Second, body)
		}
	}
}

func (o *tcpOOB) newRun() {}

func (o *tcpOOB) close() error {
	if o.closing.Swap(true) {
		return nil
	}
	for _, pc := range o.conns {
		if pc != nil {
			pc.write(frameBye, time.Second)
			pc.c.Close()
		}
	}
	return nil
}

func (o *tcpOOB) AllGather(key string, data []byte) ([][]byte, error) {
	return o.collective(key, opGather, data, nil)
}

// Exchange implements fabric.OOB: every node sends node 0 its slices for
// every node in one frame, and node 0 sends each node the slices
// addressed to it, so a node moves what it gives and what it gets, and
// node 0 each node's share once.
func (o *tcpOOB) Exchange(key string, out [][]byte) ([][]byte, error) {
	if len(out) != o.b.Size {
		return nil, fmt.Errorf("%w: host: out-of-band %s on node %d with %d slices for %d nodes", fabric.ErrInvalidArg, opName(opExchange, key), o.b.Rank, len(out), o.b.Size)
	}
	return o.collective(key, opExchange, nil, out)
}

func (o *tcpOOB) Barrier(key string) error {
	_, err := o.collective(key, opBarrier, nil, nil)
	return err
}

func (o *tcpOOB) unusable(what string) error {
	return fmt.Errorf("host: out-of-band %s on node %d: %w", what, o.b.Rank, o.abortErr)
}

// collective is every call: data is an AllGather's contribution, out an
// Exchange's slices.
func (o *tcpOOB) collective(key string, kind opKind, data []byte, out [][]byte) ([][]byte, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	what := opName(kind, key)
	if o.closing.Load() {
		return nil, fmt.Errorf("%w: host: out-of-band %s after Close", fabric.ErrClosed, what)
	}
	select {
	case <-o.abortCh:
		return nil, o.unusable(what)
	default:
	}
	o.seq++
	if o.b.Size == 1 {
		switch kind {
		case opGather:
			return [][]byte{append([]byte(nil), data...)}, nil
		case opExchange:
			return copyRow(out), nil
		}
		return nil, nil
	}
	if o.b.Rank == 0 {
		if kind == opExchange {
			return o.relayExchange(key, out, what)
		}
		return o.relay(key, data, kind == opBarrier, what)
	}
	root := o.conns[0]
	var err error
	if kind == opExchange {
		err = root.write(frameExchange, o.timeout, exchangeMsg{Seq: o.seq, Key: key, Data: out}.parts()...)
	} else {
		err = root.write(frameGather, o.timeout, gatherMsg{Seq: o.seq, Key: key, Barrier: kind == opBarrier, Data: data}.encode())
	}
	if err != nil {
		err = fmt.Errorf("host: out-of-band %s: sending to %s: %w", what, root.name, err)
		o.abort(err)
		return nil, err
	}
	f, err := o.answer(root, what)
	if err != nil {
		return nil, err
	}
	res, err := o.decodeAnswer(f, key, kind)
	if err != nil {
		err = fmt.Errorf("host: out-of-band %s: bad answer from %s: %v", what, root.name, err)
		o.abort(err)
		return nil, err
	}
	return res, nil
}

// answer waits for node 0's answer to this node's part of a call.
func (o *tcpOOB) answer(root *peerConn, what string) (inFrame, error) {
	timer := time.NewTimer(o.timeout + 10*time.Second) // node 0 reports late nodes first
	defer timer.Stop()
	select {
	case f := <-root.in:
		return f, nil
	case <-o.abortCh:
		return inFrame{}, o.unusable(what)
	case <-root.dead:
		if f, ok := root.pending(); ok {
			return f, nil
		}
		return inFrame{}, fmt.Errorf("host: out-of-band %s: %s closed the connection (%v)", what, root.name, root.err)
	case <-timer.C:
		err := fmt.Errorf("host: out-of-band %s: no answer from %s within %v", what, root.name, o.timeout)
		o.abort(err)
		return inFrame{}, err
	}
}

// decodeAnswer checks node 0's answer f to call o.seq and returns this
// node's result.
func (o *tcpOOB) decodeAnswer(f inFrame, key string, kind opKind) ([][]byte, error) {
	want, name := byte(frameResult), "a result"
	if kind == opExchange {
		want, name = frameExchange, "an exchange"
	}
	if f.typ != want {
		return nil, fmt.Errorf("%w: frame of type %d, want %s", errWire, f.typ, name)
	}
	var m resultMsg
	var err error
	if kind == opExchange {
		var x exchangeMsg
		x, err = decodeExchange(f.body)
		m = resultMsg(x)
	} else {
		m, err = decodeResult(f.body)
	}
	switch {
	case err != nil:
		return nil, err
	case m.Seq != o.seq || m.Key != key:
		return nil, fmt.Errorf("result of call %d %q, want call %d %q", m.Seq, m.Key, o.seq, key)
	case kind == opBarrier:
		return nil, nil
	case len(m.Data) != o.b.Size:
		return nil, fmt.Errorf("result with %d contributions for %d nodes", len(m.Data), o.b.Size)
	}
	return m.Data, nil
}

// callOf decodes the frame a node sent for a call: which call it is, and
// its contribution (gatherMsg or exchangeMsg).
func callOf(f inFrame) (seq uint64, kind opKind, key string, m any, err error) {
	switch f.typ {
	case frameGather:
		g, err := decodeGather(f.body)
		kind := opGather
		if g.Barrier {
			kind = opBarrier
		}
		return g.Seq, kind, g.Key, g, err
	case frameExchange:
		x, err := decodeExchange(f.body)
		return x.Seq, opExchange, x.Key, x, err
	}
	return 0, 0, "", nil, fmt.Errorf("%w: frame of type %d, want a gather or an exchange", errWire, f.typ)
}

// collect is node 0's side of call o.seq: it waits for every other node's
// frame and hands it to take once checked to be the same call.
func (o *tcpOOB) collect(key string, kind opKind, what string, take func(rank int, m any)) error {
	n := o.b.Size
	arrived := make([]bool, n)
	timer := time.NewTimer(o.timeout)
	defer timer.Stop()
	check := func(pc *peerConn, f inFrame) error {
		seq, k, fkey, m, err := callOf(f)
		if err != nil {
			return fmt.Errorf("host: out-of-band %s: bad frame from %s: %v", what, pc.name, err)
		}
		if seq != o.seq || fkey != key || k != kind {
			return fmt.Errorf("host: out-of-band call %d: %s calls %s as its call %d, but node 0 calls %s (nodes must make the same calls in the same order)",
				o.seq, pc.name, opName(k, fkey), seq, what)
		}
		take(pc.rank, m)
		arrived[pc.rank] = true
		return nil
	}
	for r := 1; r < n; r++ {
		pc := o.conns[r]
		select {
		case f := <-pc.in:
			if err := check(pc, f); err != nil {
				return err
			}
		case <-pc.dead:
			f, ok := pc.pending()
			if !ok {
				return fmt.Errorf("host: out-of-band %s: %s closed its connection before reaching it (%v)", what, pc.name, pc.err)
			}
			if err := check(pc, f); err != nil {
				return err
			}
		case <-o.abortCh:
			return errAborted
		case <-timer.C:
			var missing []string
			for q := r; q < n; q++ {
				select {
				case f := <-o.conns[q].in:
					if err := check(o.conns[q], f); err != nil {
						return err
					}
				default:
				}
				if !arrived[q] {
					missing = append(missing, o.conns[q].name)
				}
			}
			return fmt.Errorf("host: out-of-band %s: %s did not reach it within %v", what, strings.Join(missing, ", "), o.timeout)
		}
	}
	return nil
}

// errAborted is collect's report of an abort from elsewhere.
var errAborted = errors.New("aborted")

// failed ends node 0's side of a call that failed: an abort from
// elsewhere is reported as such; anything else aborts the job.
func (o *tcpOOB) failed(err error, what string) ([][]byte, error) {
	if errors.Is(err, errAborted) {
		return nil, o.unusable(what)
	}
	o.abort(err)
	return nil, err
}

// relay is node 0's side of an AllGather or Barrier: every node is sent
// every contribution.
func (o *tcpOOB) relay(key string, data []byte, barrier bool, what string) ([][]byte, error) {
	n := o.b.Size
	kind := opGather
	if barrier {
		kind = opBarrier
	}
	all := make([][]byte, n)
	if !barrier {
		all[0] = append([]byte(nil), data...)
	}
	err := o.collect(key, kind, what, func(r int, m any) {
		if !barrier {
			all[r] = m.(gatherMsg).Data
		}
	})
	if err != nil {
		return o.failed(err, what)
	}
	res := resultMsg{Seq: o.seq, Key: key}
	if !barrier {
		res.Data = all
	}
	body := res.encode()
	for _, pc := range o.conns[1:] {
		if err := pc.write(frameResult, o.timeout, body); err != nil {
			return o.failed(fmt.Errorf("host: out-of-band %s: sending the result to %s: %w", what, pc.name, err), what)
		}
	}
	if barrier {
		return nil, nil
	}
	out := make([][]byte, n)
	for i, d := range all {
		out[i] = append([]byte(nil), d...)
	}
	return out, nil
}

// relayExchange is node 0's side of an Exchange: each node is sent the
// slices addressed to it (its column), written from the frames they
// arrived in.
func (o *tcpOOB) relayExchange(key string, out [][]byte, what string) ([][]byte, error) {
	n := o.b.Size
	rows := make([][][]byte, n)
	rows[0] = out // the caller's, read before this returns
	bad := ""
	err := o.collect(key, opExchange, what, func(r int, m any) {
		rows[r] = m.(exchangeMsg).Data
		if len(rows[r]) != n && bad == "" {
			bad = fmt.Sprintf("host: out-of-band %s: %s gave %d slices for %d nodes", what, o.conns[r].name, len(rows[r]), n)
		}
	})
	if err == nil && bad != "" {
		err = errors.New(bad)
	}
	if err != nil {
		return o.failed(err, what)
	}
	column := make([][]byte, n)
	for _, pc := range o.conns[1:] {
		for j := range column {
			column[j] = rows[j][pc.rank]
		}
		m := exchangeMsg{Seq: o.seq, Key: key, Data: column}
		if err := pc.write(frameExchange, o.timeout, m.parts()...); err != nil {
			return o.failed(fmt.Errorf("host: out-of-band %s: sending %s its share: %w", what, pc.name, err), what)
		}
	}
	for j := range column {
		column[j] = rows[j][0]
	}
	return copyRow(column), nil // not slices of the frames, which it would keep whole
}

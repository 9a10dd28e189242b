package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rdmashuffle/rdmashuffle/fabric"
)

// startJob starts size "nodes" as goroutines, each setting up its TCP
// out-of-band channel against a coordinator on loopback. sigs gives each
// node's job signature; skip lists nodes that never start.
func startJob(t testing.TB, size int, sigs []string, skip map[int]bool, connect time.Duration) ([]*tcpOOB, []error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	peers := make([]string, size)
	for i := range peers {
		peers[i] = addr
	}
	peers[0] = addr
	oobs := make([]*tcpOOB, size)
	errs := make([]error, size)
	if skip[0] {
		ln.Close() // node 0 is missing: nothing listens (closing it later raced with the others' connects)
	}
	var wg sync.WaitGroup
	for r := 0; r < size; r++ {
		if skip[r] {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := Bootstrap{Rank: r, Size: size, Coordinator: addr, Peers: peers}
			var l net.Listener
			if r == 0 {
				l = ln
			}
			oobs[r], errs[r] = dialOOB(b, sigs[r], connect, 5*time.Second, l)
		}()
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, o := range oobs {
			if o != nil {
				o.close()
			}
		}
	})
	return oobs, errs
}

func sameSig(n int, s string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// each runs f on every node concurrently and returns their errors.
func each(oobs []*tcpOOB, f func(r int, o *tcpOOB) error) []error {
	errs := make([]error, len(oobs))
	var wg sync.WaitGroup
	for r, o := range oobs {
		wg.Add(1)
		go func() { defer wg.Done(); errs[r] = f(r, o) }()
	}
	wg.Wait()
	return errs
}

func TestTCPAllGatherBarrier(t *testing.T) {
	const n = 4
	oobs, errs := startJob(t, n, sameSig(n, "job"), nil, 5*time.Second)
	for r, err := range errs {
		if err != nil {
			t.Fatalf("node %d: %v", r, err)
		}
	}
	for round := 0; round < 3; round++ {
		errs = each(oobs, func(r int, o *tcpOOB) error {
			all, err := o.AllGather(fmt.Sprint("k", round), []byte(fmt.Sprintf("node%d-round%d", r, round)))
			if err != nil {
				return err
			}
			for q, d := range all {
				if want := fmt.Sprintf("node%d-round%d", q, round); string(d) != want {
					return fmt.Errorf("entry %d = %q, want %q", q, d, want)
				}
			}
			all[0] = append(all[0], 'x') // the result belongs to the caller
			return o.Barrier("b")
		})
		for r, err := range errs {
			if err != nil {
				t.Fatalf("round %d node %d: %v", round, r, err)
			}
		}
	}
}

func TestTCPSignatureMismatchNamesTheNode(t *testing.T) {
	sigs := sameSig(3, "sqsr/threads=4/v1")
	sigs[2] = "mqrd/threads=8/v1"
	_, errs := startJob(t, 3, sigs, nil, 5*time.Second)
	want := `node 2 (127.0.0.1:`
	for r, err := range errs {
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `runs "mqrd/threads=8/v1", expected "sqsr/threads=4/v1"`) {
			t.Errorf("node %d: %v; want the mismatched node named with both signatures", r, err)
		}
	}
}

func TestTCPMissingPeerTimesOut(t *testing.T) {
	_, errs := startJob(t, 3, sameSig(3, "s"), map[int]bool{2: true}, 500*time.Millisecond)
	if errs[0] == nil || !strings.Contains(errs[0].Error(), "node 2 (127.0.0.1:") || !strings.Contains(errs[0].Error(), "did not connect within 500ms") {
		t.Errorf("node 0: %v", errs[0])
	}
	if errs[1] == nil || !strings.Contains(errs[1].Error(), "did not connect within") {
		t.Errorf("node 1 should relay node 0's verdict: %v", errs[1])
	}
}

func TestTCPCoordinatorMissing(t *testing.T) {
	_, errs := startJob(t, 2, sameSig(2, "s"), map[int]bool{0: true}, 300*time.Millisecond)
	if errs[1] == nil || !strings.Contains(errs[1].Error(), "did not accept a connection within 300ms") || !strings.Contains(errs[1].Error(), "node 0 (127.0.0.1:") {
		t.Errorf("node 1: %v", errs[1])
	}
}

func TestTCPSizeAndRankChecks(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	done := make(chan error, 1)
	go func() {
		_, err := dialOOB(Bootstrap{Rank: 0, Size: 2, Coordinator: addr}, "s", 5*time.Second, time.Second, ln)
		done <- err
	}()
	// A stray client that is not an rdmashuffle process is ignored.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("GET / HTTP/1.0\r\n\r\n"))
	c.Close()
	// A node started for a job of another size is refused by name.
	_, err = dialOOB(Bootstrap{Rank: 1, Size: 3, Coordinator: addr}, "s", 5*time.Second, time.Second, nil)
	if err == nil || !strings.Contains(err.Error(), "started for a job of 3 nodes, node 0 for 2") {
		t.Fatalf("size mismatch: %v", err)
	}
	if err := <-done; err == nil || !strings.Contains(err.Error(), "job of 3 nodes") {
		t.Fatalf("node 0: %v", err)
	}
}

func TestTCPVersionMismatch(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	done := make(chan error, 1)
	go func() {
		_, err := dialOOB(Bootstrap{Rank: 0, Size: 2, Coordinator: addr}, "s", 5*time.Second, time.Second, ln)
		done <- err
	}()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	h := helloMsg{Rank: 1, Size: 2, Signature: "s"}.encode()
	h[5] = wireVersion + 1
	writeFrame(c, frameHello, h)
	typ, body, err := readFrame(c)
	if err != nil || typ != frameAck {
		t.Fatalf("answer: %d %v", typ, err)
	}
	a, _ := decodeAck(body)
	if a.OK || !strings.Contains(a.Msg, fmt.Sprintf("version %d, this binary %d", wireVersion+1, wireVersion)) {
		t.Fatalf("ack %+v", a)
	}
	if err := <-done; err == nil || !strings.Contains(err.Error(), "another out-of-band protocol") {
		t.Fatalf("node 0: %v", err)
	}
}

// startGoodJob starts an n-node TCP job of one signature and fails the
// test unless every node joined.
func startGoodJob(t *testing.T, n int) []*tcpOOB {
	t.Helper()
	oobs, errs := startJob(t, n, sameSig(n, "s"), nil, 5*time.Second)
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return oobs
}

func TestTCPKeyMismatch(t *testing.T) {
	oobs := startGoodJob(t, 3)
	errs := each(oobs, func(r int, o *tcpOOB) error {
		if r == 1 {
			return o.Barrier("other")
		}
		return o.Barrier("start")
	})
	for r, err := range errs {
		if err == nil || !strings.Contains(err.Error(), `calls Barrier("other")`) || !strings.Contains(err.Error(), "node 1") {
			t.Errorf("node %d: %v; want the mismatch named", r, err)
		}
	}
}

func TestTCPAbortReachesEveryNode(t *testing.T) {
	oobs := startGoodJob(t, 3)
	got := make(chan error, 3)
	for _, o := range oobs {
		f := func(err error) { got <- err }
		o.onAbort.Store(&f)
	}
	errs := each(oobs, func(r int, o *tcpOOB) error {
		if r == 2 {
			o.abort(errors.New("n2/main: out of buffers"))
			return nil
		}
		return o.Barrier("never")
	})
	for r := 0; r < 2; r++ {
		if errs[r] == nil || !strings.Contains(errs[r].Error(), "out of buffers") {
			t.Errorf("node %d: %v", r, errs[r])
		}
	}
	for i := 0; i < 2; i++ {
		select {
		case err := <-got:
			if !strings.Contains(err.Error(), "node 2 (127.0.0.1:") || !strings.Contains(err.Error(), "failed: n2/main: out of buffers") {
				t.Errorf("abort report %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("abort not reported to the environment")
		}
	}
	// The channel stays unusable.
	if err := oobs[0].Barrier("after"); err == nil {
		t.Error("Barrier after an abort succeeded")
	}
}

func TestTCPCrashedPeer(t *testing.T) {
	oobs := startGoodJob(t, 3)
	oobs[2].conns[0].c.Close() // dies without saying goodbye
	errs := each(oobs[:2], func(r int, o *tcpOOB) error { return o.Barrier("b") })
	for r, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "node 2") {
			t.Errorf("node %d: %v", r, err)
		}
	}
}

func TestTCPLateNodeTimesOut(t *testing.T) {
	oobs := startGoodJob(t, 3)
	for _, o := range oobs {
		o.timeout = 300 * time.Millisecond
	}
	errs := each(oobs[:2], func(r int, o *tcpOOB) error { return o.Barrier("b") })
	if errs[0] == nil || !strings.Contains(errs[0].Error(), `Barrier("b"): node 2 (127.0.0.1:`) || !strings.Contains(errs[0].Error(), "did not reach it within 300ms") {
		t.Errorf("node 0: %v", errs[0])
	}
	if errs[1] == nil || !strings.Contains(errs[1].Error(), "did not reach it") {
		t.Errorf("node 1: %v", errs[1])
	}
}

func TestTCPSingleNode(t *testing.T) {
	o, err := dialOOB(Bootstrap{Rank: 0, Size: 1, Coordinator: "x:1"}, "", time.Second, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	all, err := o.AllGather("k", []byte("me"))
	if err != nil || len(all) != 1 || !bytes.Equal(all[0], []byte("me")) {
		t.Fatalf("%q %v", all, err)
	}
	o.close()
	if err := o.Barrier("b"); err == nil {
		t.Fatal("Barrier after close")
	}
}

func TestLocalHub(t *testing.T) {
	h := newLocalHub(3, time.Second)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for id := 0; id < 3; id++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := h.view(id)
			for round := 0; round < 5; round++ {
				all, err := o.AllGather("k", []byte{byte(id), byte(round)})
				if err != nil {
					errs[id] = err
					return
				}
				for q, d := range all {
					if !bytes.Equal(d, []byte{byte(q), byte(round)}) {
						errs[id] = fmt.Errorf("entry %d: %v", q, d)
						return
					}
				}
				if err := o.Barrier("b"); err != nil {
					errs[id] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	for id, err := range errs {
		if err != nil {
			t.Fatalf("node %d: %v", id, err)
		}
	}
}

func TestLocalHubMismatchTimeoutAbort(t *testing.T) {
	h := newLocalHub(2, 200*time.Millisecond)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for id, key := range []string{"a", "b"} {
		wg.Add(1)
		go func() { defer wg.Done(); errs[id] = h.view(id).Barrier(key) }()
	}
	wg.Wait()
	for id, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "nodes must make the same calls") {
			t.Errorf("mismatch, node %d: %v", id, err)
		}
	}
	h.newRun()
	if err := h.view(0).Barrier("alone"); err == nil || !strings.Contains(err.Error(), "node(s) 1 did not reach it within 200ms") {
		t.Errorf("timeout: %v", err)
	}
	h.newRun()
	go func() { // abort once node 0 waits in the barrier
		for {
			h.mu.Lock()
			waiting := h.rounds[0] != nil
			h.mu.Unlock()
			if waiting {
				break
			}
			runtime.Gosched()
		}
		h.abort(errors.New("n1/main: failed"))
	}()
	if err := h.view(0).Barrier("x"); err == nil || !strings.Contains(err.Error(), "n1/main: failed") {
		t.Errorf("abort: %v", err)
	}
	h.view(0).close()
	h.newRun()
	if err := h.view(1).Barrier("y"); err == nil {
		t.Error("Barrier after close")
	}
}

// TestCoordinatorThatDoesNotResolve: a coordinator name the resolver does
// not know fails at once (not after the connect timeout); a lookup that
// fails otherwise is retried by the dial loop.
func TestCoordinatorThatDoesNotResolve(t *testing.T) {
	for _, tc := range []struct {
		name    string
		err     error
		timeout time.Duration
		want    string
	}{
		{"no such host", &net.DNSError{Err: "no such host", Name: "nodo-0", IsNotFound: true}, time.Hour, `the coordinator's host "nodo-0" does not resolve`},
		{"server not answering", &net.DNSError{Err: "i/o timeout", Name: "nodo-0", IsTimeout: true, IsTemporary: true}, 200 * time.Millisecond, "did not accept a connection within 200ms"},
	} {
		o := &tcpOOB{b: Bootstrap{Rank: 1, Size: 2, Coordinator: "nodo-0:1", Source: "test"}, abortCh: make(chan struct{}),
			resolve: func(context.Context, string) ([]string, error) { return nil, tc.err }}
		err := o.connect(tc.timeout)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want an error containing %q", tc.name, err, tc.want)
		}
	}
}

// TestTCPLateNodeLearnsWhyTheJobFailed: a node that connects after node 0
// has already refused the job (here, for another node's signature) is told
// why, not refused a connection until its timeout.
func TestTCPLateNodeLearnsWhyTheJobFailed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	peers := []string{addr, addr, addr}
	boot := func(r int) Bootstrap { return Bootstrap{Rank: r, Size: 3, Coordinator: addr, Peers: peers} }
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for _, r := range []int{0, 2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sig := "sqsr/v1"
			if r == 2 {
				sig = "mqrd/v1"
			}
			var l net.Listener
			if r == 0 {
				l = ln
			}
			_, errs[r] = dialOOB(boot(r), sig, 5*time.Second, 5*time.Second, l)
		}()
	}
	wg.Wait() // node 0 has failed the job
	_, errs[1] = dialOOB(boot(1), "sqsr/v1", 5*time.Second, 5*time.Second, nil)
	for r, err := range errs {
		if err == nil || !strings.Contains(err.Error(), `runs "mqrd/v1", expected "sqsr/v1"`) {
			t.Errorf("node %d: %v; want node 2's signature mismatch named", r, err)
		}
	}
}

// TestTCPAnswerBeforeClose: a node whose answer from node 0 arrived just
// before node 0 closed the connection (node 0 ends its process after a
// job's last all-gather) takes the answer, rather than reporting the
// connection lost because both were ready at once. Node 0's side alike: a
// node that reached the collective and then closed is counted as arrived.
func TestTCPAnswerBeforeClose(t *testing.T) {
	ended := func(frames ...inFrame) *peerConn {
		a, b := net.Pipe()
		go func() { _, _ = io.Copy(io.Discard, b) }()
		t.Cleanup(func() { a.Close(); b.Close() })
		pc := &peerConn{name: "n0", c: a, in: make(chan inFrame, 4), dead: make(chan struct{}), err: io.EOF}
		for _, f := range frames {
			pc.in <- f
		}
		close(pc.dead)
		return pc
	}
	for i := 0; i < 64; i++ { // a select between the two would fail about every other time
		o := &tcpOOB{b: Bootstrap{Rank: 1, Size: 2}, timeout: time.Second, abortCh: make(chan struct{})}
		answer := resultMsg{Seq: 1, Key: "results", Data: [][]byte{[]byte("a"), []byte("b")}}.encode()
		o.conns = []*peerConn{ended(inFrame{frameResult, answer})}
		got, err := o.AllGather("results", []byte("b"))
		if err != nil || len(got) != 2 || string(got[0]) != "a" {
			t.Fatalf("round %d: %q, %v; want node 0's answer", i, got, err)
		}
		root := &tcpOOB{b: Bootstrap{Rank: 0, Size: 2}, timeout: time.Second, abortCh: make(chan struct{})}
		g := gatherMsg{Seq: 1, Key: "results", Data: []byte("b")}.encode()
		pc := ended(inFrame{frameGather, g})
		pc.rank = 1
		root.conns = []*peerConn{nil, pc}
		if got, err := root.AllGather("results", []byte("a")); err != nil || len(got) != 2 || string(got[1]) != "b" {
			t.Fatalf("round %d, node 0: %q, %v; want node 1's contribution", i, got, err)
		}
	}
	// With nothing delivered, the closed connection is reported.
	o := &tcpOOB{b: Bootstrap{Rank: 1, Size: 2}, timeout: time.Second, abortCh: make(chan struct{})}
	o.conns = []*peerConn{ended()}
	if _, err := o.AllGather("results", nil); err == nil || !strings.Contains(err.Error(), "closed the connection") {
		t.Fatalf("%v, want the closed connection named", err)
	}
}

// TestTCPExchange: each node gets what every node gave it, over rounds
// between all-gathers and barriers, and moves only its own share: what it
// gives and what it gets, node 0 each node's share once.
func TestTCPExchange(t *testing.T) {
	for _, n := range []int{2, 5, 32} {
		t.Run(fmt.Sprintf("nodes=%d", n), func(t *testing.T) {
			oobs, errs := startJob(t, n, sameSig(n, "job"), nil, 10*time.Second)
			for r, err := range errs {
				if err != nil {
					t.Fatalf("node %d: %v", r, err)
				}
			}
			give := func(from, to, round int) []byte {
				if round == 1 && to != 0 {
					return nil // only node 0 gets anything
				}
				return []byte(fmt.Sprintf("%d>%d@%d", from, to, round))
			}
			const rounds = 3
			errs = each(oobs, func(r int, o *tcpOOB) error {
				for round := 0; round < rounds; round++ {
					out := make([][]byte, n)
					for j := range out {
						out[j] = give(r, j, round)
					}
					in, err := o.Exchange("x", out)
					if err != nil {
						return err
					}
					for j, d := range in {
						if want := give(j, r, round); !bytes.Equal(d, want) {
							return fmt.Errorf("round %d: from node %d %q, want %q", round, j, d, want)
						}
					}
					if _, err := o.AllGather("g", []byte{byte(r)}); err != nil {
						return err
					}
					if err := o.Barrier("b"); err != nil {
						return err
					}
				}
				return nil
			})
			for r, err := range errs {
				if err != nil {
					t.Fatalf("node %d: %v", r, err)
				}
			}
			// Node r's share: its frame to node 0 and node 0's back, each
			// the header, sequence, key, count, n lengths and its entries.
			share := func(r, round int) (up, down int64) {
				frame := int64(frameHeader + 8 + 2 + len("x") + 4 + 4*n)
				up, down = frame, frame
				for j := 0; j < n; j++ {
					up += int64(len(give(r, j, round)))
					down += int64(len(give(j, r, round)))
				}
				return up, down
			}
			gathers := int64(0) // the all-gathers' and barriers' traffic, the same for every node but 0
			for r := 1; r < n; r++ {
				sent, recvd := oobs[r].conns[0].sent.Load(), oobs[r].conns[0].recvd.Load()
				for round := 0; round < rounds; round++ {
					up, down := share(r, round)
					sent, recvd = sent-up, recvd-down
				}
				if r == 1 {
					gathers = sent + recvd
				}
				if sent+recvd != gathers || sent < 0 || recvd < 0 {
					t.Errorf("node %d moved %d and %d bytes besides its exchanges, node 1 %d in all", r, sent, recvd, gathers)
				}
				if node0 := oobs[0].conns[r]; node0.sent.Load() != oobs[r].conns[0].recvd.Load() || node0.recvd.Load() != oobs[r].conns[0].sent.Load() {
					t.Errorf("node 0 and node %d disagree on what passed between them", r)
				}
			}
		})
	}
}

// TestTCPExchangeMismatch: a node that makes another call than node 0's
// exchange, or gives slices for another number of nodes, is named.
func TestTCPExchangeMismatch(t *testing.T) {
	for _, tc := range []struct {
		name string
		call func(o *tcpOOB) error
		want string
	}{
		{"all-gather", func(o *tcpOOB) error { _, err := o.AllGather("x", []byte("hi")); return err }, `calls AllGather("x")`},
		{"other key", func(o *tcpOOB) error { _, err := o.Exchange("y", make([][]byte, 3)); return err }, `calls Exchange("y")`},
		{"slices", func(o *tcpOOB) error {
			o.mu.Lock() // a peer built for another job size, past the local check
			o.seq++
			err := o.conns[0].write(frameExchange, time.Second, exchangeMsg{Seq: o.seq, Key: "x", Data: make([][]byte, 2)}.parts()...)
			o.mu.Unlock()
			if err != nil {
				return err
			}
			return o.Barrier("after")
		}, "gave 2 slices for 3 nodes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			oobs := startGoodJob(t, 3)
			errs := each(oobs, func(r int, o *tcpOOB) error {
				if r == 2 {
					return tc.call(o)
				}
				_, err := o.Exchange("x", make([][]byte, 3))
				return err
			})
			for r, err := range errs {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("node %d: %v; want %q", r, err, tc.want)
				}
			}
		})
	}
	o, err := dialOOB(Bootstrap{Rank: 0, Size: 1, Coordinator: "x:1"}, "", time.Second, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer o.close()
	if in, err := o.Exchange("alone", [][]byte{[]byte("me")}); err != nil || len(in) != 1 || string(in[0]) != "me" {
		t.Errorf("one node: %q, %v", in, err)
	}
	if _, err := o.Exchange("alone", nil); !errors.Is(err, fabric.ErrInvalidArg) {
		t.Errorf("no slices: %v, want ErrInvalidArg", err)
	}
}

// TestTCPStrayHugeLengthRefused: a stray connection whose first bytes
// claim a frame of nearly 256 MiB is closed at once, without node 0
// allocating the frame, and the job goes on.
func TestTCPStrayHugeLengthRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		length uint32
	}{
		{"just under the frame limit", maxFrame - 1},
		{"just over the hello limit", maxHello + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			done := make(chan error, 1)
			go func() {
				o, err := dialOOB(Bootstrap{Rank: 0, Size: 2, Coordinator: addr}, "s", 10*time.Second, time.Second, ln)
				if err == nil {
					o.close()
				}
				done <- err
			}()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.Write([]byte{byte(tc.length >> 24), byte(tc.length >> 16), byte(tc.length >> 8), byte(tc.length), frameHello, 'R', 'S'})
			c.SetReadDeadline(time.Now().Add(3 * time.Second))
			_, err = c.Read(make([]byte, 1))
			runtime.ReadMemStats(&after)
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 8<<20 {
				t.Errorf("node 0 allocated %d bytes for a stray connection's length prefix", grew)
			}
			if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("node 0 kept the stray connection open: %v", err)
			}
			// The job goes on.
			o, err := dialOOB(Bootstrap{Rank: 1, Size: 2, Coordinator: addr}, "s", 5*time.Second, time.Second, nil)
			if err != nil {
				t.Fatalf("node 1 after the stray: %v", err)
			}
			o.close()
			if err := <-done; err != nil {
				t.Fatalf("node 0: %v", err)
			}
		})
	}
	// A node's own hello must fit: a signature too long for it is refused
	// before anything is sent.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = dialOOB(Bootstrap{Rank: 1, Size: 2, Coordinator: ln.Addr().String()}, strings.Repeat("s", maxHello), time.Second, time.Second, nil)
	if !errors.Is(err, fabric.ErrInvalidArg) || !strings.Contains(err.Error(), "job signature") {
		t.Errorf("a hello longer than %d bytes: %v", maxHello, err)
	}
}

// TestTCPTwoJobsOnOnePort: a process of another job that reaches node 0's
// port (two jobs on one host and port) is refused with a message naming
// both jobs, node 0's log is told, and node 0's job goes on, whatever the
// stray process claims (the rank of one of the job's nodes, another job
// size or signature, no job at all, another protocol version). The other
// job's node 0 cannot listen on the port, and says so.
func TestTCPTwoJobsOnOnePort(t *testing.T) {
	type stray struct {
		job, sig   string
		rank, size int
		version    uint16 // 0: this build's hello
	}
	for _, tc := range []struct {
		name  string
		job   string // node 0's job
		stray stray
	}{
		{"another job's node 1", "slurm/17.0", stray{"slurm/18.0", "s", 1, 3, 0}},
		{"another size", "slurm/17.0", stray{"slurm/18.0", "s", 2, 8, 0}},
		{"another signature", "slurm/17.0", stray{"pmix/ns-4", "other", 1, 3, 0}},
		{"another job's node 0", "slurm/17.0", stray{"slurm/18.0", "s", 0, 3, 0}},
		{"no job", "slurm/17.0", stray{"", "s", 1, 3, 0}},
		{"a job where node 0 has none", "", stray{"launch-42", "s", 1, 3, 0}},
		{"another version", "slurm/17.0", stray{"slurm/18.0", "s", 1, 3, wireVersion + 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			boot := func(r int, job string, size int) Bootstrap {
				return Bootstrap{Rank: r, Size: size, Coordinator: addr, Job: job}
			}
			var logMu sync.Mutex
			var logged []string
			log := func(m string) { logMu.Lock(); logged = append(logged, m); logMu.Unlock() }
			oobs := make([]*tcpOOB, 3)
			errs := make([]error, 3)
			node0 := make(chan struct{})
			go func() {
				defer close(node0)
				oobs[0], errs[0] = dialOOBLog(boot(0, tc.job, 3), "s", 10*time.Second, 5*time.Second, ln, log)
			}()
			// The stray process comes first.
			s := tc.stray
			var strayErr error
			if s.version == 0 {
				_, strayErr = dialOOB(boot(s.rank, s.job, s.size), s.sig, 5*time.Second, time.Second, nil)
			} else {
				strayErr = helloOfVersion(addr, s.version, s.job)
			}
			wantStray, refusals := fmt.Sprintf("node 0 of job %s refused a process of job %s", jobName(tc.job), jobName(s.job)), 1
			if s.rank == 0 { // it cannot listen, and tells why
				wantStray, refusals = "cannot listen for the other nodes on port", 0
			}
			if strayErr == nil || !strings.Contains(strayErr.Error(), wantStray) {
				t.Fatalf("the stray process: %v; want %q", strayErr, wantStray)
			}
			// The job goes on.
			var wg sync.WaitGroup
			for r := 1; r < 3; r++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					oobs[r], errs[r] = dialOOB(boot(r, tc.job, 3), "s", 10*time.Second, 5*time.Second, nil)
				}()
			}
			wg.Wait()
			<-node0
			for r, err := range errs {
				if err != nil {
					t.Fatalf("node %d of the job: %v", r, err)
				}
				defer oobs[r].close()
			}
			errs = each(oobs, func(r int, o *tcpOOB) error {
				all, err := o.AllGather("after", []byte{byte(r)})
				if err == nil && (len(all) != 3 || all[2][0] != 2) {
					err = fmt.Errorf("all-gather %v", all)
				}
				return err
			})
			for r, err := range errs {
				if err != nil {
					t.Fatalf("node %d after the stray: %v", r, err)
				}
			}
			logMu.Lock()
			defer logMu.Unlock()
			if len(logged) != refusals || refusals > 0 && !strings.Contains(logged[0], wantStray) {
				t.Errorf("node 0 logged %q; want %d refusal(s) containing %q", logged, refusals, wantStray)
			}
		})
	}
}

// helloOfVersion sends node 0 at addr a hello of another protocol version
// that names job, and returns node 0's refusal as an error.
func helloOfVersion(addr string, version uint16, job string) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	h := helloMsg{Job: job, Rank: 1, Size: 3, Signature: "s"}.encode()
	h[4], h[5] = byte(version>>8), byte(version)
	if err := writeFrame(c, frameHello, h); err != nil {
		return err
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	typ, body, err := readFrame(c)
	if err != nil {
		return err
	}
	a, err := decodeAck(body)
	if err != nil || typ != frameAck || a.OK {
		return fmt.Errorf("answer of type %d: %+v, %v", typ, a, err)
	}
	return errors.New(a.Msg)
}

// TestTCPNodeOfAnotherIdentity: a node of the job started with another job
// identity (its launcher's variables differ) is refused as a stranger;
// node 0's error for the node that never came says so.
func TestTCPNodeOfAnotherIdentity(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	done := make(chan error, 1)
	go func() {
		_, err := dialOOB(Bootstrap{Rank: 0, Size: 2, Coordinator: addr, Job: "launch-1"}, "s", 500*time.Millisecond, time.Second, ln)
		done <- err
	}()
	_, err = dialOOB(Bootstrap{Rank: 1, Size: 2, Coordinator: addr, Job: "launch-2"}, "s", 5*time.Second, time.Second, nil)
	if err == nil || !strings.Contains(err.Error(), `refused a process of job "launch-2"`) {
		t.Errorf("node 1: %v", err)
	}
	err = <-done
	if err == nil || !strings.Contains(err.Error(), "did not connect within 500ms; meanwhile node 0 of job \"launch-1\" refused a process of job \"launch-2\" (rank 1 of 2") {
		t.Errorf("node 0: %v", err)
	}
}

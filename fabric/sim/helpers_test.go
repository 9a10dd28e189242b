package sim_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// newCluster builds a cluster for one test and closes it at the end.
func newCluster(t testing.TB, cfg sim.Config) *sim.Cluster {
	t.Helper()
	if cfg.TimeLimit == 0 {
		cfg.TimeLimit = 10 * fabric.Second
	}
	c, err := sim.New(cfg)
	if err != nil {
		t.Fatalf("sim.New: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// mix64 is the splitmix64 finalizer: a cheap, well-spread hash used to
// derive message sizes and payloads from message identities, so that the
// receiver can check what it got without any shared state.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// key combines small integers into one hash key.
func key(parts ...int) uint64 {
	h := uint64(0x1234567)
	for _, p := range parts {
		h = mix64(h ^ uint64(p))
	}
	return h
}

// fillKey writes the payload of the message identified by k into b.
func fillKey(b []byte, k uint64) {
	s := k
	for i := range b {
		if i%8 == 0 {
			s = mix64(s)
		}
		b[i] = byte(s >> (8 * (i % 8)))
	}
}

func payload(n int, k uint64) []byte {
	b := make([]byte, n)
	fillKey(b, k)
	return b
}

// checkBytes reports where got differs from the payload of message k.
func checkBytes(what string, got []byte, k uint64) error {
	want := payload(len(got), k)
	if bytes.Equal(got, want) {
		return nil
	}
	i := 0
	for got[i] == want[i] {
		i++
	}
	return fmt.Errorf("%s: %d payload bytes differ from what was sent, first at offset %d (got %#02x, want %#02x)",
		what, len(got), i, got[i], want[i])
}

// drain polls cq until it is empty and returns everything it held.
func drain(cq fabric.CQ) ([]fabric.WC, error) {
	var out []fabric.WC
	buf := make([]fabric.WC, 32)
	for {
		n, err := cq.Poll(buf)
		out = append(out, buf[:n]...)
		if err != nil || n == 0 {
			return out, err
		}
	}
}

// endpoint is one queue pair with its own PD, CQs and memory, built from
// the test goroutine (no threads): verbs called outside Run act at the
// cluster's current time.
type endpoint struct {
	pd       fabric.PD
	scq, rcq fabric.CQ
	mr       fabric.MR
	qp       fabric.QP
}

func newEndpoint(t *testing.T, n fabric.Node, typ fabric.QPType, mrBytes int) *endpoint {
	t.Helper()
	e := &endpoint{}
	var err error
	dev := n.Device()
	if e.pd, err = dev.AllocPD(); err != nil {
		t.Fatal(err)
	}
	if e.scq, err = dev.CreateCQ(1024); err != nil {
		t.Fatal(err)
	}
	if e.rcq, err = dev.CreateCQ(1024); err != nil {
		t.Fatal(err)
	}
	if e.mr, err = e.pd.RegMR(mrBytes, fabric.AccessLocalWrite|fabric.AccessRemoteWrite|fabric.AccessRemoteRead); err != nil {
		t.Fatal(err)
	}
	e.qp, err = e.pd.CreateQP(fabric.QPInit{Type: typ, SendCQ: e.scq, RecvCQ: e.rcq,
		Caps: fabric.QPCaps{MaxSendWR: 256, MaxRecvWR: 256}})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// connectPair brings a and b (RC or UC) to RTS, connected to each other,
// with the given first PSNs.
func connectPair(t *testing.T, a, b *endpoint, psnA, psnB fabric.PSN, timeout, retry uint8) {
	t.Helper()
	acc := fabric.AccessLocalWrite | fabric.AccessRemoteWrite | fabric.AccessRemoteRead
	for _, s := range []struct {
		e, peer    *endpoint
		send, recv fabric.PSN
	}{{a, b, psnA, psnB}, {b, a, psnB, psnA}} {
		if err := s.e.qp.Modify(fabric.StateInit, fabric.QPAttr{Access: acc}); err != nil {
			t.Fatal(err)
		}
		if err := s.e.qp.Modify(fabric.StateRTR, fabric.QPAttr{Dest: s.peer.qp.Info().Address(), RemotePSN: s.recv,
			MaxDestRdAtomic: 16, MinRNRTimer: 1}); err != nil {
			t.Fatal(err)
		}
		if err := s.e.qp.Modify(fabric.StateRTS, fabric.QPAttr{SendPSN: s.send, Timeout: timeout, RetryCnt: retry,
			RNRRetry: 7, MaxRdAtomic: 16}); err != nil {
			t.Fatal(err)
		}
	}
}

package tcpshuffle

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/host"
)

// FuzzParseHeader: any 24 bytes either decode to a sane frame or are
// refused; never a panic, never a payload beyond the buffer.
func FuzzParseHeader(f *testing.F) {
	var h [frameHeader]byte
	putHeader(h[:], 3, &algos.Buffer{N: 32, Tuples: 2, Sum: 7}, algos.Depleted)
	f.Add(h[:])
	f.Add(make([]byte, frameHeader))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := parseHeader(b, 4096)
		if err == nil && (d.N < 0 || d.N > 4096 || d.N%algos.TupleBytes != 0) {
			t.Fatalf("accepted %+v", d)
		}
	})
}

func TestHeaderRoundTrip(t *testing.T) {
	var h [frameHeader]byte
	putHeader(h[:], 5, &algos.Buffer{N: 48, Tuples: 3, Sum: 99}, algos.MoreData)
	d, err := parseHeader(h[:], 1024)
	if err != nil || d.Src != 5 || d.N != 48 || d.Tuples != 3 || d.Sum != 99 || d.State != algos.MoreData {
		t.Fatalf("%+v %v", d, err)
	}
	for _, bad := range [][]byte{h[:10], append([]byte{0}, h[1:]...)} {
		if _, err := parseHeader(bad, 1024); err == nil {
			t.Errorf("accepted %x", bad)
		}
	}
	if _, err := parseHeader(h[:], 32); err == nil {
		t.Error("accepted a payload larger than the buffer")
	}
}

// TestSharedEndpoint: an endpoint shared by two receiving threads (the
// endpoint is safe for concurrent use) ends both once every stream has
// ended; before, the thread that did not take the last end of stream waited
// for the 30-second timeout and failed. A buffer handed back twice is an
// error, not a hang on a full channel.
func TestSharedEndpoint(t *testing.T) {
	f, err := host.OpenLocal(host.Config{Cores: 8}, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	err = f.Run(func(th fabric.Thread) error {
		ep, err := Open(th, algos.Config{Nodes: 2, MsgBytes: 4096, Buffers: 1, Threads: 2, CreditEvery: 1}, "127.0.0.1")
		if err != nil {
			return err
		}
		b, err := ep.Acquire(th)
		if err != nil {
			return err
		}
		if err := ep.PutData(th, b, []int{0, 1}, algos.Depleted); err != nil {
			return err
		}
		if err := ep.PutData(th, b, nil, algos.MoreData); err == nil || !errors.Is(err, algos.ErrConfig) {
			return fmt.Errorf("a buffer handed back twice: %v", err)
		}
		var mu sync.Mutex
		var got []algos.Delivery
		errs := make(chan error, 2)
		for k := 0; k < 2; k++ {
			th.Spawn(fmt.Sprintf("recv%d", k), 1+k, func(rt fabric.Thread) error {
				for {
					d, err := ep.GetData(rt)
					if err != nil || d.End {
						errs <- err
						return err
					}
					mu.Lock()
					got = append(got, d)
					mu.Unlock()
				}
			})
		}
		for k := 0; k < 2; k++ {
			if err := <-errs; err != nil {
				return err
			}
		}
		if len(got) != 2 {
			return fmt.Errorf("node %d: %d deliveries, want one end of stream from each node", th.Node().ID(), len(got))
		}
		if err := ep.Release(th, got[0]); err != nil {
			return err
		}
		if err := ep.Release(th, got[0]); err == nil || !errors.Is(err, algos.ErrConfig) {
			return fmt.Errorf("a delivery released twice: %v", err)
		}
		ep.Release(th, got[1])
		return ep.Close(th)
	})
	if err != nil {
		t.Fatal(err)
	}
}

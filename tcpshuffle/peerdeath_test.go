package tcpshuffle

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rdmashuffle/rdmashuffle/algos"
	"github.com/rdmashuffle/rdmashuffle/fabric"
	"github.com/rdmashuffle/rdmashuffle/fabric/host"
)

// dyingNode, set in this test binary's environment to node 0's address,
// makes TestSurvivorsEndPromptly play node 2 of its job: it opens the
// endpoint and dies (SIGKILL), without closing anything.
const dyingNode = "TCPSHUFFLE_TEST_DYING_NODE"

// peerCfg is the endpoint of the job's three nodes.
var peerCfg = algos.Config{Nodes: 3, MsgBytes: 4096, Buffers: 1, Threads: 1, CreditEvery: 1}

// joinAs opens node rank of the three-node job whose node 0 listens at
// coordinator.
func joinAs(rank int, coordinator string) (fabric.Fabric, error) {
	return host.Open(host.Config{Cores: 4, Bootstrap: &host.Bootstrap{Rank: rank, Size: 3, Coordinator: coordinator}, ConnectTimeout: 20 * time.Second})
}

// TestSurvivorsEndPromptly: when a node of a distributed job dies (its
// process killed after the TCP endpoint opened), the others, whose
// threads wait in GetData for streams from it and from each other, end
// their runs within a second. Before, their threads blocked on the
// endpoint's channels did not notice the job's failure (the out-of-band
// channel's): each run waited its 10 s grace for them and returned
// saying they had not.
func TestSurvivorsEndPromptly(t *testing.T) {
	if addr := os.Getenv(dyingNode); addr != "" {
		f, err := joinAs(2, addr)
		if err != nil {
			os.Exit(3)
		}
		f.Run(func(th fabric.Thread) error {
			if _, err := Open(th, peerCfg, "127.0.0.1"); err != nil {
				os.Exit(4)
			}
			syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		})
		os.Exit(5)
	}
	if testing.Short() {
		t.Skip("starts a process")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0") // a free port for node 0
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	peer := exec.Command(os.Args[0], "-test.run=^TestSurvivorsEndPromptly$")
	peer.Env = append(os.Environ(), dyingNode+"="+addr)
	if err := peer.Start(); err != nil {
		t.Fatal(err)
	}
	died := make(chan time.Time, 1)
	go func() { peer.Wait(); died <- time.Now() }()
	var wg sync.WaitGroup
	errs, ended := make([]error, 2), make([]time.Time, 2)
	for r := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f, err := joinAs(r, addr)
			if err != nil {
				errs[r] = err
				return
			}
			defer f.Close()
			errs[r] = f.Run(func(th fabric.Thread) error {
				ep, err := Open(th, peerCfg, "127.0.0.1")
				if err != nil {
					return err
				}
				for {
					d, err := ep.GetData(th)
					if err != nil || d.End {
						return fmt.Errorf("GetData returned %+v, %v", d, err)
					}
				}
			})
			ended[r] = time.Now()
		}()
	}
	wg.Wait()
	death := <-died
	if st := peer.ProcessState; st == nil || st.ExitCode() != -1 {
		t.Fatalf("node 2 did not die of its signal: %v", st)
	}
	for r, err := range errs {
		if err == nil {
			t.Errorf("node %d: no error", r)
			continue
		}
		took := ended[r].Sub(death)
		if took > time.Second {
			t.Errorf("node %d ended %v after node 2 died, want within 1 s: %v", r, took.Round(time.Millisecond), err)
		}
		t.Logf("node %d ended %v after node 2 died: %v", r, took.Round(time.Millisecond), err)
	}
}

package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/rdmashuffle/rdmashuffle/fabric/host"
)

// launchExecutable is what launch starts (tests point it at their binary).
var launchExecutable = os.Executable

// launchGrace is how long the other nodes of a job may run on after one
// has failed before launch kills them.
const launchGrace = 3 * time.Second

func launchCmd() *cobra.Command {
	var nodes int
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "launch --nodes N -- <explore command and flags>",
		Short: "Run an explore command as N processes on this machine, one node each (a multi-process job)",
		Long: `launch starts N copies of explore on this machine, one per node, with the job
layout in the environment (RDMASHUFFLE_RANK, RDMASHUFFLE_SIZE, node 0's address
in RDMASHUFFLE_COORDINATOR, on a free loopback port, and a fresh identity for the
job in RDMASHUFFLE_JOB), waits for all of them,
prints node 0's output, and fails if any node fails (printing its output too).
Once one node has failed, the others have 3 s to end before they are killed.
It is how a distributed job is tried on one machine: the TCP design over real
sockets, or the hardware backend with one device per process. On a cluster use
srun or mpirun instead (docs/hardware.md).`,
		Example: "  explore launch --nodes 4 -- run --backend tcp --design TCP --nodes 4 --threads 2",
		Args:    atLeast(1, "the explore command each process runs, after --", "explore launch --nodes 4 -- run --backend tcp --design TCP --nodes 4"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if nodes < 1 || nodes > 64 {
				return fmt.Errorf("--nodes %d: launch starts 1 to 64 processes on this machine", nodes)
			}
			if err := launchBackend(args); err != nil {
				return err
			}
			exe, err := launchExecutable()
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return err
			}
			port := ln.Addr().(*net.TCPAddr).Port
			ln.Close() // node 0 listens on it next; a race with another program is reported by node 0
			// The job's identity: node 0 refuses a process of another job
			// that reaches the port (another launch that drew it too).
			job := fmt.Sprintf("launch-%d-%016x", os.Getpid(), rand.Uint64())
			outs := make([]bytes.Buffer, nodes)
			errs := make([]error, nodes)
			// The first node to fail ends the job: the others get a grace
			// period to fail on their own (their messages usually say more,
			// such as which peer vanished), then are killed rather than left
			// waiting for the timeout.
			var mu sync.Mutex
			firstFailed := -1
			abort := make(chan struct{})
			fail := func(i int) {
				mu.Lock()
				defer mu.Unlock()
				if firstFailed < 0 {
					firstFailed = i
					close(abort)
				}
			}
			timedOut := make(chan struct{})
			deadline := time.AfterFunc(timeout, func() { close(timedOut) })
			defer deadline.Stop()
			var wg sync.WaitGroup
			for i := 0; i < nodes; i++ {
				c := exec.Command(exe, args...)
				c.Env = append(os.Environ(), host.EnvRank+"="+strconv.Itoa(i), host.EnvSize+"="+strconv.Itoa(nodes),
					host.EnvCoordinator+"=127.0.0.1:"+strconv.Itoa(port), host.EnvJob+"="+job)
				c.Stdout, c.Stderr = &outs[i], &outs[i]
				if err := c.Start(); err != nil {
					errs[i] = fmt.Errorf("not started: %w", err)
					fail(i)
					break // the nodes already started are stopped below
				}
				wg.Add(1)
				go func(i int, c *exec.Cmd) {
					defer wg.Done()
					done := make(chan error, 1)
					go func() { done <- c.Wait() }()
					kill := func(why error) {
						c.Process.Kill()
						<-done
						errs[i] = why
					}
					select {
					case errs[i] = <-done:
						if errs[i] != nil {
							fail(i)
						}
						return
					case <-timedOut:
						kill(fmt.Errorf("still running after %v: killed", timeout))
						return
					case <-abort:
					}
					grace := time.NewTimer(launchGrace)
					defer grace.Stop()
					select {
					case errs[i] = <-done:
					case <-grace.C:
						mu.Lock()
						first := firstFailed
						mu.Unlock()
						kill(fmt.Errorf("killed %v after node %d failed", launchGrace, first))
					}
				}(i, c)
			}
			wg.Wait()
			w := cmd.OutOrStdout()
			io.Copy(w, &outs[0])
			var failed []error
			for i, err := range errs {
				if err != nil {
					if i > 0 {
						fmt.Fprintf(w, "--- node %d:\n%s", i, outs[i].String())
					}
					failed = append(failed, fmt.Errorf("node %d: %w", i, err))
				}
			}
			return errors.Join(failed...)
		},
	}
	cmd.Flags().IntVar(&nodes, "nodes", 2, "processes (nodes) to start")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Minute, "kill the job after this long")
	return cmd
}

// launchBackend checks that the command launch is to start runs on a real
// backend: every process started with the simulator would simulate a whole
// cluster of its own, N unrelated simulations that all succeed.
func launchBackend(args []string) error {
	backend := "sim"
	for i, a := range args {
		if a == "--" {
			break
		}
		if v, ok := strings.CutPrefix(a, "--backend="); ok {
			backend = v
		} else if a == "--backend" && i+1 < len(args) {
			backend = args[i+1]
		}
	}
	if backend == "tcp" || backend == "ibv" {
		return nil
	}
	return fmt.Errorf("launch starts one process per node of a real cluster, but %q runs on the %s backend, which simulates every node in one process (launch would run unrelated simulations): add --backend tcp (with --design TCP) or --backend ibv to the command, or drop launch and run it directly (explore %s)",
		strings.Join(args, " "), backend, strings.Join(args, " "))
}

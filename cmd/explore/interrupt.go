package main

// interrupt.go: what explore does on Ctrl-C (SIGINT) or SIGTERM. A
// command whose work is saved as it goes (sweep, figure, reproduce, query
// --figure) is told through its context, lets the running points finish
// and be written, and says how to resume; any other command says how far
// it got, writes what it can (bench's finished rows) and stops at once.
// Either way explore exits with status 130; a second interrupt stops at
// once.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// exitInterrupted is the exit status after an interrupt (128 + SIGINT).
const exitInterrupted = 130

// interruptedError is what a command returns when it stopped on an
// interrupt; its text says what was completed and how to resume.
type interruptedError struct{ msg string }

func (e *interruptedError) Error() string { return e.msg }

// asInterrupted turns an error that ended a graceful task on an interrupt
// (a cancelled context) into an interruptedError with the task's advice.
func asInterrupted(t *task, err error) error {
	if err == nil || !errors.Is(err, context.Canceled) {
		return err
	}
	return &interruptedError{msg: t.interrupted()}
}

// execute runs root with a context that an interrupt cancels and returns
// the process's exit status.
func execute(root *cobra.Command, stderr io.Writer) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go onInterrupt(sigs, cancel, stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if perr := profiling.stop(); perr != nil && err == nil {
		err = fmt.Errorf("--cpuprofile: %w", perr)
	}
	err = inFlagWords(cmd, err)
	var ie *interruptedError
	var status exitStatus
	var found finding
	switch {
	case errors.As(err, &status):
		return int(status)
	case errors.As(err, &found):
		fmt.Fprintln(stderr, "explore:", err)
		return exitFinding
	case errors.As(err, &ie):
		fmt.Fprintln(stderr, ie.msg)
		return exitInterrupted
	case err != nil:
		fmt.Fprintln(stderr, "explore:", err)
		return exitError
	}
	return 0
}

func onInterrupt(sigs <-chan os.Signal, cancel context.CancelFunc, stderr io.Writer) {
	<-sigs
	cancel()
	t := active.Load()
	if t == nil {
		fmt.Fprintln(stderr, "\ninterrupted")
		os.Exit(exitInterrupted)
	}
	t.mu.Lock()
	graceful, flush := t.graceful, t.flush
	t.mu.Unlock()
	if !graceful {
		if flush != nil {
			flush()
		}
		fmt.Fprintln(stderr, t.interrupted())
		os.Exit(exitInterrupted)
	}
	t.mu.Lock()
	if t.live && t.shown > 0 {
		fmt.Fprintln(stderr)
		t.shown = 0
	}
	t.mu.Unlock()
	fmt.Fprintln(stderr, "interrupt: no new point starts; the running ones finish and are saved (interrupt again to stop at once)")
	<-sigs
	fmt.Fprintln(stderr, t.interrupted())
	os.Exit(exitInterrupted)
}

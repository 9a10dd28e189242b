package fabric

import (
	"errors"
	"strconv"
)

// Errors returned by verbs calls. Backends wrap them with detail; test with
// errors.Is.
var (
	ErrQueueFull      = errors.New("fabric: work queue full")
	ErrBadState       = errors.New("fabric: queue pair in the wrong state for this operation")
	ErrBadTransition  = errors.New("fabric: illegal queue pair state transition")
	ErrInvalidWR      = errors.New("fabric: invalid work request")
	ErrInlineTooLarge = errors.New("fabric: inline data larger than the queue pair's max inline")
	ErrMsgTooLarge    = errors.New("fabric: message larger than allowed by the transport")
	ErrCQOverrun      = errors.New("fabric: completion queue overrun (completions were lost)")
	ErrLimit          = errors.New("fabric: device limit exceeded")
	ErrBusy           = errors.New("fabric: object still in use")
	ErrClosed         = errors.New("fabric: object already destroyed")
	ErrInvalidArg     = errors.New("fabric: invalid argument")
	ErrDeadlock       = errors.New("fabric: every thread is waiting and nothing can wake them")
	ErrTimeLimit      = errors.New("fabric: run exceeded its time limit")
	ErrNoDevice       = errors.New("fabric: no RDMA device")
)

// CompletionError is a failed work completion as an error value, for
// algorithms that stop on the first failure.
type CompletionError struct {
	WC   WC
	Node int
}

func (e *CompletionError) Error() string {
	return "fabric: node " + strconv.Itoa(e.Node) + ": work completion failed: " + e.WC.String()
}

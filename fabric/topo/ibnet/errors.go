package ibnet

import (
	"errors"
	"fmt"
)

// Sentinel errors of the readers and writers. Errors about the cabling,
// LIDs or routes also wrap package topo's sentinels (topo.ErrBadLink,
// topo.ErrDuplicateID, topo.ErrBadRoute, ...).
var (
	// ErrSyntax is a line (or YAML document) the reader cannot parse.
	ErrSyntax = errors.New("ibnet: syntax error")
	// ErrUnsupported is a well-formed input the simulator does not model:
	// routers, adapters cabled back to back, names the format cannot hold.
	ErrUnsupported = errors.New("ibnet: not supported")
	// ErrDuplicate is a device or entry described twice.
	ErrDuplicate = errors.New("ibnet: described twice")
	// ErrUnknownDevice is a forwarding table of a switch the fabric does
	// not have, or a cable to a device the file does not describe.
	ErrUnknownDevice = errors.New("ibnet: unknown device")
	// ErrIncomplete is a forwarding table dump that lacks a switch or a
	// host LID, or a fabric without the LIDs a dump is indexed by.
	ErrIncomplete = errors.New("ibnet: incomplete forwarding tables")
)

// Error is an error found in an input file: its name (as given to the
// reader or to Load; may be empty), the line (1-based; 0 when the error is
// about the whole file) and the cause, which wraps a sentinel.
type Error struct {
	File string
	Line int
	Err  error
}

func (e *Error) Error() string {
	switch {
	case e.File != "" && e.Line > 0:
		return fmt.Sprintf("%s: line %d: %v", e.File, e.Line, e.Err)
	case e.File != "":
		return fmt.Sprintf("%s: %v", e.File, e.Err)
	case e.Line > 0:
		return fmt.Sprintf("line %d: %v", e.Line, e.Err)
	}
	return e.Err.Error()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// lineErr builds an *Error for line n of file from a format and a
// sentinel (the first %w in format).
func lineErr(file string, n int, format string, args ...any) error {
	return &Error{File: file, Line: n, Err: fmt.Errorf(format, args...)}
}

// Package setting is the error a library returns for a value it refuses
// in a configuration it was given: which setting (the configuration's
// field, as the library's caller named it), the value, and what is wrong
// with it and what to give instead. Libraries word errors in their own
// terms; a command-line tool maps the setting to its flag (explore run
// --threads) and a sweep to its parameter.
package setting

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
)

// Error is a refused setting.
type Error struct {
	// Setting is the field of the configuration ("Threads", "Pattern").
	Setting string
	// Value is what was given (nil to show none).
	Value any
	// Problem says what is wrong and what to give instead.
	Problem string
	// Err, if set, is a sentinel the error also matches (errors.Is).
	Err error
}

func (e *Error) Error() string {
	if e.Value == nil {
		return fmt.Sprintf("%s: %s", e.Setting, e.Problem)
	}
	return fmt.Sprintf("%s %v: %s", e.Setting, e.Value, e.Problem)
}

// Unwrap gives the sentinel.
func (e *Error) Unwrap() error { return e.Err }

// New returns an Error; the problem is formatted with args.
func New(name string, value any, problem string, args ...any) *Error {
	return &Error{Setting: name, Value: value, Problem: fmt.Sprintf(problem, args...)}
}

// Sentinel returns e matching err as well (errors.Is(e, err)).
func (e *Error) Sentinel(err error) *Error {
	e.Err = err
	return e
}

// As finds the first Error in err's chain.
func As(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// Renamed is err with its refused setting shown as name (a flag, a
// parameter): "--threads 100: ..." where the library wrote "Threads 100:
// ...". It still matches what err wraps. Without an Error in err, it is
// err.
func Renamed(err error, name string) error {
	se, ok := As(err)
	if !ok {
		return err
	}
	worded := *se
	worded.Setting = name
	return Reworded(err, strings.Replace(err.Error(), se.Error(), worded.Error(), 1))
}

// Reworded is err with the message msg; it still matches what err wraps.
func Reworded(err error, msg string) error {
	if msg == err.Error() {
		return err
	}
	return &reworded{msg: msg, err: err}
}

type reworded struct {
	msg string
	err error
}

func (e *reworded) Error() string { return e.msg }
func (e *reworded) Unwrap() error { return e.err }

// Kebab is a setting's name as parameters and flags spell it: BytesPerNode
// is bytes-per-node, QPNumbering qp-numbering, PinnedCapMiB
// pinned-cap-mib.
func Kebab(name string) string {
	name = strings.NewReplacer("MiB", "Mib", "GiB", "Gib", "KiB", "Kib").Replace(name)
	var b strings.Builder
	rs := []rune(name)
	for i, r := range rs {
		if unicode.IsUpper(r) && i > 0 && (!unicode.IsUpper(rs[i-1]) || i+1 < len(rs) && unicode.IsLower(rs[i+1])) {
			b.WriteByte('-')
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}

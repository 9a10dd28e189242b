package ibnet

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/rdmashuffle/rdmashuffle/fabric/topo"
)

// maxLine is the longest input line the readers accept.
const maxLine = 1 << 20

// eachLine calls fn with every line of r and its 1-based number, stopping
// at the first error.
func eachLine(r io.Reader, file string, fn func(n int, s string) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), maxLine)
	n := 0
	for sc.Scan() {
		n++
		if err := fn(n, sc.Text()); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return lineErr(file, n+1, "%w: the line is longer than %d bytes; is this a text file?", ErrSyntax, maxLine)
		}
		return &Error{File: file, Line: n + 1, Err: err}
	}
	return nil
}

// splitComment cuts s at its first '#' outside double quotes.
func splitComment(s string) (left, comment string, ok bool) {
	in := false
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			in = !in
		case '#':
			if !in {
				return s[:i], s[i+1:], true
			}
		}
	}
	return s, "", false
}

// quoted returns what lies between the first and the last double quote of
// s, and what follows the last one. A node description may itself hold
// quotes; ibnetdiscover prints it raw.
func quoted(s string) (inner, rest string, ok bool) {
	i := strings.IndexByte(s, '"')
	j := strings.LastIndexByte(s, '"')
	if i < 0 || j <= i {
		return "", "", false
	}
	return s[i+1 : j], s[j+1:], true
}

// parseHex reads a GUID written in hexadecimal, with or without 0x.
func parseHex(s string) (uint64, bool) {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	if s == "" || len(s) > 16 {
		return 0, false
	}
	v, err := strconv.ParseUint(s, 16, 64)
	return v, err == nil
}

// lidAfter finds "lid N" among the space-separated words of s and returns N.
func lidAfter(s string) (int, bool) {
	f := strings.Fields(s)
	for i := 0; i+1 < len(f); i++ {
		if f[i] == "lid" {
			v, err := strconv.Atoi(f[i+1])
			if err != nil || v < 0 || v > 0xFFFF {
				return 0, false
			}
			return v, true
		}
	}
	return 0, false
}

// linkAfter reads the width and speed ibnetdiscover prints after the
// peer's "lid N" at the end of a port line's comment ("4xEDR"). A line
// without one gives the zero Link, as does one whose width or speed
// ibnetdiscover could not name ("??", "???"); a width and speed that are
// written but not known is an error.
func linkAfter(s string) (topo.Link, error) {
	f := strings.Fields(s)
	for i := 0; i+1 < len(f); i++ {
		if f[i] != "lid" {
			continue
		}
		if i+2 >= len(f) {
			return topo.Link{}, nil
		}
		w := f[i+2]
		if strings.Contains(w, "?") {
			return topo.Link{}, nil
		}
		return topo.ParseLink(w)
	}
	return topo.Link{}, nil
}

// cursor reads the left-hand side of an ibnetdiscover port line.
type cursor struct {
	s string
	i int
}

func (c *cursor) spaces() {
	for c.i < len(c.s) && (c.s[c.i] == ' ' || c.s[c.i] == '\t') {
		c.i++
	}
}

func (c *cursor) done() bool { return c.i >= len(c.s) }

func (c *cursor) peek(prefix string) bool { return strings.HasPrefix(c.s[c.i:], prefix) }

// enclosed reads open, text up to close, and close, and returns the text.
func (c *cursor) enclosed(open, close byte) (string, bool) {
	if c.i >= len(c.s) || c.s[c.i] != open {
		return "", false
	}
	j := strings.IndexByte(c.s[c.i+1:], close)
	if j < 0 {
		return "", false
	}
	v := c.s[c.i+1 : c.i+1+j]
	c.i += j + 2
	return v, true
}

// portNum reads "[N]" with N in 0..255.
func (c *cursor) portNum() (int, bool) {
	v, ok := c.enclosed('[', ']')
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > 255 {
		return 0, false
	}
	return n, true
}

// ext skips the "[ext N]" external port number ibnetdiscover -g adds.
func (c *cursor) ext() bool {
	if !c.peek("[ext ") {
		return true
	}
	_, ok := c.enclosed('[', ']')
	return ok
}

// guid reads an optional "(hex)" port GUID; 0 when absent.
func (c *cursor) guid() (uint64, bool) {
	if !c.peek("(") {
		return 0, true
	}
	v, ok := c.enclosed('(', ')')
	if !ok {
		return 0, false
	}
	return parseHex(v)
}

// nodeName reads a quoted node name such as "S-0002c90200402c08".
func (c *cursor) nodeName() (kind byte, guid uint64, key string, ok bool) {
	v, ok := c.enclosed('"', '"')
	if !ok {
		return 0, 0, "", false
	}
	return parseNodeName(v)
}

// parseNodeName reads S-<guid>, H-<guid> or R-<guid> (without quotes).
func parseNodeName(v string) (kind byte, guid uint64, key string, ok bool) {
	if len(v) < 3 || v[1] != '-' {
		return 0, 0, "", false
	}
	switch v[0] {
	case 'S', 'H', 'R':
	default:
		return 0, 0, "", false
	}
	g, ok := parseHex(v[2:])
	if !ok {
		return 0, 0, "", false
	}
	return v[0], g, fmt.Sprintf("%c-%016x", v[0], g), true
}

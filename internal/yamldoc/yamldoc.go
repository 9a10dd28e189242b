// Package yamldoc holds what every YAML reader of the project checks
// before decoding: that the input is one document. A YAML decoder reads
// the first document and stops, so whatever follows a "---" line would
// otherwise be ignored without a word.
package yamldoc

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"go.yaml.in/yaml/v3"
)

// ErrMultipleDocuments is returned for input with a second document.
var ErrMultipleDocuments = errors.New("a second YAML document")

// Error says where the second document starts.
type Error struct {
	Line int // 0 when it could not be told
}

func (e *Error) Error() string {
	where := ""
	if e.Line > 0 {
		where = fmt.Sprintf(" starts at line %d", e.Line)
	}
	return fmt.Sprintf("%s%s (after a --- line): the file holds one document; remove the --- or put each document in a file of its own", ErrMultipleDocuments, where)
}

// Unwrap makes errors.Is(err, ErrMultipleDocuments) hold.
func (e *Error) Unwrap() error { return ErrMultipleDocuments }

// One returns an *Error when data holds more than one YAML document. A
// syntax error is left to the caller's decoder, which names it better; an
// empty document after a final "---" counts as a second document too, as
// it is most likely the start of one that was cut off.
func One(data []byte) (err error) {
	defer func() { // the YAML decoder is third-party code: never let it crash a run
		if recover() != nil {
			err = nil
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var first yaml.Node
	if err := dec.Decode(&first); err != nil {
		return nil
	}
	var second yaml.Node
	switch err := dec.Decode(&second); {
	case errors.Is(err, io.EOF):
		return nil
	case err != nil:
		return &Error{}
	}
	line := second.Line
	if len(second.Content) > 0 {
		line = second.Content[0].Line
	}
	return &Error{Line: line}
}

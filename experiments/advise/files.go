package advise

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// The files an advice directory holds (explore advise writes them under
// results/advise; docs/advise holds the project's reference copies):
// the last answer, and the last map with its figure beside it.
const (
	AnswerFile = "answer.json"
	MapFile    = "map.json"
	MapFigure  = "map" // map.png and map.svg
)

// WriteJSON writes v, indented, to path, making its directory.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// ErrNotAdvice reports a file that is not an answer or a map of this
// package.
var ErrNotAdvice = errors.New("not an advice file")

// ReadAnswer reads an answer written by WriteJSON.
func ReadAnswer(path string) (*Answer, error) {
	var a Answer
	if err := readJSON(path, &a); err != nil {
		return nil, err
	}
	if a.Question == "" || len(a.Designs) == 0 {
		return nil, fmt.Errorf("%w: %s has no question or no designs: write it again with explore advise", ErrNotAdvice, path)
	}
	return &a, nil
}

// ReadMap reads a map written by WriteJSON.
func ReadMap(path string) (*Map, error) {
	var m Map
	if err := readJSON(path, &m); err != nil {
		return nil, err
	}
	n := 1
	for _, a := range m.Axes {
		n *= len(a.Values)
	}
	if len(m.Axes) == 0 || len(m.Axes) > 2 || len(m.Cells) != n {
		return nil, fmt.Errorf("%w: %s holds %d cells for %d axes: make the map again", ErrNotAdvice, path, len(m.Cells), len(m.Axes))
	}
	return &m, nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrNotAdvice, path, err)
	}
	return nil
}

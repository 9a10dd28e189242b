package results

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Result is one line of a sweep's output file (JSON Lines): the point's
// index and key, then the run record's fields (flat), or an error for a
// point whose run failed. In sweep output the record's WallS is zero so
// that files are byte-identical across runs; Wall holds it in memory.
type Result struct {
	Point   int    `json:"point"`
	Key     string `json:"key"`
	*Record        // nil when the run failed
	Error   string `json:"error,omitempty"`
	// NotRun marks a point refused before it started (its estimated
	// memory was more than the runs may take); Error says why. It counts
	// as failed, so that a sweep resumed with more memory runs it.
	NotRun bool `json:"not_run,omitempty"`

	Wall  time.Duration `json:"-"` // wall-clock time of the run; 0 when read from a file
	Sweep string        `json:"-"` // the sweep's name (RunSweep sets it; CSV's sweep column)
	raw   []byte        // the line as read or written, without its newline (Line)
}

// CountNotRun is how many of rs were refused before they ran (NotRun).
func CountNotRun(rs []Result) int {
	n := 0
	for _, r := range rs {
		if r.NotRun {
			n++
		}
	}
	return n
}

// Failed reports whether the point's run returned an error.
func (r Result) Failed() bool { return r.Record == nil || r.Error != "" }

// Line returns r's JSON line, without a newline: the line as read, or as
// first marshalled.
func (r *Result) Line() ([]byte, error) {
	if r.raw == nil {
		b, err := json.Marshal(r)
		if err != nil {
			return nil, err
		}
		r.raw = b
	}
	return r.raw, nil
}

// SameLine says whether r and o have the same JSON line (two copies of
// one point's result, read from two files, say).
func (r *Result) SameLine(o *Result) bool {
	a, errA := r.Line()
	b, errB := o.Line()
	return errA == nil && errB == nil && bytes.Equal(a, b)
}

// ReadFile reads a sweep output file. A last line cut short (a killed
// run) is skipped and reported through warn (if not nil); any other bad
// line is an error naming the file and line.
func ReadFile(path string, warn func(string)) ([]Result, error) {
	if warn == nil {
		warn = func(string) {}
	}
	rs, _, err := ReadPrefix(path, warn)
	return rs, err
}

// ReadPrefix returns the results of path and the length of its valid
// prefix (where appending may continue); a last line cut short is
// reported through warn and left out.
func ReadPrefix(path string, warn func(string)) ([]Result, int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, err
	}
	var rs []Result
	var good int64
	for n := 1; len(data) > 0; n++ {
		line, rest, complete := bytes.Cut(data, []byte("\n"))
		var r Result
		err := json.Unmarshal(line, &r)
		if err == nil && r.Key == "" {
			err = errors.New("no key")
		}
		if err != nil {
			if len(bytes.TrimSpace(rest)) == 0 {
				warn(fmt.Sprintf("%s:%d: ignoring a truncated last line (from a killed run?)", path, n))
				break
			}
			return nil, 0, fmt.Errorf("%s:%d: not a sweep result: %v", path, n, err)
		}
		r.raw = bytes.Clone(bytes.TrimSpace(line))
		rs = append(rs, r)
		if !complete { // a whole record without its newline: keep it, end it
			break
		}
		good += int64(len(line)) + 1
		data = rest
	}
	return rs, good, nil
}

// WriteFile writes rs, one line each, to path atomically (a temporary
// file in the same directory, then rename).
func WriteFile(path string, rs []Result) error {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	w := bufio.NewWriter(tmp)
	for i := range rs {
		b, err := rs[i].Line()
		if err != nil {
			tmp.Close()
			return err
		}
		w.Write(b)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	// A temporary file is created private (0600); the results file is as
	// readable as the CSV and plots written beside it.
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

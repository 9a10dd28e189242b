package experiments

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim/trace"
)

// savedTrace writes a run case's trace to a temporary file in -trace-dir
// and, once the run's hash is known, names it by the hash.
type savedTrace struct {
	w    *trace.Writer
	path string
}

func newSavedTrace(t *testing.T) *savedTrace {
	t.Helper()
	if err := os.MkdirAll(*traceDir, 0o755); err != nil {
		t.Fatalf("-trace-dir: %v", err)
	}
	f, err := os.CreateTemp(*traceDir, "partial-*.trace")
	if err != nil {
		t.Fatalf("-trace-dir: %v", err)
	}
	// No case name in the header: cases with the same events (a run
	// with and without payload) share the file.
	w, err := trace.NewWriter(f, trace.Header{})
	if err != nil {
		t.Fatal(err)
	}
	return &savedTrace{w: w, path: f.Name()}
}

// keep closes the trace and renames it after the run's hash (or removes
// it, for a run that did not succeed).
func (s *savedTrace) keep(t *testing.T, hash uint64, ok bool) {
	t.Helper()
	if err := s.w.Close(); err != nil {
		t.Fatalf("saving a trace: %v", err)
	}
	if !ok {
		os.Remove(s.path)
		return
	}
	if err := os.Rename(s.path, goldenTracePath(fmt.Sprintf("%016x", hash))); err != nil {
		t.Fatalf("saving a trace: %v", err)
	}
}

func goldenTracePath(hash string) string { return filepath.Join(*traceDir, hash+".trace") }

// explainTrace reruns a run case with a trace and, if the trace of the
// golden run (hash want) was saved, says where the two runs part; if not,
// says how to save it.
func explainTrace(t *testing.T, cfg RunConfig, faults sim.Faults, want string) string {
	t.Helper()
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "got.trace"))
	if err != nil {
		return err.Error()
	}
	w, err := trace.NewWriter(f, trace.Header{})
	if err != nil {
		return err.Error()
	}
	RunSim(cfg, SimOptions{Faults: faults, Trace: w})
	if err := w.Close(); err != nil {
		return err.Error()
	}
	old := goldenTracePath(want)
	if _, err := os.Stat(old); err != nil {
		return fmt.Sprintf("  no saved trace of the golden run (%s): to see where the runs part, run\n"+
			"    go test ./experiments/ -run GoldenRuns -save-traces\n"+
			"  on the commit before the change, then this test again", old)
	}
	a, closeA, err := trace.Open(old)
	if err != nil {
		return err.Error()
	}
	defer closeA.Close()
	b, closeB, err := trace.Open(f.Name())
	if err != nil {
		return err.Error()
	}
	defer closeB.Close()
	d, err := trace.Diff(a, b, 5)
	if err != nil {
		return err.Error()
	}
	var out strings.Builder
	d.Format(&out, "golden run", "this run")
	return out.String()
}

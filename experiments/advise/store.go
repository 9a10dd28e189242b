package advise

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/rdmashuffle/rdmashuffle/experiments/results"
	"github.com/rdmashuffle/rdmashuffle/experiments/sensitivity"
	"github.com/rdmashuffle/rdmashuffle/fabric/sim"
)

// Stored is a finished run as a Store keeps it: its record, and the busy
// times and counters its bottleneck is read from.
type Stored struct {
	Record *results.Record `json:"record"`
	Usage  sim.Usage       `json:"usage"`
	Stats  sim.Stats       `json:"stats"`
}

// Store keeps finished runs so that another advice (a sweep's next cell,
// or the same question asked again) takes them instead of running them.
// A key names the run's whole configuration, the parameters of the
// profile it ran on, and the model (sensitivity.ModelID): a run is reused
// only by the run it would repeat. Only runs that succeeded are kept.
type Store interface {
	Load(key string) (Stored, bool)
	Save(key string, s Stored) error
}

// MemoryStore keeps runs in memory (a sweep shares its cells' runs
// through one). Its zero value is ready; it is safe for concurrent use.
type MemoryStore struct {
	mu   sync.Mutex
	runs map[string]Stored
}

// Load returns the run kept under key.
func (m *MemoryStore) Load(key string) (Stored, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.runs[key]
	return s, ok
}

// Save keeps s under key.
func (m *MemoryStore) Save(key string, s Stored) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.runs == nil {
		m.runs = map[string]Stored{}
	}
	m.runs[key] = s
	return nil
}

// DirStore keeps runs as JSON files in a directory, one per key
// (explore advise keeps them under results/advise/points). A file that
// cannot be read back is taken as missing, and the run is made again and
// written over it.
type DirStore struct {
	Dir string
}

func (d DirStore) path(key string) string { return filepath.Join(d.Dir, key+".json") }

// Load reads the run kept under key.
func (d DirStore) Load(key string) (Stored, bool) {
	var s Stored
	b, err := os.ReadFile(d.path(key))
	if err != nil || json.Unmarshal(b, &s) != nil || s.Record == nil {
		return Stored{}, false
	}
	return s, true
}

// Save writes s under key: to a file of its own first, renamed into
// place, so that a reader (or another advice writing the same run) never
// sees half a file.
func (d DirStore) Save(key string, s Stored) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(d.Dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(d.Dir, key+".*.tmp")
	if err != nil {
		return err
	}
	_, werr := f.Write(b)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(f.Name())
		return err
	}
	return os.Rename(f.Name(), d.path(key))
}

// layered looks a run up in each store in turn and saves to all of them.
type layered []Store

func (l layered) Load(key string) (Stored, bool) {
	for i, s := range l {
		if v, ok := s.Load(key); ok {
			for _, earlier := range l[:i] {
				_ = earlier.Save(key, v) // a faster store keeps it for next time
			}
			return v, true
		}
	}
	return Stored{}, false
}

func (l layered) Save(key string, v Stored) error {
	var errs []error
	for _, s := range l {
		errs = append(errs, s.Save(key, v))
	}
	return errors.Join(errs...)
}

// storeKey is the key of j's run: a hash of the model, the parameters of
// the profile it runs on (as changed by the job), the contents of the
// network files it names and its configuration; false when the run cannot
// be keyed (a profile change given as a function, or a file that cannot
// be read), and is then neither looked up nor kept.
func (j *job) storeKey() (string, bool) {
	if j.profile != nil {
		return "", false
	}
	prof := j.moved
	if prof == nil {
		p, err := sim.LoadProfile(j.cfg.Profile)
		if err != nil {
			return "", false
		}
		prof = p
	}
	cfg, err := json.Marshal(j.cfg)
	if err != nil {
		return "", false
	}
	h := sha256.New()
	fmt.Fprintf(h, "advise point v1\nmodel %s\nprofile %s\nconfig %s\n", modelID(), prof.Hash(), cfg)
	for _, p := range []string{j.cfg.Network.Path, j.cfg.Network.LFTPath} {
		if p == "" {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return "", false
		}
		fmt.Fprintf(h, "file %x\n", sha256.Sum256(b))
	}
	return hex.EncodeToString(h.Sum(nil)[:16]), true
}

// modelID is sensitivity.ModelID, computed once (it loads every
// built-in profile).
var modelID = sync.OnceValue(sensitivity.ModelID)
